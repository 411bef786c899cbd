"""Row staging for readers that parse records in Python (JSON, CSV, JSON lines).

Such readers meet records in file order, before they know everything a row needs: the id a
unique name gets in the store, the launch call of a kernel (it may come later in the file),
the time base of the file (Kineto may write ``baseTimeNanoseconds`` after the events). So
rows go first into TEMPORARY tables, in chunks of ``CHUNK_ROWS`` with one multi-row insert
each (never one ORM object per row), and one ``INSERT … SELECT`` per store table finishes
them inside the database: joins, per-file time offsets, id lookups. Python memory stays
bounded by one chunk whatever the input size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from tracekit.errors import InputError
from tracekit.ingest.bulk import CHUNK_ROWS
from tracekit.store.sql import insert_rows

#: the key column of a numbered stage table: the row's position in the order rows were added
ROW_NUMBER = "row_no"


class StageTable:
    """A temporary table filled through a buffer of ``CHUNK_ROWS`` rows.

    ``numbered``: the table gets a leading primary key ``row_no`` (0, 1, 2 … in the order
    rows are added), so a join that must pick one of several candidate rows can name it.
    ``temporary=False``: a plain table of the connection's database, for a scratch file that
    another connection attaches afterwards (``tracekit.ingest.readers.kineto_split``).
    """

    def __init__(self, connection: Connection, name: str, columns: Sequence[tuple[str, str]],
                 *, numbered: bool = False, temporary: bool = True) -> None:
        self.connection = connection
        self.name = name
        self.numbered = numbered
        self._sqlite = connection.dialect.name == "sqlite"
        if numbered:
            # SQLite: INTEGER PRIMARY KEY is the rowid itself, no second index to maintain.
            key = "INTEGER PRIMARY KEY" if self._sqlite else "BIGINT PRIMARY KEY"
            columns = ((ROW_NUMBER, key), *columns)
        self.columns = tuple(column for column, _ in columns)
        self.rows: list[tuple[Any, ...]] = []
        self.count = 0
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        definition = ", ".join(f"{column} {kind}" for column, kind in columns)
        kind = "TEMPORARY TABLE" if temporary else "TABLE"
        connection.exec_driver_sql(f"CREATE {kind} {name} ({definition})")
        placeholders = ", ".join("?" for _ in self.columns)
        self._insert = f"INSERT INTO {name} ({', '.join(self.columns)}) VALUES ({placeholders})"

    def add(self, row: tuple[Any, ...]) -> None:
        """Buffer one row; flushes by itself when the buffer is full."""
        if self.numbered:
            row = (self.count + len(self.rows), *row)
        self.rows.append(row)
        if len(self.rows) >= CHUNK_ROWS:
            self.flush()

    def extend(self, rows: list[tuple[Any, ...]]) -> None:
        """Buffer many rows at once (``add`` for each, without a call per row)."""
        if self.numbered:
            first = self.count + len(self.rows)
            rows = [(number, *row) for number, row in enumerate(rows, first)]
        self.rows.extend(rows)
        if len(self.rows) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows with one multi-row insert."""
        if not self.rows:
            return
        try:
            if self._sqlite:
                # The DBAPI executemany directly: no per-row dict building on the hot path.
                self.connection.exec_driver_sql(self._insert, self.rows)
            else:
                insert_rows(self.connection, self.name, self.columns, self.rows)
        except Exception as exc:
            if not _beyond_64_bits(exc):
                raise
            raise InputError("trace holds a number that does not fit in 64 bits "
                             "(an id, time or size)",
                             hint="the file is damaged or was edited") from None
        self.count += len(self.rows)
        self.rows = []

    def drop(self) -> None:
        """Remove the temporary table (it would vanish with the connection anyway)."""
        self.rows = []
        self.connection.exec_driver_sql(f"DROP TABLE IF EXISTS {self.name}")


#: PostgreSQL's SQLSTATE for a value outside its column's type (numeric_value_out_of_range)
_OUT_OF_RANGE = "22003"


def _beyond_64_bits(exc: BaseException) -> bool:
    """A number too big for a 64-bit column: Python's sqlite3 refuses it (OverflowError),
    PostgreSQL's COPY or INSERT with SQLSTATE 22003 (raw from psycopg, or wrapped by
    SQLAlchemy as ``.orig``)."""
    if isinstance(exc, OverflowError):
        return True
    cause = getattr(exc, "orig", exc)
    return getattr(cause, "sqlstate", None) == _OUT_OF_RANGE


def write_rows(connection: Connection, table: str, columns: Sequence[str],
               rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert rows straight into a store table in chunks (small lookups: names, devices)."""
    for start in range(0, len(rows), CHUNK_ROWS):
        insert_rows(connection, table, columns, rows[start:start + CHUNK_ROWS])
