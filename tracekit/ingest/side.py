"""Work on the source file on a second connection and core while the store connection copies.

SQLite runs one statement per connection on one core, and the store takes one writer at a
time, so an ingest that copies records and then computes what the analysis needs from them
uses one core of two. The source export, though, is read-only and can be read twice at
once: ``SideWork`` owns a private SQLite connection (its own scratch file, the source
attached read-only) on a worker thread, and runs jobs there while the store connection goes
on. The sqlite3 driver releases the GIL while a statement runs, so both cores work.

Jobs run one after another in submission order. ``close`` interrupts a statement still
running (an ingest that failed does not wait for work nobody will read) and joins the
thread, so no connection outlives the object.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from tracekit.store.sqlite_files import lenient_text, read_only_uri

T = TypeVar("T")

#: page cache of the side connection, in KiB: its lookups stay in cache, its scans stream
SIDE_CACHE_KIB = 64_000


class SideWork:
    """A worker thread with its own SQLite connection; the source is attached as ``src``."""

    def __init__(self, source: Path, *, cache_kib: int = SIDE_CACHE_KIB) -> None:
        self._source = source
        self._cache_kib = cache_kib
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracekit-side")
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Callable[[sqlite3.Connection], T]) -> Future[T]:
        """Run ``job(connection)`` on the worker after the jobs submitted before it."""
        return self._pool.submit(self._run, job)

    def _run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._closed:
                raise RuntimeError("side work closed")
            if self._connection is None:
                # "" is a private database in a temporary file: big scratch tables page out
                # instead of growing the process (":memory:" would keep them in RAM).
                connection = sqlite3.connect("", isolation_level=None,
                                             check_same_thread=False)
                connection.text_factory = lenient_text
                connection.execute(f"PRAGMA cache_size = -{self._cache_kib}")
                connection.execute("PRAGMA temp_store = FILE")
                # Scratch only: nothing here needs to survive a crash.
                connection.execute("PRAGMA journal_mode = OFF")
                connection.execute("PRAGMA synchronous = OFF")
                connection.execute("ATTACH DATABASE ? AS src", (read_only_uri(self._source),))
                self._connection = connection
            connection = self._connection
        return job(connection)

    def close(self, *, interrupt: bool = False) -> None:
        """Stop: interrupt a running statement (``interrupt``), wait for the thread, close."""
        with self._lock:
            self._closed = True
            connection = self._connection
        if interrupt and connection is not None:
            connection.interrupt()
        self._pool.shutdown(wait=True, cancel_futures=True)
        if connection is not None:
            connection.close()
            self._connection = None
