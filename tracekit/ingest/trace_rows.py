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
- kernel → framework op: the CPU op with the kernel's External id becomes
  ``kernels.cpu_op_id``, the one link every later stage follows;
- External ids: each rank numbers its ops from 1, so file *i* of a run stores
  ``External id + i · 2^40`` (file 0 keeps the raw value): a kernel never links to another
  rank's op.

Both links are one index search per kernel, whatever the planner thinks of the tables (they
have no statistics). Ids can repeat inside one file (a profiler restarted in the same
process, ranks merged into one file): then the kernel takes the launch that started last
before it (the outer call when a runtime and a driver call share an id) and the op that was
running at its launch, and the run's meta counts the ids that were ambiguous (the
``ambiguous-links`` finding reports them).
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

from tracekit import progress
from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext
from tracekit.ingest.staging import StageTable, write_rows

#: External ids of file i are shifted by i · EXTERNAL_STRIDE (Kineto's ids are op counters)
EXTERNAL_STRIDE = 1 << 40

#: stage tables whose rows get a ``row_no`` key (a kernel's launch is chosen by it)
NUMBERED_STAGES = frozenset({"tk_runtime"})

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
    """Per-run lookups and stage tables shared by the trace readers (Kineto, CUPTI, rocprofv3).

    ``kernel_threads``: the format records the launching thread with each kernel (rocprofv3
    dispatches carry ``thread_id``); staged kernels then have a last column ``tid``, used
    when no launch call links the kernel to its thread.
    """

    kernel_threads = False

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.connection: Connection = ctx.connection
        self.stage = self.stage_tables(self.connection)
        self.kernel_names: dict[str, int] = {}
        #: short and mangled names by kernel name key, where the format has them
        self.short_names: dict[int, str | None] = {}
        self.mangled_names: dict[int, str | None] = {}
        self.api_names: dict[str, int] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.threads: set[tuple[int, int]] = set()
        self.files: list[FileState] = []

    def stage_tables(self, connection: Connection, *, temporary: bool = True
                     ) -> dict[str, StageTable]:
        """The stage tables of this reader on ``connection`` (``temporary=False``: plain
        tables of a scratch file)."""
        stages = dict(STAGES)
        if self.kernel_threads:
            stages["tk_kernel"] = (*STAGES["tk_kernel"], ("tid", "BIGINT"))
        return {name: StageTable(connection, name, columns, numbered=name in NUMBERED_STAGES,
                                 temporary=temporary)
                for name, columns in stages.items()}

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
        write_rows(self.connection, "kernel_names",
                   ("run_id", "source_key", "name", "short_name", "mangled_name"),
                   [(run_id, key, name, self.short_names.get(key), self.mangled_names.get(key))
                    for name, key in self.kernel_names.items()])
        write_rows(self.connection, "api_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.api_names.items()])
        params = {"run_id": run_id}
        self.before_finish()
        self.connection.execute(text(
            "CREATE INDEX tk_runtime_link ON tk_runtime (file_index, correlation_id)"))
        kernel_tid = "COALESCE(l.tid, k.tid)" if self.kernel_threads else "l.tid"
        # each statement copies one kind of record and resolves its links (kernel → launch
        # call → CPU op): one step of the bar each
        with progress.task("linking records", total=len(FINISH_SQL), unit="steps") as task:
            for statement in FINISH_SQL:
                self.connection.execute(text(statement.replace("{kernel_tid}", kernel_tid)),
                                        params)
                task.advance()
        self._write_processes_and_threads()
        self._write_devices()
        counts = {name.removeprefix("tk_"): table.count for name, table in self.stage.items()
                  if name != "tk_file"}
        links = self._ambiguous_links()
        for table in self.stage.values():
            table.drop()
        return {"time_base_ns": base, "counts": counts, "ambiguous_links": links}

    def _ambiguous_links(self) -> dict[str, int]:
        """How many correlation and External ids named more than one launch or op.

        A runtime call and the driver call inside it may share a correlation id (one launch):
        only ids whose calls do not overlap in time count. Both queries read the rows in the
        order of an index, once.
        """
        (correlation,) = self.connection.execute(text("""
            SELECT COUNT(*) FROM (
                SELECT 1 FROM tk_runtime WHERE correlation_id IS NOT NULL
                GROUP BY file_index, correlation_id
                HAVING COUNT(*) > 1 AND MAX(start_ns) > MIN(end_ns)) AS repeated""")).one()
        (external,) = self.connection.execute(text("""
            SELECT COUNT(*) FROM (
                SELECT 1 FROM cpu_ops WHERE run_id = :run_id AND external_id IS NOT NULL
                GROUP BY external_id HAVING COUNT(*) > 1) AS repeated"""),
            {"run_id": self.ctx.run_id}).one()
        return {"correlation_ids": int(correlation), "external_ids": int(external)}

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



#: The launch of a staged kernel ``k`` (a ``tk_runtime.row_no``): among the calls of its file
#: with its correlation id, the outermost of those that started before the kernel (the one
#: that ends last), else the first one. Each arm is one index search; their ORDER BY names
#: only the candidate's columns (SQLite 3.40 refuses outer columns there).
_LAUNCH = """COALESCE(
    (SELECT r.row_no FROM tk_runtime r
     WHERE r.file_index = k.file_index AND r.correlation_id = k.correlation_id
       AND r.start_ns <= k.start_ns
     ORDER BY r.end_ns DESC, r.row_no LIMIT 1),
    (SELECT r.row_no FROM tk_runtime r
     WHERE r.file_index = k.file_index AND r.correlation_id = k.correlation_id
     ORDER BY r.start_ns, r.row_no LIMIT 1))"""

#: The framework op (``cpu_ops.id``) of a staged kernel ``k`` launched at ``{launch}`` (store
#: time): among the ops with its External id, the innermost one running at the launch, else
#: the last one that started before it, else the first one.
_CPU_OP = """CASE WHEN k.external_id IS NOT NULL THEN COALESCE(
    (SELECT o.id FROM cpu_ops o
     WHERE o.run_id = :run_id AND o.external_id = k.external_id + f.external_offset
       AND o.start_ns <= {launch} AND o.end_ns >= {launch}
     ORDER BY o.start_ns DESC, o.id LIMIT 1),
    (SELECT o.id FROM cpu_ops o
     WHERE o.run_id = :run_id AND o.external_id = k.external_id + f.external_offset
       AND o.start_ns <= {launch}
     ORDER BY o.start_ns DESC, o.id LIMIT 1),
    (SELECT o.id FROM cpu_ops o
     WHERE o.run_id = :run_id AND o.external_id = k.external_id + f.external_offset
     ORDER BY o.start_ns, o.id LIMIT 1)) END"""

#: staged rows → store tables, times shifted onto the run's base, names resolved to ids.
#: CPU ops are written before kernels, which point at them.
FINISH_SQL: tuple[str, ...] = (
    """INSERT INTO runtime_calls (run_id, name_id, kind, start_ns, end_ns, correlation_id,
                                  global_tid, global_pid)
       SELECT :run_id, a.id, r.kind, r.start_ns + f.offset_ns, r.end_ns + f.offset_ns,
              r.correlation_id, r.tid, r.pid
       FROM tk_runtime r JOIN tk_file f ON f.file_index = r.file_index
       JOIN api_names a ON a.run_id = :run_id AND a.source_key = r.name_key""",
    """INSERT INTO cpu_ops (run_id, name, start_ns, end_ns, external_id, global_tid, global_pid,
                            input_types, input_dims)
       SELECT :run_id, c.name, c.start_ns + f.offset_ns, c.end_ns + f.offset_ns,
              c.external_id + f.external_offset,
              c.tid, c.pid, c.input_types, c.input_dims
       FROM tk_cpu_op c JOIN tk_file f ON f.file_index = c.file_index""",
    f"""INSERT INTO kernels (run_id, name_id, device, stream, start_ns, end_ns, grid_x, grid_y,
                            grid_z, block_x, block_y, block_z, registers, static_smem, dynamic_smem,
                            correlation_id, external_id, graph_node_id, graph_id, global_pid,
                            global_tid, launch_start_ns, launch_end_ns, cpu_op_id)
       SELECT :run_id, n.id, k.device, k.stream, k.start_ns + f.offset_ns, k.end_ns + f.offset_ns,
              k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers,
              k.static_smem, k.smem,
              k.correlation_id, k.external_id + f.external_offset, k.graph_node_id, k.graph_id,
              COALESCE(l.pid, f.main_pid), {{kernel_tid}}, l.start_ns + f.offset_ns,
              l.end_ns + f.offset_ns,
              {_CPU_OP.format(launch="(COALESCE(l.start_ns, k.start_ns) + f.offset_ns)")}
       FROM tk_kernel k JOIN tk_file f ON f.file_index = k.file_index
       JOIN kernel_names n ON n.run_id = :run_id AND n.source_key = k.name_key
       LEFT JOIN tk_runtime l ON l.row_no = {_LAUNCH}""",
    """INSERT INTO memory_ops (run_id, kind, device, stream, start_ns, end_ns, bytes,
                               correlation_id, global_pid)
       SELECT :run_id, m.kind, m.device, m.stream, m.start_ns + f.offset_ns,
              m.end_ns + f.offset_ns, m.bytes, m.correlation_id, f.main_pid
       FROM tk_memory m JOIN tk_file f ON f.file_index = m.file_index""",
    """INSERT INTO nvtx_ranges (run_id, kind, start_ns, end_ns, text, domain, global_tid,
                                global_pid)
       SELECT :run_id, r.kind, r.start_ns + f.offset_ns, r.end_ns + f.offset_ns, r.text, r.domain,
              r.tid, r.pid
       FROM tk_range r JOIN tk_file f ON f.file_index = r.file_index""",
)
