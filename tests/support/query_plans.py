"""Watch every SQL statement a command runs on a SQLite store and flag plans that are not linear.

SQLite has no statistics on a fresh store, so a join's plan is the planner's guess: a guess
that puts the big table inside the loop turns a join of two 10^5-row tables into 10^10 row
visits (the classify stage once scanned every kernel of a run for each of 178,000 CPU ops).
``watch_plans`` asks SQLite for the plan of each statement at the moment it runs (its temp
tables and parameters as they are then) and ``quadratic`` names the statements whose plan
scans a table inside a loop over another: a full ``SCAN`` (or a ``SEARCH`` that names no
index, or one keyed by the run alone, which visits every row of the run) that is not the
outermost loop of its query, or that sits in a correlated subquery (run once per outer row;
an automatic index there is rebuilt for every row). Searches through an index on a
join key are what a linear plan is made of; tables in ``SMALL_TABLES`` hold a handful of rows
per run and may be scanned anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

#: tables that hold a handful of rows per run: a scan of them inside a loop costs nothing
SMALL_TABLES = frozenset({"runs", "devices", "tk_file", "findings", "alembic_version",
                          "sqlite_master", "sqlite_temp_master", "sqlite_schema"})
_PLANNED = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE\s+(TEMP\w*\s+)?TABLE)",
                      re.IGNORECASE)
_LOOP = re.compile(r"^(SCAN|SEARCH) (?:TABLE )?(\S+)(?:.*\((.*)\))?")
#: a search whose only key is the run is a scan of that run's rows
_RUN_ONLY = re.compile(r"^run_id=\?$")
_SUBQUERY = re.compile(r"^(CORRELATED )?(SCALAR|LIST) SUBQUERY|^MATERIALIZE|^CO-ROUTINE")


@dataclass
class Plan:
    """One statement as run, and its plan rows ``(id, parent, detail)``."""

    sql: str
    rows: list[tuple[int, int, str]]

    def inner_scans(self) -> list[str]:
        """Tables scanned inside a loop: the reasons this plan is not linear."""
        children: dict[int, list[tuple[int, str]]] = {}
        for node, parent, detail in self.rows:
            children.setdefault(parent, []).append((node, detail))
        found: list[str] = []

        def walk(parent: int, per_outer_row: bool) -> None:
            loops = 0
            for node, detail in children.get(parent, []):
                subquery = _SUBQUERY.match(detail)
                if subquery:
                    walk(node, per_outer_row=bool(subquery.group(1)))
                    continue
                loop = _LOOP.match(detail)
                if loop and "CONSTANT ROW" not in detail:
                    kind, table, key = loop.groups()
                    whole = (kind == "SCAN" or " USING " not in detail
                             or bool(_RUN_ONLY.match(key or ""))
                             or (per_outer_row and "AUTOMATIC" in detail))
                    if whole and (loops > 0 or per_outer_row) and table not in SMALL_TABLES:
                        found.append(detail)
                    loops += 1
                walk(node, per_outer_row)

        walk(0, per_outer_row=False)
        return found


@dataclass
class PlanWatch:
    """Plans of the statements run while watching."""

    plans: list[Plan] = field(default_factory=list)

    def quadratic(self) -> list[str]:
        """One line per statement whose plan scans a big table inside a loop."""
        lines = []
        for plan in self.plans:
            scans = plan.inner_scans()
            if scans:
                sql = " ".join(plan.sql.split())
                lines.append(f"{'; '.join(scans)}  <-  {sql[:1500]}")
        return lines


@contextmanager
def watch_plans() -> Iterator[PlanWatch]:
    """Record the plan of every statement any SQLite engine runs inside the block."""
    watch = PlanWatch()

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        if conn.dialect.name != "sqlite" or executemany or not _PLANNED.match(statement):
            return
        raw = conn.connection.dbapi_connection
        try:
            rows = raw.execute("EXPLAIN QUERY PLAN " + statement, parameters or ()).fetchall()
        except Exception:  # noqa: BLE001 - a statement EXPLAIN cannot plan is not a join
            return
        watch.plans.append(Plan(statement, [(r[0], r[1], str(r[3])) for r in rows]))

    event.listen(Engine, "before_cursor_execute", before)
    try:
        yield watch
    finally:
        event.remove(Engine, "before_cursor_execute", before)
