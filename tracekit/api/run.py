"""``Run``: one analyzed run in a store, read as DataFrames, figures and files.

A Run is a handle (store + run id), not a copy: every method reads the store when called,
so a run judged again (``tracekit.analyze`` with other options) shows its new verdict. pandas
and plotly are imported by the methods that need them, not with this module.

Per-run tables live as functions in ``tracekit.api.tables`` (small tables) and
``tracekit.api.kernels`` (the records); each method here is the typed, documented door to one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, text

from tracekit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from plotly.graph_objects import Figure

    from tracekit.store.db import Store


class RunsStore(Protocol):
    """What a Run needs of its store (``tracekit.api.store.RunStore`` is the one there is): its
    URL as messages name it, and the store opened read-only. A protocol, so that this module
    and the store's, which makes Runs, do not import each other."""

    url: str

    def reader(self) -> Store: ...


class Run:
    """One run of a tracekit store.

    Get one from ``tracekit.analyze(...)`` or ``store.run("latest")``. Times are integer
    nanoseconds (``*_ns``); names, ops, paths and phases are pandas categoricals.
    """

    def __init__(self, store: RunsStore, run_id: int, *, warnings: Sequence[str] | None = None,
                 existing: bool = False) -> None:
        self.store = store
        self.id = int(run_id)
        #: what ``tracekit analyze`` warned about (unreadable --model, …); None for a run
        #: taken from the store, whose analysis was made earlier
        self.warnings = list(warnings) if warnings is not None else None
        #: True when ``tracekit.analyze`` found these bytes already in the store
        self.existing = existing

    def __repr__(self) -> str:
        return f"<tracekit Run {self.id} in {self.store.url}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Run) and (other.store.url, other.id) == (self.store.url, self.id)

    def __hash__(self) -> int:
        return hash((self.store.url, self.id))

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A read connection, once the run is known to still be in the store."""
        with self.store.reader().connect() as connection:
            self._require(connection)
            yield connection

    def _require(self, connection: Connection) -> None:
        if connection.execute(text("SELECT 1 FROM runs WHERE id = :run_id"),
                              {"run_id": self.id}).first() is None:
            raise InputError(f"run {self.id} is not in the store {self.store.url} (deleted?)",
                             hint="`tracekit runs` lists them")

    # --- the analysis document and what it shows -------------------------------------------

    def document(self) -> dict[str, Any]:
        """The analysis document: what ``tracekit analyze --json`` (for a run just analyzed)
        or ``tracekit report RUN --json`` prints."""
        from tracekit.report.document import build_document

        with self._connection() as connection:
            document = build_document(connection, self.id)
        if self.warnings is not None:
            document["warnings"] = list(self.warnings)
        return document

    @property
    def verdict(self) -> list[str]:
        """The verdict, one sentence per phase (empty when nothing was compared)."""
        with self._connection() as connection:
            stored = connection.execute(text("SELECT verdict FROM runs WHERE id = :run_id"),
                                        {"run_id": self.id}).scalar()
        return [line for line in (stored or "").splitlines() if line]

    @property
    def info(self) -> dict[str, Any]:
        """Where the run came from: source, format, label, engine, model, GPU, sha256 …"""
        from tracekit.report.document import run_header

        with self._connection() as connection:
            return run_header(connection, self.id)

    def summary(self) -> pd.Series:
        """Run-wide totals: kernels, unique names, GPU and GEMM time, ranges, threads …"""
        from tracekit.api import tables

        return tables.summary(self.document())

    def devices(self) -> pd.DataFrame:
        """The GPUs as the ranks used them: rank, index, name, compute capability, arch (and
        where it came from), SMs, and the kernels, GPU time and GEMM time by path each ran."""
        from tracekit.api import tables

        return tables.devices(self.document())

    def ranks(self) -> pd.DataFrame:
        """One row per rank (a process that ran kernels): pid, file, host, devices, GPUs,
        kernels, GPU time, GEMM time by path, GPU time per phase (``prefill_ns`` …)."""
        from tracekit.api import tables

        return tables.ranks(self.document())

    def iterations(self) -> dict[str, Any] | None:
        """The steps of each engine iteration lined up across ranks: spread, slowest rank,
        straggler (the document's ``iterations``; None with fewer than two ranks)."""
        return self.document().get("iterations")

    def gemm_paths(self, by: str | Sequence[str] | None = "phase") -> pd.DataFrame:
        """GEMM time by datatype path: per phase (default), per ``"device"``, both
        (``by=["phase", "device"]``) or for the whole run (``by=None``, the summary's "GEMM
        time by datatype path" table). Columns: the groups, ``path``, ``count``, ``time_ns``,
        ``share`` (of the group's GEMM time)."""
        from tracekit.api import tables

        with self._connection() as connection:
            return tables.gemm_paths(connection, self.id, by)

    def phases(self) -> pd.DataFrame:
        """Per phase with GPU time or steps: step source, steps, ranks, tokens, GPU time,
        GEMM time (the summary's phases table)."""
        from tracekit.api import tables

        return tables.phases(self.document())

    def names(self) -> pd.DataFrame:
        """One row per unique kernel name, most GPU time first: op, path, weights,
        activations, library, rule, evidence, confidence, reason, count, total and per-phase
        time (the summary's top kernels are its first rows)."""
        from tracekit.api import tables

        return tables.names(self.document())

    def launchers(self) -> pd.DataFrame:
        """The CPU threads that launched the most GPU time: process and thread with their
        ids, rank, devices, kernels, GPU time."""
        from tracekit.api import tables

        return tables.launchers(self.document())

    def findings(self) -> pd.DataFrame:
        """The findings, most severe first: severity, rule, phase, share, message, evidence."""
        from tracekit.api import tables

        return tables.findings(self.document())

    def layers(self) -> pd.DataFrame:
        """The layer table: per phase, layer group (attention, mlp, moe_experts, lm_head, …)
        and path that ran — declared, expected on this GPU in this engine, share of the
        phase's GEMM time, outcome (as_declared, silent_fallback, …), reason, evidence."""
        from tracekit.api import tables

        return tables.layers(self.document())

    def roofline(self) -> pd.DataFrame:
        """The roofline per GEMM family (kernel name × op signature, or × ncu counters):
        launches, GPU time, FLOPs, bytes, achieved TFLOP/s and GB/s, intensity, compute- or
        bandwidth-bound and the share of the roof on this GPU; the work is NaN with a
        ``reason`` where the trace does not tell it. Per phase and path, and the fallback
        estimates: ``document()["roofline"]``."""
        from tracekit.api import tables

        with self._connection() as connection:
            return tables.roofline(connection, self.id)

    # --- records ----------------------------------------------------------------------------

    def kernels(self, *, phase: str | Iterable[str] | None = None,
                path: str | Iterable[str] | None = None, op: str | Iterable[str] | None = None,
                columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Every kernel record, in the trace's order; filters run in the database.

        ``phase``, ``path``, ``op``: a word or a list of words (``path="weight_only"``,
        ``op=["gemm", "grouped_gemm"]``). ``columns``: any of
        ``tracekit.api.KERNEL_COLUMNS`` (default ``DEFAULT_KERNEL_COLUMNS``: start, end,
        duration, name, op, path, phase, step, device, stream, launching thread). Streams in
        chunks: a 10^7-kernel run needs about the finished frame's own memory.
        """
        from tracekit.api.kernels import kernel_frame

        with self._connection() as connection:
            return kernel_frame(self.store.reader(), connection, self.id, phase=phase,
                                path=path, op=op, columns=columns)

    def steps(self) -> pd.DataFrame:
        """The engine steps: phase, source (marker or heuristic), marker text, CPU and GPU
        span, launching thread, tokens and requests."""
        from tracekit.api import tables

        with self._connection() as connection:
            return tables.steps(self.store.reader(), connection, self.id)

    # --- figures and files ------------------------------------------------------------------

    def _timeline_data(self, kernel_budget: int | None) -> dict[str, Any]:
        from tracekit.report.timeline import TimelineOptions, timeline_data

        options = TimelineOptions() if kernel_budget is None else TimelineOptions(
            kernel_budget=kernel_budget)
        with self._connection() as connection:
            return timeline_data(connection, self.id, options)

    def timeline(self, *, kernel_budget: int | None = None) -> Figure:
        """The HTML report's GPU timeline: every kernel of one stretch (up to
        ``kernel_budget``, the report's 50,000 by default: pass less for a lighter notebook),
        one row per device and stream, coloured by datatype path, steps on top."""
        import plotly.graph_objects as go

        from tracekit.report.figures import timeline_figure

        spec = timeline_figure(self._timeline_data(kernel_budget))
        if spec is None:
            return go.Figure(layout={"title": {"text": f"run {self.id} has no kernels"}})
        return go.Figure(spec)

    def breakdown(self) -> Figure:
        """The HTML report's bar chart: GEMM time by datatype path per phase."""
        import plotly.graph_objects as go

        from tracekit.report.figures import breakdown_figure

        return go.Figure(breakdown_figure(self.document()["phases"]))

    def roofline_figure(self, phase: str = "prefill") -> Figure:
        """The HTML report's roofline chart of ``phase``: one point per GEMM family, sized by
        GPU time, under one roof per datatype path this GPU has; stars for fallback estimates."""
        import plotly.graph_objects as go

        from tracekit.report.roofline_figure import report_roofline_figures

        figures = report_roofline_figures(self.document())
        spec = figures.get(f"tk-roofline-{phase}")
        if spec is None:
            return go.Figure(layout={"title": {"text": f"run {self.id} has no GEMM time in "
                                                       f"{phase}"}})
        return go.Figure(spec)

    def to_html(self, path: str | Path) -> Path:
        """Write the self-contained HTML report (``tracekit report RUN --html``)."""
        from tracekit.report.html import write_html

        document = self.document()
        return write_html(document, self.store.reader(), self.id, Path(path))

    def to_perfetto(self, path: str | Path) -> Path:
        """Write the run as a Chrome/Perfetto trace (gzip-compressed for a ``.gz`` name)."""
        from tracekit.report.perfetto import write_perfetto

        with self.store.reader().connect() as connection:
            self._require(connection)
        return write_perfetto(self.store.reader(), self.id, Path(path)).path
