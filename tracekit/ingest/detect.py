"""Decide what a file is from its content, using the ``[detect]`` tables of the specs.

Extensions are never enough on their own: a ``.json`` may be gzip, a ``.sqlite`` may be a
browser history. Every refusal says what the file looked like and what to do instead.
"""

from __future__ import annotations

import gzip
import re
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path

from tracekit.errors import InputError, UnknownFormat
from tracekit.ingest.spec import FormatSpec, builtin_specs
from tracekit.store.sqlite_files import open_read_only

HEAD_BYTES = 64 * 1024
SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Sniff:
    """What the first bytes of a file tell: raw head, decompressed head, SQLite tables."""

    path: Path
    head: bytes
    text_head: bytes
    gzipped: bool
    sqlite_tables: frozenset[str] | None


def sqlite_table_names(path: Path) -> frozenset[str]:
    """The tables of a SQLite file; InputError when the file is corrupt or truncated."""
    try:
        # Names in a damaged (or hostile) file may be invalid UTF-8: U+FFFD, not an error.
        connection = open_read_only(path)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            names = frozenset(row[0] for row in rows)
            connection.execute("PRAGMA schema_version").fetchone()
        finally:
            connection.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        # (a damaged schema can make SQLite's own error message invalid UTF-8)
        raise InputError(
            f"{path}: SQLite file is corrupt or truncated ({exc})",
            hint="export it again with `nsys export --type sqlite`",
        ) from None
    return names


def _gunzip_head(path: Path) -> bytes:
    try:
        with gzip.open(path, "rb") as stream:
            return stream.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        # A truncated gzip still yields its first bytes through a raw decompressor.
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            return decompressor.decompress(path.read_bytes()[: 4 * HEAD_BYTES], HEAD_BYTES)
        except zlib.error:
            raise InputError(f"{path}: gzip data is corrupt",
                             hint="re-download or re-export the trace") from None


def sniff(path: Path) -> Sniff:
    """Read the head of a file (decompressing gzip) and, for SQLite, its table names."""
    try:
        with path.open("rb") as stream:
            head = stream.read(HEAD_BYTES)
    except PermissionError:
        raise InputError(f"{path}: permission denied", hint="check the file's permissions"
                         ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if not head:
        raise InputError(f"{path}: file is empty", hint="the capture was probably interrupted; "
                         "record it again")
    gzipped = head.startswith(GZIP_MAGIC)
    text_head = _gunzip_head(path) if gzipped else head
    tables = sqlite_table_names(path) if head.startswith(SQLITE_MAGIC) else None
    return Sniff(path, head, text_head, gzipped, tables)


def matches(spec: FormatSpec, sniffed: Sniff) -> bool:
    """True when every check the spec gives holds for the sniffed file."""
    detect = spec.detect
    if sniffed.gzipped and not detect.gzip_ok:
        return False
    if detect.magic is not None and not sniffed.head.startswith(detect.magic):
        return False
    if detect.sqlite_tables or detect.sqlite_any_table or detect.sqlite_table_patterns:
        if sniffed.sqlite_tables is None:
            return False
        if not set(detect.sqlite_tables) <= sniffed.sqlite_tables:
            return False
        if detect.sqlite_any_table and not set(detect.sqlite_any_table) & sniffed.sqlite_tables:
            return False
        if not all(any(re.fullmatch(pattern, table) for table in sniffed.sqlite_tables)
                   for pattern in detect.sqlite_table_patterns):
            return False
    if detect.text_markers and not any(
        marker.encode() in sniffed.text_head[:4096] for marker in detect.text_markers
    ):
        return False
    if detect.json_any_key and not any(
        f'"{key}"'.encode() in sniffed.text_head for key in detect.json_any_key
    ):
        return False
    if detect.extensions and not sniffed.path.name.endswith(detect.extensions):
        return False
    return True


def detect_file(path: Path) -> FormatSpec:
    """The spec that recognizes ``path``; a clear InputError when none does."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory",
                         hint="pass the trace file, or a folder of per-rank torch traces")
    sniffed = sniff(path)
    for spec in builtin_specs():
        if matches(spec, sniffed):
            return spec
    raise UnknownFormat(f"{path}: {_describe(sniffed)}", hint=_hint(sniffed))


def _describe(sniffed: Sniff) -> str:
    if sniffed.sqlite_tables is not None:
        if not sniffed.sqlite_tables:
            return "SQLite file has no tables, so it is not an Nsight Systems export"
        missing = _missing_tables(sniffed.sqlite_tables)
        return f"SQLite file is not an Nsight Systems export ({missing})"
    stripped = sniffed.text_head.lstrip()
    if stripped[:1] in (b"{", b"["):
        return "JSON file is not a trace tracekit knows (no traceEvents)"
    if _looks_binary(sniffed.text_head):
        return "unrecognized binary file"
    return "unrecognized text file"


def _missing_tables(tables: frozenset[str]) -> str:
    """What the SQLite specs look for and the file lacks: their required tables, else (the
    required ones are there) the activity tables of which they need at least one."""
    for spec in builtin_specs():
        required = set(spec.detect.sqlite_tables)
        if not required and not spec.detect.sqlite_any_table:
            continue
        if not required <= tables:
            return "no " + ", ".join(sorted(required - tables)) + " table"
        if spec.detect.sqlite_any_table:
            return ("it has " + ", ".join(sorted(required)) + " but none of "
                    + ", ".join(spec.detect.sqlite_any_table))
    return "no table tracekit knows"


def _hint(sniffed: Sniff) -> str:
    return ("tracekit reads Nsight Systems reports (.nsys-rep, .qdstrm, SQLite exports), "
            "torch profiler traces (.json/.json.gz), rocprofv3 outputs (rocpd .db, JSON, CSV) "
            "and Nsight Compute CSV")


def _looks_binary(data: bytes) -> bool:
    sample = data[:1024]
    return b"\x00" in sample or sum(byte < 9 for byte in sample) > len(sample) // 10
