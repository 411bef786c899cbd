"""Read a rocpd SQLite database (rocprofv3's default output since ROCm 7.0) into the store.

A rocpd file holds one *set* of tables per profiled process, each named ``rocpd_<name>`` plus
the process's uuid suffix (``rocpd_kernel_dispatch_0197…``), and views without the suffix
that select from them (docs/formats.md#rocpd-sqlite). The views are created ``IF NOT EXISTS``
per set, so in a file of several sets (a merged database) they show the first set only: the
reader reads the physical tables, set by set; a table without a suffix is a set of its own.
Within a set the ids are row ids into the info tables (``pid``, ``tid``, ``agent_id``,
``kernel_id``, ``event_id`` …), not OS ids, and every join also matches ``guid``, as
rocprofiler-sdk's own views do: ids repeat across processes.

Row work happens in SQLite (``tracekit.ingest.bulk``: ``INSERT … SELECT`` with the file
attached, streamed into ``COPY`` on PostgreSQL); Python reads only the small tables (agents,
processes, threads, kernel symbols, category and operation strings) and turns them into
rowid-keyed TEMP lookups. Every record table is the outer loop of its statement and every
other table is reached by its integer primary key: the joins are ``CROSS JOIN`` (SQLite keeps
their order) so no plan depends on the planner's guess. Per set:

- kernel dispatches → kernels: the name from the symbol's ``display_name`` (the demangled,
  formatted name; short and mangled names from its ``extdata`` and ``kernel_name``), the
  device from the agent's ``type_index`` (the GPU ordinal), the grid in workgroups, the
  launching HIP call from the region whose event has the dispatch's correlation id
  (``rocpd_event.stack_id``, the internal correlation id), graph ids where the schema has them;
- regions of ``HIP_*`` categories → runtime calls; of ``MARKER_*`` categories → NVTX ranges
  (their text is the event's ``extdata.message``, the ROCTx message), ROCTx marks (samples)
  → NVTX marks; memory copies → memory operations; GPU agents → devices.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from tracekit.errors import InputError
from tracekit.ingest.bulk import BulkCopier
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.readers.rocprof_common import DEVICE_COLUMNS, device_row, marker_kinds
from tracekit.ingest.spec import RocpdMapping
from tracekit.ingest.staging import write_rows

#: a set's suffix: "_" and a UUID with "-" written as "_" (rocprofiler-sdk generateRocpd.cpp)
SUFFIX = re.compile(r"_[0-9a-fA-F]{8}(?:_[0-9a-fA-F]{4}){3}_[0-9a-fA-F]{12}")
#: the table that makes a set (a set without dispatches has nothing to read)
ANCHOR = "rocpd_kernel_dispatch"


@dataclass
class TableSet:
    """One process's tables: their real names, and the columns each has."""

    suffix: str
    index: int
    copier: BulkCopier
    present: set[str]
    _columns: dict[str, set[str]] = field(default_factory=dict)

    def has(self, base: str) -> bool:
        return f"rocpd_{base}{self.suffix}" in self.present

    def table(self, base: str) -> str:
        return f'src."rocpd_{base}{self.suffix}"'

    def columns(self, base: str) -> set[str]:
        if base not in self._columns:
            name = f"rocpd_{base}{self.suffix}"
            rows = self.copier.query(f"PRAGMA src.table_info('{name}')") if self.has(base) else []
            self._columns[base] = {str(row[1]) for row in rows}
        return self._columns[base]

    def column(self, base: str, name: str, alias: str) -> str:
        """``alias."name"`` when the table has the column, else NULL (older schemas)."""
        return f'{alias}."{name}"' if name in self.columns(base) else "NULL"


def table_sets(copier: BulkCopier) -> list[TableSet]:
    """The file's sets, in the order of their dispatch tables' names."""
    names = {str(row[0]) for row in copier.query(
        "SELECT name FROM src.sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")}
    suffixes = sorted({name[len(ANCHOR):] for name in names if name.startswith(ANCHOR)
                       and (name == ANCHOR or SUFFIX.fullmatch(name[len(ANCHOR):]))})
    return [TableSet(suffix, index, copier, names) for index, suffix in enumerate(suffixes)]


def metadata(tables: TableSet) -> dict[str, str]:
    """The set's ``rocpd_metadata`` tags (schema_version, uuid, guid …)."""
    if not tables.has("metadata"):
        return {}
    return {str(tag): str(value) for tag, value in tables.copier.query(
        f"SELECT tag, value FROM {tables.table('metadata')}")}


