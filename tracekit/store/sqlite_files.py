"""SQLite files opened the same way everywhere: read-only URIs and lenient text.

Both the store and the traces tracekit reads are SQLite files. A trace is opened read-only
and immutable (no -wal/-shm beside the user's file, no locks), a store's readers read-only;
text in either may be invalid UTF-8 (traces hold whatever the program named its kernels and
ranges, and ``INSERT … SELECT`` copies it into the store byte for byte), so it is decoded
with U+FFFD instead of failing the read that meets it.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

#: ``bytes`` → ``str`` as UTF-8, invalid sequences as U+FFFD (a C call: no Python frame per
#: value, which matters as a ``text_factory`` over millions of rows)
lenient_text = functools.partial(str, encoding="utf-8", errors="replace")


def read_only_uri(path: Path, *, immutable: bool = True) -> str:
    """A ``file:`` URI that opens ``path`` read-only; ``immutable``: also without locks or
    -wal/-shm files (only for a file nobody writes meanwhile)."""
    return f"{path.absolute().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")


def open_read_only(path: Path) -> sqlite3.Connection:
    """A connection to a trace file, read-only and immutable, with lenient text."""
    connection = sqlite3.connect(read_only_uri(path), uri=True)
    connection.text_factory = lenient_text
    return connection
