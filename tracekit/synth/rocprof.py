"""One synthetic job written as rocprofv3 writes it: a rocpd database, JSON, and the CSV files.

Tests need AMD traces whose truth is known without an AMD GPU, and the three formats must
give the same numbers. A scenario names processes (pid, GPU, steps) on one node; each step
is a ROCTx range (or none) around HIP kernel launches, optionally one ``hipGraphLaunch``
replaying them (the ``StepSpec``/``KernelSpec`` of ``tracekit.synth.nsys``). ``lay_out``
places every launch, dispatch and range in time once; the writers then put the same records
into each format:

- :func:`write_rocpd`: a SQLite database made from rocprofiler-sdk's own ``rocpd`` table
  statements (``rocpd-3.0.0-tables.sql``: schema 3, ROCm 7.0; ``rocpd-3.0.3-tables.sql``:
  graph launches and graph ids since 3.0.2), filled as ``generateRocpd.cpp`` fills them —
  row ids of processes, threads, agents, queues and streams are the OS/handle values, every
  row carries the process's ``guid``, regions are keyed by correlation id; with the
  unsuffixed views of ``rocpd_views.sql`` (``views=True``) or physical tables only, and
  several processes in one file when asked (their ids repeat; only ``guid`` tells them apart);
- :func:`write_json`: one ``<pid>_results.json`` per process in rocprofv3's JSON layout;
- :func:`write_csv`: ``<pid>_kernel_trace.csv``, ``_hip_api_trace.csv``,
  ``_marker_api_trace.csv`` and ``_agent_info.csv`` per process, with the kernel-trace header
  of one of the releases (:data:`CSV_KERNEL_HEADERS`) or ``rocpd convert``'s.

Everything written here is synthetic: the rocpd metadata holds ``tracekit_synthetic = 1``,
the JSON metadata ``"tracekit_synthetic": true``; the JSON and CSV string tables hold only
the operation names the scenario uses.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from tracekit.synth.nsys import KernelSpec, StepSpec

SCHEMAS = {"3.0.0": "rocpd-3.0.0-tables.sql", "3.0.3": "rocpd-3.0.3-tables.sql"}
LAUNCH_API = "hipLaunchKernel"
GRAPH_API = "hipGraphLaunch"
SYNC_API = "hipStreamSynchronize"
#: HIP API kind of the records (the tool writes the _EXT kind when it records arguments)
HIP_KIND = "HIP_RUNTIME_API_EXT"
#: rocprofiler_buffer_tracing_kind_t names in the order of rocprofiler-sdk 1.0.0
#: (``strings.buffer_records`` of a ROCm 7 JSON file: the index is the record's ``kind``)
BUFFER_KINDS = (
    "NONE", "HSA_CORE_API", "HSA_AMD_EXT_API", "HSA_IMAGE_EXT_API", "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API", "HIP_COMPILER_API", "MARKER_CORE_API", "MARKER_CONTROL_API",
    "MARKER_NAME_API", "MEMORY_COPY", "KERNEL_DISPATCH", "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT", "RCCL_API", "OMPT", "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION", "ROCDECODE_API", "ROCJPEG_API", "HIP_STREAM",
    "HIP_RUNTIME_API_EXT", "HIP_COMPILER_API_EXT", "ROCDECODE_API_EXT",
    "KFD_EVENT_PAGE_MIGRATE", "KFD_EVENT_PAGE_FAULT", "KFD_EVENT_QUEUE",
    "KFD_EVENT_UNMAP_FROM_GPU", "KFD_EVENT_DROPPED_EVENTS", "KFD_PAGE_MIGRATE",
    "KFD_PAGE_FAULT", "KFD_QUEUE", "MARKER_CORE_RANGE_API",
)
#: ROCTx operations per marker style: rocprofiler-sdk 1.0 (MARKER_CORE_RANGE_API) and 0.4
#: (MARKER_CORE_API, roctxRangePushA records from push to pop)
MARKER_STYLES = {
    "range_api": ("MARKER_CORE_RANGE_API", "roctxThreadRangeA", "roctxMarkA"),
    "core_api": ("MARKER_CORE_API", "roctxRangePushA", "roctxMarkA"),
}
#: kernel_trace.csv headers by the rocprofiler-sdk version that introduced them (the tool's
#: generateCSV.cpp; ROCm/rocprofiler-sdk and ROCm/rocm-systems history)
CSV_KERNEL_HEADERS: dict[str, tuple[str, ...]] = {
    "0.3": ("Kind", "Agent_Id", "Queue_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
            "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size",
            "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X",
            "Grid_Size_Y", "Grid_Size_Z"),
    "0.4": ("Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
            "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp",
            "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
            "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y",
            "Grid_Size_Z"),
    "0.7": ("Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id",
            "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp",
            "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
            "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y",
            "Grid_Size_Z"),
    "1.0": ("Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id",
            "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp",
            "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count",
            "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X",
            "Grid_Size_Y", "Grid_Size_Z"),
    "rocpd": ("Guid", "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id",
              "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
              "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
              "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y",
              "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"),
}
API_HEADER = ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id",
              "Start_Timestamp", "End_Timestamp")


@dataclass
class AmdGpu:
    """The node's GPU model (every GPU of the node is one)."""

    product: str = "AMD Instinct MI300X"
    name: str = "gfx942"
    target_version: int = 90402
    cu_count: int = 304
    memory_bytes: int = 192 << 30


