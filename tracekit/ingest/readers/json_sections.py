"""One pass over a JSON document whose big arrays sit at known key paths, in bounded memory.

Kineto puts all its events in one top-level array (``json_chunks``); other profilers write a
tree: rocprofv3's JSON is ``{"rocprofiler-sdk-tool": [{"metadata": …, "agents": […],
"kernel_symbols": […], …, "buffer_records": {"kernel_dispatch": […], "hip_api": […], …}}]}``
on one line, with arrays of millions of records in the middle of the document. A
``SectionWalker`` reads such a file once, front to back, and hands the values at the paths
of its *plan* to their handlers:

- :class:`Records`: an array of records, decoded by msgspec a chunk of a few MiB at a time
  into typed records (the decoder skips every field the record type does not name);
- :class:`Whole`: a small value (the metadata, a string table), decoded whole;
- :class:`Each`: a callback at the start of each element of an array (one profiled
  process after another).

Everything else is skipped without being built: objects are walked key by key, arrays of
objects are skipped chunk by chunk with a decoder that keeps nothing. Memory is one chunk
of bytes and its records, whatever the file size.

Where a chunk ends is found as ``json_chunks`` finds it — at a ``{`` after a comma, the
cut *verified by the parse itself* (a wrong cut, inside a string or a nested object, leaves
the chunk unparseable and it grows to the next candidate). What is new here is the end of
an array in the middle of a document: a chunk that runs past it parses as the array plus
trailing characters, and msgspec says where the trailing characters begin; the array ends
at the last ``]`` before them, and a parse of exactly that much proves it. Path elements are
object keys, and :data:`ITEM` for "any element of this array".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import msgspec

from tracekit.errors import InputError

#: a path element matching every element of an array
ITEM = "*"
Path = tuple[str, ...]

#: bytes read from the stream at a time
READ_BYTES = 4 << 20
#: a chunk holds at least this many bytes of records (unless the array ends first)
CHUNK_BYTES = 4 << 20
#: a chunk that still has no verified end at this size is refused: the file is not JSON
GROW_LIMIT = 256 << 20
#: a candidate cut: the comma before the ``{`` of the next element
_CUT = re.compile(rb",[ \t\r\n]*\{")
_BLANK = b" \t\r\n"
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SCALAR = re.compile(rb"-?[0-9][0-9.eE+-]*|true|false|null")
COMMA, OPEN, CLOSE = ord(","), ord("["), ord("]")


@dataclass(frozen=True)
class Records:
    """An array of records: ``decoder`` decodes a JSON array of them (``list[T]``), ``handle``
    gets each decoded chunk, in file order."""

    decoder: msgspec.json.Decoder[Any]
    handle: Callable[[list[Any]], None]


@dataclass(frozen=True)
class Whole:
    """A value small enough to decode at once (the decoder may be typed)."""

    decoder: msgspec.json.Decoder[Any]
    handle: Callable[[Any], None]


@dataclass(frozen=True)
class Each:
    """A callback at the start of each element of an array, with the element's index."""

    handle: Callable[[int], None]


Handler = Records | Whole | Each

class _Skipped(msgspec.Struct, gc=False):
    """An object decoded into nothing: msgspec skips every field it does not declare."""


#: decodes any JSON array while keeping almost nothing of its elements (objects become empty
#: records; msgspec.Raw would keep the buffer exported and block trimming it)
_SKIP_ARRAY = msgspec.json.Decoder(list[_Skipped | str | int | float | bool | None | list[Any]])


class NotJson(InputError):
    """The bytes are not the JSON document the plan expects (truncated, damaged, other)."""


