"""Read an Nsight Systems SQLite export into the store.

All row work happens in SQL (see ``tracekit.ingest.bulk``): unique names first, then one
INSERT…SELECT per record table. Column names come from the spec's candidate lists checked
against the file's real columns, so exports from nsys 2022.4 through 2026.x read the same way.

Correlation done here, once, at ingest:
- kernel → launching runtime/driver call: same ``correlationId`` within the same process
  (``RUNTIME.globalTid & 0xFFFFFFFFFF000000 == KERNEL.globalPid``), which gives the kernel
  its launching thread and CPU launch time. Kernels without a partner (traces cut to a
  window) are kept with NULL launch fields.
- NVTX domain names: the eventType-75 row with the same ``domainId`` in the same process.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tracekit import progress
from tracekit.errors import InputError
from tracekit.ingest.bulk import BulkCopier
from tracekit.ingest.reader import IngestContext, SourceInfo, StepAttribution
from tracekit.ingest.side import SideWork
from tracekit.ingest.spec import NsysSqliteMapping
from tracekit.store.schema import NVTX_RANGE_KINDS

#: globalTid → globalPid: keep the top 40 bits (docs/formats.md#the-sqlite-export; the Nsight
#: Systems User Guide, "Serialized process and thread identifiers"), as a signed 64-bit literal.
PID_MASK = -16777216
#: largest string id that gets a computed kernel name id (far below 64-bit overflow)
MAX_NAME_KEY = 2**48


@dataclass
class SourceSchema:
    """Tables and columns actually present in one export."""

    copier: BulkCopier
    spec: NsysSqliteMapping
    _columns: dict[str, set[str]] = field(default_factory=dict)

    def table(self, role: str) -> str:
        """The real table name for a role such as ``kernel`` or ``nvtx``."""
        return str(getattr(self.spec.tables, role))

    def has(self, role: str) -> bool:
        """True when the export contains the table for ``role``."""
        return bool(self.columns(role))

    def columns(self, role: str) -> set[str]:
        """Column names of the role's table (empty when the table is absent)."""
        name = self.table(role)
        if name not in self._columns:
            rows = self.copier.query(f"PRAGMA src.table_info('{name}')")
            self._columns[name] = {str(row[1]) for row in rows}
        return self._columns[name]

    def expr(self, role: str, target: str, alias: str) -> str:
        """SQL for a target column: the first candidate source column present, else NULL."""
        present = self.columns(role)
        for candidate in getattr(self.spec.columns, role).get(target, ()):
            if candidate in present:
                return f'{alias}."{candidate}"'
        return "NULL"


def read_metadata(schema: SourceSchema) -> tuple[str | None, str | None, dict[str, str]]:
    """Product version, schema version and interesting capture options."""
    meta = schema.spec.metadata
    values: dict[str, str] = {}
    tables = {row[0] for row in schema.copier.query(
        "SELECT name FROM src.sqlite_master WHERE type = 'table'")}
    for table in meta.tables:
        if table in tables:
            for name, value in schema.copier.query(f'SELECT name, value FROM src."{table}"'):
                values.setdefault(str(name), str(value))
    options: dict[str, str] = {}
    if "META_DATA_CAPTURE" in tables:
        for (value,) in schema.copier.query(
            "SELECT value FROM src.META_DATA_CAPTURE "
            "WHERE name LIKE '%CUDA_GRAPH_TRACE_OPTIONS:MODE'"
        ):
            options["cuda_graph_trace"] = str(value)
    return values.get(meta.product_version_key), values.get(meta.schema_version_key), options


