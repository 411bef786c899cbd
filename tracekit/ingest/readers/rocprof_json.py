"""Read rocprofv3's JSON output (``rocprofv3 --output-format json``) into the store, streamed.

The file is one JSON document (plain or gzip), usually on one line:
``{"rocprofiler-sdk-tool": [PROCESS, …]}``, one object per profiled process with
``metadata`` (its pid and command), ``agents`` (CPUs and GPUs), ``strings`` (the names of
buffer kinds and their operations, ROCTx messages by correlation id), ``kernel_symbols``
(each ``kernel_id``'s names) and ``buffer_records`` — ``kernel_dispatch``, ``hip_api``,
``marker_api``, ``memory_copy`` and more, each an array of records that reaches millions.
``json_sections`` walks it once, front to back, and decodes those arrays a few MiB at a time
into the typed records of ``rocprof_records``; everything else is skipped unbuilt.

Where the rows go (docs/formats.md#rocprofv3-json):

- ``kernel_dispatch`` → kernels; the name is the symbol's ``formatted_kernel_name`` (the
  demangled name without rocprofiler's ``[clone .kd]``), ``truncated_kernel_name`` the short
  name, ``kernel_name`` the mangled one; the device is the GPU's ordinal among the node's
  GPU agents; the grid is stored in workgroups (ROCm counts work-items);
- ``hip_api`` → runtime calls (kind names of the spec's ``hip_kinds``); a dispatch gets its
  launch (thread, CPU times) from the call with the same ``correlation_id.internal`` in the
  same process, and keeps its own ``thread_id`` when the trace has no HIP calls;
- ``marker_api`` → NVTX ranges (ROCTx push/pop, start/stop, marks), the text from
  ``strings.marker_api`` (ROCTx messages keyed by the range's correlation id);
- ``memory_copy`` → memory operations; ``agents`` → devices.

Each process of the document is one "file" of ``TraceRows``: correlation ids link within it.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import text

from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.readers import rocprof_records as records
from tracekit.ingest.readers.json_document import open_maybe_gzip
from tracekit.ingest.readers.json_sections import (
    ITEM,
    Each,
    Handler,
    Records,
    SectionWalker,
    Whole,
)
from tracekit.ingest.readers.rocprof_common import (
    DEVICE_COLUMNS,
    agent_uuid,
    device_row,
    marker_kinds,
    workgroups,
)
from tracekit.ingest.spec import RocprofJsonMapping
from tracekit.ingest.staging import StageTable, write_rows
from tracekit.ingest.trace_rows import FileState, TraceRows

#: a kernel id the file has no symbol for
UNKNOWN_KERNEL = "<kernel id {}>"


@dataclass
class Process:
    """What one process object of the document has told so far."""

    state: FileState
    pid: int | None = None
    kinds: list[records.KindNames] = field(default_factory=list)
    #: kernel_id -> its symbol, and (name key, VGPRs, static LDS) once a dispatch used it
    symbol_info: dict[int, records.Symbol] = field(default_factory=dict)
    symbols: dict[int, tuple[int, int | None, int | None]] = field(default_factory=dict)
    #: agent handle -> GPU ordinal
    gpus: dict[int, int] = field(default_factory=dict)
    agents: list[records.Agent] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


class RocprofJsonReader(TraceRows):
    """Stages the records of every rocprofv3 JSON file of a run."""

    kernel_threads = True

    def __init__(self, ctx: IngestContext) -> None:
        super().__init__(ctx)
        self.mapping: RocprofJsonMapping = ctx.spec.mapping
        self.marker_kind = marker_kinds(self.mapping.markers)
        self.processes: list[Process] = []
        self.process: Process | None = None
        self.roctx = StageTable(ctx.connection, "tk_roctx", (
            ("file_index", "BIGINT"), ("correlation_id", "BIGINT"), ("kind", "TEXT"),
            ("operation", "TEXT"), ("start_ns", "BIGINT"), ("end_ns", "BIGINT"),
            ("tid", "BIGINT"), ("pid", "BIGINT")))
        self.messages = StageTable(ctx.connection, "tk_roctx_message", (
            ("file_index", "BIGINT"), ("correlation_id", "BIGINT"), ("message", "TEXT")))

    # -- the walk --------------------------------------------------------------------------

    def read(self, path: Path) -> None:
        """Stage every process of one file."""
        top = self.mapping.top_key
        item = (top, ITEM)
        plan: dict[tuple[str, ...], Handler] = {
            item: Each(lambda _index: self._begin(path)),
            (*item, "metadata"): Whole(msgspec.json.Decoder(records.Metadata), self._metadata),
            (*item, "agents"): Records(records.decoder(records.Agent), self._agents),
            (*item, "strings", "buffer_records"): Whole(records.decoder(records.KindNames),
                                                        self._kind_names),
            (*item, "strings", "marker_api"): Records(records.decoder(records.Message),
                                                      self._messages),
            (*item, "kernel_symbols"): Records(records.decoder(records.Symbol), self._symbols),
            (*item, "buffer_records", "kernel_dispatch"): Records(
                records.decoder(records.Dispatch), self._dispatches),
            (*item, "buffer_records", "hip_api"): Records(records.decoder(records.ApiCall),
                                                          self._api_calls),
            (*item, "buffer_records", "marker_api"): Records(
                records.decoder(records.ApiCall), self._markers),
            (*item, "buffer_records", "memory_copy"): Records(
                records.decoder(records.MemoryCopy), self._copies),
        }
        before = len(self.processes)
        try:
            with open_maybe_gzip(path) as stream:
                SectionWalker(stream, plan, name=str(path)).walk()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: gzip data is truncated or corrupt ({exc})",
                             hint="copy the file again; the capture may have been cut off"
                             ) from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        if len(self.processes) == before:
            raise InputError(f"{path}: {top!r} holds no process",
                             hint="the profiler wrote no records; record the run again")

    def _begin(self, path: Path) -> None:
        state = FileState(len(self.files), path)
        self.files.append(state)
        self.process = Process(state)
        self.processes.append(self.process)

    @property
    def current(self) -> Process:
        if self.process is None:  # the plan only calls handlers inside a process object
            raise InputError("rocprofv3 JSON: records outside a process object")
        return self.process

    def _metadata(self, meta: records.Metadata) -> None:
        process = self.current
        process.pid = meta.pid
        if meta.pid is not None:
            process.state.cpu_pids[meta.pid] += 1
            if meta.command:
                self.process_names[meta.pid] = os.path.basename(meta.command[0])
        process.state.header = {"pid": meta.pid, "command": meta.command,
                                "hostname": meta.node.get("hostname"),
                                "init_time": meta.init_time, "fini_time": meta.fini_time}

    def _agents(self, agents: list[records.Agent]) -> None:
        process = self.current
        gpus = [agent for agent in agents if agent.type == self.mapping.gpu_agent_type]
        gpus.sort(key=lambda agent: (agent.logical_node_type_id is None,
                                     agent.logical_node_type_id, agent.node_id))
        for position, agent in enumerate(gpus, start=len(process.gpus)):
            index = agent.logical_node_type_id
            process.gpus[agent.id.handle] = index if index is not None else position
        process.agents.extend(gpus)

    def _kind_names(self, kinds: list[records.KindNames]) -> None:
        self.current.kinds = kinds

    def _kind(self, number: int) -> records.KindNames | None:
        kinds = self.current.kinds
        return kinds[number] if 0 <= number < len(kinds) else None

    def _messages(self, messages: list[records.Message]) -> None:
        index = self.current.state.index
        self.messages.extend([(index, message.key, message.value) for message in messages])

    def _symbols(self, symbols: list[records.Symbol]) -> None:
        """Kernel symbols by id; a name gets its key when a dispatch first uses it (a process
        loads thousands of kernels and launches a few dozen of them)."""
        process = self.current
        for symbol in symbols:
            process.symbol_info[symbol.kernel_id] = symbol

    def _symbol(self, kernel_id: int) -> tuple[int, int | None, int | None]:
        """A kernel id's (name key, VGPRs, static LDS), on its first dispatch; an id without a
        symbol gets a placeholder name (counted in the run's meta)."""
        process = self.current
        symbol = process.symbol_info.get(kernel_id)
        names = self.mapping
        found: tuple[int, int | None, int | None]
        if symbol is None:
            found = (self.kernel_key(UNKNOWN_KERNEL.format(kernel_id)), None, None)
        else:
            name = _first(symbol, names.kernel_name) or UNKNOWN_KERNEL.format(kernel_id)
            key = self.kernel_key(name)
            self.short_names.setdefault(key, _first(symbol, names.short_name))
            self.mangled_names.setdefault(key, _first(symbol, names.mangled_name))
            found = (key, symbol.arch_vgpr_count, symbol.group_segment_size)
        process.symbols[kernel_id] = found
        return found

    def _dispatches(self, dispatches: list[records.Dispatch]) -> None:
        process = self.current
        process.counts["kernel_dispatch"] += len(dispatches)
        index = process.state.index
        gpus = process.gpus
        symbols = process.symbols
        seen = process.state.devices_seen
        rows = []
        missing = process.symbol_info
        for record in dispatches:
            info = record.dispatch_info
            symbol = symbols.get(info.kernel_id) or self._symbol(info.kernel_id)
            if info.kernel_id not in missing:
                process.counts["dispatches_without_symbol"] += 1
            device = gpus.get(info.agent_id.handle)
            if device is None:
                device = self._unknown_agent(info.agent_id.handle)
            seen.add(device)
            stream = record.stream_id.handle if record.stream_id is not None \
                else info.queue_id.handle
            block, grid = info.workgroup_size, info.grid_size
            rows.append((index, symbol[0], device, stream, record.start_timestamp,
                         record.end_timestamp, workgroups(grid.x, block.x),
                         workgroups(grid.y, block.y), workgroups(grid.z, block.z), block.x,
                         block.y, block.z, symbol[1], symbol[2], info.group_segment_size,
                         record.correlation_id.internal, None, None, None, record.thread_id))
        for tid in {row[-1] for row in rows}:
            self.thread(process.pid, tid)
        self.stage["tk_kernel"].extend(rows)

    def _unknown_agent(self, handle: int) -> int:
        """A dispatch on an agent the file does not list: a device index of its own."""
        process = self.current
        process.counts["dispatches_on_unlisted_agents"] += 1
        index = max(process.gpus.values(), default=-1) + 1
        process.gpus[handle] = index
        return index

    def _api_calls(self, calls: list[records.ApiCall]) -> None:
        process = self.current
        process.counts["hip_api"] += len(calls)
        hip = set(self.mapping.hip_kinds)
        pid = process.pid
        names: dict[tuple[int, int], int | None] = {}
        rows = []
        for call in calls:
            key = (call.kind, call.operation)
            name_key = names.get(key, -1)
            if name_key == -1:
                kind = self._kind(call.kind)
                name_key = names[key] = (
                    self.api_key(_operation(kind, call.operation))
                    if kind is not None and kind.kind in hip else None)
            if name_key is None:
                continue
            rows.append((process.state.index, name_key, "runtime", call.start_timestamp,
                         call.end_timestamp, call.correlation_id.internal, call.thread_id, pid))
        skipped = len(calls) - len(rows)
        if skipped:
            process.counts["hip_api_other_kinds"] += skipped
        if pid is not None and rows:
            process.state.runtime_pids[pid] += len(rows)
        for tid in {row[6] for row in rows}:
            self.thread(pid, tid)
        self.stage["tk_runtime"].extend(rows)

    def _markers(self, calls: list[records.ApiCall]) -> None:
        process = self.current
        process.counts["marker_api"] += len(calls)
        wanted = set(self.mapping.marker_kinds)
        kinds: dict[tuple[int, int], tuple[str, str] | None] = {}
        rows = []
        for call in calls:
            key = (call.kind, call.operation)
            if key not in kinds:
                named = self._kind(call.kind)
                operation = _operation(named, call.operation)
                kind = self.marker_kind.get(operation)
                kinds[key] = (kind, operation) if kind and named and named.kind in wanted \
                    else None
            found = kinds[key]
            if found is None:
                continue
            rows.append((process.state.index, call.correlation_id.internal, found[0], found[1],
                         call.start_timestamp, call.end_timestamp, call.thread_id,
                         process.pid))
        process.counts["marker_api_other"] += len(calls) - len(rows)
        for tid in {row[6] for row in rows}:
            self.thread(process.pid, tid)
        self.roctx.extend(rows)

    def _copies(self, copies: list[records.MemoryCopy]) -> None:
        process = self.current
        process.counts["memory_copy"] += len(copies)
        gpus = process.gpus
        rows = []
        for copy in copies:
            device = gpus.get(copy.dst_agent_id.handle, gpus.get(copy.src_agent_id.handle))
            rows.append((process.state.index, "memcpy", device,
                         copy.stream_id.handle if copy.stream_id is not None else None,
                         copy.start_timestamp, copy.end_timestamp, copy.bytes,
                         copy.correlation_id.internal))
        self.stage["tk_memory"].extend(rows)

    # -- finishing ---------------------------------------------------------------------------

    def before_finish(self) -> None:
        """ROCTx records become ranges, their text the message of their correlation id."""
        self.roctx.flush()
        self.messages.flush()
        if self.roctx.count:
            self.connection.execute(text(
                "CREATE INDEX tk_roctx_message_ix ON tk_roctx_message "
                "(file_index, correlation_id)"))
            self.connection.execute(text("""
                INSERT INTO tk_range (file_index, kind, start_ns, end_ns, text, domain, tid, pid)
                SELECT r.file_index, r.kind, r.start_ns, r.end_ns,
                       COALESCE((SELECT MIN(m.message) FROM tk_roctx_message m
                                 WHERE m.file_index = r.file_index
                                   AND m.correlation_id = r.correlation_id), r.operation),
                       NULL, r.tid, r.pid
                FROM tk_roctx r"""))
            self.stage["tk_range"].count += self.roctx.count
        self.roctx.drop()
        self.messages.drop()

    def _write_devices(self) -> None:
        rows: dict[tuple[int, int | None], tuple[Any, ...]] = {}
        for process in self.processes:
            for agent in process.agents:
                index = process.gpus.get(agent.id.handle)
                if index is None or index not in process.state.devices_seen:
                    continue
                memory = sum(bank.size_in_bytes for bank in agent.mem_banks)
                rows.setdefault((index, process.pid), device_row(
                    self.ctx.run_id, index, process.pid, name=agent.name,
                    product=agent.product_name, target_version=agent.gfx_target_version,
                    cu_count=agent.cu_count, memory_bytes=memory,
                    uuid=agent_uuid(agent.uuid)))
            for index in sorted(process.state.devices_seen):
                rows.setdefault((index, process.pid), (
                    self.ctx.run_id, index, process.pid, *([None] * 8)))
        write_rows(self.connection, "devices", DEVICE_COLUMNS, list(rows.values()))

def _first(symbol: records.Symbol, fields: tuple[str, ...]) -> str | None:
    """The first non-empty of a symbol's name fields."""
    for name in fields:
        value = getattr(symbol, name, None)
        if value:
            return str(value)
    return None


def _operation(kind: records.KindNames | None, operation: int) -> str:
    """An operation's name (``strings.buffer_records[kind].operations[operation]``)."""
    if kind is not None and 0 <= operation < len(kind.operations):
        return kind.operations[operation]
    return f"{kind.kind if kind else 'operation'} {operation}"


def ingest(ctx: IngestContext) -> SourceInfo:
    """Read every rocprofv3 JSON file of the run into the store under ``ctx.run_id``."""
    reader = RocprofJsonReader(ctx)
    for path in ctx.paths:
        reader.read(path)
    dispatches = sum(process.counts["kernel_dispatch"] for process in reader.processes)
    if not dispatches and not ctx.allow_no_kernels:
        raise InputError(f"{ctx.display_name}: rocprofv3 JSON holds no kernel dispatch",
                         hint="record with `rocprofv3 --kernel-trace` (or --sys-trace)")
    meta = reader.finish()
    meta["processes"] = [
        {"file": process.state.path.name, "pid": process.pid,
         "hostname": process.state.header.get("hostname"),
         "command": process.state.header.get("command"), **dict(process.counts)}
        for process in reader.processes]
    kinds = {counter for process in reader.processes for counter in process.counts}
    counts = {name: sum(process.counts[name] for process in reader.processes)
              for name in sorted(kinds)}
    meta["records"] = counts
    return SourceInfo(producer="rocprofv3", producer_version=None, schema_version="json",
                      meta_json=json.dumps(meta, sort_keys=True, default=str))

