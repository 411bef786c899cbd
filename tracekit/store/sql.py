"""SQL text with lists bound as parameters, never pasted into the statement; many rows
written at once.

A fixed vocabulary (GEMM ops, NVTX range kinds, finding rules) used in ``x IN (…)`` is bound
as an expanding parameter: SQLAlchemy writes one placeholder per item when it runs the
statement, so no value is quoted by hand and a quote in a value cannot change the SQL.
(Statements that the database cannot take parameters for, such as PostgreSQL's ``COPY (…)
TO STDOUT``, are the exception; their values come from the checked vocabulary.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, TextClause, bindparam, text


def text_with_lists(sql: str, **lists: Iterable[object]) -> TextClause:
    """``text(sql)`` with each ``:name`` of ``lists`` bound to that list (write ``x IN :name``,
    without parentheses); the other parameters are given at execution as usual."""
    return text(sql).bindparams(*(bindparam(name, list(values), expanding=True)
                                  for name, values in lists.items()))


def insert_rows(connection: Connection, table: str, columns: Sequence[str],
                rows: Sequence[Sequence[Any]]) -> None:
    """Insert many rows at once: COPY on PostgreSQL (psycopg 3), executemany elsewhere."""
    if not rows:
        return
    if connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg":
        raw = connection.connection.dbapi_connection
        with raw.cursor() as cursor:  # type: ignore[union-attr]
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    placeholders = ", ".join(f":c{index}" for index in range(len(columns)))
    statement = text(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})")
    connection.execute(
        statement, [{f"c{i}": value for i, value in enumerate(row)} for row in rows]
    )