def read_session(schema: SourceSchema) -> dict[str, object]:
    """Where and when the capture ran: the target's host name, and ``clock_base_ns``, the UTC
    ns of trace time 0 (``utcEpochNs - systemClockNs``: trace times count on the target's
    clock, which read ``systemClockNs`` when the capture started; exports without that
    column count from the start). None where the export does not say."""
    meta = schema.spec.metadata
    tables = {row[0] for row in schema.copier.query(
        "SELECT name FROM src.sqlite_master WHERE type = 'table'")}
    host = clock_base = None
    if meta.system_table in tables:
        rows = schema.copier.query(
            f'SELECT CAST(value AS TEXT) FROM src."{meta.system_table}" WHERE name = :key '
            "LIMIT 1", {"key": meta.hostname_key})
        host = str(rows[0][0]) if rows and rows[0][0] else None
    if meta.session_table in tables:
        columns = {row[1] for row in schema.copier.query(
            f"PRAGMA src.table_info('{meta.session_table}')")}
        clock = "systemClockNs" if "systemClockNs" in columns else "0"
        if "utcEpochNs" in columns:
            rows = schema.copier.query(
                f'SELECT utcEpochNs - COALESCE({clock}, 0) FROM src."{meta.session_table}" '
                "WHERE utcEpochNs IS NOT NULL LIMIT 1")
            clock_base = int(rows[0][0]) if rows and isinstance(rows[0][0], int) else None
    return {"host": host, "clock_base_ns": clock_base}


def ingest(ctx: IngestContext) -> SourceInfo:
    """Copy one nsys export into the store under ``ctx.run_id``."""
    copier = ctx.copier
    schema = SourceSchema(copier, ctx.spec.mapping)
    product_version, schema_version, options = read_metadata(schema)
    if not schema.has("kernel") and not ctx.allow_no_kernels:
        raise InputError(
            f"{ctx.display_name}: nsys export has no {schema.table('kernel')} table: the "
            "capture recorded no CUDA kernels",
            hint="profile with `-t cuda` on a machine with a GPU, or use tracekit audit",
        )
    params = {"run_id": ctx.run_id}
    counts: dict[str, int] = {}
    steps = ctx.step_attribution if schema.has("runtime") else None
    reads = _side_reads(ctx, schema, steps)
    name = ctx.paths[0].name
    estimates = _row_estimates(schema)
    with progress.task(f"reading {name}: NVTX ranges", total=sum(estimates.values()) or None,
                       unit="records") as task:
        # NVTX first: with the ranges in the store, engine steps can be made before the
        # kernels are copied, and each kernel gets its step in the same INSERT … SELECT.
        counts["nvtx_ranges"] = _copy_nvtx(schema, params) if schema.has("nvtx") else 0
        task.advance(estimates.get("nvtx", 0))
        task.update(description=f"reading {name}: kernels and their launches")
        _copy_kernel_side(ctx, schema, params, steps, reads, counts)
        task.advance(estimates.get("kernel", 0) + estimates.get("runtime", 0))
        task.update(description=f"reading {name}: memory operations, processes, devices")
        counts["memory_ops"] = _copy_memory_ops(schema, params)
        processes, threads = _copy_processes_and_threads(schema, params)
        _copy_devices(schema, params)
        task.advance(estimates.get("memcpy", 0) + estimates.get("memset", 0))
    session = read_session(schema)
    meta = {"counts": counts, **options, **{k: v for k, v in session.items() if v is not None}}
    return SourceInfo(
        files=[{"name": ctx.paths[0].name, **session}],
        producer="nsys",
        producer_version=product_version,
        schema_version=schema_version,
        meta_json=json.dumps(meta, sort_keys=True),
        counts=_run_counts(counts, processes, threads, reads.result("nvtx_kinds"),
                           schema.has("nvtx")),
    )


def _row_estimates(schema: SourceSchema) -> dict[str, int]:
    """Rows per copied table, for the progress bar: the largest rowid (one index lookup;
    exact for the exports nsys writes, which never delete rows)."""
    estimates = {}
    for role in ("nvtx", "kernel", "runtime", "memcpy", "memset"):
        if schema.has(role):
            try:
                rows = schema.copier.query(f'SELECT MAX(rowid) FROM src."{schema.table(role)}"')
            except (sqlite3.Error, DBAPIError):  # a table without rowids: no estimate
                continue
            estimates[role] = int(rows[0][0] or 0) if rows and rows[0][0] else 0
    return estimates


