"""Per-name groups: the single pass over a run's kernel records that later stages share.

A run has millions of kernel records but thousands of (name, device, launching thread,
phase) combinations. After phases are attributed, the records are summed into
``kernel_groups``; findings, the analysis document and the launcher table then read those
few thousand rows instead of scanning the records again (three scans became one).

How the sum is taken depends on the database. PostgreSQL hash-aggregates a plain
``GROUP BY``. SQLite only aggregates by sorting, and sorting 10^7 rows into a few thousand
groups is slower than summing into a small keyed TEMP table with an UPSERT per record (a
hash aggregate by another name: every probe hits a tree of a few thousand rows in cache);
the figures are in tests/benchmarks/README.md.

That pass only reads committed kernel records, so right after an ingest that already gave
every kernel its step (``IngestTimeSteps``) it can run on a second connection and core
(``GroupsInBackground``) while classification and phases run on the first; the sqlite3
and psycopg drivers release the GIL while a statement runs. Its rows are used only when
the phases stage left the kernel records as the ingest wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy import Connection, text

from tracekit.store.db import SQLITE_CACHE_KIB, Store
from tracekit.store.sql import insert_rows

#: Stand-in for NULL in the TEMP table's key (NULLs are all distinct in a SQLite key).
_NO_VALUE = -9223372036854775808

_KEY_AND_SUMS = ("name_id", "device", "global_tid", "global_pid", "phase", "count", "total_ns",
                 "first_start_ns", "last_end_ns")

GroupRow = tuple[Any, ...]

#: page cache of the background connection, in KiB (it only scans)
SCAN_CACHE_KIB = 16_000


def refresh_kernel_groups(connection: Connection, run_id: int) -> int:
    """Rewrite the run's ``kernel_groups`` from its kernels; returns the number of groups."""
    return write_kernel_groups(connection, run_id, sum_kernel_groups(connection, run_id))


def write_kernel_groups(connection: Connection, run_id: int, rows: Sequence[GroupRow]) -> int:
    """Replace the run's ``kernel_groups`` with ``rows`` (from ``sum_kernel_groups``)."""
    connection.execute(text("DELETE FROM kernel_groups WHERE run_id = :run_id"),
                       {"run_id": run_id})
    insert_rows(connection, "kernel_groups", ("run_id", *_KEY_AND_SUMS),
                [(run_id, *row) for row in rows])
    return len(rows)


def sum_kernel_groups(connection: Connection, run_id: int) -> list[GroupRow]:
    """One row per (name, device, thread, process, phase): count, time, first and last."""
    params = {"run_id": run_id}
    if connection.dialect.name == "sqlite":
        return _sum_by_upsert(connection, params)
    return [tuple(row) for row in connection.execute(text("""
        SELECT name_id, device, global_tid, global_pid, COALESCE(phase, 'unattributed'),
               COUNT(*), SUM(end_ns - start_ns), MIN(start_ns), MAX(end_ns)
        FROM kernels WHERE run_id = :run_id
        GROUP BY name_id, device, global_tid, global_pid, phase"""), params)]


def _sum_by_upsert(connection: Connection, params: dict[str, int]) -> list[GroupRow]:
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
    rows = [tuple(row) for row in connection.execute(text(f"""
        SELECT name_id, NULLIF(device, {none}), NULLIF(global_tid, {none}),
               NULLIF(global_pid, {none}), phase, count, total_ns, first_start_ns, last_end_ns
        FROM temp.tk_kernel_groups"""))]
    connection.execute(text("DROP TABLE temp.tk_kernel_groups"))
    return rows


class GroupsInBackground:
    """``sum_kernel_groups`` of a committed run on its own connection and thread.

    Use as a context manager around the stages that may run meanwhile; ``rows()`` waits for
    the result. Leaving the block waits for the thread, so no connection outlives it; leaving
    it on an error (or Ctrl-C) first interrupts the SQLite statement still running.
    """

    def __init__(self, store: Store, run_id: int) -> None:
        self._store = store
        self._run_id = run_id
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracekit-groups")
        self._future: Future[list[GroupRow]] | None = None
        self._driver_connection: Any = None

    def __enter__(self) -> GroupsInBackground:
        self._future = self._pool.submit(self._sum)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_exc: object) -> None:
        if exc_type is not None and hasattr(self._driver_connection, "interrupt"):
            self._driver_connection.interrupt()
        self._pool.shutdown(wait=True)

    def rows(self) -> list[GroupRow]:
        """The groups as of the ingest's commit (raises what the thread raised)."""
        assert self._future is not None, "use GroupsInBackground as a context manager"
        return self._future.result()

    def _sum(self) -> list[GroupRow]:
        with self._store.connect() as connection:
            self._driver_connection = connection.connection.dbapi_connection
            if self._store.is_sqlite:
                # One sequential scan: a big page cache would only add to the peak RSS.
                connection.exec_driver_sql(f"PRAGMA cache_size = -{SCAN_CACHE_KIB}")
            try:
                return sum_kernel_groups(connection, self._run_id)
            finally:
                self._driver_connection = None
                connection.rollback()
                if self._store.is_sqlite:
                    connection.exec_driver_sql(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
