"""Benchmark: `tracekit analyze` vs `nsys stats --report gpukernsum` on big nsys exports.

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_analyze.py --kernels 1000000 10000000 --out /tmp/bench

For each size it builds an nsys-schema SQLite file (nsys 2022.4's real schema) entirely in
SQL: a few thousand distinct, long templated kernel names, two processes on two GPUs with
several streams, one runtime launch per kernel, and vLLM-style NVTX step ranges (one per
100 launches). Then it times, each in a fresh process, with peak RSS from getrusage:

- ``tracekit analyze FILE --store NEW.db --json`` (ingest + classify + phases + findings +
  document), and
- ``nsys stats --report gpukernsum --format csv`` on a copy of the same file.

It prints a Markdown table (the one in the README). ``--profile`` instead runs ``analyze``
in this process and prints where the time goes (ingest, stages, slow SQL statements).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench"))
    parser.add_argument("--skip-nsys", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="instead of the table: where analyze spends its time")
    parser.add_argument("--trace", type=Path, help="with --profile: this export instead")
    args = parser.parse_args()
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
    rows = []
    for count in args.kernels:
        trace = args.out / f"bench-{count}.sqlite"
        if not trace.exists():
            started = time.perf_counter()
            build(trace, count)
            print(f"built {trace} ({trace.stat().st_size / 1e6:.0f} MB) in "
                  f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        store = args.out / f"store-{count}.db"
        for leftover in args.out.glob(f"store-{count}.db*"):
            leftover.unlink()
        ours = peak_rss_mb([sys.executable, "-m", "tracekit", "analyze", str(trace), "--store",
                            str(store), "--json"], args.out / f"analyze-{count}.json")
        theirs: tuple[float, float, int] | None = None
        if not args.skip_nsys and shutil.which("nsys"):
            copy = args.out / f"nsys-copy-{count}.sqlite"
            shutil.copyfile(trace, copy)
            theirs = peak_rss_mb(["nsys", "stats", "--report", "gpukernsum", "--format", "csv",
                                  "-o", "-", str(copy)], args.out / f"nsys-{count}.csv")
            copy.unlink()
        rows.append((count, ours, theirs))
        print(f"{count:,} kernels: tracekit {ours[0]:.1f} s / {ours[1]:.0f} MB"
              + (f"; nsys stats {theirs[0]:.1f} s / {theirs[1]:.0f} MB" if theirs else ""),
              file=sys.stderr)
    print("| kernels | tracekit analyze | peak RSS | nsys stats gpukernsum | peak RSS | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for count, ours, theirs in rows:
        if theirs:
            print(f"| {count:,} | {ours[0]:.1f} s | {ours[1]:.0f} MB | {theirs[0]:.1f} s | "
                  f"{theirs[1]:.0f} MB | {ours[0] / theirs[0]:.2f}× |")
        else:
            print(f"| {count:,} | {ours[0]:.1f} s | {ours[1]:.0f} MB | – | – | – |")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
