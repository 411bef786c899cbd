"""Read PyTorch profiler (Kineto) Chrome-trace JSON into the store, streamed.

Kineto traces reach gigabytes, so the file is never loaded whole: decompressed chunks go
through ijson's C parser, which hands over one event dict at a time; rows are staged in
temporary tables in chunks (``tracekit.ingest.staging``) and finished in SQL. Memory is
bounded by one chunk of rows plus the per-run lookup dicts (unique kernel/API names,
processes, threads), whatever the file size.

Top-level keys (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds`` …) may
sit before or after ``traceEvents`` (Kineto writes the base at the end in some versions;
re-serialised files put keys anywhere). They are small, so they are read from the bytes
before the events array and from the last few MiB after it, without a second parse of the
events; only when that fails does a second, slower pass over the file find them.

Times: ``ts``/``dur`` are µs decimals; ijson returns them as ``Decimal``, so
``round(ts * 1000)`` is exact (a float would lose ns on epoch-µs traces). Stored times are
ns relative to the run's time base (see ``parsers/kineto-json.toml``).

Links made here, once:
- kernel → launch: the ``cuda_runtime``/``cuda_driver`` event with the same ``correlation``
  in the same file gives the kernel its CPU thread and launch time (SQL join at the end);
- kernel → framework op: ``External id`` is kept on both sides (kernels.external_id,
  cpu_ops.external_id); the classifier joins them. Within a multi-file run the ids of
  different ranks may repeat: join on (external_id, global_pid).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import ijson
from sqlalchemy import Connection, text

from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.staging import StageTable, write_rows

CHUNK_BYTES = 1 << 20
#: bytes kept from the end of the stream to find the keys written after ``traceEvents``
TAIL_BYTES = 4 * CHUNK_BYTES
#: the bytes before ``traceEvents`` are parsed as the header; beyond this, use the slow pass
HEAD_LIMIT = 64 * CHUNK_BYTES
#: kernels without a ``correlation`` arg wait this long (in events) for their ac2g flow
PENDING_LIMIT = 100_000

STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "tk_file": (("file_index", "INTEGER"), ("offset_ns", "BIGINT"), ("main_pid", "BIGINT")),
    "tk_kernel": tuple((c, "BIGINT") for c in (
        "file_index", "name_key", "device", "stream", "start_ns", "end_ns", "grid_x", "grid_y",
        "grid_z", "block_x", "block_y", "block_z", "registers", "smem", "correlation_id",
        "external_id", "graph_node_id", "graph_id")),
    "tk_runtime": (("file_index", "BIGINT"), ("name_key", "BIGINT"), ("kind", "TEXT"),
                   ("start_ns", "BIGINT"), ("end_ns", "BIGINT"), ("correlation_id", "BIGINT"),
                   ("tid", "BIGINT"), ("pid", "BIGINT")),
    "tk_memory": (("file_index", "BIGINT"), ("kind", "TEXT"), ("device", "BIGINT"),
                  ("stream", "BIGINT"), ("start_ns", "BIGINT"), ("end_ns", "BIGINT"),
                  ("bytes", "BIGINT"), ("correlation_id", "BIGINT")),
    "tk_cpu_op": (("file_index", "BIGINT"), ("name", "TEXT"), ("start_ns", "BIGINT"),
                  ("end_ns", "BIGINT"), ("external_id", "BIGINT"), ("tid", "BIGINT"),
                  ("pid", "BIGINT"), ("input_types", "TEXT"), ("input_dims", "TEXT")),
    "tk_range": (("file_index", "BIGINT"), ("kind", "TEXT"), ("start_ns", "BIGINT"),
                 ("end_ns", "BIGINT"), ("text", "TEXT"), ("tid", "BIGINT"), ("pid", "BIGINT")),
}


def to_ns(value: Any) -> int:
    """A Kineto µs value (int, Decimal, float or numeric string) as integer ns, exactly."""
    kind = type(value)
    if kind is int:
        return value * 1000
    if kind is Decimal:
        return round(value * 1000)
    if kind is float:
        return round(Decimal(repr(value)) * 1000)
    if kind is str:
        return round(Decimal(value) * 1000)
    raise TypeError(f"not a time: {value!r}")


def int_id(value: Any) -> int | None:
    """pid/tid as an int. Some traces use strings ("Spans", "stream 7"): a stable hash."""
    if value is None:
        return None
    if type(value) is int:
        return value
    if isinstance(value, (Decimal, float)):
        return int(value)
    textual = str(value).strip()
    if textual.lstrip("-").isdigit():
        return int(textual)
    # Deterministic across runs and machines (unlike hash()); negative so it never
    # collides with an OS pid/tid.
    return -1 - zlib.crc32(textual.encode("utf-8"))


def _int_or_none(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _dump(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, default=_json_default, separators=(", ", ": "))


@dataclass
class Roles:
    """The spec's category and args tables, flattened for the hot loop."""

    role_of: dict[str, str]
    args: dict[str, tuple[str, ...]]

    @classmethod
    def from_spec(cls, data: dict[str, Any]) -> Roles:
        role_of = {cat: role for role, cats in data["categories"].items() for cat in cats}
        args = {target: tuple(keys) for target, keys in data["args"].items()}
        return cls(role_of, args)


