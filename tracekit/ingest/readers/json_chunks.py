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

Which cut: the first candidate at least ``CHUNK_BYTES`` after the chunk's start (a candidate
that is not after a comma, or whose chunk does not parse, moves the search on, at least
doubling the distance). The cuts depend on the bytes alone, never on how they were read, so
``chunk_spans`` finds the same cuts in a plain file by seeking (a reader that decodes its
chunks in several processes), without decoding anything; the decode verifies them there.

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
#: what the start of a cut that runs past the bytes read so far can be followed by
_CUT_PREFIX_TO_END = re.compile(rb"[ \t\r\n,]*\Z")
#: bytes read at a time when looking for a cut by seeking (``chunk_spans``)
PROBE_BYTES = 64 << 10
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
            start = min(search_from, len(buffer))
            cut = _CUT.search(buffer, start)
            while cut is None and not eof:
                if len(buffer) > GROW_LIMIT:
                    raise Unchunkable(f"no element boundary within {GROW_LIMIT} bytes")
                start = resume_at(buffer, start)
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


def resume_at(buffer: bytes | bytearray, searched_from: int) -> int:
    """Where to search for a cut again once more bytes follow ``buffer``, after a search from
    ``searched_from`` found none: a cut not found yet runs past the end, so it starts in the
    trailing run of blanks and commas (never before ``searched_from``)."""
    probe = max(searched_from, len(buffer) - 64)
    while True:
        found = _CUT_PREFIX_TO_END.search(buffer, probe)
        at = found.start() if found is not None else len(buffer)
        if at > probe or probe == searched_from:
            return at
        probe = max(searched_from, probe - 4096)  # the run may go further back


def chunk_spans(stream: IO[bytes], array_at: int, size: int, *,
                trailer_ok: Callable[[bytearray, int], bool]) -> list[tuple[int, int]]:
    """The chunks ``decoded_chunks`` makes of the array whose ``[`` is at offset ``array_at``
    of a seekable ``stream`` of ``size`` bytes, found by seeking instead of reading it all.

    Each chunk is ``(start, end)``: the offset of the byte before its first element (the
    ``[``, or the blank or comma ``decoded_chunks`` overwrites with ``[``) and of the byte
    after its last one (the comma it overwrites with ``]``, or the array's own ``]``). The
    cuts are not verified (nothing is decoded): whoever decodes a chunk verifies its cut,
    and a chunk that does not parse means ``decoded_chunks`` would have cut elsewhere.
    Raises ``Unchunkable`` where ``decoded_chunks`` would, or could (a cut close to
    ``GROW_LIMIT``).
    """
    spans = []
    start = array_at
    while True:
        search_from = CHUNK_BYTES
        while True:
            cut = _cut_at(stream, start, search_from, size)
            if cut is None:
                spans.append((start, _array_end(stream, start, size, trailer_ok)))
                return spans
            comma, brace, after_comma = cut
            if brace - start > GROW_LIMIT // 2:
                raise Unchunkable(f"no element boundary within {GROW_LIMIT // 2} bytes")
            if after_comma:
                break
            search_from = max(brace + 1 - start, 2 * search_from)
        spans.append((start, comma))
        start = brace - 1


def _cut_at(stream: IO[bytes], start: int, search_from: int, size: int
            ) -> tuple[int, int, bool] | None:
    """Offsets of the comma (or newline) and ``{`` of the first cut at least
    ``search_from`` after ``start``, and whether it follows a comma; None when there is
    none before the end."""
    origin = start + search_from
    if origin >= size:
        return None
    stream.seek(origin)
    window = bytearray(stream.read(PROBE_BYTES))
    searched = 0
    while True:
        cut = _CUT.search(window, searched)
        if cut is not None:
            return (origin + cut.start(), origin + cut.end() - 1,
                    window[cut.start()] == COMMA)
        if origin + len(window) >= size:
            return None
        if origin + len(window) - start > GROW_LIMIT // 2:
            raise Unchunkable(f"no element boundary within {GROW_LIMIT // 2} bytes")
        searched = resume_at(window, searched)
        window += stream.read(PROBE_BYTES)


def _array_end(stream: IO[bytes], start: int, size: int,
               trailer_ok: Callable[[bytearray, int], bool]) -> int:
    """Offset of the ``]`` that ends the array, found as ``_last_chunk`` finds it."""
    if size - start > GROW_LIMIT:
        raise Unchunkable(f"the last chunk is over {GROW_LIMIT} bytes")
    stream.seek(start)
    buffer = bytearray(stream.read(size - start))
    buffer[0] = OPEN
    for end in _ARRAY_END.finditer(buffer):
        bracket = end.end() - 1
        if trailer_ok(buffer, bracket + 1):
            return start + bracket
    raise Unchunkable("the end of the events array was not found")


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