def _copy_kernel_side(ctx: IngestContext, schema: SourceSchema, params: dict[str, Any],
                      steps: StepAttribution | None, reads: SideReads,
                      counts: dict[str, int]) -> None:
    """Kernel names, runtime calls and kernels (with their launches and, when the ingest
    attributes steps, their steps)."""
    if schema.has("kernel"):
        # The launch table needs nothing else: built now, it overlaps the side's reads.
        launches = _fill_launch_table(schema) if schema.has("runtime") else None
        counts["kernel_names"] = _copy_kernel_names(schema, params, reads.result("names"))
        counts["runtime_calls"] = (_copy_runtime(schema, params, reads.result("api_keys"))
                                   if schema.has("runtime") else 0)
        found = reads.result("markers")
        if steps is not None and steps.prepare(ctx.connection, ctx.run_id, found):
            if not schema.copier.native:
                schema.copier.mirror_lookup(steps.lookup_table, steps.lookup_columns,
                                            steps.lookup_rows(ctx.connection))
            counts["kernels"] = _copy_kernels(schema, params, launches, steps)
            steps.finish(ctx.connection)
        else:
            counts["kernels"] = _copy_kernels(schema, params, launches)


def _run_counts(counts: dict[str, int], processes: int, threads: int,
                nvtx_kinds: Any, has_nvtx: bool) -> dict[str, int]:
    """What the copies counted, for ``run_counts`` (NVTX kinds from the side connection;
    without one they are counted in the store)."""
    known = {"kernels": counts.get("kernels", 0), "kernel_names": counts.get("kernel_names", 0),
             "runtime_calls": counts.get("runtime_calls", 0),
             "memory_ops": counts.get("memory_ops", 0), "cpu_ops": 0,
             "processes": processes, "threads": threads, "module_frames": 0}
    if not has_nvtx:
        known.update(nvtx_ranges=0, nvtx_marks=0, nvtx_domains=0)
    elif nvtx_kinds is not None:
        ranges, marks, domains = nvtx_kinds
        known.update(nvtx_ranges=int(ranges), nvtx_marks=int(marks), nvtx_domains=int(domains))
    return known


class SideReads:
    """Passes over the source that the side connection makes while this one copies NVTX.

    Each is a read of the source whose few result rows this connection needs later: the
    distinct kernel names and API names, the texts of step markers, the NVTX events counted
    by kind. They only save time: a read that was not made, or failed (the side connection
    interrupted, a damaged file), gives None, and this connection reads it itself, with the
    same SQL and the errors the ingest reports.
    """

    def __init__(self) -> None:
        self._futures: dict[str, Future[Any]] = {}

    def start(self, side: SideWork, name: str, job: Callable[[sqlite3.Connection], Any]
              ) -> None:
        """Queue ``job`` on the side connection under ``name``."""
        self._futures[name] = side.submit(job)

    def result(self, name: str) -> Any:
        """What the read gave, or None (not made, or failed)."""
        future = self._futures.get(name)
        if future is None:
            return None
        try:
            return future.result()
        except (sqlite3.Error, RuntimeError):
            return None


def _side_reads(ctx: IngestContext, schema: SourceSchema,
                steps: StepAttribution | None) -> SideReads:
    """Start the side connection's reads (SQLite stores only: others keep texts by their
    own driver rules, so the store must be read for the same values)."""
    reads = SideReads()
    side = ctx.side
    if side is None or not schema.copier.native:
        return reads
    if schema.has("kernel"):
        sql = _name_keys_sql(schema)
        reads.start(side, "names", lambda connection: connection.execute(sql).fetchall())
    if schema.has("runtime"):
        api_sql = _api_keys_sql(schema)
        reads.start(side, "api_keys", lambda connection: connection.execute(api_sql).fetchall())
    if steps is not None and schema.has("nvtx"):
        marker_sql = _marker_candidates_sql(schema, steps.prefilters())
        reads.start(side, "markers", lambda connection: [
            str(row[0]) for row in connection.execute(marker_sql)])
    if schema.has("nvtx"):
        count_sql = _nvtx_count_sql(schema)
        reads.start(side, "nvtx_kinds",
                    lambda connection: connection.execute(count_sql).fetchone())
    return reads


def _string_lookup(schema: SourceSchema, key_sql: str) -> str:
    """SQL for the string with id ``key_sql``; always TEXT (a damaged file may hold BLOBs)."""
    strings = schema.table("strings")
    return f'(SELECT CAST(value AS TEXT) FROM src."{strings}" WHERE id = {key_sql})'


