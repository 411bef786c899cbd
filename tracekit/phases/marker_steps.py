"""Engine steps made from step-marker ranges: which distinct range texts are markers, and one
step row per outermost marker range.

Shared by the phases stage and by the steps the ingest makes while it copies kernels
(``tracekit.phases.ingest_time``): both import it, and neither the other.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from tracekit.phases import attribute
from tracekit.phases.markers import MarkerSet, StepInfo
from tracekit.store.schema import NVTX_RANGE_KINDS
from tracekit.store.sql import text_with_lists


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
    load_marker_table(connection, infos)
    insert_marker_steps(connection, run_id, {"run_id": run_id, "run_end": None})
    connection.execute(text("DROP TABLE tk_marker_texts"))
    attribute.load_launch_lookup(connection, run_id)
    return True


def insert_marker_steps(connection: Connection, run_id: int, params: dict[str, Any]) -> None:
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


def load_marker_table(connection: Connection, infos: dict[str, StepInfo]) -> None:
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
