"""Per-name groups: the single pass over a run's kernel records that later stages share.

A run has millions of kernel records but thousands of (name, device, launching thread,
phase) combinations. After phases are attributed, ``refresh_kernel_groups`` sums the records
into ``kernel_groups`` with one ``INSERT … SELECT … GROUP BY``; findings, the analysis
document and the launcher table then read those few thousand rows instead of scanning
the records again (three scans became one: measured in tests/benchmarks/bench_analyze.py).
"""

from __future__ import annotations

from sqlalchemy import Connection, text


def refresh_kernel_groups(connection: Connection, run_id: int) -> int:
    """Rewrite the run's ``kernel_groups`` from its kernels; returns the number of groups."""
    params = {"run_id": run_id}
    connection.execute(text("DELETE FROM kernel_groups WHERE run_id = :run_id"), params)
    result = connection.execute(text("""
        INSERT INTO kernel_groups (run_id, name_id, device, global_tid, global_pid, phase,
                                   count, total_ns, first_start_ns, last_end_ns)
        SELECT :run_id, name_id, device, global_tid, global_pid,
               COALESCE(phase, 'unattributed'), COUNT(*), SUM(end_ns - start_ns),
               MIN(start_ns), MAX(end_ns)
        FROM kernels WHERE run_id = :run_id
        GROUP BY name_id, device, global_tid, global_pid, phase
    """), params)
    return int(result.rowcount or 0)
