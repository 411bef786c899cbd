"""Per-name groups: the single pass over a run's kernel records that later stages share.

A run has millions of kernel records but thousands of (name, device, launching thread,
phase) combinations. After phases are attributed, ``refresh_kernel_groups`` sums the records
into ``kernel_groups``; findings, the analysis document and the launcher table then read
those few thousand rows instead of scanning the records again (three scans became one).

How the sum is taken depends on the database. PostgreSQL hash-aggregates a plain
``GROUP BY``. SQLite only aggregates by sorting, and sorting 10^7 rows into 3,000 groups
took 14.7 s; summing into a small keyed TEMP table with an UPSERT per record (a hash
aggregate by another name: every probe hits a tree of a few thousand rows in cache) takes
9.5 s on the same run (tests/benchmarks/bench_analyze.py, 10^7 kernels).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

#: Stand-in for NULL in the TEMP table's key (NULLs are all distinct in a SQLite key).
_NO_VALUE = -9223372036854775808

_COLUMNS = ("run_id, name_id, device, global_tid, global_pid, phase, count, total_ns, "
            "first_start_ns, last_end_ns")


def refresh_kernel_groups(connection: Connection, run_id: int) -> int:
    """Rewrite the run's ``kernel_groups`` from its kernels; returns the number of groups."""
    params = {"run_id": run_id}
    connection.execute(text("DELETE FROM kernel_groups WHERE run_id = :run_id"), params)
    if connection.dialect.name == "sqlite":
        return _sum_by_upsert(connection, params)
    result = connection.execute(text(f"""
        INSERT INTO kernel_groups ({_COLUMNS})
        SELECT :run_id, name_id, device, global_tid, global_pid,
               COALESCE(phase, 'unattributed'), COUNT(*), SUM(end_ns - start_ns),
               MIN(start_ns), MAX(end_ns)
        FROM kernels WHERE run_id = :run_id
        GROUP BY name_id, device, global_tid, global_pid, phase"""), params)
    return int(result.rowcount or 0)


def _sum_by_upsert(connection: Connection, params: dict[str, int]) -> int:
    none = _NO_VALUE
    connection.execute(text("DROP TABLE IF EXISTS temp.tk_kernel_groups"))
    connection.execute(text(
        "CREATE TEMP TABLE tk_kernel_groups (name_id INTEGER, device INTEGER, "
        "global_tid INTEGER, global_pid INTEGER, phase TEXT, count INTEGER, total_ns INTEGER, "
        "first_start_ns INTEGER, last_end_ns INTEGER, "
        "PRIMARY KEY (name_id, device, global_tid, global_pid, phase))"))
    # "WHERE true" keeps SQLite's parser from reading ON CONFLICT as a join constraint.
    connection.execute(text(f"""
        INSERT INTO temp.tk_kernel_groups
        SELECT name_id, COALESCE(device, {none}), COALESCE(global_tid, {none}),
               COALESCE(global_pid, {none}), COALESCE(phase, 'unattributed'), 1,
               end_ns - start_ns, start_ns, end_ns
        FROM kernels WHERE run_id = :run_id AND true
        ON CONFLICT DO UPDATE SET count = count + 1, total_ns = total_ns + excluded.total_ns,
            first_start_ns = MIN(first_start_ns, excluded.first_start_ns),
            last_end_ns = MAX(last_end_ns, excluded.last_end_ns)"""), params)
    result = connection.execute(text(f"""
        INSERT INTO kernel_groups ({_COLUMNS})
        SELECT :run_id, name_id, NULLIF(device, {none}), NULLIF(global_tid, {none}),
               NULLIF(global_pid, {none}), phase, count, total_ns, first_start_ns, last_end_ns
        FROM temp.tk_kernel_groups"""), params)
    connection.execute(text("DROP TABLE temp.tk_kernel_groups"))
    return int(result.rowcount or 0)