def _kernel_name_key(schema: SourceSchema) -> str:
    """A kernel record's name as the source's string id (demangled, else short, else -1)."""
    return (f"COALESCE({schema.expr('kernel', 'name_key', 'k')}, "
            f"{schema.expr('kernel', 'short_name_key', 'k')}, -1)")


def _plain_ids(rows: list[tuple[Any, ...]]) -> bool:
    """Whether string ids read on the side connection can be written back unchanged: only
    integers and NULLs survive the trip through Python as they were (a damaged file's text
    would come back with invalid UTF-8 replaced, and no longer match the source's)."""
    return all(value is None or type(value) is int for row in rows for value in row)


def _name_keys_sql(schema: SourceSchema) -> str:
    """Each distinct kernel name's string id, with its short and mangled names' ids."""
    return f"""
        SELECT name_key, MIN(short_key) AS short_key, MIN(mangled_key) AS mangled_key
        FROM (SELECT DISTINCT {_kernel_name_key(schema)} AS name_key,
                              {schema.expr("kernel", "short_name_key", "k")} AS short_key,
                              {schema.expr("kernel", "mangled_name_key", "k")} AS mangled_key
              FROM src."{schema.table("kernel")}" AS k)
        GROUP BY name_key"""


def _copy_kernel_names(schema: SourceSchema, params: dict[str, Any],
                       keys: list[tuple[Any, ...]] | None = None) -> int:
    """One row per distinct demangled name (one DISTINCT pass over the kernel table).

    ``keys``: the distinct pass's rows as the side connection read them (``_name_keys_sql``);
    without them the pass runs here.

    On a SQLite store each name's id is ``name_base + its source string id``, so the kernel copy
    computes ``name_id`` instead of joining 10^7 rows to this table (measured in
    tests/benchmarks/README.md). ``name_base`` lies above every id in the store and the write
    lock is held, so the ids are free. Only for string ids that are integers from -1 (no name)
    up: a damaged file's text or huge keys would not add up to distinct ids, and take the join.
    Other stores assign ids themselves and the kernel SELECT joins the mirrored table.
    """
    if keys is not None and _plain_ids(keys):
        schema.copier.temp_rows("tk_kernel_name_keys", ("name_key", "short_key", "mangled_key"),
                                keys)
    else:
        schema.copier.prepare("DROP TABLE IF EXISTS temp.tk_kernel_name_keys")
        schema.copier.prepare(f"CREATE TEMP TABLE tk_kernel_name_keys AS {_name_keys_sql(schema)}")
    (odd_keys,) = schema.copier.query(
        "SELECT COUNT(*) FROM temp.tk_kernel_name_keys WHERE typeof(name_key) <> 'integer' "
        f"OR name_key NOT BETWEEN -1 AND {MAX_NAME_KEY}")[0]
    explicit_ids = schema.copier.native and odd_keys == 0
    if explicit_ids:
        params["name_base"] = schema.copier.connection.execute(
            text("SELECT COALESCE(MAX(id), 0) + 2 FROM kernel_names")).scalar_one()
    select = f"""
        SELECT {':name_base + u.name_key, ' if explicit_ids else ''}:run_id, u.name_key,
               COALESCE({_string_lookup(schema, 'u.name_key')},
                        {_string_lookup(schema, 'u.short_key')},
                        '<string ' || u.name_key || ' missing>'),
               {_string_lookup(schema, 'u.short_key')},
               {_string_lookup(schema, 'u.mangled_key')}
        FROM temp.tk_kernel_name_keys AS u
    """
    count = schema.copier.copy(
        "kernel_names",
        (*(("id",) if explicit_ids else ()), "run_id", "source_key", "name", "short_name",
         "mangled_name"),
        select, params)
    schema.copier.prepare("DROP TABLE temp.tk_kernel_name_keys")
    _mirror(schema, "kernel_names", params)
    return count


