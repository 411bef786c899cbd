"""Read PyTorch profiler (Kineto) Chrome-trace JSON into the store, in bounded chunks.

Kineto traces reach gigabytes, so the file is never loaded whole. The events array is cut
into chunks of a few MiB of whole events (``json_chunks``: cuts at a ``{`` after a newline or
a comma, each verified by the parse itself) and each chunk is decoded by msgspec into typed
records holding only the fields and args this reader uses (``kineto_events``); on a real
vLLM trace most events are ``python_function`` frames that are only counted (but for the
``nn.Module`` frames among them, picked by name in C and kept for the layer attribution), and
most bytes are args nobody reads. Counting categories and picking the events with a role happen in C
(``map``, ``Counter``, ``compress``); CPU ops and runtime calls, the bulk of what is kept,
become rows a column at a time. A layout that cannot be cut (no element boundary within
``json_chunks.GROW_LIMIT``, an events array that is not at the top of the first bytes, an
odd ending) is read from where the chunks stopped by ijson's streaming C parser, event by
event, as before. Rows are staged in temporary tables (``tracekit.ingest.staging``) and
finished in SQL. Memory is bounded by a chunk or two of bytes and records, one chunk of staged
rows per table and the per-run lookup dicts (unique kernel/API names, processes, threads).

Top-level keys (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds`` …) may
sit before or after ``traceEvents``; ``json_document`` recovers them from the bytes around the
array without parsing the events twice. Times are exact integer ns (``kineto_time``); stored
times are ns relative to the run's time base (see ``parsers/kineto-json.toml``).

Links: a kernel's launching call (same ``correlation`` in the same file) and its framework op
(its ``External id``, offset per file so ranks never mix) are resolved once when the staged
rows are finished (``trace_rows``: ``kernels.cpu_op_id``).
"""

from __future__ import annotations

import gc
import gzip
import json
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import compress, islice, repeat
from operator import attrgetter, methodcaller
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import ijson
import msgspec
import numpy as np

from tracekit import progress
from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.readers.json_chunks import (
    Unchunkable,
    blanks_only,
    decoded_chunks,
    object_rest_ok,
)
from tracekit.ingest.readers.json_document import (
    CHUNK_BYTES,
    TeeReader,
    TopLevelScanner,
    array_after_key,
    first_significant,
    open_maybe_gzip,
    slow_top_level,
)
from tracekit.ingest.readers.kineto_events import EventTypes
from tracekit.ingest.readers.kineto_split import read_split, split_workers
from tracekit.ingest.readers.kineto_time import FLOAT_EXACT_US, floats_are_exact, to_ns
from tracekit.ingest.spec import KinetoMapping
from tracekit.ingest.trace_rows import (
    FileState,
    TraceRows,
    dump_json,
    int_id,
    int_or_none,
    json_default,
)

#: kernels without a ``correlation`` arg wait this long (in events) for their ac2g flow
PENDING_LIMIT = 100_000
#: position of correlation_id in a tk_kernel row
CORRELATION_AT = 15


#: args read from metadata events (``process_name``/``thread_name``)
METADATA_ARGS = ("name",)
#: the integer kernel args, in the order _kernel unpacks them
KERNEL_ARG_TARGETS = ("device", "stream", "correlation", "registers", "shared_memory",
                      "external_id", "graph_node_id", "graph_id")
#: distinct ``Input type`` / ``Input Dims`` texts remembered with their stored form, per arg
TEXTS_CACHE_SIZE = 1 << 15
#: what a text cache gives for a text it has not seen
_UNSEEN = object()


def pick(args: Any, attrs: tuple[str, ...]) -> Any:
    """The first of the spec's candidate args present (current spelling first)."""
    value = getattr(args, attrs[0])
    if value is None and len(attrs) > 1:
        for attr in attrs[1:]:
            value = getattr(args, attr)
            if value is not None:
                return value
    return value


def as_int(value: Any) -> int | None:
    """An int arg as is (the usual case, no call), anything else through int_or_none."""
    return value if type(value) is int else int_or_none(value)


