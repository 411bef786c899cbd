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

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from tracekit.formatting import counted
from tracekit.phases import attribute, heuristics
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


def marker_texts(connection: Connection, run_id: int, markers: MarkerSet) -> dict[str, StepInfo]:
    """Distinct range texts of the run that are step markers, parsed."""
    likes = markers.prefilters()
    if not likes:
        return {}
    params: dict[str, Any] = {"run_id": run_id}
    clauses = []
    for index, like in enumerate(likes):
        params[f"like{index}"] = like
        clauses.append(f"text LIKE :like{index}")
    rows = connection.execute(text_with_lists(
        "SELECT DISTINCT text FROM nvtx_ranges WHERE run_id = :run_id "
        "AND kind IN :range_kinds AND text IS NOT NULL "
        f"AND ({' OR '.join(clauses)})", range_kinds=NVTX_RANGE_KINDS), params)
    return markers.parse_all(row[0] for row in rows)


def _range_count(connection: Connection, run_id: int) -> int:
    return run_counts(connection, run_id)["nvtx_ranges"]


def prepare_steps(connection: Connection, run_id: int, infos: dict[str, StepInfo]) -> bool:
    """Make the run's marker steps before its kernels are copied, and the launch lookup.

    Called by readers that copy kernels in one INSERT … SELECT (nsys): they then select
    ``attribute.launch_step_join`` for each kernel. ``infos`` are the run's marker texts
    (``marker_texts``). Returns False — nothing prepared, the stage will do everything
    later — when there are no step markers, or when a marker range was never closed (its
    end is the end of the capture, unknown until kernels are in).
    """
    if not infos or connection.execute(text_with_lists(
            "SELECT 1 FROM nvtx_ranges WHERE run_id = :run_id AND end_ns IS NULL "
            "AND kind IN :range_kinds LIMIT 1", range_kinds=NVTX_RANGE_KINDS),
            {"run_id": run_id}).first():
        return False
    _load_marker_table(connection, infos)
    _insert_marker_steps(connection, run_id, {"run_id": run_id, "run_end": None})
    connection.execute(text("DROP TABLE tk_marker_texts"))
    attribute.load_launch_lookup(connection, run_id)
    return True


def _from_markers(connection: Connection, run_id: int, infos: dict[str, StepInfo], *,
                  kernels_attributed: bool = False) -> PhaseReport:
    _load_marker_table(connection, infos)
    params = {"run_id": run_id, "run_end": _capture_end(connection, run_id)}
    marker_ranges, step_ranges = connection.execute(text_with_lists(
        "SELECT COUNT(*), SUM(CASE WHEN m.phase <> 'idle' THEN 1 ELSE 0 END) "
        "FROM nvtx_ranges n JOIN tk_marker_texts m ON m.text = n.text "
        "WHERE n.run_id = :run_id AND n.kind IN :range_kinds",
        range_kinds=NVTX_RANGE_KINDS), params).one()
    if not kernels_attributed:
        _insert_marker_steps(connection, run_id, params)
    connection.execute(text("DROP TABLE tk_marker_texts"))
    if not kernels_attributed:
        attribute.attribute_by_launch(connection, run_id)
    return _marker_report(connection, run_id, infos, int(marker_ranges or 0),
                          int(step_ranges or 0))


def _insert_marker_steps(connection: Connection, run_id: int, params: dict[str, Any]) -> None:
    """One step per outermost marker range that is not idle (needs ``tk_marker_texts``)."""
    # Open ranges (never popped) end at the end of the capture, as nsys' projection does.
    # A marker range nested in an earlier one on the same thread is the same step marked
    # twice (an engine's marker inside a user's tracekit.mark, say): the outermost range is
    # the step. A running maximum of earlier ends per thread finds them in the same sort.
    connection.execute(text_with_lists("""
        INSERT INTO steps (run_id, nvtx_id, engine, phase, source, text, start_ns, end_ns,
                           global_tid, global_pid, prefill_tokens, decode_tokens,
                           prefill_requests, decode_requests)
        SELECT :run_id, id, engine, phase, 'marker', text, start_ns, end_ns, global_tid,
               global_pid, prefill_tokens, decode_tokens, prefill_requests, decode_requests
        FROM (SELECT n.id, n.text, n.start_ns, COALESCE(n.end_ns, :run_end) AS end_ns,
                     n.global_tid, n.global_pid, m.engine, m.phase, m.prefill_tokens,
                     m.decode_tokens, m.prefill_requests, m.decode_requests,
                     MAX(COALESCE(n.end_ns, :run_end)) OVER (
                         PARTITION BY n.global_tid
                         ORDER BY n.start_ns, COALESCE(n.end_ns, :run_end) DESC, n.id
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS outer_end
              FROM nvtx_ranges n JOIN tk_marker_texts m ON m.text = n.text
              WHERE n.run_id = :run_id AND n.kind IN :range_kinds AND m.phase <> 'idle'
             ) AS ranges
        WHERE outer_end IS NULL OR outer_end < end_ns
        ORDER BY global_tid, start_ns, id""", range_kinds=NVTX_RANGE_KINDS), params)


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


def _load_marker_table(connection: Connection, infos: dict[str, StepInfo]) -> None:
    connection.execute(text("DROP TABLE IF EXISTS tk_marker_texts"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_marker_texts (text TEXT PRIMARY KEY, engine VARCHAR(32), "
        "phase VARCHAR(16), prefill_tokens BIGINT, decode_tokens BIGINT, "
        "prefill_requests BIGINT, decode_requests BIGINT)"))
    connection.execute(text(
        "INSERT INTO tk_marker_texts VALUES (:text, :engine, :phase, :prefill_tokens, "
        ":decode_tokens, :prefill_requests, :decode_requests)"),
        [{"text": marker_text, "engine": info.engine, "phase": info.phase,
          "prefill_tokens": info.prefill_tokens, "decode_tokens": info.decode_tokens,
          "prefill_requests": info.prefill_requests, "decode_requests": info.decode_requests}
         for marker_text, info in infos.items()])