@dataclass
class AmdProcess:
    """One profiled process: its pid, its GPU ordinal and the steps it runs."""

    pid: int
    gpu: int = 0
    steps: list[StepSpec] = field(default_factory=list)
    tid: int | None = None
    command: tuple[str, ...] = ("python3", "-m", "vllm.entrypoints.openai.api_server")
    #: a ROCTx mark at the start of the process's work
    mark: str | None = "profile start"


@dataclass
class AmdScenario:
    """A synthetic capture on one node: processes plus timing knobs."""

    processes: list[AmdProcess]
    gpu: AmdGpu = field(default_factory=AmdGpu)
    gpus: int = 1
    start_ns: int = 8_000_000_000_000
    launch_cpu_ns: int = 4_000
    launch_gap_ns: int = 1_000
    gpu_lag_ns: int = 20_000
    step_gap_ns: int = 50_000
    hostname: str = "mi300x-node"


@dataclass(frozen=True)
class Dispatch:
    pid: int
    tid: int
    gpu: int
    kernel: KernelSpec
    kernel_id: int
    correlation: int
    dispatch_id: int
    start: int
    end: int
    stream: int
    graph_exec: int = 0
    graph_node: int = 0


@dataclass(frozen=True)
class Call:
    pid: int
    tid: int
    name: str
    correlation: int
    start: int
    end: int


@dataclass(frozen=True)
class Roctx:
    pid: int
    tid: int
    kind: str  # push_pop | mark
    correlation: int
    start: int
    end: int
    message: str


@dataclass
class ProcessRecords:
    """One process laid out: its records and its kernels' ids."""

    process: AmdProcess
    guid: str
    dispatches: list[Dispatch] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    markers: list[Roctx] = field(default_factory=list)
    kernel_ids: dict[str, int] = field(default_factory=dict)
    specs: dict[str, KernelSpec] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def tid(self) -> int:
        return self.process.tid or self.process.pid


@dataclass
class Job:
    """The whole laid-out capture, from which every format is written."""

    scenario: AmdScenario
    processes: list[ProcessRecords]

    def kernel_totals(self) -> dict[str, tuple[int, int]]:
        """Ground truth: kernel name -> (count, total GPU ns)."""
        totals: dict[str, tuple[int, int]] = {}
        for records in self.processes:
            for dispatch in records.dispatches:
                count, total = totals.get(dispatch.kernel.name, (0, 0))
                totals[dispatch.kernel.name] = (count + 1, total + dispatch.end - dispatch.start)
        return totals


def guid_of(pid: int) -> str:
    """A UUIDv7-shaped guid per process (deterministic: tests compare files)."""
    return f"01970000-{pid >> 16 & 0xFFFF:04x}-7{pid & 0xFFF:03x}-8000-{pid:012x}"


def lay_out(scenario: AmdScenario) -> Job:
    """Place every launch, dispatch and ROCTx range in time, process by process.

    Each process numbers its correlation ids and dispatch ids from 1, as rocprofiler-sdk
    does per process: two processes' ids repeat.
    """
    processes = []
    for number, process in enumerate(scenario.processes):
        records = ProcessRecords(process, guid_of(process.pid))
        _lay_out_process(scenario, records, scenario.start_ns + number * 1_000)
        processes.append(records)
    return Job(scenario, processes)


