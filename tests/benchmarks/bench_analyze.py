"""Benchmark: `tracekit analyze` against `nsys stats --report gpukernsum`, the copy floor and
nsys-ai, on big nsys exports.

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_analyze.py --kernels 1000000 10000000 \\
        --real "$TRACEKIT_SHARED_TRACES/nsys-ai/h100_2gpu_1s.sqlite" --real-kernels 1000000 \\
        --nsys-ai /path/to/venv/bin/nsys-ai --out /tmp/bench

Inputs: for each ``--kernels`` size an nsys-schema SQLite file (nsys 2022.4's real schema)
built entirely in SQL: a few thousand distinct, long templated kernel names, two processes
on two GPUs with several streams, one runtime launch per kernel, and vLLM-style NVTX step
ranges (one per 100 launches); and for each ``--real`` export, copies of it with fresh ids
and shifted times (``replicate.py``) up to each ``--real-kernels`` size — a real trace's
shape: 4.9 NVTX ranges and 1.7 runtime calls per kernel in the nsys-ai H100 capture.

On each input, one after the other, each in a fresh process, with wall time and peak RSS:

- the floor: the kernel columns tracekit keeps copied by SQLite into a fresh file with one
  ``INSERT … SELECT`` (what any store of every kernel record costs at least);
- ``nsys stats --report gpukernsum --format csv`` on a copy of the file;
- nsys-ai cold (``--nsys-ai``; its ``top_kernels`` skill on a fresh copy, which first builds
  its Parquet cache);
- ``tracekit analyze FILE --store NEW.db --json`` (ingest + classify + phases + groups +
  findings + document), then the same command again (the run is already stored).

It prints a Markdown table (the one in docs/performance.md). ``--profile`` instead runs
``analyze`` in this process and prints where the time goes (ingest, stages, the side connection's
reads, SQL statements over 0.5 s with their CPU time).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tracekit.ingest.readers.nsys_sqlite import KERNEL_TARGETS
from tracekit.synth.nsys import LAUNCH_API, create_empty_export, global_tid

DISTINCT_NAMES = 3000
STEP_EVERY = 100
FAMILIES = [
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
    "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
    "MainloopSm90TmaGmmaWarpSpecialized<{stages}, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, "
    "cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<{m}>, cute::C<{n}>, "
    "cute::C<64>>, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cutlass::bfloat16_t, "
    "cute::tuple<long, cute::C<1>, long>>>>"
    "(T1::Params)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{m}x{n}x64_warpgroupsize1x1x1_execute_segment_k"
    "_off_kernel__5x_cublas_{stages}",
    "void marlin::Marlin<256, 1, 8, 8, true, {stages}, {m}, {n}>(int4 const*, int4 const*, int4*, "
    "int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool, bool, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, "
    "at::detail::Array<char*, 3>>(int, T2, T3)_{m}_{n}_{stages}",
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, {m}, {n}, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t>>, false, true, "
    "false, false, true, true, false, false>(flash::Flash_fwd_params)_{stages}",
]


def kernel_names() -> list[str]:
    """DISTINCT_NAMES realistic, long, templated names."""
    names = []
    for index in range(DISTINCT_NAMES):
        family = FAMILIES[index % len(FAMILIES)]
        names.append(family.format(m=64 * (1 + index % 4), n=16 * (1 + (index // 4) % 16),
                                   stages=index // 64))
    return names


def build(path: Path, kernels: int) -> None:
    """An nsys-schema export with ``kernels`` kernels, built inside SQLite."""
    connection = create_empty_export(path)
    connection.commit()
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    names = kernel_names()
    connection.executemany("INSERT INTO StringIds VALUES (?, ?)",
                           [(i + 1, name) for i, name in enumerate(names)])
    api_id = len(names) + 1
    connection.execute("INSERT INTO StringIds VALUES (?, ?)", (api_id, LAUNCH_API))
    pids = (1000, 2000)
    for device, pid in enumerate(pids):
        connection.execute("INSERT INTO PROCESSES VALUES (?, ?, 'python3')",
                           (global_tid(pid, 0), pid))
        connection.execute("INSERT INTO StringIds VALUES (?, ?)",
                           (api_id + 1 + device, f"VLLM::Worker_TP{device}"))
        connection.execute("INSERT INTO ThreadNames VALUES (?, 0, ?)",
                           (api_id + 1 + device, global_tid(pid, pid)))
        connection.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, cuDevice, computeMajor, "
            "computeMinor) VALUES (0, ?, 'NVIDIA H100 80GB HBM3', 132, ?, 9, 0)", (device, device))
    # kernel i: rank i % 2, launched at cpu = 1e9 + (i // 2) * 2500 ns, 5 streams per rank.
    seq = ("WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq "
           f"WHERE i < {kernels - 1})")
    rank_pid = f"(CASE i % 2 WHEN 0 THEN {pids[0]} ELSE {pids[1]} END)"
    cpu = "(1000000000 + (i / 2) * 2500)"
    duration = "(1000 + (i * 7919) % 4000)"
    connection.execute(f"""
        {seq}
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
            correlationId, globalPid, demangledName, shortName, mangledName, launchType,
            cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
            staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal,
            gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig)
        SELECT {cpu} + 30000, {cpu} + 30000 + {duration}, i % 2, 1, 7 + (i / 2) % 5, i + 1,
               {rank_pid} << 24,
               1 + ((i * 2654435761) % {DISTINCT_NAMES}), 1 + ((i * 2654435761) % {DISTINCT_NAMES}),
               NULL, 1, 0, 64, 132, 1, 1, 128, 1, 1, 0, 49152, 0, 0, i + 1, NULL, NULL, NULL
        FROM seq""")
    connection.execute(f"""
        {seq}
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId,
            nameId, returnValue)
        SELECT {cpu}, {cpu} + 2000, 0, ({rank_pid} << 24) | {rank_pid}, i + 1, {api_id}, 0
        FROM seq""")
    steps = max(1, kernels // STEP_EVERY)
    for pid in pids:  # one vLLM-style step range per STEP_EVERY launches, on each rank's thread
        connection.execute(f"""
            WITH RECURSIVE s(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM s WHERE j < {steps - 1})
            INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)
            SELECT 1000000000 + j * {STEP_EVERY // 2} * 2500 - 100,
                   1000000000 + (j + 1) * {STEP_EVERY // 2} * 2500 - 200, 59,
                   CASE WHEN j % 10 = 0 THEN 'execute_context_4(2048)_generation_0(0)'
                        ELSE 'execute_context_0(0)_generation_64(64)' END,
                   ({pid} << 24) | {pid}, 0
            FROM s""")
    connection.commit()
    connection.close()


def timed(command: list[str], stdout_path: Path) -> tuple[float, float, int]:
    """Wall seconds and peak RSS (MB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    with stdout_path.open("wb") as stdout:
        completed = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if completed.returncode not in (0, 1):
        sys.stderr.write(completed.stderr.decode(errors="replace")[-2000:])
    # ru_maxrss of children is the max over all children so far: run heavy ones last.
    return elapsed, max(peak, before) / 1024, completed.returncode


def peak_rss_mb(command: list[str], stdout_path: Path) -> tuple[float, float, int]:
    """Run ``command`` under /usr/bin/time when available for a per-process peak RSS."""
    if shutil.which("/usr/bin/time") or Path("/usr/bin/time").exists():
        report = stdout_path.with_suffix(".time")
        elapsed, _, code = timed(["/usr/bin/time", "-f", "%M", "-o", str(report), *command],
                                 stdout_path)
        return elapsed, int(report.read_text().split()[-1]) / 1024, code
    return timed(command, stdout_path)


def profile(trace: Path, store_path: Path, slowest: float = 0.5) -> None:
    """Where ``analyze`` spends its time, in this process: the ingest, the stages (per-name
    groups run beside classification and phases) and every SQL statement over ``slowest``
    seconds, on any connection (the background groups thread included)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from tracekit import aggregate, analysis
    from tracekit.phases import stage
    from tracekit.store import open_store

    def timed_call(function, label):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                print(f"{time.perf_counter() - started:7.2f} s  {label} "
                      f"(process CPU {time.process_time() - cpu:.2f} s)", file=sys.stderr)
        return wrapper

    @event.listens_for(Engine, "before_cursor_execute")
    def _start(conn, _cursor, _statement, _params, _context, _many):  # type: ignore[no-untyped-def]
        conn.info.setdefault("started", []).append((time.perf_counter(), time.thread_time()))

    @event.listens_for(Engine, "after_cursor_execute")
    def _stop(conn, _cursor, statement, _params, _context, _many):  # type: ignore[no-untyped-def]
        wall, cpu = conn.info["started"].pop()
        elapsed = time.perf_counter() - wall
        if elapsed >= slowest:
            print(f"{elapsed:7.2f} s    SQL (CPU {time.thread_time() - cpu:5.2f} s) "
                  f"{' '.join(statement.split())[:100]}", file=sys.stderr)

    from tracekit.ingest import side

    def side_job(original):  # type: ignore[no-untyped-def]
        def wrapper(self, job):  # type: ignore[no-untyped-def]
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(self, job)
            finally:
                elapsed = time.perf_counter() - wall
                if elapsed >= slowest:
                    name = getattr(job, "__qualname__", "job")
                    print(f"{elapsed:7.2f} s    side connection (CPU "
                          f"{time.thread_time() - cpu:5.2f} s) {name}", file=sys.stderr)
        return wrapper

    side.SideWork._run = side_job(side.SideWork._run)  # type: ignore[method-assign]
    analysis.ingest = timed_call(analysis.ingest, "ingest (one transaction, commit included)")
    analysis.run_stages = timed_call(analysis.run_stages, "stages")
    stage.attribute_phases = timed_call(stage.attribute_phases, "  phases")
    aggregate.sum_kernel_groups = timed_call(aggregate.sum_kernel_groups, "  per-name groups")
    for leftover in store_path.parent.glob(store_path.name + "*"):
        leftover.unlink()
    store = open_store(str(store_path))
    started, cpu = time.perf_counter(), time.process_time()
    analysis.analyze(store, [trace], analysis.AnalysisOptions())
    print(f"{time.perf_counter() - started:7.2f} s  analyze, in process (process CPU "
          f"{time.process_time() - cpu:.2f} s, load average {os.getloadavg()[0]:.1f})",
          file=sys.stderr)
    store.dispose()


def floor_columns(trace: Path) -> str:
    """The source columns tracekit keeps for a kernel (name key, times, launch config, ids),
    resolved against the file the way the reader does."""
    from tracekit.ingest.spec import spec_by_id

    spec = spec_by_id("nsys-sqlite").mapping
    connection = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        present = {row[1] for row in connection.execute(
            f"PRAGMA table_info('{spec.tables.kernel}')")}
    finally:
        connection.close()
    candidates = spec.columns.kernel
    wanted = ("name_key", *KERNEL_TARGETS)
    chosen = [next((f'"{c}"' for c in candidates.get(target, []) if c in present), "NULL")
              for target in wanted]
    return ", ".join(chosen)


def copy_floor(trace: Path, target: Path) -> None:
    """The floor: the kernel columns tracekit keeps, copied by SQLite into a fresh file with
    one ``INSERT … SELECT``, committed (no joins, no index, no write-ahead log)."""
    for leftover in target.parent.glob(target.name + "*"):
        leftover.unlink()
    columns = floor_columns(trace)
    connection = sqlite3.connect(target, isolation_level=None)
    try:
        connection.execute("ATTACH DATABASE ? AS src",
                           (f"{trace.absolute().as_uri()}?mode=ro&immutable=1",))
        width = columns.count(",") + 1
        connection.execute(f"CREATE TABLE t ({', '.join(f'c{i}' for i in range(width))})")
        connection.execute("BEGIN")
        connection.execute(f'INSERT INTO t SELECT {columns} FROM src."CUPTI_ACTIVITY_KIND_KERNEL"')
        connection.execute("COMMIT")
    finally:
        connection.close()
    target.unlink()


def kernel_count(trace: Path) -> int:
    connection = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return int(connection.execute(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
    finally:
        connection.close()


@dataclass
class Row:
    """One input's measurements: (seconds, peak MB) per tool, None when not run."""

    label: str
    kernels: int
    size_mb: float
    floor: tuple[float, float] | None = None
    nsys: tuple[float, float] | None = None
    nsys_ai: tuple[float, float] | None = None
    analyze: tuple[float, float] | None = None
    again: tuple[float, float] | None = None


def measure(label: str, trace: Path, out: Path, nsys_ai: Path | None, skip_nsys: bool) -> Row:
    """Every tool on ``trace``, one after the other, each in a fresh process."""
    row = Row(label, kernel_count(trace), trace.stat().st_size / 1e6)
    stem = f"{trace.stem}-{row.kernels}"
    row.floor = peak_rss_mb([sys.executable, __file__, "--floor", str(trace),
                             str(out / f"floor-{stem}.db")], out / f"floor-{stem}.out")
    if not skip_nsys and shutil.which("nsys"):
        copy = out / f"nsys-copy-{stem}.sqlite"
        shutil.copyfile(trace, copy)
        row.nsys = peak_rss_mb(["nsys", "stats", "--report", "gpukernsum", "--format", "csv",
                                "-o", "-", str(copy)], out / f"nsys-{stem}.csv")
        copy.unlink()
    if nsys_ai is not None:
        # Cold: a fresh copy without its Parquet cache (nsys-ai keeps it beside the file).
        folder = out / f"nsys-ai-{stem}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        copy = folder / "profile.sqlite"
        shutil.copyfile(trace, copy)
        os.environ["NSYS_AI_CACHE_MODE"] = "parquet"
        row.nsys_ai = peak_rss_mb([str(nsys_ai), "skill", "run", "top_kernels", str(copy),
                                   "--format", "json"], out / f"nsys-ai-{stem}.json")
        shutil.rmtree(folder, ignore_errors=True)
    store = out / f"store-{stem}.db"
    for leftover in out.glob(f"store-{stem}.db*"):
        leftover.unlink()
    command = [sys.executable, "-m", "tracekit", "analyze", str(trace), "--store", str(store),
               "--json"]
    row.analyze = peak_rss_mb(command, out / f"analyze-{stem}.json")
    row.again = peak_rss_mb(command, out / f"again-{stem}.json")
    for leftover in out.glob(f"store-{stem}.db*"):
        leftover.unlink()
    return row


def seconds(value: tuple[float, float] | None) -> str:
    return f"{value[0]:.1f} s" if value else "–"


def ratio(ours: tuple[float, float] | None, theirs: tuple[float, float] | None) -> str:
    return f"{ours[0] / theirs[0]:.2f}×" if ours and theirs else "–"


def table(rows: list[Row]) -> str:
    """The table of docs/performance.md (between its bench-table markers)."""
    lines = ["| input | kernels | floor | nsys stats | nsys-ai (cold) | tracekit analyze | "
             "peak RSS | ÷ nsys stats | ÷ floor | analyze again |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        rss = f"{row.analyze[1]:.0f} MB" if row.analyze else "–"
        lines.append(
            f"| {row.label} | {row.kernels:,} | {seconds(row.floor)} | {seconds(row.nsys)} | "
            f"{seconds(row.nsys_ai)} | {seconds(row.analyze)} | {rss} | "
            f"{ratio(row.analyze, row.nsys)} | {ratio(row.analyze, row.floor)} | "
            f"{seconds(row.again) if row.again else '–'} |")
    return "\n".join(lines)


def real_shaped(source: Path, kernels: int, out: Path) -> Path:
    """``source`` replicated (fresh ids, shifted times) to at least ``kernels`` kernels."""
    from replicate import replicate  # tests/benchmarks/replicate.py, beside this file

    per_copy = kernel_count(source)
    copies = max(1, -(-kernels // per_copy))
    target = out / f"{source.stem}-x{copies}.sqlite"
    if not target.exists():
        replicate(source, target, copies)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--real", type=Path, action="append", default=[],
                        help="a real nsys export to replicate (fresh ids) to --real-kernels")
    parser.add_argument("--real-kernels", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench"))
    parser.add_argument("--skip-nsys", action="store_true")
    parser.add_argument("--nsys-ai", type=Path, default=None, metavar="EXECUTABLE",
                        help="nsys-ai's command (installed in its own venv) to time cold")
    parser.add_argument("--profile", action="store_true",
                        help="instead of the table: where analyze spends its time")
    parser.add_argument("--trace", type=Path, help="with --profile: this export instead")
    parser.add_argument("--floor", type=Path, nargs=2, metavar=("TRACE", "TARGET"),
                        help=argparse.SUPPRESS)  # the floor, run in its own process
    args = parser.parse_args()
    if args.floor:
        copy_floor(*args.floor)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if args.profile and args.trace:
        profile(args.trace, args.out / f"profile-{args.trace.stem}.db")
        return
    if args.profile:
        for count in args.kernels:
            trace = args.out / f"bench-{count}.sqlite"
            if not trace.exists():
                build(trace, count)
            print(f"== {count:,} kernels", file=sys.stderr)
            profile(trace, args.out / f"profile-{count}.db")
        return
    inputs: list[tuple[str, Path]] = []
    for count in args.kernels:
        trace = args.out / f"bench-{count}.sqlite"
        if not trace.exists():
            started = time.perf_counter()
            build(trace, count)
            print(f"built {trace} ({trace.stat().st_size / 1e6:.0f} MB) in "
                  f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        inputs.append(("synthetic", trace))
    for source in args.real:
        for count in args.real_kernels:
            inputs.append((f"real-shaped ({source.stem})", real_shaped(source, count, args.out)))
    rows = []
    for label, trace in inputs:
        load = os.getloadavg()[0]
        row = measure(label, trace, args.out, args.nsys_ai, args.skip_nsys)
        rows.append(row)
        print(f"{label} {row.kernels:,} kernels ({row.size_mb:.0f} MB; load average "
              f"{load:.1f} → {os.getloadavg()[0]:.1f}): floor {seconds(row.floor)}, nsys stats "
              f"{seconds(row.nsys)}, nsys-ai {seconds(row.nsys_ai)}, analyze "
              f"{seconds(row.analyze)} / {row.analyze[1] if row.analyze else 0:.0f} MB, "
              f"again {seconds(row.again)}", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
