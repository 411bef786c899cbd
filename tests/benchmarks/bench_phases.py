"""Benchmark: phase attribution time vs ingest time on big nsys exports.

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_phases.py --kernels 1000000 10000000 --steps 100000

For each size it builds, entirely in SQL (recursive CTEs into nsys 2022.4's real schema from
``tracekit.synth.nsys.create_empty_export``), a two-rank tensor-parallel capture: each rank
has ``steps / 2`` vLLM step ranges (``execute_context_…_generation_…``; every tenth step a
prefill, every tenth a mixed step, the rest decode with varying batch sizes); eager steps
launch each kernel with ``cudaLaunchKernel``, decode steps replay a CUDA graph (one
``cudaGraphLaunch``, node kernels sharing its correlation id). Then, in this process, it times
``ingest`` into a fresh SQLite store and ``attribute_phases`` on the ingested run, and checks
that every kernel landed in the step the generator put it in.

Target (issue 4): attribution takes at most half the ingest time.

Measured figures: tests/benchmarks/README.md (bench_phases.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sqlalchemy import text

from tracekit.ingest.pipeline import ingest
from tracekit.phases.stage import attribute_phases
from tracekit.store.db import open_store
from tracekit.synth.nsys import GRAPH_API, LAUNCH_API, create_empty_export, global_tid

NAMES = [
    "nvjet_tst_128x64_64x4_1x2_h_bz_TNN",
    "sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x128x128_cublas",
    "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *)",
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(flash::Flash_fwd_params)",
    "void marlin::Marlin<256, 1, 8, 8, 4, 8>(const int4 *)",
]
#: llama.cpp-style names for the marker-free run: eager (prompt) steps use the first two,
#: graph (token) steps the last two, and every third kernel a norm.
LLAMA_NAMES = [
    "void mul_mat_q<(ggml_type)12, 128, false>(const char *, const int *)",
    "void flash_attn_ext_f16<128, 128, 64, 2, false, false>(const char *)",
    "void rms_norm_f32<1024>(const float *, float *)",
    "void mul_mat_vec_q<(ggml_type)12, 1, false>(const void *, const void *)",
    "void flash_attn_ext_vec<128, 1, (ggml_type)1, (ggml_type)1, false>(const char *)",
]
PIDS = (1000, 2000)
LAUNCH_NS = 2_500
STEP_GAP_NS = 50_000
T0 = 1_000_000_000


def build(path: Path, kernels: int, steps: int, markers: bool = True) -> None:
    """A two-rank nsys export: ``kernels`` kernels in ``steps`` step ranges (half per rank).

    Without ``markers`` there are no ranges and the names are llama.cpp's, so the
    heuristics have to find the same steps.
    """
    per_rank_steps = max(1, steps // len(PIDS))
    per_step = max(1, kernels // len(PIDS) // per_rank_steps)
    period = per_step * LAUNCH_NS + STEP_GAP_NS
    connection = create_empty_export(path)
    connection.commit()
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    connection.executemany("INSERT INTO StringIds VALUES (?, ?)",
                           list(enumerate(NAMES if markers else LLAMA_NAMES, start=1)))
    launch_id, graph_id = len(NAMES) + 1, len(NAMES) + 2
    connection.execute("INSERT INTO StringIds VALUES (?, ?)", (launch_id, LAUNCH_API))
    connection.execute("INSERT INTO StringIds VALUES (?, ?)", (graph_id, GRAPH_API))
    for device, pid in enumerate(PIDS):
        connection.execute("INSERT INTO PROCESSES VALUES (?, ?, 'python3')",
                           (global_tid(pid, 0), pid))
        connection.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, cuDevice, computeMajor, "
            "computeMinor) VALUES (0, ?, 'NVIDIA H100 80GB HBM3', 132, ?, 9, 0)", (device, device))
    total = per_step * per_rank_steps * len(PIDS)
    # kernel i: rank i % 2; r = i / 2 its index in the rank; step j = r / per_step; slot
    # r % per_step inside the step. Decode steps (j % 10 not 0 or 5) are graph replays.
    seq = (f"WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq "
           f"WHERE i < {total - 1})")
    pid = f"(CASE i % 2 WHEN 0 THEN {PIDS[0]} ELSE {PIDS[1]} END)"
    step = f"((i / 2) / {per_step})"
    slot = f"((i / 2) % {per_step})"
    graph = f"({step} % 10 NOT IN (0, 5))"
    step_start = f"({T0} + {step} * {period})"
    launch = (f"(CASE WHEN {graph} THEN {step_start} + 1000 "
              f"ELSE {step_start} + 1000 + {slot} * {LAUNCH_NS} END)")
    step_key = f"({step} * 2 + i % 2)"
    correlation = f"(CASE WHEN {graph} THEN {total} + 1 + {step_key} ELSE i + 1 END)"
    duration = "(800 + (i * 7919) % 2000)"
    name = (f"(1 + i % {len(NAMES)})" if markers else
            f"(CASE WHEN i % 3 = 2 THEN 3 WHEN {graph} THEN 4 + i % 2 ELSE 1 + i % 2 END)")
    gpu = f"({step_start} + 30000 + {slot} * {LAUNCH_NS})"
    connection.execute(f"""
        {seq}
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
            correlationId, globalPid, demangledName, shortName, mangledName, launchType,
            cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
            staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal,
            gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig)
        SELECT {gpu}, {gpu} + {duration}, i % 2, 1, 7, {correlation}, {pid} << 24,
               {name}, {name}, NULL, 1, 0, 64, 132, 1, 1, 128, 1,
               1, 0, 0, 0, 0, i + 1, NULL, CASE WHEN {graph} THEN 1 + {slot} END, NULL
        FROM seq""")
    connection.execute(f"""
        {seq}
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId,
            nameId, returnValue)
        SELECT {launch}, {launch} + 2000, 0, ({pid} << 24) | {pid}, {correlation},
               CASE WHEN {graph} THEN {graph_id} ELSE {launch_id} END, 0
        FROM seq WHERE NOT {graph} OR {slot} = 0""")
    for rank_pid in PIDS if markers else ():
        connection.execute(f"""
            WITH RECURSIVE s(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM s
                                    WHERE j < {per_rank_steps - 1})
            INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)
            SELECT {T0} + j * {period}, {T0} + j * {period} + 4000 + {per_step} * {LAUNCH_NS},
                   59, CASE j % 10
                     WHEN 0 THEN 'execute_context_4(2048)_generation_0(0)'
                     WHEN 5 THEN 'execute_context_1(512)_generation_' || (1 + j % 61) || '('
                                 || (1 + j % 61) || ')'
                     ELSE 'execute_context_0(0)_generation_' || (1 + j % 64) || '('
                          || (1 + j % 64) || ')' END,
                   ({rank_pid} << 24) | {rank_pid}, 0
            FROM s""")
    connection.commit()
    connection.close()


def run(out: Path, kernels: int, steps: int, markers: bool = True
        ) -> tuple[int, float, float, int]:
    """Build (once), ingest and attribute; returns (kernels, ingest s, attribution s, misses)."""
    trace = out / f"phases-{kernels}-{steps}{'' if markers else '-heuristic'}.sqlite"
    if not trace.exists():
        started = time.perf_counter()
        build(trace, kernels, steps, markers)
        print(f"built {trace} ({trace.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    for leftover in out.glob(f"store-phases-{kernels}.db*"):
        leftover.unlink()
    store = open_store(str(out / f"store-phases-{kernels}.db"))
    started = time.perf_counter()
    run_id = ingest(store, [trace]).run_id
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    with store.begin() as connection:
        report = attribute_phases(connection, run_id)
    attribution_s = time.perf_counter() - started
    with store.connect() as connection:
        count, unattributed = connection.execute(text(
            "SELECT COUNT(*), SUM(step_id IS NULL) FROM kernels WHERE run_id = :r"),
            {"r": run_id}).one()
    print(f"{report.message} ({report.steps})", file=sys.stderr)
    store.dispose()
    return int(count), ingest_s, attribution_s, int(unattributed or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench-phases"))
    parser.add_argument("--no-markers", action="store_true",
                        help="llama.cpp-style names and no ranges: time the heuristics")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [run(args.out, count, args.steps, not args.no_markers) for count in args.kernels]
    print("| kernels | step ranges | ingest | attribution | attribution / ingest | unattributed |")
    print("|---:|---:|---:|---:|---:|---:|")
    for count, ingest_s, attribution_s, misses in rows:
        print(f"| {count:,} | {args.steps:,} | {ingest_s:.1f} s | {attribution_s:.1f} s | "
              f"{attribution_s / ingest_s:.2f} | {misses:,} |")


if __name__ == "__main__":
    main()
