"""Benchmark: ingest of a large generated Kineto trace — wall time and peak RSS.

Not collected by pytest. Run:

    python tests/benchmarks/bench_kineto.py --events 5000000      # ≈ 1 GB, the issue's size
    python tests/benchmarks/bench_kineto.py --events 1000000      # ≈ 200 MB, quicker
    python tests/benchmarks/bench_kineto.py --hta-python /tmp/hta-venv/bin/python

The trace is written by a streaming writer (never held in memory): repeating "iterations" of
a vLLM-like step — a ``user_annotation`` step marker, then per layer an ``aten::mm`` cpu_op with
``Input type``/``Input Dims``, its ``cuLaunchKernelEx``/``cudaLaunchKernel`` call, the kernel
and the two ``ac2g`` flow events — with ``baseTimeNanoseconds`` written *after* the events,
as some Kineto versions do (the hard case for a streaming reader).

Each contender runs in a fresh subprocess, so its peak RSS (``ru_maxrss`` of the child) is
its own:
- ``tracekit``: ``tracekit.ingest.pipeline.ingest`` into a new SQLite store (parse, stage,
  link kernels to launches, write every row);
- ``json.load``: the standard library loading the whole document (parse only);
- ``hta``: HolisticTraceAnalysis ``TraceAnalysis(trace_dir=…)`` (parse into pandas), when
  ``--hta-python`` names an interpreter that has ``holistictraceanalysis`` installed.

Measured 2026-11-29 on the 2-core / 23 GiB development box, shared with other jobs (load
average 4-7, so absolute seconds vary ±50 % between runs; the three rows ran back to back),
5,000,000 events, 1,146 MiB, 994,500 kernels; HolisticTraceAnalysis 0.5.0 in its own venv:

| reader                          | seconds | peak RSS MiB |
|---------------------------------|---------|--------------|
| tracekit ingest (SQLite store)  |   135.0 |          312 |
| HolisticTraceAnalysis load      |   301.8 |        6,645 |
| json.load (parse only)          |    74.6 |        6,792 |

tracekit's peak is mostly the store's SQLite page cache (``cache_size = -200000``, 200 MB, in
``tracekit/store/db.py``): it does not grow with the trace; the reader itself holds one chunk
of 50,000 staged rows per table and the per-run name tables.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
           "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b"
           "_TN_transOut_schedS_bN_ldgsts_swiGlu_dynBatch_sm100f",
           "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
LAYERS = 36
EVENTS_PER_LAYER = 5


def write_trace(path: Path, events: int) -> int:
    """Stream a Kineto trace with about ``events`` events to ``path``; returns the kernels."""
    pid, tid = 6583, 6583
    ts = 1_365_627_000_000.0
    correlation = external = kernels = 0
    written = 0
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": '
                  '"NVIDIA B200", "totalGlobalMem": 191503138816, "computeMajor": 10, '
                  '"computeMinor": 0, "numSms": 148}],\n  "distributedInfo": {"rank": 0, '
                  '"world_size": 1},\n  "traceEvents": [\n')
        first = True
        step = 0
        while written < events:
            step_start = ts
            lines = []
            for layer in range(LAYERS):
                correlation += 1
                external += 1
                name = KERNELS[layer % len(KERNELS)]
                op_ts, launch_ts, kernel_ts = ts, ts + 2.125, ts + 9.301
                lines.append(
                    f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": {pid}, '
                    f'"tid": {tid}, "ts": {op_ts:.3f}, "dur": 6.5, "args": {{"External id": '
                    f'{external}, "Input type": ["c10::BFloat16", "c10::BFloat16"], '
                    f'"Input Dims": [[888, 2880], [2880, 640]], "Ev Idx": {external}}}}}')
                api = "cuLaunchKernelEx" if layer % 2 else "cudaLaunchKernel"
                cat = "cuda_driver" if layer % 2 else "cuda_runtime"
                lines.append(
                    f'{{"ph": "X", "cat": "{cat}", "name": "{api}", "pid": {pid}, '
                    f'"tid": {tid}, "ts": {launch_ts:.3f}, "dur": 3.875, "args": '
                    f'{{"External id": {external}, "cbid": 652, "correlation": {correlation}}}}}')
                lines.append(
                    f'{{"ph": "s", "id": {correlation}, "pid": {pid}, "tid": {tid}, '
                    f'"ts": {launch_ts:.3f}, "cat": "ac2g", "name": "ac2g"}}')
                lines.append(
                    f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, '
                    f'"ts": {kernel_ts:.3f}, "dur": 7.904, "args": {{"External id": {external}, '
                    f'"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": '
                    f'{correlation}, "registers per thread": 168, "shared memory": 213656, '
                    f'"blocks per SM": 0.945946, "warps per SM": 7.567567, "grid": [140, 1, 1], '
                    f'"block": [256, 1, 1], "est. achieved occupancy %": 0}}}}')
                lines.append(
                    f'{{"ph": "f", "id": {correlation}, "pid": 0, "tid": 7, '
                    f'"ts": {kernel_ts:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}')
                kernels += 1
                ts += 12.0
            lines.insert(0,
                f'{{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(888)_'
                f'generation_{step}(0)", "pid": {pid}, "tid": {tid}, "ts": {step_start:.3f}, '
                f'"dur": {ts - step_start:.3f}, "args": {{"External id": 0}}}}')
            step += 1
            text = ",\n".join(lines)
            out.write(("    " if first else ",\n    ") + text.replace("\n", "\n    "))
            first = False
            written += len(lines)
        out.write('\n  ],\n  "traceName": "bench.json",\n  "displayTimeUnit": "ms",\n'
                  '  "baseTimeNanoseconds": 1767189312000000000\n}\n')
    return kernels


TRACEKIT = """
import sys, time
from pathlib import Path
from tracekit.store import open_store
from tracekit.ingest.pipeline import ingest
store = open_store(sys.argv[2])
start = time.perf_counter()
ingest(store, [Path(sys.argv[1])])
print(time.perf_counter() - start)
"""
JSON_LOAD = """
import json, sys, time
start = time.perf_counter()
with open(sys.argv[1], "rb") as stream:
    document = json.load(stream)