def _mirror(schema: SourceSchema, table: str, params: dict[str, Any]) -> None:
    """Non-SQLite stores: copy a lookup table to the side connection the SELECTs run on.

    Every column a later SELECT reads from ``main.<table>`` must be here (``api_names.name``
    filters out launch calls).
    """
    if schema.copier.native:
        return
    columns = ("run_id", "source_key", "id", *(("name",) if table == "api_names" else ()))
    rows = schema.copier.connection.execute(
        text(f"SELECT {', '.join(columns)} FROM {table} WHERE run_id = :run_id"), params
    ).all()
    schema.copier.mirror_lookup(table, columns, rows, unique_key=True)


def _api_keys_sql(schema: SourceSchema) -> str:
    """The distinct API name string ids of the runtime/driver calls."""
    return (f"SELECT DISTINCT COALESCE({schema.expr('runtime', 'name_key', 'r')}, -1) AS key "
            f'FROM src."{schema.table("runtime")}" AS r')


def _copy_runtime(schema: SourceSchema, params: dict[str, Any],
                  keys: list[tuple[Any, ...]] | None = None) -> int:
    """API names, and the runtime/driver calls that are not kernel launches.

    ``keys``: the distinct API name ids as the side connection read them.
    """
    runtime = schema.table("runtime")
    name_key = schema.expr("runtime", "name_key", "r")
    if keys is not None and _plain_ids(keys):
        schema.copier.temp_rows("tk_api_keys", ("key",), keys)
    else:
        schema.copier.prepare("DROP TABLE IF EXISTS temp.tk_api_keys")
        schema.copier.prepare(f"CREATE TEMP TABLE tk_api_keys AS {_api_keys_sql(schema)}")
    schema.copier.copy(
        "api_names", ("run_id", "source_key", "name"),
        f"""SELECT :run_id, u.key, COALESCE({_string_lookup(schema, 'u.key')}, '')
            FROM temp.tk_api_keys AS u""",
        params,
    )
    schema.copier.prepare("DROP TABLE temp.tk_api_keys")
    _mirror(schema, "api_names", params)
    # Kernel launches are not copied again: each kernel row carries its launch (thread,
    # CPU start/end, correlation id). Copying 10^7 launch rows would double ingest time.
    not_launch = " AND ".join(f"a.name NOT GLOB '{pattern}'"
                              for pattern in schema.spec.kernel_launch_apis.patterns)
    other_keys = [row[0] for row in schema.copier.query(
        f"SELECT a.source_key FROM main.api_names AS a WHERE a.run_id = :run_id AND {not_launch}",
        params)]
    if not other_keys:
        return 0  # every call launched a kernel: no pass over the calls at all
    event_class = schema.expr("runtime", "event_class", "r")
    tid = schema.expr("runtime", "global_tid", "r")
    # CROSS JOIN keeps the calls the outer loop (each name one key search): with the names
    # outside, SQLite scanned every call once per API name.
    return schema.copier.copy(
        "runtime_calls",
        ("run_id", "name_id", "kind", "start_ns", "end_ns", "correlation_id", "global_tid",
         "global_pid"),
        f"""SELECT :run_id, a.id,
                   CASE {event_class} WHEN 1 THEN 'driver' ELSE 'runtime' END,
                   {schema.expr('runtime', 'start_ns', 'r')},
                   {schema.expr('runtime', 'end_ns', 'r')},
                   {schema.expr('runtime', 'correlation_id', 'r')}, {tid}, {tid} & {PID_MASK}
            FROM src."{runtime}" AS r
            CROSS JOIN main.api_names AS a
            WHERE a.run_id = :run_id AND a.source_key = COALESCE({name_key}, -1)
              AND {not_launch}""",
        params,
    )


#: One integer per (process, correlationId): pid in bits 32-55, correlation id in bits 0-31.
#: A rowid-keyed table probed by this key is the cheapest join SQLite offers, cheaper than an
#: automatic index on the source's runtime table (measured: tests/benchmarks/README.md).
LAUNCH_KEY = "((({pid} >> 24) & 16777215) << 32) | ({cid} & 4294967295)"