class SectionWalker:
    """Reads one JSON document from ``stream`` and calls the plan's handlers in file order."""

    def __init__(self, stream: IO[bytes], plan: dict[Path, Handler], *, name: str,
                 first: bytes = b"") -> None:
        self.stream = stream
        self.plan = plan
        self.name = name
        self.buf = bytearray(first)
        self.pos = 0
        self.eof = False
        #: every path that leads to a planned one: walked into, not skipped
        self.inner = {path[:cut] for path in plan for cut in range(len(path))}
        self._pinned = 0  # while > 0 (a Whole value is being measured) nothing is dropped

    # -- bytes -----------------------------------------------------------------------------

    def _read(self) -> bool:
        """Append the next block of the stream; False at its end."""
        if self.eof:
            return False
        block = self.stream.read(READ_BYTES)
        if not block:
            self.eof = True
            return False
        self.buf += block
        return True

    def _need(self, index: int) -> bool:
        """Whether ``buf[index]`` exists (reading as far as needed)."""
        while index >= len(self.buf):
            if not self._read():
                return False
        return True

    def _drop_consumed(self) -> None:
        """Forget the bytes before ``pos`` (memory stays one chunk or two)."""
        if self._pinned == 0 and self.pos > READ_BYTES:
            del self.buf[:self.pos]
            self.pos = 0

    def _significant(self) -> int:
        """The next byte that is not a blank (``pos`` moves to it)."""
        while True:
            if not self._need(self.pos):
                raise self._truncated()
            byte = self.buf[self.pos]
            if byte not in _BLANK:
                return byte
            self.pos += 1

    def _expect(self, char: bytes) -> None:
        if self._significant() != char[0]:
            raise self._invalid(f"expected {char.decode()!r}")
        self.pos += 1

    def _truncated(self) -> NotJson:
        return NotJson(f"{self.name}: JSON is truncated",
                       hint="the file was cut off while being written; record it again")

    def _invalid(self, what: str) -> NotJson:
        return NotJson(f"{self.name}: JSON is invalid near byte {self.pos} ({what})",
                       hint="the file is damaged or is not the profiler's JSON output")

    # -- the walk --------------------------------------------------------------------------

    def walk(self) -> None:
        """Read the whole document; the stream must hold nothing after it but blanks."""
        self._value(())
        while self._need(self.pos):
            if self.buf[self.pos] not in _BLANK:
                raise self._invalid("data after the end of the document")
            self.pos += 1
            self._drop_consumed()

    def _value(self, path: Path) -> None:
        handler = self.plan.get(path)
        byte = self._significant()
        if isinstance(handler, Records):
            if byte != OPEN:
                raise self._invalid(f"{'.'.join(path)} is not an array")
            for chunk in self._array_chunks(handler.decoder):
                handler.handle(chunk)
        elif isinstance(handler, Whole):
            handler.handle(self._whole(handler.decoder, path))
        elif byte == ord("{"):
            self._object(path)
        elif byte == OPEN:
            self._array(path)
        elif byte == ord('"'):
            self._string()
        else:
            self._scalar()
        self._drop_consumed()

    def _object(self, path: Path) -> None:
        self._expect(b"{")
        if self._significant() == ord("}"):
            self.pos += 1
            return
        while True:
            key = self._string()
            self._expect(b":")
            self._value((*path, key))
            byte = self._significant()
            self.pos += 1
            if byte == ord("}"):
                return
            if byte != COMMA:
                self.pos -= 1
                raise self._invalid("expected ',' or '}' in an object")

    def _array(self, path: Path) -> None:
        item = (*path, ITEM)
        each = self.plan.get(item) if isinstance(self.plan.get(item), Each) else None
        if item not in self.inner and each is None and item not in self.plan:
            start = self.pos
            self.pos += 1
            if self._significant() == ord("{"):  # records nobody asked for: skipped in chunks
                self.pos = start
                for _ in self._array_chunks(_SKIP_ARRAY):
                    pass
                return
            self.pos = start
        self._expect(b"[")
        if self._significant() == CLOSE:
            self.pos += 1
            return
        index = 0
        while True:
            if isinstance(each, Each):
                each.handle(index)
            self._value(item)
            index += 1
            byte = self._significant()
            self.pos += 1
            if byte == CLOSE:
                return
            if byte != COMMA:
                self.pos -= 1
                raise self._invalid("expected ',' or ']' in an array")

    def _string(self) -> str:
        """The string at ``pos`` (moved past it)."""
        if self._significant() != ord('"'):
            raise self._invalid("expected a string")
        start = self.pos
        search = start + 1
        while True:
            end = self.buf.find(b'"', search)
            if end < 0:
                search = len(self.buf)
                if not self._read():
                    raise self._truncated()
                continue
            backslashes = 0
            while self.buf[end - 1 - backslashes] == ord("\\"):
                backslashes += 1
            if backslashes % 2 == 0:
                break
            search = end + 1
        self.pos = end + 1
        try:
            return str(json.loads(bytes(self.buf[start:end + 1])))
        except ValueError:
            raise self._invalid("a string that is not JSON") from None

    def _scalar(self) -> None:
        self._need(self.pos + 64)
        found = _SCALAR.match(self.buf, self.pos)
        if found is None:
            raise self._invalid("expected a value")
        while found.end() == len(self.buf) and self._read():
            found = _SCALAR.match(self.buf, self.pos)
            if found is None:
                raise self._invalid("expected a value")
        self.pos = found.end()

    def _whole(self, decoder: msgspec.json.Decoder[Any], path: Path) -> Any:
        """Decode the (small) value at ``pos``: its extent found by skipping it."""
        self._pinned += 1
        start = self.pos
        try:
            saved, self.plan = self.plan, {}
            inner, self.inner = self.inner, set()
            try:
                self._value(path)
            finally:
                self.plan, self.inner = saved, inner
            data = bytes(self.buf[start:self.pos])
        finally:
            self._pinned -= 1
        try:
            return decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise NotJson(f"{self.name}: {'.'.join(path)} is not what the profiler writes "
                          f"({str(exc)[:160]})",
                          hint="the file is damaged or was not written by the profiler") from None

    # -- arrays of records, in chunks --------------------------------------------------------

    def _array_chunks(self, decoder: msgspec.json.Decoder[Any]) -> Iterator[list[Any]]:
        """The decoded chunks of the array whose ``[`` is at ``pos``; ``pos`` ends past its
        ``]``. The byte before a chunk's first element (the ``[``, or the comma after the
        previous chunk) is overwritten with ``[`` and the comma after its last with ``]``."""
        start = self.pos
        self.pos += 1
        if self._significant() == CLOSE:
            self.pos += 1
            return
        self.pos = start
        while True:
            search_from = start + CHUNK_BYTES
            while True:
                cut = self._next_cut(search_from)
                limit = cut if cut is not None else len(self.buf)
                if cut is not None:
                    chunk = self._decode(decoder, start, cut)
                    if chunk is not None:
                        yield chunk
                        start = cut
                        self._forget_before(start)
                        start = self.pos
                        break
                end = self._array_end(start, limit)
                if end is not None:
                    chunk = self._decode(decoder, start, end)
                    if chunk is None:  # verified by the skip decoder: cannot happen
                        raise self._invalid("an array whose end could not be decoded")
                    yield chunk
                    self.pos = end + 1
                    return
                if cut is None:
                    raise self._truncated()
                if cut - start > GROW_LIMIT:
                    self.pos = start
                    raise self._invalid(f"no record boundary within {GROW_LIMIT} bytes")
                search_from = cut + 1

    def _forget_before(self, start: int) -> None:
        """Drop the bytes before ``start`` (the comma that begins the next chunk)."""
        self.pos = start
        if self._pinned == 0:
            del self.buf[:start]
            self.pos = 0

    def _next_cut(self, search_from: int) -> int | None:
        """Index of the first candidate cut (a comma) at or after ``search_from``; None at
        the end of the stream."""
        self._need(search_from)
        scanned = min(search_from, len(self.buf))
        while True:
            found = _CUT.search(self.buf, scanned)
            if found is not None:
                return found.start()
            scanned = max(scanned, len(self.buf) - 64)
            if not self._read():
                return None

    def _decode(self, decoder: msgspec.json.Decoder[Any], start: int, end: int
                ) -> list[Any] | None:
        """The records of ``buf[start:end]`` read as an array, or None when the bytes are not
        one (a wrong cut). ``buf[end]`` is the comma after the last record (overwritten with
        ``]`` for the parse) or the array's own ``]``. A record of the wrong shape raises."""
        first, last = self.buf[start], self.buf[end]
        self.buf[start] = OPEN
        self.buf[end] = CLOSE
        try:
            with memoryview(self.buf) as view, view[start:end + 1] as chunk:
                try:
                    return list(decoder.decode(chunk))
                except msgspec.ValidationError as exc:  # (a DecodeError: caught first)
                    # Valid JSON of the wrong shape is a bad record; a wrong cut can also
                    # end a record early, which only the untyped decoder tells apart.
                    try:
                        _SKIP_ARRAY.decode(chunk)
                    except msgspec.DecodeError:
                        return None
                    raise NotJson(f"{self.name}: a record is not what the profiler writes "
                                  f"({str(exc)[:160]})",
                                  hint="the file is damaged or was edited") from None
                except msgspec.DecodeError:
                    return None
        finally:
            self.buf[start] = first
            self.buf[end] = last

    def _array_end(self, start: int, limit: int) -> int | None:
        """Index of the array's ``]`` when it lies before ``limit``, else None.

        ``buf[start:limit]`` read as an array: when the array ends inside, the parser stops
        at its ``]`` and reports trailing characters at a byte offset; the ``]`` is the last
        one before that offset, and a parse of exactly that much confirms it.
        """
        first = self.buf[start]
        self.buf[start] = OPEN
        try:
            with memoryview(self.buf) as view, view[start:limit] as chunk:
                try:
                    _SKIP_ARRAY.decode(chunk)
                    return limit - 1 if self.buf[limit - 1] == CLOSE else None
                except msgspec.DecodeError as exc:
                    found = _TRAILING.search(str(exc))
            if found is None:
                return None
            offset = min(start + int(found.group(1)), limit)
            bracket = self.buf.rfind(b"]", start, offset)
            while bracket > start:
                with memoryview(self.buf) as view, view[start:bracket + 1] as chunk:
                    try:
                        _SKIP_ARRAY.decode(chunk)
                        return bracket
                    except msgspec.DecodeError:
                        bracket = self.buf.rfind(b"]", start, bracket)
            return None
        finally:
            self.buf[start] = first