def _lay_out_process(scenario: AmdScenario, records: ProcessRecords, start: int) -> None:
    process = records.process
    tid = records.tid
    correlation = 0
    dispatch_id = 0
    graph_exec = 0
    cpu = start
    gpu_free = 0

    def next_correlation() -> int:
        nonlocal correlation
        correlation += 1
        return correlation

    if process.mark is not None:
        records.markers.append(Roctx(process.pid, tid, "mark", next_correlation(), cpu, cpu,
                                     process.mark))
        cpu += scenario.launch_gap_ns
    for step in process.steps:
        for _ in range(step.repeat):
            range_id = next_correlation() if step.text is not None else 0
            step_start = cpu
            cpu += scenario.launch_gap_ns
            graph_call = 0
            if step.graph:
                graph_exec += 1
                graph_call = next_correlation()
                records.calls.append(Call(process.pid, tid, GRAPH_API, graph_call, cpu,
                                          cpu + scenario.launch_cpu_ns))
            node = 0
            for kernel in step.kernels:
                kernel_id = records.kernel_ids.setdefault(kernel.name, len(records.kernel_ids) + 1)
                records.specs.setdefault(kernel.name, kernel)
                for _ in range(kernel.count):
                    if step.graph:
                        launch, node = graph_call, node + 1
                        launch_at = cpu
                    else:
                        launch = next_correlation()
                        launch_at = cpu
                        records.calls.append(Call(process.pid, tid, LAUNCH_API, launch, cpu,
                                                  cpu + scenario.launch_cpu_ns))
                        cpu += scenario.launch_cpu_ns + scenario.launch_gap_ns
                    begin = max(gpu_free, launch_at + scenario.gpu_lag_ns)
                    end = begin + kernel.duration_ns
                    gpu_free = end
                    dispatch_id += 1
                    records.dispatches.append(Dispatch(
                        process.pid, tid, process.gpu, kernel, kernel_id, launch, dispatch_id,
                        begin, end, kernel.stream, graph_exec if step.graph else 0,
                        node if step.graph else 0))
            if step.graph:
                cpu += scenario.launch_cpu_ns + scenario.launch_gap_ns
            sync = next_correlation()
            records.calls.append(Call(process.pid, tid, SYNC_API, sync, cpu, cpu + 500))
            cpu += 500 + scenario.launch_gap_ns
            if step.text is not None:
                records.markers.append(Roctx(process.pid, tid, "push_pop", range_id, step_start,
                                             cpu, step.text))
            cpu += scenario.step_gap_ns


# -- shared facts -------------------------------------------------------------------------------

def _agents(scenario: AmdScenario) -> list[dict[str, Any]]:
    """The node's agents: one CPU (node 0), then the GPUs (nodes 1…, type index 0…)."""
    agents = [{"node_id": 0, "type": "CPU", "type_index": 0, "name": "AMD EPYC 9654 96-Core",
               "product": "AMD EPYC 9654 96-Core", "handle": 1000, "uuid": 0}]
    gpu = scenario.gpu
    for index in range(scenario.gpus):
        agents.append({"node_id": index + 1, "type": "GPU", "type_index": index,
                       "name": gpu.name, "product": gpu.product, "handle": 1001 + index,
                       "uuid": 0x5A00 + index})
    return agents


def _gpu_agent(scenario: AmdScenario, ordinal: int) -> dict[str, Any]:
    return _agents(scenario)[ordinal + 1]


def _grid(kernel: KernelSpec) -> tuple[int, int, int]:
    """ROCm's grid in work-items (the synthetic kernel's grid is in workgroups)."""
    return (kernel.grid[0] * kernel.block[0], kernel.grid[1] * kernel.block[1],
            kernel.grid[2] * kernel.block[2])


def short_name(name: str) -> str:
    """rocprofiler's truncated name: the function name without template and arguments."""
    base = name.split("(")[0].split("<")[0].strip()
    return base.split(" ")[-1].split("::")[-1] or name


# -- rocpd ----------------------------------------------------------------------------------------

def schema_sql(version: str) -> str:
    """rocprofiler-sdk's table statements for a rocpd schema version (with placeholders)."""
    if version not in SCHEMAS:
        raise ValueError(f"no rocpd schema {version!r}; known: {', '.join(SCHEMAS)}")
    return (resources.files("tracekit.synth") / SCHEMAS[version]).read_text(encoding="utf-8")


