"""SQL rows into pandas columns, streamed in chunks so big runs fit in memory.

``pandas.read_sql`` holds every row as Python objects before it builds a frame: for a
10^7-kernel run that is gigabytes of tuples, ints and repeated name strings. Here the rows
are counted first, one array per column is made at its final size and dtype, and the query
is read with the database driver's own cursor (a server-side cursor on PostgreSQL) a chunk
of rows at a time, each chunk written into its place in those arrays. Peak memory is the
finished frame plus one chunk of rows, whatever the row count
(``tests/benchmarks/bench_frames.py`` measures it).

Every selected expression must be an integer: NULLs come through ``COALESCE`` as
:data:`NULL_INT` and become pandas' missing values; strings that repeat (kernel names, paths,
phases) are selected as small integer codes (a name id, a ``CASE``), decoded into
categoricals with the few distinct values looked up once. A ``text`` column is read as
strings and factorized chunk by chunk (for tables of modest size such as steps).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlalchemy import Connection

from tracekit.errors import StoreError
from tracekit.store.db import Store

#: rows per fetch: big enough to amortize the driver's calls, small next to a big frame
CHUNK_ROWS = 20_000
#: stands in for NULL in integer columns (no kernel time, id or size reaches it)
NULL_INT = -(2**63)
#: page cache while a frame streams (KiB): a sequential scan gains nothing from the store's
#: 200 MB default, which would stay resident after the scan
SCAN_CACHE_KIB = 16_000

Kind = Literal["int", "nullable", "codes", "text"]


@dataclass(frozen=True)
class Column:
    """One output column: its SQL expression, how its integers are decoded, its dtype.

    ``kind``: ``int`` (never NULL), ``nullable`` (NULL as :data:`NULL_INT`, a pandas
    nullable integer), ``codes`` (an index into ``categories``: a categorical; -1 or NULL is
    missing), ``text`` (a string expression, factorized into a categorical). ``dtype`` is the
    numpy integer type of ``int`` and ``nullable`` columns.
    """

    name: str
    sql: str
    kind: Kind = "int"
    dtype: str = "int64"
    categories: Sequence[str] = field(default=())
    #: sorted keys (e.g. a run's kernel name ids): each value becomes its position among them
    #: (-1 when absent), kept as ``dtype``; per-key attributes are then looked up by position
    positions_of: np.ndarray | None = field(default=None, compare=False)

    def select(self) -> str:
        """The expression as it goes into the SELECT list."""
        if self.kind == "nullable":
            return f"COALESCE({self.sql}, {NULL_INT})"
        if self.kind == "codes":
            return f"COALESCE({self.sql}, -1)"
        return self.sql


def code_dtype(categories: int) -> np.dtype[Any]:
    """The integer type pandas keeps a categorical's codes in (no copy when it gets it)."""
    for kind in (np.int8, np.int16, np.int32):
        if categories < np.iinfo(kind).max:
            return np.dtype(kind)
    return np.dtype(np.int64)


class _Buffer:
    """One column, filled chunk by chunk into arrays of the final size and dtype.

    The row count is known before the first fetch, so the finished column is the only copy
    of the data ever held: no list of chunks, no concatenation. Should the count be off (a
    run deleted meanwhile), the arrays are cut or grown to the rows that came.
    """

    def __init__(self, column: Column, rows: int) -> None:
        self.column = column
        self.filled = 0
        if column.kind == "text":
            dtype = np.dtype(np.int64)
        elif column.kind == "codes":
            dtype = code_dtype(len(column.categories))
        else:
            dtype = np.dtype(column.dtype)
        self.values = np.empty(rows, dtype=dtype)
        self.mask = np.empty(rows, dtype=bool) if column.kind == "nullable" else None
        self.text_codes: dict[Any, int] = {}

    def _room(self, rows: int) -> slice:
        end = self.filled + rows
        if end > len(self.values):
            self.values = np.resize(self.values, max(end, 2 * len(self.values)))
            if self.mask is not None:
                self.mask = np.resize(self.mask, len(self.values))
        window = slice(self.filled, end)
        self.filled = end
        return window

    def add(self, raw: Sequence[Any]) -> None:
        """Append one chunk of this column's values (as the driver gave them)."""
        column = self.column
        window = self._room(len(raw))
        if column.kind == "text":
            codes, uniques = pd.factorize(np.asarray(raw, dtype=object), use_na_sentinel=True)
            remap = np.array([self.text_codes.setdefault(value, len(self.text_codes))
                              for value in uniques] + [-1], dtype=np.int64)
            self.values[window] = remap[codes]  # a missing value (-1) picks the last: -1
            return
        values = np.array(raw, dtype=np.int64)  # a copy: the NULL stand-ins are overwritten
        if column.positions_of is not None:
            self.values[window] = positions(column.positions_of, values)
            return
        if self.mask is not None:
            missing = values == NULL_INT
            self.mask[window] = missing
            values[missing] = 0
        self.values[window] = values

    def finish(self) -> Any:
        """The whole column as a numpy array, a pandas nullable array or a Categorical."""
        column = self.column
        values = self.values[:self.filled] if self.filled < len(self.values) else self.values
        if column.kind == "nullable":
            assert self.mask is not None
            return pd.arrays.IntegerArray(values, self.mask[:self.filled])
        if column.kind == "codes":
            return pd.Categorical.from_codes(values, categories=list(column.categories))
        if column.kind == "text":
            categories = list(self.text_codes)
            return pd.Categorical.from_codes(values.astype(code_dtype(len(categories))),
                                             categories=categories)
        return values


