"""Build Nsight Systems SQLite exports from compact scenarios, with nsys's real schema.

Tests, examples and benchmarks need traces whose truth is known without a GPU. A scenario
names ranks (process, thread, GPU), and per rank a sequence of steps; each step is an NVTX
range (or none) around kernel launches, optionally replayed as one CUDA graph (recorded node
by node, as ``--cuda-graph-trace=node`` does, or as the graph launch alone). A kernel may
carry NVTX ranges of its own, pushed around each of its launches (layer markers). The builder
lays the launches out in CPU time, places each kernel on the GPU after its launch, and writes
the rows an nsys 2022.4 export would hold: StringIds, CUPTI_ACTIVITY_KIND_RUNTIME/KERNEL,
NVTX_EVENTS, TARGET_INFO_GPU, PROCESSES, ThreadNames.

The empty schema is the real one: ``nsys-2022.4-schema.sql`` next to this module was dumped
from ``nsys export --lazy=false`` (see fixtures/nsys/make_schema_fixture.sh).

Every scenario file written with ``write_scenario`` is synthetic and says so in its
``EXPORT_META_DATA`` (``TRACEKIT_SYNTHETIC = 1``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_FILE = "nsys-2022.4-schema.sql"
LAUNCH_API = "cudaLaunchKernel_v7000"
GRAPH_API = "cudaGraphLaunch_v10000"
NVTX_PUSH_POP = 59
NVTX_DOMAIN_CREATE = 75
#: CPU time between the pushes (and the pops) of nested ranges around one launch
RANGE_STEP_NS = 100


@dataclass
class KernelSpec:
    """``count`` launches of one kernel, each running ``duration_ns`` on the GPU."""

    name: str
    duration_ns: int
    count: int = 1
    stream: int = 7
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (128, 1, 1)
    short_name: str | None = None
    #: NVTX range texts pushed around each launch, outermost first (not in graph replays,
    #: whose launches are the graph's)
    ranges: tuple[str, ...] = ()


@dataclass
class StepSpec:
    """An NVTX range (``text``; None for launches outside any range) around launches."""

    text: str | None
    kernels: list[KernelSpec]
    graph: bool = False
    domain: str | None = None
    repeat: int = 1
    #: False: the graph replay is recorded as nsys's default ``--cuda-graph-trace=graph``
    #: records it, the cudaGraphLaunch call and none of the kernels it ran
    graph_nodes: bool = True


@dataclass
class RankSpec:
    """One process driving one GPU."""

    pid: int
    device: int = 0
    gpu_name: str = "NVIDIA H100 80GB HBM3"
    compute_capability: tuple[int, int] = (9, 0)
    sm_count: int = 132
    process_name: str = "python3"
    thread_name: str = "VLLM::EngineCore"
    steps: list[StepSpec] = field(default_factory=list)
    nvtx_domains: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    """A whole synthetic capture: ranks plus timing knobs."""

    ranks: list[RankSpec]
    launch_cpu_ns: int = 4_000
    launch_gap_ns: int = 1_000
    gpu_lag_ns: int = 20_000
    step_gap_ns: int = 50_000
    include_gpu_table: bool = True
    #: the capture's start in UTC ns (TARGET_INFO_SESSION_START_TIME; None: no row), and the
    #: target's host name (TARGET_INFO_SYSTEM_ENV "Hostname"; None: no row)
    session_start_utc_ns: int | None = None
    hostname: str | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Scenario:
        """Build from plain data (a TOML/JSON scenario file)."""
        ranks = []
        for rank in raw["ranks"]:
            steps = [
                StepSpec(
                    text=step.get("text"),
                    kernels=[KernelSpec(**{**kernel, **_tuples(kernel)})
                             for kernel in step["kernels"]],
                    graph=bool(step.get("graph", False)),
                    domain=step.get("domain"),
                    repeat=int(step.get("repeat", 1)),
                    graph_nodes=bool(step.get("graph_nodes", True)),
                )
                for step in rank.get("steps", [])
            ]
            fields = {k: v for k, v in rank.items() if k != "steps"}
            if "compute_capability" in fields:
                fields["compute_capability"] = tuple(fields["compute_capability"])
            ranks.append(RankSpec(steps=steps, **fields))
        knobs = {k: v for k, v in raw.items() if k != "ranks"}
        return cls(ranks=ranks, **knobs)


def _tuples(kernel: dict[str, Any]) -> dict[str, Any]:
    return {key: tuple(kernel[key]) for key in ("grid", "block", "ranges") if key in kernel}


def schema_sql() -> str:
    """The real empty nsys 2022.4 export schema (plus constant enum rows)."""
    return (resources.files("tracekit.synth") / SCHEMA_FILE).read_text(encoding="utf-8")


def create_empty_export(path: Path) -> sqlite3.Connection:
    """A new SQLite file with nsys 2022.4's schema; the caller fills and closes it."""
    if path.exists():
        path.unlink()
    connection = sqlite3.connect(path)
    # A scratch file: no fsync per DDL statement (seconds on a slow disk otherwise); the schema
    # file is one BEGIN … COMMIT transaction itself.
    connection.execute("PRAGMA synchronous = OFF")
    connection.executescript(schema_sql())
    connection.execute("INSERT INTO EXPORT_META_DATA VALUES ('TRACEKIT_SYNTHETIC', '1')")
    return connection