@dataclass
class FileState:
    """What one file tells besides its events."""

    index: int
    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    devices_seen: set[int] = field(default_factory=set)
    runtime_pids: Counter[int] = field(default_factory=Counter)
    cpu_pids: Counter[int] = field(default_factory=Counter)
    events: int = 0

    @property
    def base_ns(self) -> int:
        base = self.header.get("baseTimeNanoseconds")
        return int(base) if base is not None else 0

    @property
    def main_pid(self) -> int | None:
        counts = self.runtime_pids or self.cpu_pids
        return counts.most_common(1)[0][0] if counts else None


class KinetoReader:
    """Walks the events of every file of a run and stages their rows."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.connection: Connection = ctx.connection
        self.roles = Roles.from_spec(ctx.spec.data)
        self.stage = {name: StageTable(self.connection, name, columns)
                      for name, columns in STAGES.items()}
        self.kernel_names: dict[str, int] = {}
        self.api_names: dict[str, int] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.threads: set[tuple[int, int]] = set()
        self.categories: Counter[str] = Counter()
        self.files: list[FileState] = []
        self.pending: dict[tuple[Any, Any, Any], list[Any]] = {}
        self.flows = 0
        self.handlers = {
            "kernel": self._kernel, "memcpy": self._memcpy, "memset": self._memset,
            "runtime": self._runtime, "driver": self._driver, "cpu_op": self._cpu_op,
            "annotation": self._annotation, "gpu_annotation": self._gpu_annotation,
        }

    # -- reading ------------------------------------------------------------------------

    def read(self, index: int, path: Path) -> None:
        """Stream one file's events into the stage tables."""
        state = FileState(index, path)
        self.files.append(state)
        scanner = TopLevelScanner()
        try:
            with _open(path) as stream:
                first = _first_significant(stream)
                bare_list = first[:1] == b"["
                prefix = "item" if bare_list else "traceEvents.item"
                tee = _TeeReader(stream, first, scanner)
                handle = self._handle
                for event in ijson.items(tee, prefix, buf_size=CHUNK_BYTES):
                    handle(state, event)
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
        if not bare_list:
            if not scanner.found_events:
                raise InputError(f"{path}: JSON has no traceEvents array, so it is not a torch "
                                 "profiler trace",
                                 hint="pass the file written by torch.profiler "
                                      "(export_chrome_trace / tensorboard_trace_handler)")
            header = scanner.top_level()
            state.header = header if header is not None else _slow_top_level(path)

    def _handle(self, state: FileState, event: Any) -> None:
        if type(event) is not dict:
            return
        cat = event.get("cat")
        role = self.roles.role_of.get(cat) if cat is not None else None
        if role is None:
            if event.get("ph") == "M":
                self._metadata(event)
            self.categories[cat or event.get("ph") or "?"] += 1
            return
        self.categories[cat] += 1
        if role == "flow":
            self._flow(event)
            return
        if event.get("ph") != "X" or event.get("ts") is None:
            return
        state.events += 1
        self.handlers[role](state, event)

    def _arg(self, args: dict[str, Any], target: str) -> Any:
        for key in self.roles.args[target]:
            value = args.get(key)
            if value is not None:
                return value
        return None

    def _times(self, event: dict[str, Any]) -> tuple[int, int]:
        ts = event["ts"]
        dur = event.get("dur") or 0
        if type(ts) is str or type(dur) is str:
            ts, dur = Decimal(str(ts)), Decimal(str(dur))
        return to_ns(ts), to_ns(ts + dur)

    def _kernel(self, state: FileState, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        name = event.get("name") or "<unnamed kernel>"
        key = self.kernel_names.get(name)
        if key is None:
            key = self.kernel_names[name] = len(self.kernel_names)
        start, end = self._times(event)
        device = _int_or_none(self._arg(args, "device"))
        if device is None:
            device = int_id(event.get("pid"))
        stream = _int_or_none(self._arg(args, "stream"))
        if stream is None:
            stream = int_id(event.get("tid"))
        if device is not None:
            state.devices_seen.add(device)
        grid = self._arg(args, "grid") or (None, None, None)
        block = self._arg(args, "block") or (None, None, None)
        external = _int_or_none(self._arg(args, "external_id")) or None
        correlation = _int_or_none(self._arg(args, "correlation"))
        row = [state.index, key, device, stream, start, end, *_dims(grid), *_dims(block),
               _int_or_none(self._arg(args, "registers")),
               _int_or_none(self._arg(args, "shared_memory")), correlation, external,
               _int_or_none(self._arg(args, "graph_node_id")),
               _int_or_none(self._arg(args, "graph_id"))]
        if correlation is None:
            # Legacy traces may only link through the ac2g/async_gpu flow that follows.
            self.pending[(event.get("pid"), event.get("tid"), event.get("ts"))] = row
            if len(self.pending) > PENDING_LIMIT:
                self._flush_pending()
            return
        self.stage["tk_kernel"].add(tuple(row))

    def _flow(self, event: dict[str, Any]) -> None:
        self.flows += 1
        if not self.pending or event.get("ph") != "f":
            return
        row = self.pending.pop((event.get("pid"), event.get("tid"), event.get("ts")), None)
        if row is not None:
            row[14] = _int_or_none(event.get("id"))
            self.stage["tk_kernel"].add(tuple(row))

    def _flush_pending(self) -> None:
        for row in self.pending.values():
            self.stage["tk_kernel"].add(tuple(row))
        self.pending.clear()

    def _memory(self, state: FileState, event: dict[str, Any], kind: str) -> None:
        args = event.get("args") or {}
        start, end = self._times(event)
        device = _int_or_none(self._arg(args, "device"))
        if device is None:
            device = int_id(event.get("pid"))
        if device is not None:
            state.devices_seen.add(device)
        stream = _int_or_none(self._arg(args, "stream"))
        self.stage["tk_memory"].add((
            state.index, kind, device, stream if stream is not None else int_id(event.get("tid")),
            start, end, _int_or_none(self._arg(args, "bytes")),
            _int_or_none(self._arg(args, "correlation"))))

    def _memcpy(self, state: FileState, event: dict[str, Any]) -> None:
        self._memory(state, event, "memcpy")

    def _memset(self, state: FileState, event: dict[str, Any]) -> None:
        self._memory(state, event, "memset")

    def _api(self, state: FileState, event: dict[str, Any], kind: str) -> None:
        args = event.get("args") or {}
        name = event.get("name") or ""
        key = self.api_names.get(name)
        if key is None:
            key = self.api_names[name] = len(self.api_names)
        if kind == "runtime" and name.startswith("cu") and not name.startswith("cuda"):
            kind = "driver"  # legacy traces file driver calls under "Runtime"
        pid, tid = int_id(event.get("pid")), int_id(event.get("tid"))
        start, end = self._times(event)
        state.runtime_pids[pid] += 1  # type: ignore[index]
        self._thread(pid, tid)
        self.stage["tk_runtime"].add((state.index, key, kind, start, end,
                                      _int_or_none(self._arg(args, "correlation")), tid, pid))

    def _runtime(self, state: FileState, event: dict[str, Any]) -> None:
        self._api(state, event, "runtime")

    def _driver(self, state: FileState, event: dict[str, Any]) -> None:
        self._api(state, event, "driver")

    def _cpu_op(self, state: FileState, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        pid, tid = int_id(event.get("pid")), int_id(event.get("tid"))
        start, end = self._times(event)
        state.cpu_pids[pid] += 1  # type: ignore[index]
        self._thread(pid, tid)
        self.stage["tk_cpu_op"].add((
            state.index, event.get("name") or "", start, end,
            _int_or_none(self._arg(args, "external_id")) or None, tid, pid,
            _dump(self._arg(args, "input_types")), _dump(self._arg(args, "input_dims"))))

    def _annotation(self, state: FileState, event: dict[str, Any]) -> None:
        pid, tid = int_id(event.get("pid")), int_id(event.get("tid"))
        start, end = self._times(event)
        state.cpu_pids[pid] += 1  # type: ignore[index]
        self._thread(pid, tid)
        self.stage["tk_range"].add((state.index, "push_pop", start, end, event.get("name"),
                                    tid, pid))

    def _gpu_annotation(self, state: FileState, event: dict[str, Any]) -> None:
        start, end = self._times(event)
        self.stage["tk_range"].add((state.index, "gpu_range", start, end, event.get("name"),
                                    None, None))

    def _thread(self, pid: int | None, tid: int | None) -> None:
        if pid is not None and tid is not None:
            self.threads.add((pid, tid))

    def _metadata(self, event: dict[str, Any]) -> None:
        args = event.get("args") or {}
        name = args.get("name")
        if not isinstance(name, str):
            return
        pid = int_id(event.get("pid"))
        if pid is None:
            return
        if event.get("name") == "process_name":
            self.process_names[pid] = name
        elif event.get("name") == "thread_name":
            tid = int_id(event.get("tid"))
            if tid is not None:
                self.thread_names[(pid, tid)] = name

    # -- finishing ----------------------------------------------------------------------

    def finish(self) -> dict[str, Any]:
        """Move staged rows into the store tables; returns counts for the run's meta."""
        for table in self.stage.values():
            table.flush()
        base = min(state.base_ns for state in self.files)
        file_stage = self.stage["tk_file"]
        for state in self.files:
            file_stage.add((state.index, state.base_ns - base, state.main_pid))
        file_stage.flush()
        run_id = self.ctx.run_id
        write_rows(self.connection, "kernel_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.kernel_names.items()])
        write_rows(self.connection, "api_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.api_names.items()])
        params = {"run_id": run_id}
        for statement in FINISH_SQL:
            self.connection.execute(text(statement), params)
        self._write_processes_and_threads()
        self._write_devices()
        counts = {name.removeprefix("tk_"): table.count for name, table in self.stage.items()
                  if name != "tk_file"}
        for table in self.stage.values():
            table.drop()
        return {"time_base_ns": base, "counts": counts}

    def _write_processes_and_threads(self) -> None:
        run_id = self.ctx.run_id
        pids = sorted({pid for pid, _ in self.threads})
        write_rows(self.connection, "processes", ("run_id", "global_pid", "pid", "name"),
                   [(run_id, pid, pid if 0 <= pid < 2**31 else None,
                     self.process_names.get(pid)) for pid in pids])
        write_rows(self.connection, "threads",
                   ("run_id", "global_tid", "global_pid", "tid", "name"),
                   [(run_id, tid, pid, tid if 0 <= tid < 2**31 else None,
                     self.thread_names.get((pid, tid))) for pid, tid in sorted(self.threads)])

    def _write_devices(self) -> None:
        rows: dict[tuple[int, int | None], tuple[Any, ...]] = {}
        for state in self.files:
            properties = {int(p["id"]): p for p in state.header.get("deviceProperties") or []
                          if isinstance(p, dict) and p.get("id") is not None}
            for device in sorted(state.devices_seen):
                p = properties.get(device, {})
                major, minor = _int_or_none(p.get("computeMajor")), _int_or_none(
                    p.get("computeMinor"))
                arch = f"sm{major}{minor}" if major is not None and minor is not None else None
                rows.setdefault((device, state.main_pid), (
                    self.ctx.run_id, device, state.main_pid, p.get("name"), major, minor,
                    _int_or_none(p.get("numSms")), _int_or_none(p.get("totalGlobalMem")),
                    p.get("uuid"), arch, "trace" if arch else None))
        write_rows(self.connection, "devices",
                   ("run_id", "device_index", "global_pid", "name", "compute_major",
                    "compute_minor", "sm_count", "memory_bytes", "uuid", "arch", "arch_source"),
                   list(rows.values()))


#: staged rows → store tables, times shifted onto the run's base, names resolved to ids
FINISH_SQL: tuple[str, ...] = (
    """INSERT INTO runtime_calls (run_id, name_id, kind, start_ns, end_ns, correlation_id,
                                  global_tid, global_pid)
       SELECT :run_id, a.id, r.kind, r.start_ns + f.offset_ns, r.end_ns + f.offset_ns,
              r.correlation_id, r.tid, r.pid
       FROM tk_runtime r JOIN tk_file f ON f.file_index = r.file_index
       JOIN api_names a ON a.run_id = :run_id AND a.source_key = r.name_key""",
    """INSERT INTO kernels (run_id, name_id, device, stream, start_ns, end_ns, grid_x, grid_y,
                            grid_z, block_x, block_y, block_z, registers, dynamic_smem,
                            correlation_id, external_id, graph_node_id, graph_id, global_pid,
                            global_tid, launch_start_ns, launch_end_ns)
       SELECT :run_id, n.id, k.device, k.stream, k.start_ns + f.offset_ns, k.end_ns + f.offset_ns,
              k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers, k.smem,
              k.correlation_id, k.external_id, k.graph_node_id, k.graph_id,
              COALESCE(l.pid, f.main_pid), l.tid, l.s + f.offset_ns, l.e + f.offset_ns
       FROM tk_kernel k JOIN tk_file f ON f.file_index = k.file_index
       JOIN kernel_names n ON n.run_id = :run_id AND n.source_key = k.name_key
       LEFT JOIN (SELECT file_index, correlation_id AS cid, MIN(pid) AS pid, MIN(tid) AS tid,
                         MIN(start_ns) AS s, MAX(end_ns) AS e
                  FROM tk_runtime WHERE correlation_id IS NOT NULL
                  GROUP BY file_index, correlation_id) l
         ON l.file_index = k.file_index AND l.cid = k.correlation_id""",
    """INSERT INTO memory_ops (run_id, kind, device, stream, start_ns, end_ns, bytes,
                               correlation_id, global_pid)
       SELECT :run_id, m.kind, m.device, m.stream, m.start_ns + f.offset_ns,
              m.end_ns + f.offset_ns, m.bytes, m.correlation_id, f.main_pid
       FROM tk_memory m JOIN tk_file f ON f.file_index = m.file_index""",
    """INSERT INTO cpu_ops (run_id, name, start_ns, end_ns, external_id, global_tid, global_pid,
                            input_types, input_dims)
       SELECT :run_id, c.name, c.start_ns + f.offset_ns, c.end_ns + f.offset_ns, c.external_id,
              c.tid, c.pid, c.input_types, c.input_dims
       FROM tk_cpu_op c JOIN tk_file f ON f.file_index = c.file_index""",
    """INSERT INTO nvtx_ranges (run_id, kind, start_ns, end_ns, text, domain, global_tid,
                                global_pid)
       SELECT :run_id, r.kind, r.start_ns + f.offset_ns, r.end_ns + f.offset_ns, r.text, NULL,
              r.tid, r.pid
       FROM tk_range r JOIN tk_file f ON f.file_index = r.file_index""",
)


def _dims(values: Any) -> tuple[int | None, int | None, int | None]:
    if not isinstance(values, (list, tuple)):
        return None, None, None
    padded = [_int_or_none(v) for v in values[:3]] + [None] * (3 - min(len(values), 3))
    return padded[0], padded[1], padded[2]


def _open(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _first_significant(stream: IO[bytes]) -> bytes:
    """The stream's first bytes without leading blanks or BOM: they start with '{' or '['."""
    buffered = b""
    while True:
        chunk = stream.read(4096)
        if not chunk:
            return buffered
        buffered += chunk
        stripped = buffered.lstrip(b" \t\r\n\xef\xbb\xbf")
        if stripped:
            return stripped


class _TeeReader:
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

    def top_level(self) -> dict[str, Any] | None:
        head = _parse_head(bytes(self.head))
        trailer = _parse_trailer(b"".join(self.tail).decode("utf-8", "replace"),
                                 self.ARRAY_END)
        if head is None or trailer is None:
            return None
        trailer.pop("traceEvents", None)
        return {**head, **trailer}


def _parse_head(head: bytes) -> dict[str, Any] | None:
    body = head.decode("utf-8", "replace").rstrip().rstrip(",")
    try:
        value = json.loads(body + "}", parse_float=Decimal)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _parse_trailer(tail: str, pattern: re.Pattern[str]) -> dict[str, Any] | None:
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


def _slow_top_level(path: Path) -> dict[str, Any]:
    """Second pass: every top-level key but ``traceEvents``, through ijson's token stream."""
    found: dict[str, Any] = {}
    with _open(path) as stream:
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
    return SourceInfo(
        producer="kineto",
        producer_version=f"cupti {cupti.pop()}" if len(cupti) == 1 else None,
        schema_version=str(schema) if schema is not None else "legacy",
        meta_json=json.dumps(meta, sort_keys=True, default=_json_default),
    )
