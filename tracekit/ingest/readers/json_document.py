"""A JSON document holding one huge array among small top-level keys, read as a stream.

Chrome-trace files (Kineto's among them) hold ``{…, "traceEvents": [ millions of events ],
…}`` with small keys before and after the array. These helpers open such a file (plain or
gzip), find where the array starts, and recover the small keys around it from the raw bytes
seen on the way — the bytes before the key, closed with ``}``, and the last few MiB after
the array — without a second parse of the array; only when that fails does ``slow_top_level``
read the file again through ijson's token stream. Nothing here knows what an event is.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import ijson

from tracekit.ingest.readers.json_chunks import Unchunkable, array_start

CHUNK_BYTES = 1 << 20
#: the first read: enough to see the first event's ``ts`` after a Chrome-trace header
HEAD_SNIFF_BYTES = 64 * 1024
#: bytes kept from the end of the stream to find the keys written after the array
TAIL_BYTES = 4 * CHUNK_BYTES
#: the bytes before the array's key are parsed as the header; beyond this, use the slow pass
HEAD_LIMIT = 64 * CHUNK_BYTES


def open_maybe_gzip(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def first_significant(stream: IO[bytes]) -> bytes:
    """The stream's first bytes without leading blanks or BOM: they start with '{' or '['."""
    buffered = b""
    while True:
        chunk = stream.read(HEAD_SNIFF_BYTES)
        if not chunk:
            return buffered
        buffered += chunk
        stripped = buffered.lstrip(b" \t\r\n\xef\xbb\xbf")
        if stripped:
            return stripped


class TeeReader:
    """A file object for ijson that also shows every chunk to the top-level scanner."""

    def __init__(self, stream: IO[bytes], first: bytes, scanner: TopLevelScanner) -> None:
        self.stream = stream
        self.pending = first
        self.scanner = scanner

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson probes read(0) for bytes vs str
        if self.pending:
            chunk, self.pending = self.pending, b""
        else:
            chunk = self.stream.read(size)
        if chunk:
            self.scanner.feed(chunk)
        return chunk


class TopLevelScanner:
    """Recovers the small top-level keys around ``traceEvents`` from the raw byte stream.

    Head: every byte before the ``"traceEvents"`` key, closed with ``}``, is a JSON object.
    Tail: the last ``TAIL_BYTES`` are kept; the events array ends at the leftmost ``]`` after
    which ``{`` + the rest parses as one object (any ``]`` inside the array leaves at least
    one bracket unmatched, so it cannot parse). Returns None when either fails.
    """

    KEY = b'"traceEvents"'
    ARRAY_END = re.compile(r"[}\[]\s*\]")

    def __init__(self) -> None:
        self.head = bytearray()
        self.head_done = False
        self.found_events = False
        self.tail: list[bytes] = []
        self.tail_size = 0

    def feed(self, chunk: bytes) -> None:
        if not self.head_done:
            start = max(0, len(self.head) - len(self.KEY))
            self.head += chunk
            position = self.head.find(self.KEY, start)
            if position >= 0:
                self.found_events = True
                self.head_done = True
                del self.head[position:]
            elif len(self.head) > HEAD_LIMIT:
                self.head_done = True
                self.head = bytearray(b"\x00")  # unparseable: forces the slow pass
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
            self.tail_size -= len(self.tail.pop(0))

    def feed_tail(self, tail: bytes) -> None:
        """The last bytes of the stream (at least ``TAIL_BYTES``, or all after the head),
        read by seeking instead of fed on the way there."""
        self.tail = [tail]
        self.tail_size = len(tail)

    def top_level(self) -> dict[str, Any] | None:
        head = parse_head(bytes(self.head))
        trailer = parse_trailer(b"".join(self.tail).decode("utf-8", "replace"),
                                 self.ARRAY_END)
        if head is None or trailer is None:
            return None
        trailer.pop("traceEvents", None)
        return {**head, **trailer}


def parse_head(head: bytes) -> dict[str, Any] | None:
    body = head.decode("utf-8", "replace").rstrip().rstrip(",")
    try:
        value = json.loads(body + "}", parse_float=Decimal)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_trailer(tail: str, pattern: re.Pattern[str]) -> dict[str, Any] | None:
    decoder = json.JSONDecoder(parse_float=Decimal)
    for found in pattern.finditer(tail):
        members = _object_rest(decoder, tail, found.end())
        if members is not None:
            return members
    return None


_BLANK = re.compile(r"\s*")


def _object_rest(decoder: json.JSONDecoder, text: str, index: int) -> dict[str, Any] | None:
    """Parse ``[, "key": value]* }`` + blanks from ``index`` to the end, without copying."""
    members: dict[str, Any] = {}
    try:
        while True:
            index = _BLANK.match(text, index).end()  # type: ignore[union-attr]
            mark = text[index:index + 1]
            if mark == "}":
                return members if not text[index + 1:].strip() else None
            if mark != ",":
                return None
            index = _BLANK.match(text, index + 1).end()  # type: ignore[union-attr]
            key, index = decoder.raw_decode(text, index)
            index = _BLANK.match(text, index).end()  # type: ignore[union-attr]
            if not isinstance(key, str) or text[index:index + 1] != ":":
                return None
            index = _BLANK.match(text, index + 1).end()  # type: ignore[union-attr]
            members[key], index = decoder.raw_decode(text, index)
    except ValueError:
        return None


def slow_top_level(path: Path) -> dict[str, Any]:
    """Second pass: every top-level key but ``traceEvents``, through ijson's token stream."""
    found: dict[str, Any] = {}
    with open_maybe_gzip(path) as stream:
        for key, value in _top_level_items(ijson.parse(stream)):
            found[key] = value
    return found


def _top_level_items(tokens: Iterator[tuple[str, str, Any]]) -> Iterator[tuple[str, Any]]:
    builder: ijson.ObjectBuilder | None = None
    key: str | None = None
    for prefix, event, value in tokens:
        if prefix == "" and event == "map_key":
            key, builder = value, None
            continue
        if key is None or key == "traceEvents":
            continue
        if builder is None:
            builder = ijson.ObjectBuilder()
        builder.event(event, value)
        if prefix == key and event not in ("start_map", "start_array", "map_key"):
            yield key, builder.value
            key, builder = None, None


def array_after_key(stream: IO[bytes], raw: bytearray, scanner: TopLevelScanner
                      ) -> bytearray:
    """The bytes from the ``[`` of the top-level array named by ``scanner.KEY`` on (more are
    read).

    The key counts as top-level only when the bytes before it parse as the start of an
    object (``TopLevelScanner``): then it is not inside a string or a nested value.
    """
    while not scanner.head_done:
        block = stream.read(CHUNK_BYTES)
        if not block:
            break
        scanner.feed(block)
        raw += block
    if not scanner.found_events or parse_head(bytes(scanner.head)) is None:
        raise Unchunkable("no top-level traceEvents key in the first bytes")
    key_at = len(scanner.head)
    while True:
        start = array_start(bytes(raw[key_at:key_at + HEAD_SNIFF_BYTES]),
                            TopLevelScanner.KEY)
        if start is not None:
            return raw[key_at + start:]
        block = stream.read(CHUNK_BYTES) if len(raw) - key_at < HEAD_SNIFF_BYTES else b""
        if not block:
            raise Unchunkable("traceEvents is not an array")
        scanner.feed(block)
        raw += block