@dataclass
class Lookups:
    """The run-wide small tables read into Python, across sets."""

    kernel_names: dict[str, int] = field(default_factory=dict)
    short_names: dict[int, str | None] = field(default_factory=dict)
    mangled_names: dict[int, str | None] = field(default_factory=dict)
    api_names: dict[str, int] = field(default_factory=dict)
    processes: dict[int, str | None] = field(default_factory=dict)
    threads: dict[tuple[int, int], str | None] = field(default_factory=dict)
    devices: dict[tuple[int, int | None], tuple[Any, ...]] = field(default_factory=dict)
    #: (set, agent row id) of the GPUs that ran a dispatch: only they become devices
    used_agents: set[tuple[int, int]] = field(default_factory=set)


class RocpdReader:
    """Copies every set of one rocpd file into the store."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.copier = ctx.copier
        self.mapping: RocpdMapping = ctx.spec.mapping
        self.params: dict[str, Any] = {"run_id": ctx.run_id}
        self.lookups = Lookups()
        self.counts: dict[str, int] = {"kernels": 0, "runtime_calls": 0, "nvtx_ranges": 0,
                                       "memory_ops": 0}
        self.marker_kind = marker_kinds(self.mapping.markers)
        #: per set: the kernel ids its dispatches name
        self.used_kernels: dict[int, set[int]] = {}
        self.missing_symbols: set[tuple[int, int]] = set()
        #: per set: (string id of a HIP call's name, its key in api_names)
        self.api_ids: dict[int, list[tuple[int, int]]] = {}

    # -- small tables, in Python -------------------------------------------------------------

    def _temp(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """A TEMP lookup ``name(id INTEGER PRIMARY KEY, columns…)`` where the SELECTs run."""
        self.copier.temp_rows(f"{name}_rows", ("id", *columns), rows)
        self.copier.prepare(f"DROP TABLE IF EXISTS temp.{name}")
        self.copier.prepare(f"CREATE TEMP TABLE {name} (id INTEGER PRIMARY KEY, "
                            f"{', '.join(columns)})")
        self.copier.prepare(f"INSERT OR IGNORE INTO temp.{name} SELECT * FROM temp.{name}_rows")
        self.copier.prepare(f"DROP TABLE temp.{name}_rows")

    def _processes(self, tables: TableSet) -> dict[int, int]:
        """Process row id → OS pid; threads and processes remembered for the store."""
        pids: dict[int, int] = {}
        if tables.has("info_process"):
            command = tables.column("info_process", "command", "p")
            for row_id, pid, cmd in self.copier.query(
                    f"SELECT p.id, p.pid, {command} FROM {tables.table('info_process')} AS p"):
                key, os_pid = _id(row_id), _id(pid)
                if key is None or os_pid is None:
                    continue
                pids[key] = os_pid
                name = str(cmd).split(" ")[0].rsplit("/", 1)[-1] if cmd else None
                self.lookups.processes.setdefault(os_pid, name)
        threads = []
        if tables.has("info_thread"):
            for row_id, tid, process, name in self.copier.query(
                    f"SELECT t.id, t.tid, t.pid, {tables.column('info_thread', 'name', 't')} "
                    f"FROM {tables.table('info_thread')} AS t"):
                key, os_tid = _id(row_id), _id(tid)
                if key is None or os_tid is None:
                    continue
                pid = pids.get(_id(process) or 0)
                threads.append((key, os_tid, pid))
                if pid is not None:
                    self.lookups.threads.setdefault((pid, os_tid), name)
        self._temp("tk_rp_thread", ("tid", "pid"), [(i, t, p) for i, t, p in threads])
        self._temp("tk_rp_process", ("pid",), list(pids.items()))
        return pids

    def _agents(self, tables: TableSet, pids: dict[int, int]) -> None:
        """GPU agents → devices (the GPU ordinal is ``type_index``) and a device lookup."""
        rows: list[tuple[int, int]] = []
        if tables.has("info_agent"):
            extdata = tables.column("info_agent", "extdata", "a")
            for row_id, kind, type_index, name, product, process, ext in self.copier.query(
                    f"SELECT a.id, a.type, a.type_index, a.name, a.product_name, a.pid, "
                    f"{extdata} FROM {tables.table('info_agent')} AS a"):
                if str(kind).upper() != "GPU":
                    continue
                key = _id(row_id)
                if key is None:
                    continue
                index = _id(type_index)
                index = index if index is not None else len(rows)
                rows.append((key, index))
                if (tables.index, key) not in self.lookups.used_agents:
                    continue
                info = _json(ext)
                pid = pids.get(_id(process) or 0)
                self.lookups.devices.setdefault((index, pid), device_row(
                    self.ctx.run_id, index, pid, name=name, product=product,
                    target_version=_int(info.get("gfx_target_version")),
                    cu_count=_int(info.get("cu_count")), memory_bytes=None, uuid=None))
        self._temp("tk_rp_agent", ("device",), rows)

    def _symbols(self, tables: TableSet) -> None:
        """Kernel symbols → unique kernel names (per run) and a symbol lookup."""
        rows = []
        lookups = self.lookups
        extdata = tables.column("info_kernel_symbol", "extdata", "s")
        used = self.used_kernels.get(tables.index, set())
        for row_id, display, mangled, vgprs, lds, ext in self.copier.query(
                f"SELECT s.id, s.display_name, s.kernel_name, "
                f"{tables.column('info_kernel_symbol', 'arch_vgpr_count', 's')}, "
                f"{tables.column('info_kernel_symbol', 'group_segment_size', 's')}, {extdata} "
                f"FROM {tables.table('info_kernel_symbol')} AS s"):
            key_id = _id(row_id)
            if key_id is None or key_id not in used:  # loaded, never dispatched: not run
                continue
            info = _json(ext)
            name = (display or info.get("formatted_kernel_name") or mangled
                    or f"<kernel id {row_id}>")
            key = lookups.kernel_names.setdefault(str(name), len(lookups.kernel_names))
            lookups.short_names.setdefault(key, info.get("truncated_kernel_name") or None)
            lookups.mangled_names.setdefault(key, mangled or None)
            rows.append((key_id, key, _id(vgprs), _id(lds)))
        known = {row[0] for row in rows}
        for kernel_id in sorted(self.used_kernels.get(tables.index, set()) - known):
            key = lookups.kernel_names.setdefault(f"<kernel id {kernel_id}>",
                                                  len(lookups.kernel_names))
            rows.append((kernel_id, key, None, None))
            self.missing_symbols.add((tables.index, kernel_id))
        self._temp("tk_rp_symbol", ("name_key", "vgprs", "lds"), rows)

    def _strings(self, tables: TableSet) -> None:
        """Category strings (HIP / ROCTx) and ROCTx operation names, by string id."""
        hip = self.mapping.hip_categories
        patterns = (*hip, *self.mapping.marker_categories)
        categories: list[tuple[int, str]] = []
        operations: list[tuple[int, str]] = []
        if tables.has("string"):
            sql = f"SELECT id, string FROM {tables.table('string')} WHERE " + " OR ".join(
                f"string LIKE :p{index}" for index in range(len(patterns)))
            for row_id, value in self.copier.query(
                    sql, {f"p{index}": pattern for index, pattern in enumerate(patterns)}):
                string_id = _id(row_id)
                if string_id is not None:
                    categories.append((string_id, "hip" if _like_any(str(value), hip)
                                       else "marker"))
            for row_id, value in self._in(tables, tuple(self.marker_kind)):
                operations.append((row_id, self.marker_kind[value]))
        self._temp("tk_rp_category", ("role",), categories)
        self._temp("tk_rp_operation", ("kind",), operations)

    def _in(self, tables: TableSet, values: Sequence[str]) -> list[tuple[int, str]]:
        if not values:
            return []
        sql = (f"SELECT id, string FROM {tables.table('string')} WHERE string IN ("
               + ", ".join(f":v{index}" for index in range(len(values))) + ")")
        return [(i, str(s)) for i, s in self.copier.query(
            sql, {f"v{index}": value for index, value in enumerate(values)})
            if type(i) is int]

    # -- records, in SQL -------------------------------------------------------------------------

    def _api_names(self, tables: TableSet) -> None:
        """The names of the set's HIP calls (one DISTINCT pass over its regions): a key per
        unique name in the run, and the set's string id → key in ``api_ids``."""
        ids = self.api_ids.setdefault(tables.index, [])
        for name_id, name in self.copier.query(f"""
                SELECT DISTINCT r.name_id, CAST(s.string AS TEXT)
                FROM {tables.table('region')} AS r
                CROSS JOIN {tables.table('event')} AS e ON e.id = r.event_id AND e.guid = r.guid
                CROSS JOIN temp.tk_rp_category AS c ON c.id = e.category_id AND c.role = 'hip'
                LEFT JOIN {tables.table('string')} AS s ON s.id = r.name_id AND s.guid = r.guid"""):
            names = self.lookups.api_names
            string_id = _id(name_id)
            if string_id is not None:
                ids.append((string_id, names.setdefault(str(name or ""), len(names))))

    def _launch_table(self, tables: TableSet) -> None:
        """``tk_rp_launch``: HIP calls by correlation id (earliest wins), for the dispatches."""
        self.copier.prepare("DROP TABLE IF EXISTS temp.tk_rp_launch")
        self.copier.prepare("CREATE TEMP TABLE tk_rp_launch (key INTEGER PRIMARY KEY, "
                            "tid INTEGER, s INTEGER, e INTEGER)")
        self.copier.prepare(f"""
            INSERT INTO temp.tk_rp_launch
            SELECT e.stack_id, t.tid, r.start, r."end"
            FROM {tables.table('region')} AS r
            CROSS JOIN {tables.table('event')} AS e ON e.id = r.event_id AND e.guid = r.guid
            CROSS JOIN temp.tk_rp_category AS c ON c.id = e.category_id AND c.role = 'hip'
            LEFT JOIN temp.tk_rp_thread AS t ON t.id = r.tid
            WHERE e.stack_id IS NOT NULL
            ON CONFLICT (key) DO UPDATE SET tid = excluded.tid, s = excluded.s, e = excluded.e
            WHERE excluded.s < s""")

    def _copy_runtime(self, tables: TableSet) -> None:
        self._temp("tk_rp_api", ("key",), self.api_ids.get(tables.index, []))
        name_id = ":name_base_api + a.key" if self.copier.native else "n.id"
        join = ("" if self.copier.native else
                "CROSS JOIN main.api_names AS n ON n.run_id = :run_id AND n.source_key = a.key")
        self.counts["runtime_calls"] += self.copier.copy(
            "runtime_calls",
            ("run_id", "name_id", "kind", "start_ns", "end_ns", "correlation_id", "global_tid",
             "global_pid"),
            f"""SELECT :run_id, {name_id}, 'runtime', r.start, r."end", e.stack_id, t.tid, p.pid
                FROM {tables.table('region')} AS r
                CROSS JOIN {tables.table('event')} AS e ON e.id = r.event_id AND e.guid = r.guid
                CROSS JOIN temp.tk_rp_category AS c ON c.id = e.category_id AND c.role = 'hip'
                CROSS JOIN temp.tk_rp_api AS a ON a.id = r.name_id
                LEFT JOIN temp.tk_rp_thread AS t ON t.id = r.tid
                LEFT JOIN temp.tk_rp_process AS p ON p.id = r.pid
                {join}""", self.params)

    def _copy_markers(self, tables: TableSet) -> None:
        """ROCTx ranges (regions) and marks (samples) → nvtx_ranges."""
        message = """COALESCE(CASE WHEN json_valid(e.extdata)
                                    THEN json_extract(e.extdata, '$.message') END,
                               CAST(s.string AS TEXT))"""
        self.counts["nvtx_ranges"] += self.copier.copy(
            "nvtx_ranges",
            ("run_id", "kind", "start_ns", "end_ns", "text", "domain", "global_tid", "global_pid"),
            f"""SELECT :run_id, o.kind, r.start, r."end", {message}, NULL, t.tid, p.pid
                FROM {tables.table('region')} AS r
                CROSS JOIN temp.tk_rp_operation AS o ON o.id = r.name_id
                CROSS JOIN {tables.table('event')} AS e ON e.id = r.event_id AND e.guid = r.guid
                CROSS JOIN temp.tk_rp_category AS c ON c.id = e.category_id AND c.role = 'marker'
                LEFT JOIN {tables.table('string')} AS s ON s.id = r.name_id AND s.guid = r.guid
                LEFT JOIN temp.tk_rp_thread AS t ON t.id = r.tid
                LEFT JOIN temp.tk_rp_process AS p ON p.id = r.pid""", self.params)
        if not (tables.has("sample") and tables.has("track")):
            return
        mark = """COALESCE(CASE WHEN json_valid(e.extdata)
                                 THEN json_extract(e.extdata, '$.message') END, 'roctxMarkA')"""
        self.counts["nvtx_ranges"] += self.copier.copy(
            "nvtx_ranges",
            ("run_id", "kind", "start_ns", "end_ns", "text", "domain", "global_tid", "global_pid"),
            f"""SELECT :run_id, 'mark', m.timestamp, m.timestamp, {mark}, NULL, t.tid, p.pid
                FROM {tables.table('sample')} AS m
                CROSS JOIN {tables.table('event')} AS e ON e.id = m.event_id AND e.guid = m.guid
                CROSS JOIN temp.tk_rp_category AS c ON c.id = e.category_id AND c.role = 'marker'
                LEFT JOIN {tables.table('track')} AS k ON k.id = m.track_id AND k.guid = m.guid
                LEFT JOIN temp.tk_rp_thread AS t ON t.id = k.tid
                LEFT JOIN temp.tk_rp_process AS p ON p.id = k.pid""", self.params)

    def _copy_kernels(self, tables: TableSet) -> None:
        d = "kernel_dispatch"
        name_id = (":name_base + y.name_key" if self.copier.native else "n.id")
        join = ("" if self.copier.native else
                "CROSS JOIN main.kernel_names AS n ON n.run_id = :run_id "
                "AND n.source_key = y.name_key")

        def blocks(axis: str) -> str:
            return (f"CASE WHEN d.workgroup_size_{axis} > 0 THEN (d.grid_size_{axis} + "
                    f"d.workgroup_size_{axis} - 1) / d.workgroup_size_{axis} "
                    f"ELSE d.grid_size_{axis} END")

        self.counts["kernels"] += self.copier.copy(
            "kernels",
            ("run_id", "name_id", "device", "stream", "start_ns", "end_ns", "grid_x", "grid_y",
             "grid_z", "block_x", "block_y", "block_z", "registers", "static_smem",
             "dynamic_smem", "correlation_id", "graph_node_id", "graph_id", "global_pid",
             "global_tid", "launch_start_ns", "launch_end_ns"),
            f"""SELECT :run_id, {name_id}, g.device, d.stream_id, d.start, d."end",
                       {blocks('x')}, {blocks('y')}, {blocks('z')}, d.workgroup_size_x,
                       d.workgroup_size_y, d.workgroup_size_z, y.vgprs, y.lds,
                       d.group_segment_size, e.stack_id,
                       NULLIF({tables.column(d, 'graph_node_id', 'd')}, 0),
                       NULLIF({tables.column(d, 'graph_exec_id', 'd')}, 0),
                       COALESCE(t.pid, p.pid), COALESCE(l.tid, t.tid), l.s, l.e
                FROM {tables.table(d)} AS d
                CROSS JOIN temp.tk_rp_symbol AS y ON y.id = d.kernel_id
                LEFT JOIN {tables.table('event')} AS e ON e.id = d.event_id AND e.guid = d.guid
                LEFT JOIN temp.tk_rp_agent AS g ON g.id = d.agent_id
                LEFT JOIN temp.tk_rp_thread AS t ON t.id = d.tid
                LEFT JOIN temp.tk_rp_process AS p ON p.id = d.pid
                LEFT JOIN temp.tk_rp_launch AS l ON l.key = e.stack_id
                {join}""", self.params)

    def _copy_memory(self, tables: TableSet) -> None:
        if not tables.has("memory_copy"):
            return
        self.counts["memory_ops"] += self.copier.copy(
            "memory_ops",
            ("run_id", "kind", "device", "stream", "start_ns", "end_ns", "bytes", "correlation_id",
             "global_pid"),
            f"""SELECT :run_id, 'memcpy', COALESCE(dst.device, srca.device), m.stream_id, m.start,
                       m."end", m.size, e.stack_id, p.pid
                FROM {tables.table('memory_copy')} AS m
                LEFT JOIN {tables.table('event')} AS e ON e.id = m.event_id AND e.guid = m.guid
                LEFT JOIN temp.tk_rp_agent AS dst ON dst.id = m.dst_agent_id
                LEFT JOIN temp.tk_rp_agent AS srca ON srca.id = m.src_agent_id
                LEFT JOIN temp.tk_rp_process AS p ON p.id = m.pid""", self.params)

    # -- the run ---------------------------------------------------------------------------------

    def read(self, sets: list[TableSet]) -> None:
        """Two passes over the sets: the small tables first (names are unique per run), then
        the records."""
        for tables in sets:
            self._check(tables)
        self._used_agents(sets)
        for tables in sets:
            self._prepare_lookups(tables)
            if tables.has("region") and tables.has("event"):
                self._api_names(tables)
        self._write_names()
        for tables in sets:
            self._prepare_lookups(tables)
            has_regions = tables.has("region") and tables.has("event")
            if has_regions:
                self._launch_table(tables)
                self._copy_runtime(tables)
                self._copy_markers(tables)
            else:
                self.copier.prepare("DROP TABLE IF EXISTS temp.tk_rp_launch")
                self.copier.prepare("CREATE TEMP TABLE tk_rp_launch (key INTEGER PRIMARY KEY, "
                                    "tid INTEGER, s INTEGER, e INTEGER)")
            self._copy_kernels(tables)
            self._copy_memory(tables)
        for name in ("thread", "process", "agent", "symbol", "category", "operation", "launch",
                     "api"):
            self.copier.prepare(f"DROP TABLE IF EXISTS temp.tk_rp_{name}")
        self._write_small_tables()

    def _check(self, tables: TableSet) -> None:
        missing = [base for base in ("kernel_dispatch", "info_kernel_symbol")
                   if not tables.has(base)]
        if missing:
            raise InputError(
                f"{self.ctx.display_name}: rocpd database lacks "
                + ", ".join(f"rocpd_{base}{tables.suffix}" for base in missing),
                hint="the file is damaged or not written by rocprofv3 --output-format rocpd")
        needed = {"kernel_dispatch": {"kernel_id", "start", "end", "guid"}}
        for base, columns in needed.items():
            absent = columns - tables.columns(base)
            if absent:
                raise InputError(f"{self.ctx.display_name}: rocpd_{base}{tables.suffix} has no "
                                 f"column {', '.join(sorted(absent))}",
                                 hint="the file is damaged or of a rocpd schema tracekit "
                                      "does not read")

    def _used_agents(self, sets: list[TableSet]) -> None:
        """The agents and kernel symbols each set's dispatches name: one pass per set, on the
        side connection (its own core) when the pipeline gave one. Only agents that ran a
        dispatch become devices; a kernel id without a symbol gets a placeholder name."""
        sql = [f"SELECT agent_id, kernel_id FROM {tables.table('kernel_dispatch')} "
               "GROUP BY agent_id, kernel_id" for tables in sets]
        side = self.ctx.side
        futures = [side.submit(_fetch_all(query)) for query in sql] if side is not None else []
        for index, (tables, query) in enumerate(zip(sets, sql, strict=True)):
            rows = None
            if futures:
                try:
                    rows = futures[index].result()
                except (sqlite3.Error, RuntimeError):
                    rows = None
            if rows is None:
                rows = self.copier.query(query)
            self.lookups.used_agents |= {(tables.index, agent) for agent in
                                         (_id(agent) for agent, _ in rows) if agent is not None}
            self.used_kernels[tables.index] = {kernel for kernel in
                                               (_id(kernel) for _, kernel in rows)
                                               if kernel is not None}

    def _prepare_lookups(self, tables: TableSet) -> None:
        pids = self._processes(tables)
        self._agents(tables, pids)
        self._symbols(tables)
        self._strings(tables)

    def _write_names(self) -> None:
        """kernel_names and api_names, with computed ids on a SQLite store (the copies then
        add the key instead of joining every record to the names)."""
        lookups, run_id, connection = self.lookups, self.ctx.run_id, self.copier.connection
        native = self.copier.native
        base = connection.execute(text(
            "SELECT COALESCE(MAX(id), 0) + 1 FROM kernel_names")).scalar_one() if native else None
        columns: tuple[str, ...] = ("run_id", "source_key", "name", "short_name",
                                    "mangled_name")
        rows: list[tuple[Any, ...]] = [
            (run_id, key, name, lookups.short_names.get(key), lookups.mangled_names.get(key))
            for name, key in lookups.kernel_names.items()]
        if native:
            columns = ("id", *columns)
            rows = [(base + row[1], *row) for row in rows]
            self.params["name_base"] = base
        write_rows(connection, "kernel_names", columns, rows)
        api_base = connection.execute(text(
            "SELECT COALESCE(MAX(id), 0) + 1 FROM api_names")).scalar_one() if native else None
        api_columns: tuple[str, ...] = ("run_id", "source_key", "name")
        api_rows: list[tuple[Any, ...]] = [(run_id, key, name)
                                           for name, key in lookups.api_names.items()]
        if native:
            api_columns = ("id", *api_columns)
            api_rows = [(api_base + row[1], *row) for row in api_rows]
            self.params["name_base_api"] = api_base
        write_rows(connection, "api_names", api_columns, api_rows)
        if not native:
            for table in ("kernel_names", "api_names"):
                mirrored = connection.execute(text(
                    f"SELECT run_id, source_key, id FROM {table} WHERE run_id = :run_id"),
                    {"run_id": run_id}).all()
                self.copier.mirror_lookup(table, ("run_id", "source_key", "id"), mirrored,
                                          unique_key=True)

    def _write_small_tables(self) -> None:
        run_id, connection, lookups = self.ctx.run_id, self.copier.connection, self.lookups
        write_rows(connection, "processes", ("run_id", "global_pid", "pid", "name"),
                   [(run_id, pid, pid if 0 <= pid < 2**31 else None, name)
                    for pid, name in sorted(lookups.processes.items())])
        write_rows(connection, "threads", ("run_id", "global_tid", "global_pid", "tid", "name"),
                   [(run_id, tid, pid, tid if 0 <= tid < 2**31 else None, name)
                    for (pid, tid), name in sorted(lookups.threads.items())])
        write_rows(connection, "devices", DEVICE_COLUMNS, list(lookups.devices.values()))