def _launch_table_sql(schema: SourceSchema, table: str) -> list[str]:
    """Statements that make ``table``: launches, one per (process, correlationId).

    The earliest call is kept: when a runtime and a driver call share a correlation id, the
    runtime call (the outer, earlier one, the launch the user wrote) comes first in time and
    wins.
    """
    runtime = schema.table("runtime")
    tid = schema.expr("runtime", "global_tid", "r")
    cid = schema.expr("runtime", "correlation_id", "r")
    start, end = schema.expr("runtime", "start_ns", "r"), schema.expr("runtime", "end_ns", "r")
    return [
        f"DROP TABLE IF EXISTS {table}",
        f"CREATE TABLE {table} (key INTEGER PRIMARY KEY, tid INTEGER, s INTEGER, e INTEGER)",
        f"""INSERT INTO {table}
            SELECT {LAUNCH_KEY.format(pid=tid, cid=cid)}, {tid}, {start}, {end}
            FROM src."{runtime}" AS r
            WHERE {tid} IS NOT NULL AND {cid} IS NOT NULL
            ON CONFLICT (key) DO UPDATE SET tid = excluded.tid, s = excluded.s, e = excluded.e
            WHERE excluded.s < s""",
    ]


KERNEL_TARGETS: Sequence[str] = (
    "device", "stream", "start_ns", "end_ns", "grid_x", "grid_y", "grid_z", "block_x",
    "block_y", "block_z", "registers", "static_smem", "dynamic_smem", "correlation_id",
    "graph_node_id", "graph_id", "global_pid",
)


@dataclass(frozen=True)
class _KernelSource:
    """The kernel records as the source holds them, each joined to its launch and step."""

    from_sql: str
    launch: tuple[str, str, str]  # thread, CPU start, CPU end (SQL, NULL when unknown)
    step: tuple[str, str] | None  # step id, phase


def _kernel_source(schema: SourceSchema, launch_table: str | None,
                  steps: StepAttribution | None) -> _KernelSource:
    """FROM clause over the source's kernels with their launch (and step) joined."""
    kernel = schema.table("kernel")
    from_sql = f'src."{kernel}" AS k'
    if launch_table is None:
        return _KernelSource(from_sql, ("NULL", "NULL", "NULL"), None)
    from_sql += f"""
        LEFT JOIN {launch_table} AS r
          ON r.key = {LAUNCH_KEY.format(pid='k.globalPid', cid='k.correlationId')}
         AND (r.tid & {PID_MASK}) = k.globalPid"""
    step = None
    if steps is not None:
        step_join, step = steps.join("r.tid", "r.s", "r.e")
        from_sql += "\n" + step_join
    return _KernelSource(from_sql, ("r.tid", "r.s", "r.e"), step)


def _fill_launch_table(schema: SourceSchema) -> str:
    """Build the launch table where the kernel copy runs; returns its name."""
    table = "temp.tracekit_launch"
    for statement in _launch_table_sql(schema, table):
        schema.copier.prepare(statement)
    return table


def _copy_kernels(schema: SourceSchema, params: dict[str, Any], launch_table: str | None,
                  steps: StepAttribution | None = None) -> int:
    """All kernel records in one INSERT … SELECT, with their launch (from ``launch_table``,
    ``_fill_launch_table``) and step, if given."""
    selected = ", ".join(schema.expr("kernel", target, "k") for target in KERNEL_TARGETS)
    source = _kernel_source(schema, launch_table, steps)
    if "name_base" in params:  # the names got computable ids (see _copy_kernel_names)
        name_id, name_join = f":name_base + {_kernel_name_key(schema)}", ""
    else:
        name_id = "n.id"
        name_join = (f"JOIN main.kernel_names AS n ON n.run_id = :run_id "
                     f"AND n.source_key = {_kernel_name_key(schema)}")
    launch_cols = ", ".join(source.launch)
    step_targets: tuple[str, ...] = ()
    if source.step is not None:
        step_targets = ("step_id", "phase")
        launch_cols += ", " + ", ".join(source.step)
    select = f"""
        SELECT :run_id, {name_id}, {selected}, {launch_cols}
        FROM {source.from_sql}
        {name_join}
    """
    return schema.copier.copy(
        "kernels",
        ("run_id", "name_id", *KERNEL_TARGETS, "global_tid", "launch_start_ns", "launch_end_ns",
         *step_targets),
        select, params)


