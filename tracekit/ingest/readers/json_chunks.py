"""Cut a JSON array of events into bounded chunks of whole events, for a one-shot parser.

A streaming parser (ijson) builds every event of a Kineto trace as a dict, one at a time;
a one-shot parser (msgspec) decodes a whole array of events into typed records several
times faster, and skips the fields nobody reads. This module gives it bounded pieces of
the events array: the bytes between two element boundaries, wrapped in ``[`` … ``]``.

Where to cut: at a ``{`` that follows a newline or a comma (plus blanks). JSON strings
cannot hold a raw newline byte, so in pretty layouts (Kineto's own, ``json.dumps(indent=…)``,
one event per line) a ``{`` at the start of a line is always outside strings, and nearly
always an element of the events array; in files written on one line, ``}, {`` nearly always
is. "Nearly" is enough, because every cut is *verified by the parse itself*: a chunk starts
at a known element boundary, so the parser's lexer is in the same state there as a parser
of the whole file would be; if the chunk (minus its trailing comma) parses as a sequence of
values, its end is a boundary too — outside strings, back at the array's own depth, after a
comma. A cut that is wrong (a nested object on its own line, ``, {`` inside a string) makes
the parse fail, and the chunk grows to the next candidate cut.

When no cut works within ``GROW_LIMIT`` bytes, or the end of the array cannot be told from
the end of the file, ``Unchunkable`` says so; the caller falls back to its streaming parser
for the rest (the elements decoded so far were whole and in order, so it can skip them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import IO, Protocol, TypeVar

import msgspec

#: bytes read from the stream at a time
READ_BYTES = 4 << 20
#: a chunk holds at least this many bytes of events (unless the array ends first)
CHUNK_BYTES = 4 << 20
#: a chunk that still does not parse at this size is given up on: the caller falls back
GROW_LIMIT = 64 << 20
#: a candidate cut: the ``{`` of the next element, after a newline or a comma and blanks
_CUT = re.compile(rb"[\n,][ \t\r\n]*\{")
#: the end of the events array: a ``]`` after the last element's ``}`` or after the ``[``
_ARRAY_END = re.compile(rb"[}\[][ \t\r\n]*\]")
#: what may follow the events array of an object: a comma and the next key, or its end
_OBJECT_REST = re.compile(rb'[ \t\r\n]*(?:(,)[ \t\r\n]*"|\}[ \t\r\n]*\Z)')
_BLANKS_TO_END = re.compile(rb"[ \t\r\n]*\Z")
COMMA, OPEN, CLOSE, OPEN_BRACE = ord(","), ord("["), ord("]"), ord("{")

T = TypeVar("T")


class Unchunkable(Exception):
    """The rest of the array cannot be cut here: parse it another way."""


class Feed(Protocol):
    """What sees every byte read (the top-level key scanner)."""

    def feed(self, chunk: bytes) -> None: ...


def array_start(head: bytes, key: bytes) -> int | None:
    """Index of the ``[`` that opens the array following ``key:`` in ``head``.

    ``head`` must start at the key (the caller found it at the top level); None when the
    value is not an array or has not been read yet.
    """
    found = re.compile(re.escape(key) + rb"[ \t\r\n]*:[ \t\r\n]*\[").match(head)
    return found.end() - 1 if found else None


def decoded_chunks(stream: IO[bytes], buffer: bytearray, feed: Feed, *, bare_list: bool,
                   decode: Callable[[memoryview], T | None],
                   trailer_ok: Callable[[bytearray, int], bool]) -> Iterator[T]:
    """Decode the rest of an events array, a bounded chunk at a time.

    ``buffer`` holds the bytes read so far from the array's ``[`` on; more are read from
    ``stream`` (and shown to ``feed``). ``decode(view)`` gets a JSON array of whole elements
    (a view into the buffer, valid during the call) and returns what is yielded, or None
    when the bytes are not a JSON array (the cut was wrong). ``trailer_ok(buffer, index)``
    says whether what starts at ``index`` may follow the array (``object_rest_ok``,
    ``blanks_only``). Raises ``Unchunkable``.

    No chunk is copied: the byte before a chunk's first element (the array's ``[``, or a
    blank or comma between elements) is overwritten with ``[`` and the comma after its last
    element with ``]`` (both put back when the cut was wrong).
    """
    eof = False

    def read_more() -> None:
        nonlocal eof
        block = stream.read(READ_BYTES)
        if not block:
            eof = True
            return
        feed.feed(block)
        buffer.extend(block)

    while True:
        # Find a verified cut at least CHUNK_BYTES in, growing past wrong cuts.
        search_from = CHUNK_BYTES
        elements: T | None = None
        while elements is None:
            while len(buffer) <= search_from and not eof:
                read_more()
            cut = _CUT.search(buffer, min(search_from, len(buffer)))
            while cut is None and not eof:
                if len(buffer) > GROW_LIMIT:
                    raise Unchunkable(f"no element boundary within {GROW_LIMIT} bytes")
                start = max(0, len(buffer) - 64)
                read_more()
                cut = _CUT.search(buffer, start)
            if cut is None:
                break  # the array ends in the buffer
            comma, brace = cut.start(), cut.end() - 1
            if buffer[comma] == COMMA:
                elements = _decode_between(buffer, comma, decode)
            if elements is None:
                if brace > GROW_LIMIT:
                    raise Unchunkable(f"no element boundary within {GROW_LIMIT} bytes")
                search_from = max(brace + 1, 2 * search_from)
                continue
            del buffer[:brace - 1]  # keep one byte before the next element
            yield elements
        if elements is None:
            yield from _last_chunk(buffer, decode, trailer_ok)
            return


def _decode_between(buffer: bytearray, end: int, decode: Callable[[memoryview], T | None]
                    ) -> T | None:
    """``decode`` of ``[`` + buffer[1:end] + ``]``, written in place and put back on failure."""
    first, last = buffer[0], buffer[end]
    buffer[0], buffer[end] = OPEN, CLOSE
    with memoryview(buffer) as view, view[:end + 1] as chunk:
        elements = decode(chunk)
    if elements is None:
        buffer[0], buffer[end] = first, last
    return elements


def _last_chunk(buffer: bytearray, decode: Callable[[memoryview], T | None],
                trailer_ok: Callable[[bytearray, int], bool]) -> Iterator[T]:
    """The elements before the array's closing ``]``, once the stream is exhausted."""
    buffer[0] = OPEN
    for end in _ARRAY_END.finditer(buffer):
        bracket = end.end() - 1
        if not trailer_ok(buffer, bracket + 1):
            continue
        with memoryview(buffer) as view, view[:bracket + 1] as chunk:
            elements = decode(chunk)
        if elements is None:
            break
        yield elements
        return
    raise Unchunkable("the end of the events array was not found")


def object_rest_ok(buffer: bytearray, start: int) -> bool:
    """Whether ``buffer[start:]`` is ``[, "key": value]* }`` and blanks: what ends an object.

    Checked in place (the leading comma briefly becomes ``{``) with the same parser as the
    events, so a trailer it would refuse is refused here too; a candidate inside the events
    fails after its first value, so trying many costs little.
    """
    found = _OBJECT_REST.match(buffer, start)
    if found is None:
        return False
    comma = found.start(1)
    if comma < 0:
        return True  # "}" and blanks
    buffer[comma] = OPEN_BRACE
    try:
        with memoryview(buffer) as view, view[comma:] as rest:
            return isinstance(msgspec.json.decode(rest), dict)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    finally:
        buffer[comma] = COMMA


def blanks_only(buffer: bytearray, start: int) -> bool:
    """Whether ``buffer[start:]`` is nothing but JSON blanks (what may follow a bare list)."""
    return _BLANKS_TO_END.match(buffer, start) is not None
