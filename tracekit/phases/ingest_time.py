"""Steps made while the ingest copies kernels, and what the phases stage then has left to do.

The analysis hands an ``IngestTimeSteps`` to the ingest (``IngestContext.step_attribution``:
``tracekit.ingest`` never imports this package) and then the same object to the phases stage
(``attribute_phases(..., ingest=…)``): it is the plan between the two. A reader that copies
kernels in one ``INSERT … SELECT`` calls ``prepare`` once the NVTX ranges are stored; when that
returns True it selects ``join`` for every kernel, which gives the kernel its launch step in
the same pass. Afterwards ``attributed`` and ``marker_infos`` tell the stage what is done:
the marker texts are read once, and a run whose kernels already carry their steps only needs
the GPU projection and the fallback for kernels without a launch record.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from tracekit.phases import attribute
from tracekit.phases.marker_steps import marker_texts, prepare_steps
from tracekit.phases.markers import MarkerSet, StepInfo, load_markers


class IngestTimeSteps:
    """Step attribution done while a reader copies kernels, and the record of what was done."""

    lookup_table = "tk_phase_steps"
    lookup_columns = ("global_tid", "start_ns", "end_ns", "id", "phase")

    def __init__(self, markers: MarkerSet | None = None) -> None:
        self._markers = markers
        #: the run's marker texts, once ``prepare`` has looked (for ``attribute_phases``)
        self.marker_infos: dict[str, StepInfo] | None = None
        #: True once the marker steps exist and the reader gives each kernel its step
        self.attributed = False

    def prefilters(self) -> list[str]:
        """SQL LIKE patterns a range text must match to be looked at as a step marker."""
        return (self._markers or load_markers()).prefilters()

    def prepare(self, connection: Connection, run_id: int,
                candidates: list[str] | None = None) -> bool:
        """Make the steps and the lookup; False when the stage must do it all later.

        ``candidates``: the run's distinct range texts that match ``prefilters``, when the
        reader found them in the source itself; else they are read from the stored ranges.
        """
        markers = self._markers or load_markers()
        self.marker_infos = (markers.parse_all(candidates) if candidates is not None
                             else marker_texts(connection, run_id, markers))
        self.attributed = prepare_steps(connection, run_id, self.marker_infos)
        return self.attributed

    def lookup_rows(self, connection: Connection) -> list[tuple[Any, ...]]:
        """The lookup's rows, for stores whose kernel SELECT runs on a side connection."""
        return [tuple(row) for row in connection.execute(text(
            f"SELECT {', '.join(self.lookup_columns)} FROM {self.lookup_table}"))]

    def join(self, tid: str, start: str, end: str) -> tuple[str, tuple[str, str]]:
        """A JOIN clause and the (step_id, phase) expressions for a kernel's launch columns."""
        return attribute.launch_step_join(tid, start, end)

    def finish(self, connection: Connection) -> None:
        """Drop the scratch lookup."""
        attribute.drop_temp_tables(connection)