def _copy_memory_ops(schema: SourceSchema, params: dict[str, Any]) -> int:
    total = 0
    for role in ("memcpy", "memset"):
        if not schema.has(role):
            continue
        targets = ("device", "stream", "start_ns", "end_ns", "bytes", "correlation_id",
                   "global_pid")
        selected = ", ".join(schema.expr(role, target, "m") for target in targets)
        total += schema.copier.copy(
            "memory_ops", ("run_id", "kind", *targets),
            f"SELECT :run_id, '{role}', {selected} FROM src.\"{schema.table(role)}\" AS m",
            params)
    return total


def _copy_nvtx(schema: SourceSchema, params: dict[str, Any]) -> int:
    """NVTX events of the kinds tracekit keeps, in one INSERT … SELECT."""
    nvtx = schema.table("nvtx")
    present = schema.columns("nvtx")
    types = schema.spec.nvtx_event_types.by_kind()
    kind_cases = " ".join(
        f"WHEN e.eventType IN ({', '.join(map(str, ids))}) THEN '{kind}'"
        for kind, ids in types.items()
    )
    wanted = ", ".join(str(i) for ids in types.values() for i in ids)
    text_expr = _nvtx_text(schema)
    if "domainId" in present:
        _fill_domain_table(schema)
        # Looked up only for events in a domain (CASE evaluates its branch lazily): most
        # events are in the default domain 0, and a join probed the table for each of them.
        domain_expr = f"""CASE WHEN e.domainId = 0 OR e.eventType = 75 THEN NULL ELSE
            (SELECT d.name FROM temp.tracekit_nvtx_domain AS d
             WHERE d.domain_id = e.domainId AND d.pid = (e.globalTid & {PID_MASK})) END"""
    else:
        domain_expr = "NULL"
    count = schema.copier.copy(
        "nvtx_ranges",
        ("run_id", "kind", "start_ns", "end_ns", "text", "domain", "global_tid", "global_pid"),
        f"""SELECT :run_id, CASE {kind_cases} END, e.start, e."end", {text_expr}, {domain_expr},
                   e.globalTid, e.globalTid & {PID_MASK}
            FROM src."{nvtx}" AS e
            WHERE e.eventType IN ({wanted})""",
        params,
    )
    schema.copier.prepare("DROP TABLE IF EXISTS temp.tracekit_nvtx_domain")
    return count


def _nvtx_count_sql(schema: SourceSchema) -> str:
    """The source's NVTX events counted by kind (ranges, marks, domain creations), one pass."""
    types = schema.spec.nvtx_event_types.by_kind()

    def ids(*kinds: str) -> str:
        return ", ".join(str(i) for kind in kinds for i in types.get(kind, [])) or "NULL"

    return (f"SELECT COALESCE(SUM(eventType IN ({ids(*NVTX_RANGE_KINDS)})), 0), "
            f"COALESCE(SUM(eventType IN ({ids('mark')})), 0), "
            f"COALESCE(SUM(eventType IN ({ids('domain_create')})), 0) "
            f'FROM src."{schema.table("nvtx")}"')


def _nvtx_text(schema: SourceSchema) -> str:
    """SQL of an NVTX event's text as the store keeps it (inline, else the string table)."""
    if "textId" in schema.columns("nvtx"):
        return f"COALESCE(CAST(e.text AS TEXT), {_string_lookup(schema, 'e.textId')})"
    return "CAST(e.text AS TEXT)"


def _marker_candidates_sql(schema: SourceSchema, likes: Sequence[str]) -> str:
    """Distinct texts of the source's ranges that match a step marker's prefilter.

    The same texts ``phases.marker_steps.marker_texts`` would find among the stored ranges.
    """
    types = schema.spec.nvtx_event_types.by_kind()
    ranges = ", ".join(str(i) for kind in NVTX_RANGE_KINDS for i in types.get(kind, []))
    text_sql = _nvtx_text(schema)
    if not likes or not ranges:
        return "SELECT NULL WHERE 0"
    matches = " OR ".join(f"{text_sql} LIKE '{like.replace(chr(39), chr(39) * 2)}'"
                          for like in likes)
    return (f'SELECT DISTINCT {text_sql} FROM src."{schema.table("nvtx")}" AS e '
            f"WHERE e.eventType IN ({ranges}) AND {text_sql} IS NOT NULL AND ({matches})")


