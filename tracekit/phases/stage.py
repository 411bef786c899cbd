"""The phases stage: steps from engine markers first, heuristics only when a run has none.

Writes ``steps`` (every row says its ``source``: ``marker`` or ``heuristic``) and sets
``kernels.step_id`` / ``kernels.phase`` (NULL = unattributed). Re-running it rewrites both.

Markers are found per unique range text (SQL LIKE prefilters, then the regexes of
``rules/_phase_markers.toml`` in Python over the distinct texts); steps are created and
kernels attributed in set-based SQL (``tracekit.phases.attribute``). A run whose ranges hold
no engine marker — e.g. ``emit_nvtx`` ``aten::…`` ranges — is never given phases from those
ranges: it goes to the heuristics, which say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection, text

from tracekit.formatting import counted
from tracekit.phases import attribute, heuristics
from tracekit.phases.marker_steps import insert_marker_steps, load_marker_table, marker_texts
from tracekit.phases.markers import MarkerSet, StepInfo, load_markers
from tracekit.phases.report import PhaseReport
from tracekit.store.counts import run_counts
from tracekit.store.schema import NVTX_RANGE_KINDS
from tracekit.store.sql import text_with_lists

if TYPE_CHECKING:
    from tracekit.phases.ingest_time import IngestTimeSteps

#: SQL list of the nvtx_ranges kinds a step's CPU range can have: not marks, not domain
#: bookkeeping, not the GPU-side copies of torch annotations (``gpu_user_annotation`` →
#: ``gpu_range``; the CPU one is the step).


def attribute_phases(connection: Connection, run_id: int,
                     markers: MarkerSet | None = None, *,
                     ingest: IngestTimeSteps | None = None) -> PhaseReport:
    """Find steps and attribute every kernel of ``run_id`` to one (or leave it unattributed).

    ``ingest``: what the ingest that just stored this run did toward phases. When it made the
    marker steps and gave each kernel its launch step as it copied them, only the GPU
    projection, the fallback for kernels without a launch record and the report remain; the
    marker texts it found are not read again.
    """
    markers = markers or load_markers()
    attributed = ingest is not None and ingest.attributed
    rewritten = False
    if not attributed:
        rewritten = reset(connection, run_id)
    infos = (ingest.marker_infos if ingest is not None and ingest.marker_infos is not None
             else marker_texts(connection, run_id, markers))
    if infos:
        report = _from_markers(connection, run_id, infos, kernels_attributed=attributed)
        rewritten = rewritten or not attributed or report.kernels_by_gpu_time > 0
    else:
        report = heuristics.attribute(connection, run_id, ranges=_range_count(connection, run_id))
        rewritten = rewritten or report.method != "none"
    attribute.drop_temp_tables(connection)
    report.kernels_rewritten = rewritten
    return report


def reset(connection: Connection, run_id: int) -> bool:
    """Forget earlier steps and kernel phases of this run (the stage rewrites them).

    Returns whether there was anything to forget (kernel rows were rewritten).
    """
    had_steps = connection.execute(text("SELECT 1 FROM steps WHERE run_id = :run_id LIMIT 1"),
                                   {"run_id": run_id}).first()
    if had_steps is None:
        return False
    connection.execute(text(
        "UPDATE kernels SET step_id = NULL, phase = NULL WHERE run_id = :run_id "
        "AND (step_id IS NOT NULL OR phase IS NOT NULL)"), {"run_id": run_id})
    connection.execute(text("DELETE FROM steps WHERE run_id = :run_id"), {"run_id": run_id})
    return True


def _range_count(connection: Connection, run_id: int) -> int:
    return run_counts(connection, run_id)["nvtx_ranges"]


def _from_markers(connection: Connection, run_id: int, infos: dict[str, StepInfo], *,
                  kernels_attributed: bool = False) -> PhaseReport:
    load_marker_table(connection, infos)
    params = {"run_id": run_id, "run_end": _capture_end(connection, run_id)}
    marker_ranges, step_ranges = connection.execute(text_with_lists(
        "SELECT COUNT(*), SUM(CASE WHEN m.phase <> 'idle' THEN 1 ELSE 0 END) "
        "FROM nvtx_ranges n JOIN tk_marker_texts m ON m.text = n.text "
        "WHERE n.run_id = :run_id AND n.kind IN :range_kinds",
        range_kinds=NVTX_RANGE_KINDS), params).one()
    if not kernels_attributed:
        insert_marker_steps(connection, run_id, params)
    connection.execute(text("DROP TABLE tk_marker_texts"))
    if not kernels_attributed:
        attribute.attribute_by_launch(connection, run_id)
    return _marker_report(connection, run_id, infos, int(marker_ranges or 0),
                          int(step_ranges or 0))


def _marker_report(connection: Connection, run_id: int, infos: dict[str, StepInfo],
                   marker_ranges: int, step_ranges: int) -> PhaseReport:
    """GPU projection, the GPU-time fallback for kernels without launch, and the report."""
    params = {"run_id": run_id}
    by_launch, orphans = attribute.project_to_gpu(connection, run_id)
    in_steps, by_gpu = by_launch, 0
    if orphans:
        attribute.attribute_orphans_by_gpu_time(connection, run_id)
        in_steps, _ = attribute.project_to_gpu(connection, run_id)
        by_gpu = in_steps - by_launch
    steps = {str(phase): int(count) for phase, count in connection.execute(text(
        "SELECT phase, COUNT(*) FROM steps WHERE run_id = :run_id GROUP BY phase"), params)}
    engines = sorted({info.engine for info in infos.values()})
    step_total = sum(steps.values())
    message = (f"{counted(step_total, 'step')} from {', '.join(engines)} step markers; "
               f"{counted(in_steps, 'kernel')} attributed")
    if step_total == 0:
        message = (f"{marker_ranges:,} {', '.join(engines)} step markers, all idle steps: "
                   "no prefill or decode work to attribute")
    return PhaseReport(method="marker", message=message, engines=engines,
                       marker_ranges=marker_ranges, idle_markers=marker_ranges - step_ranges,
                       nested_dropped=step_ranges - step_total, steps=steps,
                       kernels_by_launch=in_steps - by_gpu, kernels_by_gpu_time=by_gpu)


def _capture_end(connection: Connection, run_id: int) -> int | None:
    """Last CPU timestamp of the capture, needed only when a range was never closed."""
    params = {"run_id": run_id}
    open_ranges = connection.execute(text(
        "SELECT 1 FROM nvtx_ranges WHERE run_id = :run_id AND end_ns IS NULL LIMIT 1"),
        params).first()
    if open_ranges is None:
        return None
    return connection.execute(text(
        "SELECT MAX(t) FROM (SELECT MAX(COALESCE(end_ns, start_ns)) AS t FROM nvtx_ranges "
        "WHERE run_id = :run_id UNION ALL SELECT MAX(end_ns) FROM runtime_calls "
        "WHERE run_id = :run_id UNION ALL SELECT MAX(launch_end_ns) FROM kernels "
        "WHERE run_id = :run_id) AS ends"), params).scalar()