@dataclass
class Roles:
    """The spec's category and args tables, flattened for the hot loop."""

    role_of: dict[str, str]
    args: dict[str, tuple[str, ...]]

    @classmethod
    def from_spec(cls, mapping: KinetoMapping) -> Roles:
        role_of = {cat: role for role in mapping.categories.__struct_fields__
                   for cat in getattr(mapping.categories, role)}
        args = {target: getattr(mapping.args, target) for target in mapping.args.__struct_fields__}
        return cls(role_of, args)


_CAT = attrgetter("cat")
_PH = attrgetter("ph")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_PID = attrgetter("pid")
_TID = attrgetter("tid")
_ARGS = attrgetter("args")
_EVENT_NAME = attrgetter("name")
_NUMBERS = frozenset({int, float})
_INT_OR_NONE = frozenset({int, type(None)})
#: roles handled a chunk at a time, by group (roles of a group share a stage table)
BATCHED = {"cpu_op": "cpu_op", "runtime": "api", "driver": "api"}


class KinetoReader(TraceRows):
    """Walks the events of every file of a run and stages their rows."""

    def __init__(self, ctx: IngestContext) -> None:
        super().__init__(ctx)
        mapping: KinetoMapping = ctx.spec.mapping
        roles = Roles.from_spec(mapping)
        self.role_of = roles.role_of
        self.arg_names = [*(name for keys in roles.args.values() for name in keys),
                          *METADATA_ARGS]
        self.spec_args = roles.args
        self.categories: Counter[str] = Counter()
        self.flows = 0
        self.pending: dict[tuple[Any, Any, Any], list[Any]] = {}
        self.store_gpu_ranges = mapping.store.gpu_annotations
        self.module_cats = frozenset(mapping.modules.categories)
        self.module_prefix = mapping.modules.prefix
        self.module_frames = 0
        self.last_thread: tuple[Any, Any] = (None, None)
        #: stored JSON of each distinct raw ``Input type`` / ``Input Dims`` text seen
        self.text_caches: dict[str, dict[bytes, str | None]] = {"types": {}, "dims": {}}
        self.handlers = {
            "kernel": self._kernel, "memcpy": self._memcpy, "memset": self._memset,
            "runtime": self._runtime, "driver": self._driver, "cpu_op": self._cpu_op,
            "annotation": self._annotation, "gpu_annotation": self._gpu_annotation,
        }
        self.use_types(exact=False)
        #: bytes of the current file read so far (for the progress bar)
        self.position: Callable[[], int] = lambda: 0

    def use_types(self, *, exact: bool) -> None:
        """Decode events into the records of ``kineto_events`` (floats, or Decimal)."""
        raw = (*self.spec_args["input_types"], *self.spec_args["input_dims"])
        types = self.types = EventTypes(self.arg_names, exact=exact, raw=raw)
        for cache in self.text_caches.values():
            cache.clear()  # a text's value depends on how numbers are read
        self.no_args = types.no_args
        attrs = {target: tuple(types.attr[name] for name in names)
                 for target, names in self.spec_args.items()}
        self.keys = SimpleNamespace(**attrs)
        self.name_attr = types.attr["name"]
        # kernel args read per event: the current spelling first, others only when missing
        self.kernel_arg_keys = tuple(attrs[target] for target in KERNEL_ARG_TARGETS)
        self.kernel_args = attrgetter(*(keys[0] for keys in self.kernel_arg_keys))
        self.kernel_alternatives = any(len(keys) > 1 for keys in self.kernel_arg_keys)

    # -- reading ------------------------------------------------------------------------

    def read(self, index: int, path: Path) -> None:
        """Read one file's events into the stage tables (chunked, else streamed)."""
        state = FileState(index, path)
        self.files.append(state)
        handled = 0
        header = None
        try:
            size = path.stat().st_size
            with progress.task(f"reading {path.name}", total=size, unit="bytes") as task:
                workers = split_workers(self.ctx.jobs, size, self.connection)
                if workers > 1 and read_split(self, state, path, workers, task):
                    pass  # the file's chunks were read by several processes
                else:
                    try:
                        with _gc_paused():
                            for events, elements in self._chunks(path):
                                self._handle_chunk(state, events)
                                handled += elements
                                task.update(self.position())
                        header = self.chunk_header
                    except Unchunkable:
                        header = self._stream(state, path, skip=handled)
                task.update(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: gzip data is truncated or corrupt ({exc})",
                             hint="copy the trace again; the capture may have been cut off"
                             ) from None
        except ijson.JSONError as exc:
            raise InputError(f"{path}: JSON is truncated or invalid ({str(exc)[:120]})",
                             hint="the trace was probably cut off while being written"
                             ) from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        self._flush_pending()
        if header is not None:
            state.header = header

    def _chunks(self, path: Path) -> Iterator[tuple[list[Any], int]]:
        """The file's events decoded by msgspec, a bounded chunk at a time (``json_chunks``).

        Yields each chunk's event records and its number of array elements. Raises
        ``Unchunkable`` when the layout does not allow it (no ``traceEvents`` array found at
        the top level of the first bytes, no element boundary, an odd ending); the elements
        yielded before were whole and in order. Sets ``chunk_header``.
        """
        self.chunk_header: dict[str, Any] | None = None
        scanner = TopLevelScanner()
        with open_maybe_gzip(path) as stream:
            self.position = lambda: progress.file_position(stream)
            first = first_significant(stream)
            self.use_types(exact=not floats_are_exact(first))
            scanner.feed(first)
            bare_list = first[:1] == b"["
            if bare_list:
                buffer = bytearray(first)
            else:
                buffer = array_after_key(stream, bytearray(first), scanner)
            yield from decoded_chunks(stream, buffer, scanner, bare_list=bare_list,
                                      decode=self._decode_copy,
                                      trailer_ok=blanks_only if bare_list else object_rest_ok)
        if not bare_list:
            header = scanner.top_level()
            self.chunk_header = header if header is not None else slow_top_level(path)

    def _decode_copy(self, view: memoryview) -> tuple[list[Any], int] | None:
        """``EventTypes.decode`` of a copy of the chunk: the records' raw args point into
        what was decoded, and the chunker's buffer is cut after each chunk."""
        return self.types.decode(bytes(view))

    def _stream(self, state: FileState, path: Path, skip: int) -> dict[str, Any] | None:
        """The file through ijson's streaming parser, events after the first ``skip``.

        For layouts the chunked path cannot cut; returns the top-level keys (None for a bare
        list). Raises ``ijson.JSONError`` on invalid JSON.
        """
        scanner = TopLevelScanner()
        with open_maybe_gzip(path) as stream:
            first = first_significant(stream)
            bare_list = first[:1] == b"["
            prefix = "item" if bare_list else "traceEvents.item"
            tee = TeeReader(stream, first, scanner)
            use_float = floats_are_exact(first)
            self.use_types(exact=not use_float)
            from_dict = self.types.from_dict
            handle = self._handle
            events = ijson.items(tee, prefix, buf_size=CHUNK_BYTES, use_float=use_float)
            for event in islice(events, skip, None):
                record = from_dict(event)
                if record is not None:
                    handle(state, record)
        if bare_list:
            return None
        if not scanner.found_events:
            raise InputError(f"{path}: JSON has no traceEvents array, so it is not a torch "
                             "profiler trace",
                             hint="pass the file written by torch.profiler "
                                  "(export_chrome_trace / tensorboard_trace_handler)")
        header = scanner.top_level()
        return header if header is not None else slow_top_level(path)

    def _handle_chunk(self, state: FileState, events: list[Any]) -> None:
        """One chunk of events: counted per category in C, only role events visit Python."""
        cats = list(map(_CAT, events))
        try:
            counts = Counter(cats)
            roles = list(map(self.role_of.get, cats))
        except TypeError:  # an unhashable cat (a list …): the careful way
            counts = None
        if counts is None or "M" in map(_PH, events) or not all(
                type(cat) is str and cat for cat in counts):
            handle = self._handle
            for event in events:
                handle(state, event)
            return
        self.categories.update(counts)
        handlers = self.handlers
        batches: dict[str, list[Any]] = {"cpu_op": [], "api": []}
        for event, role in zip(compress(events, roles), filter(None, roles), strict=True):
            if role == "flow":
                self._flow(event)
            elif role in BATCHED:
                batches[BATCHED[role]].append(event)
            elif event.ph == "X" and event.ts is not None:
                handlers[role](state, event)
        # CPU ops and runtime/driver calls fill tables no other role writes, and nothing of
        # theirs depends on the order of other roles' events: a column at a time.
        if batches["cpu_op"]:
            self._cpu_ops(state, batches["cpu_op"])
        if batches["api"]:
            self._apis(state, batches["api"])
        if self.module_cats and not self.module_cats.isdisjoint(counts):
            self._module_frames(state, events, cats)

    def _handle(self, state: FileState, event: Any) -> None:
        cat = event.cat
        role = self.role_of.get(cat) if type(cat) is str else None
        if role is None:
            if event.ph == "M":
                self._metadata(event)
            elif type(cat) is str and cat in self.module_cats:
                self._module_frames(state, [event], [cat])
            self.categories[str(cat or event.ph or "?")] += 1
            return
        self.categories[cat] += 1  # type: ignore[index]  # cat is a str here
        if role == "flow":
            self._flow(event)
            return
        if event.ph != "X" or event.ts is None:
            return
        self.handlers[role](state, event)

    def _times(self, event: Any) -> tuple[int, int]:
        """Start and end ns. end = ns(ts) + ns(dur): both exact, so their sum is too."""
        ts = event.ts
        dur = event.dur or 0
        try:
            if type(ts) is float and -FLOAT_EXACT_US < ts < FLOAT_EXACT_US:
                start = round(ts * 1000)
            else:
                start = to_ns(ts)
            return start, start + (round(dur * 1000) if type(dur) is float else to_ns(dur))
        except (TypeError, ArithmeticError, ValueError):
            raise InputError(
                f"event {_name(event, '?')[:80]!r} has a ts/dur that is not a number of "
                f"microseconds ({str(ts)[:40]!r}, {str(dur)[:40]!r})",
                hint="the trace is damaged or was not written by the torch profiler") from None

    def _kernel(self, state: FileState, event: Any) -> None:
        args = event.args
        if args is None:
            args = self.no_args
        key = self.kernel_key(_name(event, "<unnamed kernel>"))
        start, end = self._times(event)
        # device, stream, correlation, registers, shared memory, External id, graph node/id
        values: Any = self.kernel_args(args)
        if None in values and self.kernel_alternatives:
            values = [value if value is not None else pick(args, keys)
                      for value, keys in zip(values, self.kernel_arg_keys, strict=True)]
        if not all(type(value) is int or value is None for value in values):
            values = [as_int(value) for value in values]
        device, stream, correlation, registers, smem, external, node, graph = values
        if device is None:
            device = int_id(event.pid)
        if stream is None:
            stream = int_id(event.tid)
        if device is not None and device not in state.devices_seen:
            state.devices_seen.add(device)
        grid = pick(args, self.keys.grid)
        block = pick(args, self.keys.block)
        gx, gy, gz = grid if type(grid) is list and len(grid) == 3 else _dims(grid)
        bx, by, bz = block if type(block) is list and len(block) == 3 else _dims(block)
        row = [state.index, key, device, stream, start, end, gx, gy, gz, bx, by, bz,
               registers, None, smem, correlation, external or None, node, graph]
        if correlation is None:
            # Legacy traces may only link through the ac2g/async_gpu flow that follows.
            self.pending[(event.pid, event.tid, event.ts)] = row
            if len(self.pending) > PENDING_LIMIT:
                self._flush_pending()
            return
        self.stage["tk_kernel"].add(tuple(row))

    def _flow(self, event: Any) -> None:
        self.flows += 1
        if not self.pending or event.ph != "f":
            return
        row = self.pending.pop((event.pid, event.tid, event.ts), None)
        if row is not None:
            row[CORRELATION_AT] = as_int(event.id)
            self.stage["tk_kernel"].add(tuple(row))

    def _flush_pending(self) -> None:
        for row in self.pending.values():
            self.stage["tk_kernel"].add(tuple(row))
        self.pending.clear()

    def _memory(self, state: FileState, event: Any, kind: str) -> None:
        args = event.args
        if args is None:
            args = self.no_args
        keys = self.keys
        start, end = self._times(event)
        device = as_int(pick(args, keys.device))
        if device is None:
            device = int_id(event.pid)
        if device is not None:
            state.devices_seen.add(device)
        stream = as_int(pick(args, keys.stream))
        self.stage["tk_memory"].add((
            state.index, kind, device, stream if stream is not None else int_id(event.tid),
            start, end, as_int(pick(args, keys.bytes)), as_int(pick(args, keys.correlation))))

    def _memcpy(self, state: FileState, event: Any) -> None:
        self._memory(state, event, "memcpy")

    def _memset(self, state: FileState, event: Any) -> None:
        self._memory(state, event, "memset")

    def _api(self, state: FileState, event: Any, kind: str) -> None:
        args = event.args
        if args is None:
            args = self.no_args
        name = _name(event, "")
        key = self.api_key(name)
        kind = _api_kind(kind, name)
        pid, tid = self._cpu_ids(state.runtime_pids, event)
        start, end = self._times(event)
        self.stage["tk_runtime"].add((state.index, key, kind, start, end,
                                      as_int(pick(args, self.keys.correlation)), tid, pid))

    def _runtime(self, state: FileState, event: Any) -> None:
        self._api(state, event, "runtime")

    def _driver(self, state: FileState, event: Any) -> None:
        self._api(state, event, "driver")

    def _cpu_op(self, state: FileState, event: Any) -> None:
        args = event.args
        if args is None:
            args = self.no_args
        keys = self.keys
        pid, tid = self._cpu_ids(state.cpu_pids, event)
        start, end = self._times(event)
        self.stage["tk_cpu_op"].add((
            state.index, _name(event, ""), start, end,
            as_int(pick(args, keys.external_id)) or None, tid, pid,
            self._text_of(pick(args, keys.input_types), "types"),
            self._text_of(pick(args, keys.input_dims), "dims")))

    def _annotation(self, state: FileState, event: Any) -> None:
        pid, tid = self._cpu_ids(state.cpu_pids, event)
        start, end = self._times(event)
        self.stage["tk_range"].add((state.index, "push_pop", start, end, _name(event, ""),
                                    None, tid, pid))

    def _cpu_ops(self, state: FileState, events: list[Any]) -> None:
        """The rows of a chunk's ``cpu_op`` events (``_cpu_op`` for many, column-wise: in
        the usual case every column is made in C, without a Python step per event)."""
        events = _complete_only(events)
        if not events:
            return
        keys = self.keys
        args = list(map(_ARGS, events))
        if None in args:
            no_args = self.no_args
            args = [a if a is not None else no_args for a in args]
        pids, tids = self._cpu_ids_of(state.cpu_pids, events)
        starts, ends = self._times_of(events)
        externals = self._picked(args, keys.external_id)
        if not _types_in(externals, _INT_OR_NONE) or 0 in externals:
            externals = [as_int(value) or None for value in externals]
        types = self._texts_of(self._picked(args, keys.input_types), "types")
        dims = self._texts_of(self._picked(args, keys.input_dims), "dims")
        names = list(map(_EVENT_NAME, events))
        if not _all_of_type(names, str) or "" in names:
            names = [name if type(name) is str and name else _name(event, "")
                     for name, event in zip(names, events, strict=True)]
        self.stage["tk_cpu_op"].extend(list(zip(
            repeat(state.index), names, starts, ends, externals, tids, pids, types, dims,
            strict=False)))

    def _module_frames(self, state: FileState, events: list[Any], cats: list[Any]) -> None:
        """The ``nn.Module`` frames among a chunk's Python frames → ``nvtx_ranges`` kind
        ``module``. Picked in C (the category, then the name prefix); only the frames kept
        (a few percent of the Python frames) become rows."""
        frames = list(compress(events, map(self.module_cats.__contains__, cats)))
        names = list(map(_EVENT_NAME, frames))
        try:
            keep = list(map(methodcaller("startswith", self.module_prefix), names))
        except (AttributeError, TypeError):  # a name that is not a string: one by one
            keep = [type(name) is str and name.startswith(self.module_prefix)
                    for name in names]
        frames = [event for event in compress(frames, keep)
                  if event.ph == "X" and event.ts is not None]
        if not frames:
            return
        self.module_frames += len(frames)
        pids, tids = self._cpu_ids_of(Counter(), frames)
        starts, ends = self._times_of(frames)
        self.stage["tk_range"].extend(list(zip(
            repeat(state.index), repeat("module"), starts, ends, map(_EVENT_NAME, frames),
            repeat(None), tids, pids, strict=False)))

    def _apis(self, state: FileState, events: list[Any]) -> None:
        """The rows of a chunk's runtime and driver calls, in file order (``_api`` for many)."""
        events = _complete_only(events)
        if not events:
            return
        no_args = self.no_args
        args = [a if a is not None else no_args for a in map(_ARGS, events)]
        names = [name if type(name) is str else _name(event, "")
                 for name, event in zip(map(_EVENT_NAME, events), events, strict=True)]
        api_key = self.api_key
        keys = list(map(api_key, names))
        role_of = self.role_of
        kinds = [_api_kind(role_of[event.cat], name) for event, name in
                 zip(events, names, strict=True)]
        pids, tids = self._cpu_ids_of(state.runtime_pids, events)
        starts, ends = self._times_of(events)
        correlations = list(map(as_int, self._picked(args, self.keys.correlation)))
        self.stage["tk_runtime"].extend(list(zip(
            repeat(state.index), keys, kinds, starts, ends, correlations, tids, pids,
            strict=False)))

    def _picked(self, args: list[Any], attrs: tuple[str, ...]) -> list[Any]:
        """``pick`` over many events' args: the first spelling in C, others where missing."""
        values = list(map(attrgetter(attrs[0]), args))
        if len(attrs) > 1 and None in values:
            values = [value if value is not None else pick(a, attrs)
                      for value, a in zip(values, args, strict=True)]
        return values

    def _cpu_ids_of(self, counts: Counter[int], events: list[Any]
                    ) -> tuple[list[int | None], list[int | None]]:
        """``_cpu_ids`` for many events: pids and tids as ints, threads and processes noted."""
        pids = list(map(_PID, events))
        tids = list(map(_TID, events))
        if not _all_of_type(pids, int):
            pids = [p if type(p) is int else int_id(p) for p in pids]
        if not _all_of_type(tids, int):
            tids = [t if type(t) is int else int_id(t) for t in tids]
        counts.update(pids)
        for pid, tid in set(zip(pids, tids, strict=True)):
            self.thread(pid, tid)
        return pids, tids

    def _times_of(self, events: list[Any]) -> tuple[list[int], list[int]]:
        """``_times`` for many events: in numpy when every ``ts`` is a float and every
        ``dur`` a number, all within ``FLOAT_EXACT_US`` (the same doubles, the same rounding
        — half to even — as ``round``), else event by event."""
        ts = list(map(_TS, events))
        durs = [d or 0 for d in map(_DUR, events)]
        if _all_of_type(ts, float) and _types_in(durs, _NUMBERS):
            starts = np.array(ts, dtype=np.float64)
            try:
                lengths = np.array(durs, dtype=np.float64)
            except OverflowError:  # an int dur beyond any float: event by event
                lengths = np.array([np.inf])
            if (np.abs(starts).max() < FLOAT_EXACT_US
                    and np.abs(lengths).max() < FLOAT_EXACT_US):
                start_ns = np.rint(starts * 1000).astype(np.int64)
                end_ns = start_ns + np.rint(lengths * 1000).astype(np.int64)
                return start_ns.tolist(), end_ns.tolist()
        pairs = list(map(self._times, events))
        return [start for start, _ in pairs], [end for _, end in pairs]

    def _cpu_ids(self, counts: Counter[int], event: Any) -> tuple[int | None, int | None]:
        """pid/tid of a CPU event as ints; remembers the thread and counts the process."""
        pid, tid = event.pid, event.tid
        if type(pid) is not int:
            pid = int_id(pid)
        if type(tid) is not int:
            tid = int_id(tid)
        if (pid, tid) != self.last_thread:
            self.thread(pid, tid)
            self.last_thread = (pid, tid)
        counts[pid] += 1  # type: ignore[index]
        return pid, tid

    def _texts_of(self, values: list[Any], kind: str) -> list[str | None]:
        """``_text_of`` for many values: the raw texts looked up in C, only those not seen
        before converted (``Input type`` and ``Input Dims`` lists repeat endlessly)."""
        kinds = set(map(type, values))
        if kinds == {msgspec.Raw}:
            cache = self.text_caches[kind]
            raws = list(map(bytes, values))
            texts = list(map(cache.get, raws, repeat(_UNSEEN)))
            if _UNSEEN in texts:
                for index, (text, raw) in enumerate(zip(texts, raws, strict=True)):
                    if text is _UNSEEN:
                        texts[index] = self._new_text(raw, kind)
            return texts  # type: ignore[return-value]  # every _UNSEEN was replaced
        if kinds == {type(None)}:
            return [None] * len(values)  # the arg is absent: no text either way
        return [self._text_of(value, kind) for value in values]

    def _text_of(self, value: Any, kind: str) -> str | None:
        """The stored JSON of an ``Input type`` (``kind`` "types") or ``Input Dims``
        ("dims") arg: its raw JSON text (the usual case) or an already decoded value
        (events read by the fallback parsers)."""
        if type(value) is msgspec.Raw:
            raw = bytes(value)
            text = self.text_caches[kind].get(raw, _UNSEEN)
            return self._new_text(raw, kind) if text is _UNSEEN else text  # type: ignore[return-value]
        return _TO_TEXT[kind](value)

    def _new_text(self, raw: bytes, kind: str) -> str | None:
        """A raw text not seen before: decoded as the events are, converted, remembered."""
        text = _TO_TEXT[kind](self.types.value_of(raw))
        cache = self.text_caches[kind]
        if len(cache) < TEXTS_CACHE_SIZE:
            cache[raw] = text
        return text

    def _gpu_annotation(self, state: FileState, event: Any) -> None:
        if not self.store_gpu_ranges:
            return
        start, end = self._times(event)
        self.stage["tk_range"].add((state.index, "gpu_range", start, end, _name(event, ""),
                                    None, None, None))

    def _metadata(self, event: Any) -> None:
        args = event.args
        name = getattr(args, self.name_attr) if args is not None else None
        if not isinstance(name, str):
            return
        pid = int_id(event.pid)
        if pid is None:
            return
        if event.name == "process_name":
            self.process_names[pid] = name
        elif event.name == "thread_name":
            tid = int_id(event.tid)
            if tid is not None:
                self.thread_names[(pid, tid)] = name

    # -- finishing ----------------------------------------------------------------------