class _Strings:
    """StringIds interning, as nsys does."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        if value not in self.ids:
            self.ids[value] = len(self.ids) + 1
        return self.ids[value]

    def rows(self) -> Iterable[tuple[int, str]]:
        return ((i, v) for v, i in self.ids.items())


def global_tid(pid: int, tid: int) -> int:
    """nsys serialized thread id: ``(pid << 24) | tid`` (docs/formats.md#the-sqlite-export)."""
    return (pid << 24) | tid


@dataclass
class _Rows:
    kernels: list[tuple[Any, ...]] = field(default_factory=list)
    runtime: list[tuple[Any, ...]] = field(default_factory=list)
    nvtx: list[tuple[Any, ...]] = field(default_factory=list)


def _layout_rank(rank: RankSpec, scenario: Scenario, strings: _Strings, rows: _Rows,
                 start_ns: int, correlation_start: int) -> None:
    tid = global_tid(rank.pid, rank.pid)
    gpid = global_tid(rank.pid, 0)
    domain_ids = {name: index + 1 for index, name in enumerate(rank.nvtx_domains)}
    for name, domain_id in domain_ids.items():
        rows.nvtx.append((start_ns - 1000, None, NVTX_DOMAIN_CREATE, None, name, tid, domain_id))
    cpu = start_ns
    gpu_free: dict[int, int] = {}
    correlation = correlation_start
    graph_node = 1
    for step in rank.steps:
        for _ in range(step.repeat):
            step_start = cpu
            cpu += scenario.launch_gap_ns
            if step.graph:
                correlation += 1
                launch_end = cpu + scenario.launch_cpu_ns
                rows.runtime.append((cpu, launch_end, 0, tid, correlation, strings(GRAPH_API)))
            for kernel in step.kernels:
                name_id = strings(kernel.name)
                short_id = strings(kernel.short_name or kernel.name.split("<")[0].split("(")[0])
                for _ in range(kernel.count):
                    opened: list[int] = []
                    if step.graph:
                        launch_at = cpu
                        node: int | None = graph_node
                        graph_node += 1
                    else:
                        for _text in kernel.ranges:
                            opened.append(cpu)
                            cpu += RANGE_STEP_NS
                        correlation += 1
                        launch_at = cpu
                        rows.runtime.append((cpu, cpu + scenario.launch_cpu_ns, 0, tid,
                                             correlation, strings(LAUNCH_API)))
                        cpu += scenario.launch_cpu_ns + scenario.launch_gap_ns
                        node = None
                        for range_start, range_text in reversed(list(zip(
                                opened, kernel.ranges, strict=True))):
                            rows.nvtx.append((range_start, cpu, NVTX_PUSH_POP, None, range_text,
                                              tid, 0))
                            cpu += RANGE_STEP_NS
                    begin = max(gpu_free.get(kernel.stream, 0), launch_at + scenario.gpu_lag_ns)
                    end = begin + kernel.duration_ns
                    gpu_free[kernel.stream] = end
                    if step.graph and not step.graph_nodes:
                        continue  # a graph-level trace: the replay's kernels are not recorded
                    rows.kernels.append((
                        begin, end, rank.device, 1, kernel.stream, correlation, gpid, name_id,
                        short_id, None, 1, 0, 32, *kernel.grid, *kernel.block, 0, 0, 0, 0,
                        len(rows.kernels) + 1, None, node, None,
                    ))
            if step.graph:
                cpu += scenario.launch_cpu_ns + scenario.launch_gap_ns
            cpu += scenario.launch_gap_ns
            if step.text is not None:
                domain_id = domain_ids.get(step.domain or "", 0)
                rows.nvtx.append((step_start, cpu, NVTX_PUSH_POP, None, step.text, tid, domain_id))
            cpu += scenario.step_gap_ns


def write_scenario(scenario: Scenario, path: Path) -> Path:
    """Write ``scenario`` as an nsys-schema SQLite file at ``path``."""
    connection = create_empty_export(path)
    strings = _Strings()
    rows = _Rows()
    for index, rank in enumerate(scenario.ranks):
        _layout_rank(rank, scenario, strings, rows, start_ns=1_000_000_000,
                     correlation_start=index * 10_000_000)
    with connection:
        connection.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
            "correlationId, globalPid, demangledName, shortName, mangledName, launchType, "
            "cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
            "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, "
            "gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) "
            f"VALUES ({', '.join('?' * 27)})", rows.kernels)
        connection.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
            "correlationId, nameId, returnValue) VALUES (?, ?, ?, ?, ?, ?, 0)", rows.runtime)
        connection.executemany(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, globalTid, domainId) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows.nvtx)
        _write_hosts(connection, scenario, strings)
        _write_session(connection, scenario)
        connection.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", strings.rows())
    connection.close()
    return path