def positions(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Where each value sits in the sorted ``keys``; -1 for values that are not keys."""
    if not len(keys):
        return np.full(len(values), -1, dtype=np.int64)
    found = np.searchsorted(keys, values)
    found[found == len(keys)] = 0
    return np.where(keys[found] == values, found, -1)


@contextmanager
def _small_page_cache(store: Store, connection: Connection) -> Iterator[None]:
    """A small SQLite page cache while a frame is read (the count and the scan)."""
    if not store.is_sqlite:
        yield
        return
    from tracekit.store.db import SQLITE_CACHE_KIB

    connection.exec_driver_sql(f"PRAGMA cache_size = -{SCAN_CACHE_KIB}")
    try:
        yield
    finally:
        connection.exec_driver_sql(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")


def _row_chunks(store: Store, connection: Connection, sql: str, columns: Sequence[Column]
                ) -> Iterator[Sequence[Any]]:
    """Chunks of the result, each as one sequence of values per column."""
    raw: Any = connection.connection.dbapi_connection
    if store.is_postgres and all(column.kind != "text" for column in columns):
        yield from _binary_copy_chunks(raw, sql, len(columns))
        return
    # Server-side on PostgreSQL, so rows stream (SQLite's cursor streams by itself).
    cursor = raw.cursor(name="tracekit_frame") if store.is_postgres else raw.cursor()
    try:
        cursor.execute(sql)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            yield list(zip(*rows, strict=True))
            del rows
    finally:
        cursor.close()


#: PostgreSQL's binary COPY: signature, flags, header extension length
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = len(_COPY_SIGNATURE) + 8
_COPY_TRAILER = b"\xff\xff"


def _binary_copy_chunks(raw: Any, sql: str, width: int) -> Iterator[list[np.ndarray]]:
    """Integer columns through ``COPY … TO STDOUT (FORMAT BINARY)``: every row is the same
    number of bytes (a field count, then length and big-endian value per bigint), so numpy
    reads whole blocks of rows at once, with no Python object per value."""
    row = np.dtype([("fields", ">i2")] + [item for index in range(width) for item in (
        (f"length{index}", ">i4"), (f"value{index}", ">i8"))])
    pending = bytearray()
    header_read = False
    with raw.cursor() as cursor, cursor.copy(
            f"COPY ({sql}) TO STDOUT (FORMAT BINARY)") as copy:
        for block in copy:
            pending += block
            if not header_read:
                if len(pending) < _COPY_HEADER:
                    continue
                if not pending.startswith(_COPY_SIGNATURE):
                    raise StoreError("PostgreSQL sent a binary COPY this tracekit cannot read")
                extension = int.from_bytes(pending[_COPY_HEADER - 4:_COPY_HEADER], "big")
                if len(pending) < _COPY_HEADER + extension:
                    continue
                del pending[:_COPY_HEADER + extension]
                header_read = True
            rows = len(pending) // row.itemsize
            if rows >= CHUNK_ROWS:
                yield _copy_rows(pending, rows, row, width)
        rows = len(pending) // row.itemsize
        if rows:
            yield _copy_rows(pending, rows, row, width)
        if bytes(pending) != _COPY_TRAILER:
            raise StoreError("PostgreSQL's binary COPY ended unexpectedly")


def _copy_rows(pending: bytearray, rows: int, row: np.dtype[Any], width: int
               ) -> list[np.ndarray]:
    records = np.frombuffer(pending, dtype=row, count=rows)
    if (records["fields"] != width).any() or any(
            (records[f"length{index}"] != 8).any() for index in range(width)):
        raise StoreError("PostgreSQL's binary COPY held a NULL or a value that is not a bigint")
    values = [records[f"value{index}"].astype(np.int64) for index in range(width)]
    del records  # the view must go before its buffer shrinks
    del pending[:rows * row.itemsize]
    return values


def read_columns(store: Store, connection: Connection, columns: Sequence[Column],
                 from_sql: str, *, order_by: str | None = None) -> dict[str, Any]:
    """``SELECT <columns> <from_sql> [ORDER BY …]`` as one array per column, streamed in chunks.

    ``from_sql`` is the FROM/WHERE part with every value already inlined as a literal that
    tracekit made (ids, vocabulary words), never user text: the driver's cursor is used raw.
    """
    expressions = [column.select() for column in columns]
    if store.is_postgres:
        expressions = [f"CAST({expression} AS BIGINT)" if column.kind != "text" else expression
                       for expression, column in zip(expressions, columns, strict=True)]
    sql = f"SELECT {', '.join(expressions)} {from_sql}"
    if order_by:
        sql += f" ORDER BY {order_by}"
    try:
        with _small_page_cache(store, connection):
            count = int(connection.exec_driver_sql(f"SELECT COUNT(*) {from_sql}").scalar() or 0)
            buffers = [_Buffer(column, count) for column in columns]
            for chunk in _row_chunks(store, connection, sql, columns):
                for buffer, values in zip(buffers, chunk, strict=True):
                    buffer.add(values)
                del chunk
    finally:
        if not store.is_sqlite:
            connection.rollback()
    return {buffer.column.name: buffer.finish() for buffer in buffers}


def frame_of(data: dict[str, Any]) -> pd.DataFrame:
    """A DataFrame that takes the arrays as they are (no copy, no consolidation into blocks)."""
    return pd.DataFrame(data, copy=False)


def records_frame(records: Sequence[dict[str, Any]], columns: dict[str, str | None]
                  ) -> pd.DataFrame:
    """A small table (one row per name, phase, finding …) from plain records.

    ``columns`` maps each column to its dtype: ``category``, ``int64``, ``Int64`` (nullable),
    ``float64``, or None to keep what pandas infers (text; lists such as a finding's evidence).
    """
    frame = pd.DataFrame.from_records(list(records), columns=list(columns))
    for name, dtype in columns.items():
        if dtype is not None:
            frame[name] = frame[name].astype(dtype)
    return frame
