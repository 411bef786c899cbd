"""Read-only SQL over the store, for ``tracekit query``.

Read-only is enforced by the database, not by parsing the SQL:
- SQLite: the store is opened with ``mode=ro`` (see ``open_store(write=False)``), and an
  authorizer refuses ATTACH (which could create or write another file);
- PostgreSQL: the session is ``default_transaction_read_only``, the statement runs in a
  transaction that has already run a query (so ``SET TRANSACTION READ WRITE`` is refused),
  and it is sent as a prepared statement, which cannot smuggle in a second command.
A refused write becomes one ``QueryError`` line.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tracekit.errors import TracekitError
from tracekit.store.db import Store
from tracekit.store.failures import first_line, is_driver_error, refuses_write

FETCH_ROWS = 10_000


class QueryError(TracekitError):
    """The SQL failed or tried to change the store."""


@dataclass
class QueryResult:
    """Column names and a stream of row batches."""

    columns: list[str]
    batches: Iterator[list[tuple[object, ...]]]


def _deny_attach(action: int, *_args: object) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _explain(exc: BaseException) -> QueryError:
    message = first_line(exc)
    if refuses_write(exc):
        return QueryError(f"tracekit query is read-only: {message}",
                          hint="the store changes only through tracekit analyze / runs --delete")
    return QueryError(f"query failed: {message}")


@contextmanager
def run_query(store: Store, sql: str) -> Iterator[QueryResult]:
    """Execute one statement read-only; the result streams while the context is open."""
    if not store.read_only:
        raise QueryError("run_query needs a store opened with write=False")
    if not sql.strip():
        raise QueryError("no SQL given", hint='e.g. tracekit query "SELECT * FROM runs"')
    with store.engine.connect() as connection:
        try:
            raw = connection.connection.dbapi_connection
            if store.is_sqlite:
                raw.set_authorizer(_deny_attach)  # type: ignore[union-attr]
                cursor = raw.cursor()  # type: ignore[union-attr]
                cursor.execute(sql)
            elif store.is_postgres:
                cursor = raw.cursor()  # type: ignore[union-attr]
                cursor.execute("SET TRANSACTION READ ONLY")
                cursor.execute("SELECT 1")
                cursor.execute(sql, prepare=True)  # type: ignore[call-arg]  # psycopg's
            else:
                cursor = raw.cursor()  # type: ignore[union-attr]
                cursor.execute(sql)
        except Warning as exc:  # sqlite3: "You can only execute one statement at a time."
            raise _explain(exc) from None
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            raise _explain(exc) from None
        columns = [str(column[0]) for column in cursor.description or []]

        def batches() -> Iterator[list[tuple[object, ...]]]:
            if cursor.description is None:
                return
            try:
                while rows := cursor.fetchmany(FETCH_ROWS):
                    yield [tuple(row) for row in rows]
            except Exception as exc:
                if not is_driver_error(exc):
                    raise
                raise _explain(exc) from None

        try:
            yield QueryResult(columns, batches())
        finally:
            cursor.close()
            if store.is_sqlite:
                raw.set_authorizer(None)  # type: ignore[union-attr]
            connection.rollback()
