"""How many records of each kind a run holds, counted once at ingest (``run_counts``).

The document's summary, the findings (NVTX markers lost?), the phases message and ``tracekit
runs`` all ask how many ranges, calls, ops a run has. Counted on demand, each question read
every NVTX event of the run again: four scans of millions of events per analysis
(tests/benchmarks/README.md, issue #14), and a stored run's report paid them again. Readers that
know their counts (the nsys reader's copies return them) hand them over; the rest are counted
here once, in the ingest transaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Connection, text

from tracekit.store.schema import NVTX_RANGE_KINDS
from tracekit.store.sql import text_with_lists

#: count name → SQL counting it for ``:run_id`` (what a reader did not say)
COUNT_SQL: dict[str, str] = {
    "kernels": "SELECT COUNT(*) FROM kernels WHERE run_id = :run_id",
    "kernel_names": "SELECT COUNT(*) FROM kernel_names WHERE run_id = :run_id",
    "runtime_calls": "SELECT COUNT(*) FROM runtime_calls WHERE run_id = :run_id",
    "memory_ops": "SELECT COUNT(*) FROM memory_ops WHERE run_id = :run_id",
    "cpu_ops": "SELECT COUNT(*) FROM cpu_ops WHERE run_id = :run_id",
    "processes": "SELECT COUNT(*) FROM processes WHERE run_id = :run_id",
    "threads": "SELECT COUNT(*) FROM threads WHERE run_id = :run_id",
}
#: NVTX event kinds, counted together in one pass: ranges, marks, domain creations, and the
#: torch profiler's ``nn.Module`` frames (kind ``module``, kept for the layer attribution)
NVTX_COUNTS = ("nvtx_ranges", "nvtx_marks", "nvtx_domains", "module_frames")
NVTX_COUNT_SQL = text_with_lists(
    "SELECT COALESCE(SUM(CASE WHEN kind IN :range_kinds THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(CASE WHEN kind = 'mark' THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(CASE WHEN kind = 'domain_create' THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(CASE WHEN kind = 'module' THEN 1 ELSE 0 END), 0) "
    "FROM nvtx_ranges WHERE run_id = :run_id", range_kinds=NVTX_RANGE_KINDS)
NAMES = (*COUNT_SQL, *NVTX_COUNTS)


def count_records(connection: Connection, run_id: int,
                  known: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every count of ``NAMES`` for the run: ``known`` ones as given, the rest by SQL."""
    counts = {name: int(value) for name, value in (known or {}).items() if name in NAMES}
    params = {"run_id": run_id}
    for name, sql in COUNT_SQL.items():
        if name not in counts:
            counts[name] = int(connection.execute(text(sql), params).scalar_one())
    if not all(name in counts for name in NVTX_COUNTS):
        values = connection.execute(NVTX_COUNT_SQL, params).one()
        for name, value in zip(NVTX_COUNTS, values, strict=True):
            counts.setdefault(name, int(value))
    return counts


def record_counts(connection: Connection, run_id: int,
                  known: Mapping[str, int] | None = None) -> dict[str, int]:
    """Count the run's records (see ``count_records``) and store them in ``run_counts``."""
    counts = count_records(connection, run_id, known)
    connection.execute(text("DELETE FROM run_counts WHERE run_id = :run_id"), {"run_id": run_id})
    connection.execute(text("INSERT INTO run_counts (run_id, name, count) "
                            "VALUES (:run_id, :name, :count)"),
                       [{"run_id": run_id, "name": name, "count": count}
                        for name, count in sorted(counts.items())])
    return counts


def run_counts(connection: Connection, run_id: int) -> dict[str, int]:
    """The run's counts as stored at ingest (every name of ``NAMES``)."""
    stored = {str(name): int(count) for name, count in connection.execute(text(
        "SELECT name, count FROM run_counts WHERE run_id = :run_id"), {"run_id": run_id})}
    if all(name in stored for name in NAMES):
        return stored
    return count_records(connection, run_id, stored)
