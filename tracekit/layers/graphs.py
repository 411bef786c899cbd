"""Graph-level Nsight Systems reports: CUDA-graph launches whose kernels are not in the trace.

Recorded without ``--cuda-graph-trace=node`` (nsys's default is ``graph`` where the driver
supports it), a graph replay is one item: its kernels, whose names are what tracekit
classifies, are absent from the kernel table. What remains is the ``cudaGraphLaunch`` call on
the CPU (stored in ``runtime_calls``: it launches no kernel row) and, in the export's
capture metadata when recorded, the mode (``runs.meta_json`` ``cuda_graph_trace``). With
node tracing, every node kernel carries the correlation id of its graph launch in the same
process (docs/formats.md#the-sqlite-export), so a launch no kernel answers was traced at the
graph level. ``graph_trace_gap`` counts those launches and the steps that hold graph
launches but no kernel at all; the findings stage turns them into a finding naming the flag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import Connection, text

from tracekit.store.sql import text_with_lists

#: the flag that records each replayed node as a kernel
NODE_FLAG = "--cuda-graph-trace=node"
#: runtime / driver calls that launch a CUDA graph (nsys and Kineto spell them so)
GRAPH_LAUNCH_PATTERNS = ("cudaGraphLaunch%", "cuGraphLaunch%")


@dataclass(frozen=True)
class GraphGap:
    """Graph launches without the kernels they ran."""

    graph_launches: int  # cudaGraphLaunch calls in the run
    launches_without_kernels: int  # of them, those no kernel row answers
    steps_with_graph_launches: int  # steps (of the phases stage) holding graph launches
    steps_without_kernels: int  # of those, steps with no kernel at all
    mode: str | None  # the export's recorded --cuda-graph-trace mode, when it has one
    flag: str = NODE_FLAG


def graph_trace_gap(connection: Connection, run_id: int) -> GraphGap | None:
    """The run's graph launches that have no kernels, or None when there are none (no
    graph launches, or every one of them has its node kernels)."""
    clauses = " OR ".join(f"name LIKE :p{i}" for i in range(len(GRAPH_LAUNCH_PATTERNS)))
    ids = [int(row[0]) for row in connection.execute(text(
        f"SELECT id FROM api_names WHERE run_id = :run_id AND ({clauses})"),
        {"run_id": run_id, **{f"p{i}": p for i, p in enumerate(GRAPH_LAUNCH_PATTERNS)}})]
    if not ids:
        return None
    params = {"run_id": run_id}
    connection.execute(text("DROP TABLE IF EXISTS tk_graph_launches"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_graph_launches (id BIGINT PRIMARY KEY, pid BIGINT, "
        "tid BIGINT, correlation BIGINT, start_ns BIGINT, answered INTEGER)"))
    connection.execute(text_with_lists(
        "INSERT INTO tk_graph_launches SELECT r.id, r.global_pid, r.global_tid, "
        "r.correlation_id, r.start_ns, 0 FROM runtime_calls AS r "
        "WHERE r.run_id = :run_id AND r.name_id IN :ids", ids=ids), params)
    connection.execute(text(
        "CREATE INDEX tk_graph_launches_key ON tk_graph_launches (pid, correlation)"))
    # The launches some kernel answers: the run's kernels the outer loop, a key search each.
    connection.execute(text("""
        UPDATE tk_graph_launches SET answered = 1 WHERE id IN (
            SELECT g.id FROM kernels AS k CROSS JOIN tk_graph_launches AS g
            WHERE k.run_id = :run_id AND k.correlation_id IS NOT NULL
              AND g.pid = k.global_pid AND g.correlation = k.correlation_id)"""), params)
    launches, unanswered = connection.execute(text(
        "SELECT COUNT(*), COALESCE(SUM(1 - answered), 0) FROM tk_graph_launches")).one()
    if not launches or not unanswered:
        connection.execute(text("DROP TABLE tk_graph_launches"))
        return None
    steps, empty = _steps_with_launches(connection, run_id)
    connection.execute(text("DROP TABLE tk_graph_launches"))
    return GraphGap(graph_launches=int(launches), launches_without_kernels=int(unanswered),
                    steps_with_graph_launches=steps, steps_without_kernels=empty,
                    mode=_recorded_mode(connection, run_id))


def _steps_with_launches(connection: Connection, run_id: int) -> tuple[int, int]:
    """(steps holding a graph launch, those of them without any kernel): each launch finds
    the latest step on its thread starting before it (one seek, as the phases stage does)."""
    connection.execute(text("DROP TABLE IF EXISTS tk_graph_steps"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_graph_steps (id BIGINT PRIMARY KEY, tid BIGINT, "
        "start_ns BIGINT, end_ns BIGINT, empty INTEGER)"))
    connection.execute(text(
        "INSERT INTO tk_graph_steps SELECT id, global_tid, start_ns, end_ns, "
        "CASE WHEN gpu_start_ns IS NULL THEN 1 ELSE 0 END FROM steps "
        "WHERE run_id = :run_id AND global_tid IS NOT NULL"), {"run_id": run_id})
    connection.execute(text(
        "CREATE INDEX tk_graph_steps_seek ON tk_graph_steps (tid, start_ns, end_ns, id)"))
    steps, empty = connection.execute(text("""
        SELECT COUNT(*), COALESCE(SUM(s.empty), 0) FROM tk_graph_steps AS s
        WHERE s.id IN (
            SELECT (SELECT CASE WHEN p.end_ns >= g.start_ns THEN p.id END
                    FROM tk_graph_steps AS p
                    WHERE p.tid = g.tid AND p.start_ns <= g.start_ns
                    ORDER BY p.start_ns DESC LIMIT 1)
            FROM tk_graph_launches AS g)""")).one()
    connection.execute(text("DROP TABLE tk_graph_steps"))
    return int(steps), int(empty)


def _recorded_mode(connection: Connection, run_id: int) -> str | None:
    raw = connection.execute(text("SELECT meta_json FROM runs WHERE id = :run_id"),
                             {"run_id": run_id}).scalar()
    try:
        meta = json.loads(raw) if raw else {}
    except ValueError:
        return None
    mode = meta.get("cuda_graph_trace") if isinstance(meta, dict) else None
    return str(mode) if mode is not None else None