def _fetch_all(sql: str) -> Callable[[sqlite3.Connection], list[Any]]:
    """A side-connection job: the rows of ``sql``."""
    def job(connection: sqlite3.Connection) -> list[Any]:
        return connection.execute(sql).fetchall()
    return job


def _like_any(value: str, patterns: Sequence[str]) -> bool:
    """SQL LIKE (``%`` and ``_``, case-insensitive for ASCII) on Python strings."""
    for pattern in patterns:
        regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
        if re.fullmatch(regex, value, flags=re.IGNORECASE | re.DOTALL):
            return True
    return False


def _json(value: Any) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _id(value: Any) -> int | None:
    """An id or count as the file holds it: an integer that fits in 64 bits, else None (a
    damaged row: its lookups are left out, the records that name it keep NULLs)."""
    if type(value) is int and -(2**63) <= value < 2**63:
        return value
    return None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def ingest(ctx: IngestContext) -> SourceInfo:
    """Copy one rocpd database into the store under ``ctx.run_id``."""
    if len(ctx.paths) > 1:
        raise InputError(f"{ctx.display_name}: pass one rocpd database at a time",
                         hint="analyze each .db on its own, or merge them first "
                              "(rocpd merge)")
    sets = table_sets(ctx.copier)
    if not sets:
        raise InputError(f"{ctx.display_name}: rocpd database has no kernel dispatch table",
                         hint="the file is damaged or was written without tables")
    tags = [metadata(tables) for tables in sets]
    versions = sorted({tag.get("schema_version", "") for tag in tags} - {""})
    mapping: RocpdMapping = ctx.spec.mapping
    for version in versions:
        if version.split(".")[0] not in mapping.schema_majors:
            raise InputError(
                f"{ctx.display_name}: rocpd schema {version} is not one tracekit reads "
                f"(schema {', '.join(mapping.schema_majors)})",
                hint="upgrade tracekit, or convert the file with `rocpd convert --format csv`")
    reader = RocpdReader(ctx)
    reader.read(sets)
    if not reader.counts["kernels"] and not ctx.allow_no_kernels:
        raise InputError(f"{ctx.display_name}: rocpd database holds no kernel dispatch",
                         hint="record with `rocprofv3 --kernel-trace` (or --sys-trace)")
    meta = {"counts": reader.counts, "kernel_ids_without_symbol": len(reader.missing_symbols),
            "sets": [
        {"suffix": tables.suffix, "guid": tag.get("guid"),
         "schema_version": tag.get("schema_version")} for tables, tag in zip(sets, tags,
                                                                             strict=True)]}
    return SourceInfo(producer="rocprofv3",
                      schema_version=versions[0] if len(versions) == 1 else None,
                      meta_json=json.dumps(meta, sort_keys=True))