print(time.perf_counter() - start)
"""
HTA = """
import sys, time, shutil, tempfile, os
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(sys.argv[1], os.path.join(folder, "rank-0.pt.trace.json"))
start = time.perf_counter()
analysis = TraceAnalysis(trace_dir=folder)
elapsed = time.perf_counter() - start
print(elapsed)
"""


PEAK = "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"


def measure(python: str, script: str, *args: str) -> tuple[float | None, float, str]:
    """(seconds, peak RSS MiB, note) of ``script`` in a fresh child process.

    The child prints its own time and, last, its own ``ru_maxrss`` (KiB on Linux).
    """
    started = time.perf_counter()
    completed = subprocess.run([python, "-c", script + PEAK, *args], capture_output=True,
                               text=True, check=False)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        return None, -1, (completed.stderr.strip().splitlines() or ["?"])[-1][:120]
    lines = completed.stdout.strip().splitlines()
    return float(lines[-2]), int(lines[-1]) / 1024, f"process wall {wall:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--work", type=Path, default=None, help="folder for the trace")
    parser.add_argument("--hta-python", default=None,
                        help="python with holistictraceanalysis installed")
    parser.add_argument("--skip-json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated trace")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="tracekit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / "bench.pt.trace.json"
    started = time.perf_counter()
    kernels = write_trace(trace, options.events)
    size = trace.stat().st_size
    print(f"trace: {trace} {size / 2**20:.0f} MiB, ~{options.events:,} events, {kernels:,} "
          f"kernels, written in {time.perf_counter() - started:.1f} s", flush=True)
    contenders = [("tracekit ingest (SQLite store)", sys.executable, TRACEKIT,
                   (str(trace), str(work / "store.db")))]
    if options.hta_python:
        contenders.append(("HolisticTraceAnalysis load", options.hta_python, HTA, (str(trace),)))
    if not options.skip_json:
        contenders.append(("json.load", sys.executable, JSON_LOAD, (str(trace),)))
    print(f"| {'reader':32} | {'seconds':>8} | {'peak RSS MiB':>12} | note")
    print(f"|{'-' * 34}|{'-' * 10}|{'-' * 14}|------")
    for label, python, script, args in contenders:
        seconds, peak, note = measure(python, script, *args)
        shown = f"{seconds:8.1f}" if seconds is not None else "  failed"
        rss = f"{peak:12.0f}" if peak > 0 else "   (see note)"
        print(f"| {label:32} | {shown} | {rss} | {note}", flush=True)
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
