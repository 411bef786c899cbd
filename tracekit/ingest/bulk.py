"""Bulk row movement from a SQLite source file into the store, without Python row loops.

Readers write plain ``SELECT`` statements against the source attached as schema ``src``
(and, for id lookups, small per-run tables in ``main``: ``kernel_names``, ``api_names``).

- SQLite store: the source is ATTACHed read-only to the store connection and every copy is
  one ``INSERT INTO … SELECT …`` executed inside SQLite.
- Any other store (PostgreSQL …): the same SELECT runs on a private in-memory SQLite
  connection with the source attached and the lookup tables mirrored there; the result is
  streamed in chunks into the store with one multi-row insert per chunk (COPY on PostgreSQL).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from tracekit.store.sql import insert_rows
from tracekit.store.sqlite_files import lenient_text, read_only_uri

#: rows per multi-row insert (or COPY) into the store: big enough that the per-statement cost
#: vanishes, small enough that one chunk's Python tuples stay a few MB
CHUNK_ROWS = 50_000
#: lookup columns that hold text (the others hold integers)
TEXT_COLUMNS = frozenset({"name", "phase"})


class BulkCopier:
    """Moves SELECT results from the attached source into store tables."""

    def __init__(self, connection: Connection, source: Path) -> None:
        self.connection = connection
        self.source = source
        self.native = connection.dialect.name == "sqlite"
        self._side: sqlite3.Connection | None = None
        if not self.native:
            self._side = sqlite3.connect(":memory:")
            self._side.text_factory = (_postgres_text if connection.dialect.name == "postgresql"
                                       else lenient_text)
            self._side.execute("ATTACH DATABASE ? AS src", (read_only_uri(source),))

    def query(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a small SELECT against the source (metadata, table info)."""
        if self._side is not None:
            return self._side.execute(sql, params or {}).fetchall()
        return [tuple(row) for row in self.connection.execute(text(sql), params or {})]

    def prepare(self, sql: str, params: dict[str, Any] | None = None) -> None:
        """Run a statement where the source is visible, e.g. to fill a TEMP lookup table.

        TEMP tables are private to the connection and never touch the store file.
        """
        if self._side is not None:
            self._side.execute(sql, params or {})
        else:
            self.connection.execute(text(sql), params or {})

    def copy(self, table: str, columns: Sequence[str], select_sql: str,
             params: dict[str, Any] | None = None) -> int:
        """Insert the rows of ``select_sql`` into ``table(columns)``; returns the row count."""
        column_list = ", ".join(columns)
        if self._side is None:
            result = self.connection.execute(
                text(f"INSERT INTO {table} ({column_list}) {select_sql}"), params or {}
            )
            return int(result.rowcount or 0)
        cursor = self._side.execute(select_sql, params or {})
        total = 0
        while True:
            rows = cursor.fetchmany(CHUNK_ROWS)
            if not rows:
                return total
            insert_rows(self.connection, table, columns, rows)
            total += len(rows)

    def temp_rows(self, table: str, columns: Sequence[str],
                  rows: Sequence[Sequence[Any]], *, declared: Sequence[str] | None = None
                  ) -> None:
        """A TEMP table ``table(columns)`` holding ``rows``, where the source SELECTs run.

        For small lists computed elsewhere (a side connection's distinct keys): the columns
        have no declared type, so values keep exactly the type the source gave them;
        ``declared`` gives each column's declaration instead (``INTEGER PRIMARY KEY`` makes
        a lookup by that column a rowid search).
        """
        definitions = (columns if declared is None else
                       [f"{column} {kind}" for column, kind in zip(columns, declared,
                                                                  strict=True)])
        self.prepare(f"DROP TABLE IF EXISTS temp.{table}")
        self.prepare(f"CREATE TEMP TABLE {table} ({', '.join(definitions)})")
        if not rows:
            return
        placeholders = ", ".join(f":c{index}" for index in range(len(columns)))
        statement = f"INSERT INTO temp.{table} VALUES ({placeholders})"
        values = [{f"c{i}": value for i, value in enumerate(row)} for row in rows]
        if self._side is not None:
            self._side.executemany(statement, values)
        else:
            self.connection.execute(text(statement), values)

    def mirror_lookup(self, table: str, columns: Sequence[str],
                      rows: Iterable[Sequence[Any]], *, unique_key: bool = False) -> None:
        """Make a small store table's rows visible to SELECTs on the side connection."""
        if self._side is None:
            return
        mirror_table(self._side, table, columns, rows, unique_key=unique_key)

    def close(self) -> None:
        """Release the side connection."""
        if self._side is not None:
            self._side.close()


def mirror_table(connection: sqlite3.Connection, table: str, columns: Sequence[str],
                 rows: Iterable[Sequence[Any]], *, unique_key: bool = False) -> None:
    """Copy a small lookup's rows into ``main.<table>`` of a private SQLite connection.

    The first two columns are indexed (``unique_key``: they identify a row). Without
    statistics SQLite's planner believes what the index says: a non-unique one made it
    loop over the names and scan the kernel table once per name.
    """
    # Declared types matter: a column without affinity compared with an INTEGER one
    # cannot be searched through its index, and every kernel would scan the lookup.
    declared = ", ".join(f"{column} {'TEXT' if column in TEXT_COLUMNS else 'INTEGER'}"
                         for column in columns)
    connection.execute(f"DROP TABLE IF EXISTS main.{table}")
    connection.execute(f"CREATE TABLE main.{table} ({declared})")
    placeholders = ", ".join("?" for _ in columns)
    # One transaction: a connection in autocommit mode would commit (and sync) every row.
    own = not connection.in_transaction
    if own:
        connection.execute("BEGIN")
    connection.executemany(f"INSERT INTO main.{table} VALUES ({placeholders})", rows)
    connection.execute(f"CREATE {'UNIQUE ' if unique_key else ''}INDEX main.ix_{table} "
                       f"ON {table} ({columns[0]}, {columns[1]})")
    if own:
        connection.execute("COMMIT")


def _postgres_text(value: bytes) -> str:
    """As ``lenient_text``, and NUL (which PostgreSQL text cannot hold) becomes U+2400 ␀."""
    return lenient_text(value).replace("\x00", "\u2400")