def _suffix(guid: str) -> str:
    return "_" + guid.replace("-", "_")


def write_rocpd(job: Job, path: Path, *, schema: str = "3.0.0", views: bool = True) -> Path:
    """Write ``job`` as one rocpd database at ``path``: each process in its own set of tables
    (its uuid suffix), as rocprofv3 creates them; several processes in one file stand for a
    merged database, their ids repeating, told apart by ``guid`` and by the table set.

    ``views``: the unsuffixed views of ``rocpd_views.sql``. They are created with ``IF NOT
    EXISTS`` after each set's tables, so in a file of several sets they show the first set
    only — a reader that trusts them loses the other processes.
    """
    if path.exists():
        path.unlink()
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA synchronous = OFF")
    for records in job.processes:
        suffix = _suffix(records.guid)
        script = schema_sql(schema).replace("{{uuid}}", suffix).replace("{{guid}}", records.guid)
        connection.executescript(script)
        connection.execute("PRAGMA foreign_keys = OFF")
        if schema != "3.0.0":
            _metadata_303(connection, suffix, records.guid, schema)
        connection.execute(f'INSERT INTO "rocpd_metadata{suffix}" (tag, value) '
                           "VALUES ('tracekit_synthetic', '1')")
        with connection:
            _RocpdFiller(connection, suffix, records, job.scenario, schema).fill()
        if views:
            _create_views(connection, suffix)
    connection.commit()
    connection.close()
    return path


def _metadata_303(connection: sqlite3.Connection, suffix: str, guid: str, version: str) -> None:
    """The metadata rows of the 3.0.x metadata statements (versions.yml: rocpd_metadata.sql)."""
    major, minor, patch = version.split(".")
    connection.executemany(
        f'INSERT INTO "rocpd_metadata{suffix}" (tag, value) VALUES (?, ?)',
        [("schema_version", version), ("schema_version_major", major),
         ("schema_version_minor", minor), ("schema_version_patch", patch),
         ("schema_creation_time", "2026-01-01 00:00:00"), ("uuid", suffix), ("guid", guid)])


def _create_views(connection: sqlite3.Connection, suffix: str) -> None:
    """``rocpd_views.sql``: ``CREATE VIEW IF NOT EXISTS rocpd_<name> AS SELECT * FROM
    rocpd_<name><suffix>`` for every table of the set."""
    tables = [name for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?",
        (f"rocpd_%{suffix}",))]
    for table in tables:
        connection.execute(f'CREATE VIEW IF NOT EXISTS "{table[:-len(suffix)]}" AS '
                           f'SELECT * FROM "{table}"')


