"""``RunStore``: a tracekit store seen from Python — its runs, one run, read-only SQL.

Opening is lazy: ``open_store(url)`` only remembers the URL, the first read opens the
store read-only (checked like ``tracekit report``: no store there, an older or newer schema
are errors with the command to run) and ``tracekit.analyze`` opens it for writing (created
or migrated like ``tracekit analyze``). So a new store can be named before it exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracekit.errors import UsageError
from tracekit.store.db import Store, default_store_url, display_url, normalize_url
from tracekit.store.db import open_store as open_database

if TYPE_CHECKING:
    import pandas as pd

    from tracekit.api.run import Run


class RunStore:
    """A tracekit store: a SQLite file or any SQLAlchemy URL (PostgreSQL: ``postgresql://…``).

    Use it as a context manager, or call ``close()``, to release its connections.
    """

    def __init__(self, url: str | os.PathLike[str] | None = None) -> None:
        if url is not None and not isinstance(url, (str, os.PathLike)):
            raise UsageError(f"a store is a path or a database URL, got {url!r}")
        self._url = normalize_url(os.fspath(url) if url is not None else default_store_url())
        #: the store as messages name it (a path, or a URL without its password)
        self.url = display_url(self._url)
        self._reader: Store | None = None
        self._writer: Store | None = None

    def __repr__(self) -> str:
        return f"<tracekit RunStore {self.url}>"

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def reader(self) -> Store:
        """The store opened read-only (opened on first use)."""
        if self._reader is None:
            self._reader = open_database(self._url, write=False)
        return self._reader

    def writer(self) -> Store:
        """The store opened for writing: created or migrated when needed (on first use)."""
        if self._writer is None:
            self._writer = open_database(self._url, write=True)
        return self._writer

    def close(self) -> None:
        """Release the store's connections (the object can be used again afterwards)."""
        for store in (self._reader, self._writer):
            if store is not None:
                store.dispose()
        self._reader = self._writer = None

    def runs(self) -> pd.DataFrame:
        """The runs, oldest first, indexed by run id (``tracekit runs``)."""
        from tracekit.api import tables
        from tracekit.store.runs import list_runs

        with self.reader().connect() as connection:
            return tables.runs(list_runs(connection))

    def run(self, selector: str | int = "latest") -> Run:
        """The run a selector names, as ``tracekit report RUN`` reads it: ``"latest"``,
        ``-1`` (the latest), ``-2`` (the one before), a run id, or a run's label."""
        from tracekit.api.run import Run
        from tracekit.store.selectors import resolve_run

        if not isinstance(selector, (str, int)) or isinstance(selector, bool):
            raise UsageError(f"a run selector is a string or an int, got {selector!r}")
        with self.reader().connect() as connection:
            return Run(self, resolve_run(connection, selector))

    def query(self, sql: str) -> pd.DataFrame:
        """One read-only SQL statement over the store (``tracekit query``), as a DataFrame."""
        import pandas as pd

        from tracekit.store.query import run_query

        with run_query(self.reader(), sql) as result:
            rows: list[Any] = [row for batch in result.batches for row in batch]
            return pd.DataFrame.from_records(rows, columns=result.columns)

    def delete(self, run_ids: int | Iterable[int]) -> list[int]:
        """Delete whole runs (``tracekit runs --delete``): all must exist, else none goes."""
        from tracekit.store.runs import delete_runs

        ids = [run_ids] if isinstance(run_ids, int) else list(run_ids)
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise UsageError(f"delete() takes run ids, got {run_ids!r}")
        return delete_runs(self.writer(), ids)


def open_store(url: str | os.PathLike[str] | None = None) -> RunStore:
    """The store at ``url``: a SQLite path or any SQLAlchemy URL; by default
    ``$TRACEKIT_STORE`` or ``./tracekit.db``, as for every ``tracekit`` command."""
    return RunStore(url)


def as_run_store(store: RunStore | str | os.PathLike[str] | None) -> RunStore:
    """A RunStore for what the caller passed as ``store=`` (a RunStore, a URL, or None)."""
    return store if isinstance(store, RunStore) else RunStore(store)
