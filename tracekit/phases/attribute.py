"""Kernel → step attribution as set-based SQL (sorted index lookups, never ranges × kernels).

A kernel belongs to the step whose range, on the thread that launched it, contains its launch
call (the nsys NVTX projection rule, shared/research/formats.md §A.6). CUDA-graph kernels
replayed with ``--cuda-graph-trace=node`` carry the correlation id of their
``cudaGraphLaunch``, so ingest already gave them that launch's thread and time: they land in
the step around the replay, like any other kernel.

The lookup per kernel is "the latest step on the same thread starting at or before the launch"
— one index seek in a temporary ``(global_tid, start_ns)`` index — followed by a containment
check on the launch end. Kernels whose launch record is missing (trace cut before the launch)
fall back to GPU time: the step of the same process whose GPU projection contains them.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

_TEMP_TABLES = ("tk_phase_steps", "tk_kernel_step", "tk_step_gpu")


def drop_temp_tables(connection: Connection) -> None:
    """Remove this module's scratch tables (they live only for the connection anyway)."""
    for name in _TEMP_TABLES:
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def drop_nested_steps(connection: Connection, run_id: int) -> int:
    """Delete marker steps nested inside another step on the same thread; return how many.

    One engine step can carry two markers (an engine's and a user's ``tracekit.mark`` around
    it, or a record_function mirrored as NVTX): the outermost range is the step. A running
    maximum of earlier ends per thread finds the nested ones in one sorted pass.
    """
    result = connection.execute(text("""
        DELETE FROM steps WHERE id IN (
          SELECT id FROM (
            SELECT id, end_ns, MAX(end_ns) OVER (
                PARTITION BY global_tid ORDER BY start_ns, end_ns DESC, id
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS outer_end
            FROM steps WHERE run_id = :run_id) AS ordered
          WHERE outer_end >= end_ns)"""), {"run_id": run_id})
    return int(result.rowcount or 0)


def attribute_by_launch(connection: Connection, run_id: int) -> int:
    """Set ``kernels.step_id``/``phase`` from launch-time containment; return kernels set."""
    drop_temp_tables(connection)
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_phase_steps AS SELECT id, global_tid, global_pid, start_ns, "
        "end_ns, phase FROM steps WHERE run_id = :run_id"), {"run_id": run_id})
    connection.execute(text(
        "CREATE INDEX tk_phase_steps_tid ON tk_phase_steps (global_tid, start_ns)"))
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_kernel_step AS
        SELECT c.kernel_id, c.step_id FROM (
          SELECT k.id AS kernel_id, k.launch_start_ns, k.launch_end_ns,
                 (SELECT s.id FROM tk_phase_steps s
                  WHERE s.global_tid = k.global_tid AND s.start_ns <= k.launch_start_ns
                  ORDER BY s.start_ns DESC, s.id DESC LIMIT 1) AS step_id
          FROM kernels k
          WHERE k.run_id = :run_id AND k.launch_start_ns IS NOT NULL
            AND k.global_tid IN (SELECT DISTINCT global_tid FROM tk_phase_steps)) AS c
        JOIN tk_phase_steps s ON s.id = c.step_id
        WHERE s.end_ns >= COALESCE(c.launch_end_ns, c.launch_start_ns)"""), {"run_id": run_id})
    return _apply(connection)


def _apply(connection: Connection) -> int:
    result = connection.execute(text("""
        UPDATE kernels SET step_id = m.step_id, phase = m.phase
        FROM (SELECT t.kernel_id, t.step_id, s.phase FROM tk_kernel_step t
              JOIN tk_phase_steps s ON s.id = t.step_id) AS m
        WHERE kernels.id = m.kernel_id"""))
    return int(result.rowcount or 0)


def project_to_gpu(connection: Connection, run_id: int) -> None:
    """Each step's GPU interval: first kernel start to last kernel end of its kernels."""
    connection.execute(text("DROP TABLE IF EXISTS tk_step_gpu"))
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_step_gpu AS
        SELECT step_id, MIN(start_ns) AS gpu_start, MAX(end_ns) AS gpu_end
        FROM kernels WHERE run_id = :run_id AND step_id IS NOT NULL GROUP BY step_id"""),
        {"run_id": run_id})
    connection.execute(text("""
        UPDATE steps SET gpu_start_ns = g.gpu_start, gpu_end_ns = g.gpu_end
        FROM tk_step_gpu AS g WHERE steps.id = g.step_id"""))


def attribute_orphans_by_gpu_time(connection: Connection, run_id: int) -> int:
    """Kernels without a launch record: the step of their process whose GPU span holds them."""
    connection.execute(text("DROP TABLE IF EXISTS tk_kernel_step"))
    connection.execute(text("DELETE FROM tk_phase_steps"))
    connection.execute(text("""
        INSERT INTO tk_phase_steps (id, global_tid, global_pid, start_ns, end_ns, phase)
        SELECT id, global_pid, global_pid, gpu_start_ns, gpu_end_ns, phase FROM steps
        WHERE run_id = :run_id AND gpu_start_ns IS NOT NULL"""), {"run_id": run_id})
    # tk_phase_steps now holds GPU spans keyed by process (in the global_tid column, so the
    # same (global_tid, start_ns) index serves the lookup).
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_kernel_step AS
        SELECT c.kernel_id, c.step_id FROM (
          SELECT k.id AS kernel_id, k.end_ns,
                 (SELECT s.id FROM tk_phase_steps s
                  WHERE s.global_tid = k.global_pid AND s.start_ns <= k.start_ns
                  ORDER BY s.start_ns DESC, s.id DESC LIMIT 1) AS step_id
          FROM kernels k
          WHERE k.run_id = :run_id AND k.launch_start_ns IS NULL AND k.step_id IS NULL
            AND k.global_pid IN (SELECT DISTINCT global_tid FROM tk_phase_steps)) AS c
        JOIN tk_phase_steps s ON s.id = c.step_id
        WHERE s.end_ns >= c.end_ns"""), {"run_id": run_id})
    return _apply(connection)
