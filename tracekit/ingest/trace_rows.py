"""Stage tables and the final SQL shared by the readers of trace-shaped inputs.

Kineto JSON and CUPTI JSON lines describe the same things (kernels with correlation ids,
runtime/driver calls, memory operations, framework ops, annotation ranges), one record at
a time and in no useful order. Readers add rows to the TEMPORARY tables below
(``tracekit.ingest.staging``); ``TraceRows.finish`` then moves them into the store in one
``INSERT … SELECT`` per table, which is where the run-wide work happens:

- time: each file's offset onto the run's time base (``tk_file.offset_ns``);
- names: kernel and API names become per-run ``kernel_names``/``api_names`` ids;
- kernel → launch: the runtime/driver call with the same correlation id *in the same file*
  gives the kernel its CPU process, thread and launch interval;
- External ids: each rank numbers its ops from 1, so file *i* of a run stores
  ``External id + i · 2^40`` (file 0 keeps the raw value): ``kernels.external_id =
  cpu_ops.external_id`` then never joins a kernel to another rank's op.
"""


from __future__ import annotations

import json
import zlib
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext
from tracekit.ingest.staging import StageTable, write_rows

#: External ids of file i are shifted by i · EXTERNAL_STRIDE (Kineto's ids are op counters)
EXTERNAL_STRIDE = 1 << 40

STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "tk_file": (("file_index", "INTEGER"), ("offset_ns", "BIGINT"), ("main_pid", "BIGINT"),
                ("external_offset", "BIGINT")),
    "tk_kernel": tuple((c, "BIGINT") for c in (
        "file_index", "name_key", "device", "stream", "start_ns", "end_ns", "grid_x", "grid_y",
        "grid_z", "block_x", "block_y", "block_z", "registers", "static_smem", "smem",
        "correlation_id", "external_id", "graph_node_id", "graph_id")),
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
                 ("end_ns", "BIGINT"), ("text", "TEXT"), ("domain", "TEXT"), ("tid", "BIGINT"),
                 ("pid", "BIGINT")),
}


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


def int_or_none(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def dump_json(value: Any) -> str | None:
    """A list/dict arg as JSON text (the shared default encoder: the fast path)."""
    if value is None:
        return None
    try:
        return json.dumps(value)
    except TypeError:  # Decimal inside (files parsed exactly)
        return json.dumps(value, default=json_default)


@dataclass
class FileState:
    """What one file tells besides its events."""

    index: int
    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    devices_seen: set[int] = field(default_factory=set)
    runtime_pids: Counter[int] = field(default_factory=Counter)
    cpu_pids: Counter[int] = field(default_factory=Counter)

    @property
    def base_ns(self) -> int:
        """``baseTimeNanoseconds`` (0 when absent); a value that is no integer is refused."""
        base = self.header.get("baseTimeNanoseconds")
        if base is None:
            return 0
        try:
            return int(base)
        except (TypeError, ValueError, ArithmeticError):
            raise InputError(f"{self.path}: baseTimeNanoseconds is not an integer "
                             f"({str(base)[:40]!r})",
                             hint="the trace is damaged; export it again") from None

    @property
    def main_pid(self) -> int | None:
        counts = self.runtime_pids or self.cpu_pids
        return counts.most_common(1)[0][0] if counts else None


class TraceRows:
    """Per-run lookups and stage tables shared by the trace readers (Kineto, CUPTI)."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.connection: Connection = ctx.connection
        self.stage = {name: StageTable(self.connection, name, columns)
                      for name, columns in STAGES.items()}
        self.kernel_names: dict[str, int] = {}
        self.api_names: dict[str, int] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.threads: set[tuple[int, int]] = set()
        self.files: list[FileState] = []

    def kernel_key(self, name: str) -> int:
        """The per-run source_key of a kernel name (a running index)."""
        key = self.kernel_names.get(name)
        if key is None:
            key = self.kernel_names[name] = len(self.kernel_names)
        return key

    def api_key(self, name: str) -> int:
        """The per-run source_key of a runtime/driver API name."""
        key = self.api_names.get(name)
        if key is None:
            key = self.api_names[name] = len(self.api_names)
        return key

    def thread(self, pid: int | None, tid: int | None) -> None:
        """Remember a CPU thread that recorded something."""
        if pid is not None and tid is not None:
            self.threads.add((pid, tid))

    def before_finish(self) -> None:
        """Hook for readers that must complete staged rows in SQL first."""


    def finish(self) -> dict[str, Any]:
        """Move staged rows into the store tables; returns counts for the run's meta."""
        for table in self.stage.values():
            table.flush()
        base = min(state.base_ns for state in self.files)
        file_stage = self.stage["tk_file"]
        for state in self.files:
            file_stage.add((state.index, state.base_ns - base, state.main_pid,
                            state.index * EXTERNAL_STRIDE))
        file_stage.flush()
        run_id = self.ctx.run_id
        write_rows(self.connection, "kernel_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.kernel_names.items()])
        write_rows(self.connection, "api_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.api_names.items()])
        params = {"run_id": run_id}
        self.before_finish()
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
                major, minor = int_or_none(p.get("computeMajor")), int_or_none(
                    p.get("computeMinor"))
                arch = f"sm{major}{minor}" if major is not None and minor is not None else None
                rows.setdefault((device, state.main_pid), (
                    self.ctx.run_id, device, state.main_pid, p.get("name"), major, minor,
                    int_or_none(p.get("numSms")), int_or_none(p.get("totalGlobalMem")),
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
                            grid_z, block_x, block_y, block_z, registers, static_smem, dynamic_smem,
                            correlation_id, external_id, graph_node_id, graph_id, global_pid,
                            global_tid, launch_start_ns, launch_end_ns)
       SELECT :run_id, n.id, k.device, k.stream, k.start_ns + f.offset_ns, k.end_ns + f.offset_ns,
              k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers,
              k.static_smem, k.smem,
              k.correlation_id, k.external_id + f.external_offset, k.graph_node_id, k.graph_id,
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
       SELECT :run_id, c.name, c.start_ns + f.offset_ns, c.end_ns + f.offset_ns,
              c.external_id + f.external_offset,
              c.tid, c.pid, c.input_types, c.input_dims
       FROM tk_cpu_op c JOIN tk_file f ON f.file_index = c.file_index""",
    """INSERT INTO nvtx_ranges (run_id, kind, start_ns, end_ns, text, domain, global_tid,
                                global_pid)
       SELECT :run_id, r.kind, r.start_ns + f.offset_ns, r.end_ns + f.offset_ns, r.text, r.domain,
              r.tid, r.pid
       FROM tk_range r JOIN tk_file f ON f.file_index = r.file_index""",
)
