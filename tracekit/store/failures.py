"""What a database error says about the store: the one place that classifies them.

A write can fail because of the store (its disk is full, it is read-only, it is corrupt,
another writer holds it too long) or because of what was being written (a trace that breaks
a constraint). Only the first kind is a ``StoreError`` ("cannot write store …"); the second
is left to the caller, which knows what it was writing (the ingest says the trace cannot be
read). Errors are judged by the driver's code where it gives one (SQLite's result code,
PostgreSQL's SQLSTATE), so the server's wording and language do not matter; an error
without a code (another driver, or one raised by hand) is judged by its words.

``tracekit query`` asks the other question: did the database refuse a write
(``refuses_write``)?
"""

from __future__ import annotations

import sqlite3
from typing import Literal

from sqlalchemy.exc import DBAPIError, StatementError

from tracekit.errors import StoreError

StorageProblem = Literal["full", "read-only", "damaged", "busy"]

#: SQLite primary result codes (https://www.sqlite.org/rescode.html) that blame the store
_SQLITE_CODES: dict[int, StorageProblem] = {
    3: "read-only",   # SQLITE_PERM
    5: "busy",        # SQLITE_BUSY: another writer kept the lock past the busy timeout
    6: "busy",        # SQLITE_LOCKED
    8: "read-only",   # SQLITE_READONLY (and its extended codes)
    10: "damaged",    # SQLITE_IOERR
    11: "damaged",    # SQLITE_CORRUPT
    13: "full",       # SQLITE_FULL
    14: "read-only",  # SQLITE_CANTOPEN: e.g. the -wal file cannot be created
    26: "damaged",    # SQLITE_NOTADB
}
#: PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html)
_POSTGRES_CODES: dict[str, StorageProblem] = {
    "53100": "full",       # disk_full: "could not extend file …: No space left on device"
    "25006": "read-only",  # read_only_sql_transaction
    "42501": "read-only",  # insufficient_privilege
    "58030": "damaged",    # io_error
    "XX001": "damaged",    # data_corrupted
    "55P03": "busy",       # lock_not_available
}
#: words of an error without a code that blame the store
_STORAGE_WORDS: tuple[tuple[str, StorageProblem], ...] = (
    ("no space", "full"), ("full", "full"), ("readonly", "read-only"),
    ("read-only", "read-only"), ("read only", "read-only"), ("permission", "read-only"),
    ("unable to open", "read-only"), ("i/o error", "damaged"), ("disk", "damaged"),
)
_HINTS: dict[StorageProblem, str] = {
    "full": "free disk space or pass another --store",
    "read-only": "pass a writable --store or set TRACEKIT_STORE",
    "damaged": "check the disk; restore the store or pass a new --store",
    "busy": "another tracekit is writing this store; try again when it is done",
}
#: SQLITE_AUTH: an authorizer (``tracekit query``'s ATTACH guard) denied the statement
_SQLITE_AUTH = 23
_WRITE_REFUSALS = ("readonly", "read-only", "read only", "not authorized")


def driver_error(exc: BaseException) -> BaseException | None:
    """The database driver's own exception behind ``exc``, None when ``exc`` is not one.

    SQLAlchemy wraps driver errors (``DBAPIError.orig``); code that talks to a driver
    directly (PostgreSQL COPY, the SQLite connections that read trace files) meets them
    unwrapped.
    """
    if isinstance(exc, (DBAPIError, StatementError)):
        return exc.orig if exc.orig is not None else exc
    if isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg"):
        return exc
    return None


def is_driver_error(exc: BaseException) -> bool:
    """True for an error raised by a database driver (through SQLAlchemy or not)."""
    return driver_error(exc) is not None


def first_line(exc: BaseException) -> str:
    """The first line of a database error, without SQLAlchemy's background link."""
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__


def storage_problem(exc: BaseException, *, blame_damage: bool = True) -> StorageProblem | None:
    """What is wrong with the store according to ``exc``; None when the store is not to blame.

    Only errors from the store's own connection count: a store's statements go through
    SQLAlchemy (or, for PostgreSQL's COPY, psycopg directly); a bare ``sqlite3`` error comes
    from a connection that reads a trace file, never from the store. ``blame_damage=False``:
    the statement also read another database file (an ATTACHed trace), so a corrupt page or
    an I/O error may be that file's, and is not blamed on the store.
    """
    if isinstance(exc, sqlite3.Error):
        return None
    orig = driver_error(exc)
    if orig is None:
        return None
    code = getattr(orig, "sqlite_errorcode", None)
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(code, int):
        problem = _SQLITE_CODES.get(code & 0xFF)
    elif isinstance(sqlstate, str):
        problem = _POSTGRES_CODES.get(sqlstate)
    else:
        message = first_line(exc).lower()
        problem = next((kind for word, kind in _STORAGE_WORDS if word in message), None)
    if problem == "damaged" and not blame_damage:
        return None
    return problem


def store_write_error(store_display: str, exc: BaseException, *,
                      blame_damage: bool = True) -> StoreError | None:
    """A one-line StoreError when ``exc`` says the store cannot take the write, else None.

    ``store_display`` names the store as messages show it (``display_url``).
    """
    problem = storage_problem(exc, blame_damage=blame_damage)
    if problem is None:
        return None
    return StoreError(f"cannot write store {store_display}: {first_line(exc)}",
                      hint=_HINTS[problem])


def refuses_write(exc: BaseException) -> bool:
    """True when the database refused a statement because it would write (read-only
    session or file, or an authorizer's denial)."""
    orig = driver_error(exc)
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (8, _SQLITE_AUTH)
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate == "25006"
    message = first_line(exc).lower()
    return any(word in message for word in _WRITE_REFUSALS)
