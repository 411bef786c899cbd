"""Kineto events as typed records: only the fields the reader uses are ever built.

On a real vLLM trace recorded with shapes, most events are ``python_function`` frames the
reader only counts, and most of every event's bytes are args nobody reads (``Concrete
Inputs``, ``Input Strides``, ``Python id`` …). ``msgspec`` decodes a JSON array of events
into ``Event`` records with the top-level fields below and an ``args`` record holding only the
arg names the reader's spec lists; everything else is skipped by the parser without being
built. Field values stay untyped (``Any``): a value of an unexpected type is the handlers'
business, exactly as with a dict.

Args listed as ``raw`` (the CPU ops' ``Input type`` and ``Input Dims``: nested lists, stored as
JSON text) are not built at all: msgspec keeps each one's JSON bytes (``msgspec.Raw``, a view
into the decoded chunk) and the reader turns each distinct text into its stored form once
(``texts_of``). A chunk must then be decoded from ``bytes``, never from a view into a buffer
that is later cut: a ``Raw`` holds an export of what it was decoded from.

Numbers: floats, or ``Decimal`` when the file's times are too large for a float to keep every
ns (``exact=True``; the same rule and the same values as ijson's ``use_float=False``).

Whatever the typed decode refuses is decoded again without types (an ``args`` that is not an
object, an event that is not one), and whatever msgspec refuses is handed to ijson, the
streaming parser the reader falls back on, so every chunk gets ijson's semantics at worst:
``from_dict`` turns those dicts into the same records.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import ijson
import msgspec

#: top-level event fields the reader reads
EVENT_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id")


class EventTypes:
    """The ``Event``/``Args`` record types for a set of arg names, and their decoders."""

    def __init__(self, arg_names: Iterable[str], *, exact: bool,
                 raw: Iterable[str] = ()) -> None:
        names = list(dict.fromkeys(arg_names))
        raw_names = frozenset(raw)
        #: arg name → attribute of the args record
        self.attr = {name: f"a{index}" for index, name in enumerate(names)}
        self.args_type = msgspec.defstruct(
            "KinetoArgs",
            [(self.attr[name], msgspec.Raw if name in raw_names else Any,
              msgspec.field(default=None, name=name)) for name in names],
            gc=False)
        self.event_type = msgspec.defstruct(
            "KinetoEvent",
            [*((field, Any, None) for field in EVENT_FIELDS),
             ("args", self.args_type | None, None)],  # type: ignore[operator]
            gc=False)
        #: the args of an event without (usable) args: every arg None
        self.no_args = self.args_type()
        self.exact = exact
        hook = Decimal if exact else None
        self._typed = msgspec.json.Decoder(list[self.event_type],  # type: ignore[name-defined]
                                           float_hook=hook)
        self._untyped = msgspec.json.Decoder(float_hook=hook)
        self._arg_pairs = tuple(self.attr.items())

    def value_of(self, raw: msgspec.Raw | bytes) -> Any:
        """The value of a ``raw`` arg's JSON text, as the untyped decode would give it."""
        return self._untyped.decode(raw)

    def decode(self, data: bytes | bytearray | memoryview) -> tuple[list[Any], int] | None:
        """The event records of a JSON array and its number of elements (anything but an
        object has no record), or None when ``data`` is not a JSON array (a wrong cut)."""
        try:
            events = self._typed.decode(data)
            return events, len(events)
        except msgspec.ValidationError:
            try:
                values = self._untyped.decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                values = self._ijson(data)
        except msgspec.DecodeError:
            values = self._ijson(data)
        if values is None:
            return None
        return [event for event in map(self.from_dict, values) if event is not None], len(values)

    def _ijson(self, data: bytes | bytearray | memoryview) -> list[Any] | None:
        """The array as ijson reads it (lone surrogates, overflowing floats …), or None."""
        try:
            return list(ijson.items(io.BytesIO(data), "item", use_float=not self.exact))
        except ijson.JSONError:
            return None

    def from_dict(self, event: Any) -> Any:
        """The record of one event parsed as a dict; None for anything but an object."""
        if type(event) is not dict:
            return None
        args = event.get("args")
        get = args.get if type(args) is dict else None
        return self.event_type(
            *(event.get(field) for field in EVENT_FIELDS),
            args=(self.args_type(**{attr: get(name) for name, attr in self._arg_pairs})
                  if get is not None else None))