class _RocpdFiller:
    """The rows ``generateRocpd.cpp`` writes for one process."""

    def __init__(self, connection: sqlite3.Connection, suffix: str, records: ProcessRecords,
                 scenario: AmdScenario, schema: str) -> None:
        self.c = connection
        self.t = suffix
        self.records = records
        self.scenario = scenario
        self.graphs = schema != "3.0.0"
        self.guid = records.guid
        self.strings: dict[str, int] = {}
        self.node = 4242

    def table(self, name: str) -> str:
        return f'"rocpd_{name}{self.t}"'

    def string(self, value: str) -> int:
        """The id of a text in the set's ``rocpd_string`` (added on first use)."""
        if value not in self.strings:
            self.strings[value] = len(self.strings) + 1
            self.c.execute(f"INSERT INTO {self.table('string')} (id, guid, string) "
                           "VALUES (?, ?, ?)", (self.strings[value], self.guid, value))
        return self.strings[value]

    def fill(self) -> None:
        records, scenario, g = self.records, self.scenario, self.guid
        pid, tid = records.pid, records.tid
        self.c.execute(f"INSERT INTO {self.table('info_node')} (id, guid, hash, machine_id, "
                           "system_name, hostname, release, version, hardware_name, domain_name) "
                           "VALUES (?, ?, ?, ?, 'Linux', ?, '6.8', '#1', 'x86_64', '(none)')",
                       (self.node, g, 424242, "synthetic-machine", scenario.hostname))
        self.c.execute(f"INSERT INTO {self.table('info_process')} (id, guid, nid, ppid, pid, "
                       "init, fini, start, \"end\", command) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?)",
                       (pid, g, self.node, pid, scenario.start_ns, scenario.start_ns + 10**9,
                        scenario.start_ns, scenario.start_ns + 10**9,
                        " ".join(records.process.command)))
        self.c.execute(f"INSERT INTO {self.table('info_thread')} (id, guid, nid, ppid, pid, tid) "
                       "VALUES (?, ?, ?, 1, ?, ?)", (tid, g, self.node, pid, tid))
        for agent in _agents(scenario):
            extdata = json.dumps({"cu_count": scenario.gpu.cu_count if agent["type"] == "GPU"
                                  else 0, "gfx_target_version": scenario.gpu.target_version
                                  if agent["type"] == "GPU" else 0,
                                  "node_id": agent["node_id"],
                                  "logical_node_type_id": agent["type_index"]})
            self.c.execute(
                f"INSERT INTO {self.table('info_agent')} (id, guid, nid, pid, type, "
                "absolute_index, logical_index, type_index, uuid, name, model_name, vendor_name, "
                "product_name, user_name, extdata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, "
                "?, ?)",
                (agent["node_id"], g, self.node, pid, agent["type"], agent["node_id"],
                 agent["node_id"], agent["type_index"], agent["uuid"], agent["name"],
                 "AMD" if agent["type"] == "GPU" else "CPU", agent["product"], agent["product"],
                 extdata))
        streams = sorted({d.stream for d in records.dispatches} | {0})
        for stream in streams:
            self.c.execute(f"INSERT INTO {self.table('info_stream')} (id, guid, nid, pid, name) "
                           "VALUES (?, ?, ?, ?, ?)", (stream, g, self.node, pid,
                                                      "Default Stream" if stream == 0
                                                      else f"Stream {stream}"))
        self.c.execute(f"INSERT INTO {self.table('info_queue')} (id, guid, nid, pid, name) "
                       "VALUES (1, ?, ?, ?, 'Queue 0')", (g, self.node, pid))
        gpu_node = _gpu_agent(scenario, records.process.gpu)["node_id"]
        self.c.execute(f"INSERT INTO {self.table('info_code_object')} (id, guid, nid, pid, "
                       "agent_id, uri, storage_type) VALUES (1, ?, ?, ?, ?, 'file:///synthetic.co',"
                       " 'FILE')", (g, self.node, pid, gpu_node))
        for name, kernel_id in records.kernel_ids.items():
            extdata = json.dumps({"kernel_id": kernel_id, "formatted_kernel_name": name,
                                  "demangled_kernel_name": name,
                                  "truncated_kernel_name": short_name(name)})
            self.c.execute(
                f"INSERT INTO {self.table('info_kernel_symbol')} (id, guid, nid, pid, "
                "code_object_id, kernel_name, display_name, kernel_object, group_segment_size, "
                "private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count, extdata) "
                "VALUES (?, ?, ?, ?, 1, ?, ?, ?, 0, 0, 32, 64, 0, ?)",
                (kernel_id, g, self.node, pid, f"_Z{len(name)}{short_name(name)}.kd", name,
                 kernel_id * 256, extdata))
        self._regions()
        self._dispatches(gpu_node)

    def _event(self, category: str, correlation: int, extdata: str = "{}") -> int:
        cursor = self.c.execute(
            f"INSERT INTO {self.table('event')} (guid, category_id, stack_id, parent_stack_id, "
            "correlation_id, extdata) VALUES (?, ?, ?, ?, 0, ?)",
            (self.guid, self.string(category), correlation, correlation, extdata))
        return int(cursor.lastrowid or 0)

    def _regions(self) -> None:
        records, g = self.records, self.guid
        for call in records.calls:
            event = self._event(HIP_KIND, call.correlation)
            self.c.execute(f"INSERT INTO {self.table('region')} (id, guid, nid, pid, tid, start, "
                           "\"end\", name_id, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (call.correlation, g, self.node, call.pid, call.tid, call.start,
                            call.end, self.string(call.name), event))
        category, range_op, mark_op = MARKER_STYLES["range_api"]
        track = None
        for marker in records.markers:
            event = self._event(category, marker.correlation,
                                json.dumps({"message": marker.message}))
            if marker.kind == "mark":  # start == end: a sample on the thread's marker track
                if track is None:
                    track = self.c.execute(
                        f"INSERT INTO {self.table('track')} (guid, nid, pid, tid, name_id) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (g, self.node, marker.pid, marker.tid, self.string(category))).lastrowid
                self.c.execute(f"INSERT INTO {self.table('sample')} (id, guid, track_id, "
                               "timestamp, event_id) VALUES (?, ?, ?, ?, ?)",
                               (marker.correlation, g, track, marker.start, event))
                continue
            self.c.execute(f"INSERT INTO {self.table('region')} (id, guid, nid, pid, tid, start, "
                           "\"end\", name_id, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (marker.correlation, g, self.node, marker.pid, marker.tid,
                            marker.start, marker.end, self.string(range_op), event))

    def _dispatches(self, gpu_node: int) -> None:
        records, g = self.records, self.guid
        graph_columns = ", graph_exec_id, graph_node_id" if self.graphs else ""
        for dispatch in records.dispatches:
            event = self._event("KERNEL_DISPATCH", dispatch.correlation)
            grid = _grid(dispatch.kernel)
            values: list[Any] = [
                dispatch.dispatch_id, g, self.node, dispatch.pid, dispatch.tid, gpu_node,
                dispatch.kernel_id, dispatch.dispatch_id, 1, dispatch.stream, dispatch.start,
                dispatch.end, 0, 0, *dispatch.kernel.block, *grid,
                self.string(""), event]
            if self.graphs:
                values[20:20] = [dispatch.graph_exec, dispatch.graph_node]
            self.c.execute(
                f"INSERT INTO {self.table('kernel_dispatch')} (id, guid, nid, pid, tid, agent_id, "
                "kernel_id, dispatch_id, queue_id, stream_id, start, \"end\", "
                "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, "
                f"workgroup_size_z, grid_size_x, grid_size_y, grid_size_z{graph_columns}, "
                f"region_name_id, event_id) VALUES ({', '.join('?' * len(values))})", values)
        if self.graphs:
            launches = {d.correlation: d for d in records.dispatches if d.graph_exec}
            for call in records.calls:
                first = launches.get(call.correlation)
                if call.name != GRAPH_API or first is None:
                    continue
                count = sum(1 for d in records.dispatches if d.correlation == call.correlation)
                self.c.execute(f"INSERT INTO {self.table('graph_launch')} (guid, nid, pid, tid, "
                               "agent_id, queue_id, start, \"end\", graph_exec_id, "
                               "kernel_dispatch_count) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
                               (g, self.node, call.pid, call.tid, gpu_node, call.start, call.end,
                                first.graph_exec, count))