def _api_kind(kind: str, name: str) -> str:
    """``runtime`` or ``driver``: legacy traces file driver calls under "Runtime"."""
    if kind == "runtime" and name.startswith("cu") and not name.startswith("cuda"):
        return "driver"
    return kind


def _complete_only(events: list[Any]) -> list[Any]:
    """The complete events (``ph`` "X") that have a ``ts``: usually all of them (told in C)."""
    if set(map(_PH, events)) == {"X"} and None not in map(_TS, events):
        return events
    return [e for e in events if e.ph == "X" and e.ts is not None]


def _all_of_type(values: list[Any], kind: type) -> bool:
    """Whether every value is exactly of ``kind`` (not a subclass: bool is no int here)."""
    return set(map(type, values)) <= {kind}


def _types_in(values: list[Any], kinds: frozenset[type]) -> bool:
    return set(map(type, values)) <= kinds


def _dims(values: Any) -> tuple[int | None, int | None, int | None]:
    if not isinstance(values, (list, tuple)):
        return None, None, None
    padded = [int_or_none(v) for v in values[:3]] + [None] * (3 - min(len(values), 3))
    return padded[0], padded[1], padded[2]


def _name(event: Any, default: str) -> str:
    name = event.name
    if type(name) is str:
        return name or default
    return default if name is None else str(name)