def _write_hosts(connection: sqlite3.Connection, scenario: Scenario, strings: _Strings) -> None:
    seen_devices: set[int] = set()
    for rank in scenario.ranks:
        gpid = global_tid(rank.pid, 0)
        connection.execute("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?, ?, ?)",
                           (gpid, rank.pid, rank.process_name))
        connection.execute("INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?, 0, ?)",
                           (strings(rank.thread_name), global_tid(rank.pid, rank.pid)))
        if scenario.include_gpu_table and rank.device not in seen_devices:
            seen_devices.add(rank.device)
            major, minor = rank.compute_capability
            connection.execute(
                "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, cuDevice, computeMajor, "
                "computeMinor, totalMemory) VALUES (0, ?, ?, ?, ?, ?, ?, ?)",
                (rank.device, rank.gpu_name, rank.sm_count, rank.device, major, minor, 80 << 30))


def _write_session(connection: sqlite3.Connection, scenario: Scenario) -> None:
    if scenario.session_start_utc_ns is not None:
        connection.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, "
                           "localTime) VALUES (?, '', '')", (scenario.session_start_utc_ns,))
    if scenario.hostname is not None:
        connection.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, "
                           "nameEnum, value) VALUES (0, 'Idle', 'Hostname', 22, ?)",
                           (scenario.hostname,))


def kernel_totals(path: Path) -> dict[str, tuple[int, int]]:
    """Ground truth straight from a built file: name -> (count, total_ns)."""
    connection = sqlite3.connect(path)
    try:
        return {
            name: (count, total)
            for name, count, total in connection.execute(
                "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")
        }
    finally:
        connection.close()