# -- JSON -----------------------------------------------------------------------------------------

def write_json(job: Job, folder: Path, *, marker_style: str = "range_api",
               stream_ids: bool = True, indent: int | None = None) -> list[Path]:
    """One ``<pid>_results.json`` per process, in rocprofv3's JSON layout."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for records in job.processes:
        path = folder / f"{records.pid}_results.json"
        document = {"rocprofiler-sdk-tool": [_json_process(job.scenario, records, marker_style,
                                                           stream_ids)]}
        path.write_text(json.dumps(document, indent=indent, separators=None if indent
                                   else (",", ":")))
        paths.append(path)
    return paths


def _kind_table(marker_style: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``strings.buffer_records`` with the operation names this writer uses."""
    marker_kind, range_op, mark_op = MARKER_STYLES[marker_style]
    operations = {
        HIP_KIND: [GRAPH_API, LAUNCH_API, SYNC_API],
        marker_kind: sorted({range_op, mark_op}),
        "KERNEL_DISPATCH": ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE",
                            "KERNEL_DISPATCH_COMPLETE"],
    }
    table = [{"kind": kind, "operations": operations.get(kind, [])} for kind in BUFFER_KINDS]
    return table, {kind: index for index, kind in enumerate(BUFFER_KINDS)}


def _json_process(scenario: AmdScenario, records: ProcessRecords, marker_style: str,
                  stream_ids: bool) -> dict[str, Any]:
    kinds, number = _kind_table(marker_style)
    marker_kind, range_op, mark_op = MARKER_STYLES[marker_style]
    hip_ops = kinds[number[HIP_KIND]]["operations"]
    marker_ops = kinds[number[marker_kind]]["operations"]
    agents = [{
        "size": 312, "id": {"handle": agent["handle"]}, "type": 2 if agent["type"] == "GPU" else 1,
        "name": agent["name"], "product_name": agent["product"], "vendor_name":
        "AMD" if agent["type"] == "GPU" else "CPU", "model_name": "",
        "node_id": agent["node_id"], "logical_node_id": agent["node_id"],
        "logical_node_type_id": agent["type_index"],
        "cu_count": scenario.gpu.cu_count if agent["type"] == "GPU" else 96,
        "gfx_target_version": scenario.gpu.target_version if agent["type"] == "GPU" else 0,
        "mem_banks": [{"heap_type": 1, "size_in_bytes": scenario.gpu.memory_bytes
                       if agent["type"] == "GPU" else 0}],
        "uuid": {"bytes": {f"value{i}": (agent["uuid"] >> (8 * (15 - i))) & 0xFF
                           for i in range(16)}},
    } for agent in _agents(scenario)]
    gpu_handle = _gpu_agent(scenario, records.process.gpu)["handle"]
    symbols = [{"size": 0, "kernel_id": 0, "code_object_id": 0, "kernel_name": "",
                "formatted_kernel_name": "0", "demangled_kernel_name": "0",
                "truncated_kernel_name": "0"}]
    symbols += [{"size": 88, "kernel_id": kernel_id, "code_object_id": 1,
                 "kernel_name": f"_Z{len(name)}{short_name(name)}.kd",
                 "kernel_object": kernel_id * 256, "group_segment_size": 0,
                 "private_segment_size": 0, "sgpr_count": 32, "arch_vgpr_count": 64,
                 "accum_vgpr_count": 0, "formatted_kernel_name": name,
                 "demangled_kernel_name": f"{name} [clone .kd]",
                 "truncated_kernel_name": short_name(name)}
                for name, kernel_id in records.kernel_ids.items()]

    def correlation(value: int) -> dict[str, Any]:
        return {"internal": value, "external": 0, "ancestor": 0}

    dispatches = []
    for d in records.dispatches:
        grid = _grid(d.kernel)
        record: dict[str, Any] = {
            "size": 184, "kind": number["KERNEL_DISPATCH"], "operation": 2,
            "thread_id": d.tid, "correlation_id": correlation(d.correlation),
            "start_timestamp": d.start, "end_timestamp": d.end,
            "dispatch_info": {"size": 72, "agent_id": {"handle": gpu_handle},
                              "queue_id": {"handle": 1}, "kernel_id": d.kernel_id,
                              "dispatch_id": d.dispatch_id, "private_segment_size": 0,
                              "group_segment_size": 0,
                              "workgroup_size": dict(zip("xyz", d.kernel.block, strict=True)),
                              "grid_size": dict(zip("xyz", grid, strict=True))}}
        if stream_ids:
            record["stream_id"] = {"handle": d.stream}
        dispatches.append(record)
    hip = [{"size": 64, "kind": number[HIP_KIND], "operation": hip_ops.index(c.name),
            "correlation_id": correlation(c.correlation), "start_timestamp": c.start,
            "end_timestamp": c.end, "thread_id": c.tid,
            "args": [{"name": "stream", "type": "hipStream_t", "value": "0x0"}], "retval": 0}
           for c in records.calls]
    markers = [{"size": 64, "kind": number[marker_kind],
                "operation": marker_ops.index(mark_op if m.kind == "mark" else range_op),
                "correlation_id": correlation(m.correlation), "start_timestamp": m.start,
                "end_timestamp": m.end, "thread_id": m.tid} for m in records.markers]
    return {
        "metadata": {"node": {"id": 0, "hostname": scenario.hostname}, "pid": records.pid,
                     "init_time": scenario.start_ns, "fini_time": scenario.start_ns + 10**9,
                     "command": list(records.process.command), "config": {"json_output": True},
                     "tracekit_synthetic": True},
        "agents": agents,
        "counters": [],
        "strings": {"callback_records": [], "buffer_records": kinds,
                    "marker_api": [{"key": m.correlation, "value": m.message}
                                   for m in records.markers],
                    "correlation_id": {"external": []}, "counters": {"dimension_ids": []}},
        "code_objects": [],
        "kernel_symbols": symbols,
        "host_functions": [],
        "summary": [],
        "callback_records": {"counter_collection": []},
        "buffer_records": {"kernel_dispatch": dispatches, "hip_api": hip, "hsa_api": [],
                           "marker_api": markers, "rccl_api": [], "memory_copy": [],
                           "memory_allocation": [], "scratch_memory": []},
    }