def _dims_json(dims: Any) -> str | None:
    """``Input Dims`` (nested int lists) as JSON. repr() writes exactly JSON for them and is
    several times faster than json.dumps; anything else goes through json."""
    if type(dims) is not list:
        return dump_json(dims)
    text = repr(dims)
    if "'" in text or "e" in text or "N" in text or "T" in text or "F" in text:
        return dump_json(dims)  # strings, Decimal(...), None, True/False, 1e+20
    return text


#: how each raw arg's value becomes its stored text (``Input type``: JSON; ``Input Dims``:
#: JSON written the fast way)
_TO_TEXT: dict[str, Callable[[Any], str | None]] = {"types": dump_json, "dims": _dims_json}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while chunks are decoded and handled.

    Each chunk makes some 10^5 container objects (records, lists of shapes, row tuples);
    each generation-0 collection they trigger walks the young ones, and every few the old
    ones (the whole of SQLAlchemy): a third of the decode time on a real trace. Nothing here
    makes reference cycles, so reference counting frees every chunk as before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def ingest(ctx: IngestContext) -> SourceInfo:
    """Read every Kineto file of the run into the store under ``ctx.run_id``."""
    reader = KinetoReader(ctx)
    for index, path in enumerate(ctx.paths):
        reader.read(index, path)
    if not reader.kernel_names and not ctx.allow_no_kernels:
        raise InputError(
            f"{ctx.display_name}: torch profiler trace has no GPU kernel events",
            hint="profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    meta = reader.finish()
    files = []
    for state in reader.files:
        header = state.header
        distributed = header.get("distributedInfo")
        files.append({
            "name": state.path.name,
            "rank": distributed.get("rank") if isinstance(distributed, dict) else None,
            "world_size": (distributed.get("world_size")
                           if isinstance(distributed, dict) else None),
            "base_time_ns": header.get("baseTimeNanoseconds"),
            "schema_version": header.get("schemaVersion"),
            "cupti_version": header.get("cupti_version"),
            "cuda_runtime_version": header.get("cuda_runtime_version"),
            "cuda_driver_version": header.get("cuda_driver_version"),
        })
    meta.update(files=files, categories=dict(reader.categories), flows=reader.flows)
    schema_versions = {f["schema_version"] for f in files}
    schema = schema_versions.pop() if len(schema_versions) == 1 else None
    cupti = {f["cupti_version"] for f in files} - {None}
    identity = ctx.spec.mapping.identity
    return SourceInfo(
        files=[{"name": state.path.name,
                "host": _first_key(state.header, identity.host),
                "job": _first_key(state.header, identity.job),
                "rank": _integer(entry["rank"]), "world_size": _integer(entry["world_size"]),
                "clock_base_ns": meta["time_base_ns"]}
               for state, entry in zip(reader.files, files, strict=True)],
        producer="kineto",
        producer_version=f"cupti {cupti.pop()}" if len(cupti) == 1 else None,
        schema_version=str(schema) if schema is not None else "legacy",
        meta_json=json.dumps(meta, sort_keys=True, default=json_default),
    )


def _first_key(header: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` the top level holds, as text."""
    for key in keys:
        value = header.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return None


def _integer(value: Any) -> int | None:
    return value if type(value) is int else None
