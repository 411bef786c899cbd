"""Runs over time: list what the store holds, delete runs whole.

Listing reads only the ``runs`` table and the counts taken at ingest (``run_counts``; a
run without them is counted through the ``run_id`` index), so it stays instant on a team
store with hundreds of 10^7-kernel runs.

Deleting removes a run's rows table by table, children first, in one transaction. On SQLite
foreign-key enforcement is switched off for that transaction (``Store.begin``): every
dependent row goes in the same transaction anyway, and letting SQLite check
``kernels.name_id`` (not indexed on its own) for every deleted kernel name would scan the
whole kernels table once per name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select

from tracekit.errors import StoreError
from tracekit.store.db import Store
from tracekit.store.schema import Base, KernelRow, RunCountRow, RunRow


@dataclass(frozen=True)
class RunSummary:
    """One line of ``tracekit runs``."""

    id: int
    created_at: str
    source: str
    format: str
    gpu: str | None
    engine: str | None
    model_label: str | None
    label: str | None
    verdict: str | None
    kernels: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def first_sentence(verdict: str | None) -> str | None:
    """The headline of a stored verdict (its first non-empty line)."""
    if not verdict:
        return None
    return next((line.strip() for line in verdict.splitlines() if line.strip()), None)


def list_runs(connection: Connection) -> list[RunSummary]:
    """Every run, oldest first."""
    rows = connection.execute(select(
        RunRow.id, RunRow.created_at, RunRow.source_path, RunRow.format, RunRow.gpu, RunRow.engine,
        RunRow.model_label, RunRow.label, RunRow.verdict).order_by(RunRow.id)).all()
    counted = dict(connection.execute(
        select(RunCountRow.run_id, RunCountRow.count).where(RunCountRow.name == "kernels")).all())
    summaries = []
    for row in rows:
        kernels = counted.get(row.id)
        if kernels is None:
            kernels = connection.execute(
                select(func.count()).select_from(KernelRow).where(KernelRow.run_id == row.id)
            ).scalar_one()
        created = row.created_at.isoformat(timespec="seconds") if row.created_at else ""
        summaries.append(RunSummary(
            id=row.id, created_at=created, source=row.source_path, format=row.format,
            gpu=row.gpu, engine=row.engine, model_label=row.model_label, label=row.label,
            verdict=first_sentence(row.verdict), kernels=int(kernels)))
    return summaries


class UnknownRun(StoreError):
    """A run id the store does not hold."""


def delete_runs(store: Store, run_ids: Sequence[int]) -> list[int]:
    """Delete whole runs; all ids must exist (else nothing is deleted). Returns the ids."""
    ids = sorted(set(run_ids))
    with store.begin(enforce_foreign_keys=False) as connection:
        found = set(connection.execute(select(RunRow.id).where(RunRow.id.in_(ids))).scalars())
        missing = [run_id for run_id in ids if run_id not in found]
        if missing:
            raise UnknownRun(f"no run {', '.join(map(str, missing))} in store",
                             hint="`tracekit runs` lists the runs")
        for table in reversed(Base.metadata.sorted_tables):
            if table.name != "runs" and "run_id" in table.c:
                connection.execute(delete(table).where(table.c.run_id.in_(ids)))
        connection.execute(delete(RunRow).where(RunRow.id.in_(ids)))
    return ids