def _fill_domain_table(schema: SourceSchema) -> None:
    """TEMP table of NVTX domain names, keyed by (domain id, process): one read of the events.

    A domain's name is the text of its creation event (type 75) in the same process. Looked
    up per event in a subquery, SQLite scanned every NVTX event for each event in a domain.
    """
    nvtx = schema.table("nvtx")
    schema.copier.prepare("DROP TABLE IF EXISTS temp.tracekit_nvtx_domain")
    schema.copier.prepare(
        "CREATE TEMP TABLE tracekit_nvtx_domain (domain_id INTEGER, pid INTEGER, name TEXT, "
        "PRIMARY KEY (domain_id, pid))")
    schema.copier.prepare(f"""
        INSERT INTO temp.tracekit_nvtx_domain
        SELECT domainId, globalTid & {PID_MASK}, MIN(text) FROM src."{nvtx}"
        WHERE eventType = 75 AND domainId IS NOT NULL
        GROUP BY domainId, globalTid & {PID_MASK}""")


def _copy_processes_and_threads(schema: SourceSchema, params: dict[str, Any]
                                ) -> tuple[int, int]:
    """Processes and named threads; returns how many of each were copied."""
    processes = threads = 0
    if schema.has("processes") and {"globalPid", "pid", "name"} <= schema.columns("processes"):
        processes = schema.copier.copy(
            "processes", ("run_id", "global_pid", "pid", "name"),
            f'SELECT :run_id, globalPid, pid, CAST(name AS TEXT) '
            f'FROM src."{schema.table("processes")}"',
            params)
    if schema.has("threads") and {"nameId", "globalTid"} <= schema.columns("threads"):
        threads = schema.copier.copy(
            "threads", ("run_id", "global_tid", "global_pid", "tid", "name"),
            f"""SELECT :run_id, t.globalTid, t.globalTid & {PID_MASK}, t.globalTid & 16777215,
                       {_string_lookup(schema, 't.nameId')}
                FROM src."{schema.table('threads')}" AS t""",
            params)
    return processes, threads


def _copy_devices(schema: SourceSchema, params: dict[str, Any]) -> None:
    """Devices from the GPU tables when present, else one row per device id seen in kernels.

    Kernel ``deviceId`` is the CUDA ordinal inside the process. TARGET_INFO_CUDA_DEVICE
    maps it to the GPU (docs/formats.md#the-sqlite-export, *Devices*); without it nsys' own
    reports use TARGET_INFO_GPU.id, and so do we.
    """
    arch = ("CASE WHEN g.computeMajor IS NULL THEN NULL "
            "ELSE 'sm' || g.computeMajor || g.computeMinor END")
    columns = ("run_id", "device_index", "global_pid", "name", "compute_major", "compute_minor",
               "sm_count", "memory_bytes", "uuid", "arch", "arch_source")
    if schema.has("gpus"):
        gpu_cols = ", ".join(
            f"{schema.expr('gpus', target, 'g')} AS {target}"
            for target in ("id", "name", "compute_major", "compute_minor", "sm_count",
                           "memory_bytes", "uuid")
        )
        gpus = (f'(SELECT {gpu_cols}, g.computeMajor, g.computeMinor '
                f'FROM src."{schema.table("gpus")}" AS g)')
        if schema.has("cuda_devices"):
            select = f"""
                SELECT :run_id, c.cudaId, c.pid, g.name, g.compute_major, g.compute_minor,
                       g.sm_count, g.memory_bytes, g.uuid, {arch}, 'trace'
                FROM src."{schema.table('cuda_devices')}" AS c JOIN {gpus} AS g ON g.id = c.gpuId"""
        else:
            select = f"""
                SELECT :run_id, g.id, NULL, g.name, g.compute_major, g.compute_minor,
                       g.sm_count, g.memory_bytes, g.uuid, {arch}, 'trace' FROM {gpus} AS g"""
        if schema.copier.copy("devices", columns, select, params):
            return
    if schema.has("kernel"):
        schema.copier.copy(
            "devices", columns,
            f"""SELECT DISTINCT :run_id, deviceId, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                       NULL, NULL
                FROM src."{schema.table('kernel')}" """,
            params)