# -- CSV ------------------------------------------------------------------------------------------

def write_csv(job: Job, folder: Path, *, version: str = "1.0") -> list[Path]:
    """The CSV files of every process: kernel trace (header of ``version``), HIP API and
    marker traces, agent info. ``version="rocpd"``: as ``rocpd convert`` writes them (a
    ``Guid`` column first, ``out_`` prefixes)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for records in job.processes:
        prefix = "out" if version == "rocpd" else str(records.pid)
        if version == "rocpd" and len(job.processes) > 1:
            prefix = f"out{records.pid}"
        written.append(_write(folder / f"{prefix}_kernel_trace.csv", CSV_KERNEL_HEADERS[version],
                              _kernel_rows(job.scenario, records, version)))
        api_header = (("Guid",) if version == "rocpd" else ()) + API_HEADER
        guid = (records.guid,) if version == "rocpd" else ()
        written.append(_write(folder / f"{prefix}_hip_api_trace.csv", api_header,
                              [(*guid, HIP_KIND, c.name, c.pid, c.tid, c.correlation, c.start,
                                c.end) for c in records.calls]))
        marker_kind, range_op, mark_op = MARKER_STYLES["range_api" if version in (
            "1.0", "rocpd") else "core_api"]
        written.append(_write(folder / f"{prefix}_marker_api_trace.csv", api_header,
                              [(*guid, marker_kind, m.message, m.pid, m.tid, m.correlation,
                                m.start, m.end) for m in records.markers]))
        if version != "rocpd":
            written.append(_write(folder / f"{prefix}_agent_info.csv", AGENT_HEADER,
                                  _agent_rows(job.scenario)))
    return written


#: the agent_info.csv columns this writer fills (the tool writes 53; the rest are left out)
AGENT_HEADER = ("Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Simd_Count",
                "Cu_Count", "Gfx_Target_Version", "Name", "Vendor_Name", "Product_Name",
                "Model_Name")


def _agent_rows(scenario: AmdScenario) -> list[tuple[Any, ...]]:
    return [(a["node_id"], a["node_id"], a["type"], 0 if a["type"] == "GPU" else 96,
             1216 if a["type"] == "GPU" else 0, scenario.gpu.cu_count if a["type"] == "GPU" else 96,
             scenario.gpu.target_version if a["type"] == "GPU" else 0, a["name"],
             "AMD" if a["type"] == "GPU" else "CPU", a["product"], "")
            for a in _agents(scenario)]


def _kernel_rows(scenario: AmdScenario, records: ProcessRecords, version: str
                 ) -> list[tuple[Any, ...]]:
    header = CSV_KERNEL_HEADERS[version]
    agent = _gpu_agent(scenario, records.process.gpu)
    rows = []
    for d in records.dispatches:
        grid = _grid(d.kernel)
        values = {
            "Guid": records.guid, "Kind": "KERNEL_DISPATCH",
            "Agent_Id": agent["node_id"] if version in ("0.3", "0.4")
            else f"Agent {agent['node_id']}",
            "Queue_Id": 1, "Stream_Id": d.stream, "Thread_Id": d.tid,
            "Dispatch_Id": d.dispatch_id, "Kernel_Id": d.kernel_id, "Kernel_Name": d.kernel.name,
            "Correlation_Id": d.correlation, "Start_Timestamp": d.start,
            "End_Timestamp": d.end, "Private_Segment_Size": 0, "Group_Segment_Size": 0,
            "LDS_Block_Size": 0, "Scratch_Size": 0, "VGPR_Count": 64, "Accum_VGPR_Count": 0,
            "SGPR_Count": 32, "Workgroup_Size_X": d.kernel.block[0],
            "Workgroup_Size_Y": d.kernel.block[1], "Workgroup_Size_Z": d.kernel.block[2],
            "Grid_Size_X": grid[0], "Grid_Size_Y": grid[1], "Grid_Size_Z": grid[2]}
        rows.append(tuple(values[column] for column in header))
    return rows


def _write(path: Path, header: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> Path:
    """A CSV as rocprofv3 writes one: every header and every text field quoted."""
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path
