"""Benchmark: the whole ``tracekit analyze`` of Kineto traces against ``json.load`` and HTA.

Not collected by pytest. Run (one run gives the whole table)::

    python tests/benchmarks/bench_kineto.py --kernels 10000 100000 1000000 \
        --hta-python /tmp/hta-venv/bin/python --work /tmp/bench-kineto --keep
    python tests/benchmarks/bench_kineto.py --kernels 10000 --traces b200   # quick look

Inputs, each made once in ``--work`` (kept with ``--keep``):
- the real Kineto traces of ``../shared/traces`` (``--traces``: tracelens B200 vLLM with
  shapes, H100 Qwen; HTA's ns-resolution and NCCL traces), replicated with fresh ids and
  shifted times by ``replicate.py`` to about the number of kernels asked for;
- ``synthetic``: a streaming writer's vLLM-like mix (``write_trace``) — per layer an
  ``aten::mm`` cpu_op with ``Input type``/``Input Dims``, its launch, the kernel and two
  ``ac2g`` flows, ``baseTimeNanoseconds`` written *after* the events (the hard case for a
  streaming reader). No Python frames: lighter per kernel than the real traces.

Contenders, each in a fresh process so its peak RSS (``ru_maxrss``) is its own; the wall
time is the whole process (interpreter start and imports included), measured from here:
- ``tracekit analyze FILE --json`` into a new SQLite store, through ``analyze_stages.py``,
  which also gives the seconds of each stage: ``hash`` (the input's SHA-256), ``parse``
  (the reader), ``link`` (staged rows into the store, kernels joined to launches and ops),
  ``commit`` (the rest of the ingest transaction), ``stages`` (classify, phases, per-name
  groups, findings, the JSON document) and ``start`` (the rest of the wall time:
  interpreter start, imports, creating the store, printing);
- ``json.load``: the standard library parsing the whole file (parse only, nothing kept);
- HolisticTraceAnalysis ``TraceAnalysis(trace_dir=…)`` (parse into pandas), with
  ``--hta-python`` naming an interpreter that has ``HolisticTraceAnalysis`` installed.

``json.load`` and HTA hold the whole trace in memory (about 6× the file): above
``--others-max-mib`` only tracekit runs, so that the shared machine is not pushed to swap.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from replicate import replicate  # noqa: E402

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


JSON_LOAD = """
import json, sys, time
start = time.perf_counter()
with open(sys.argv[1], "rb") as stream:
    document = json.load(stream)
print(time.perf_counter() - start)
"""
HTA = """
import sys, time, tempfile, os
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(sys.argv[1], os.path.join(folder, "rank-0.pt.trace.json"))
start = time.perf_counter()
analysis = TraceAnalysis(trace_dir=folder)
print(time.perf_counter() - start)
"""
PEAK = "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
#: the real traces replicated (name → path under ../shared/traces)
REAL_TRACES = {
    "b200": "tracelens/b200__eager_trace.json.gz",
    "qwen": "tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.redacted.json.gz",
    "hta-ns": "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta-nccl": "hta/nccl_parser_config__nccl_data.json.gz",
}
#: columns of the stage breakdown: analyze_stages.py's labels, then what they leave out
STAGE_COLUMNS = ("hash", "parse", "link", "commit", "stages", "start")


@dataclass
class Measured:
    """One contender on one input."""

    wall: float | None
    peak_mib: float | None
    stages: dict[str, float]
    note: str = ""


def shared_traces() -> Path | None:
    for candidate in (os.environ.get("TRACEKIT_SHARED_TRACES"),
                      HERE.parents[2] / "shared" / "traces", HERE.parents[1] / "shared" / "traces"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def kernels_per_copy(source: Path) -> int:
    import gzip

    with gzip.open(source, "rt", encoding="utf-8") as stream:
        document = json.load(stream)
    events = document["traceEvents"] if isinstance(document, dict) else document
    return sum(1 for e in events if isinstance(e, dict) and e.get("cat") in ("kernel", "Kernel"))


def make_input(name: str, kernels: int, work: Path) -> tuple[Path, int]:
    """The trace for ``name`` at about ``kernels`` kernels (reused when already in work)."""
    if name == "synthetic":
        target = work / f"synthetic-{kernels}.json"
        events = kernels * (5 * 36 + 1) // 36
        if not target.exists():
            write_trace(target, events)
        return target, kernels
    base = shared_traces()
    if base is None:
        raise SystemExit("real traces need ../shared/traces (or $TRACEKIT_SHARED_TRACES)")
    source = base / REAL_TRACES[name]
    copies = max(1, math.ceil(kernels / kernels_per_copy(source)))
    target = work / f"{name}-x{copies}.json"
    if not target.exists():
        replicate(source, target, copies)
    return target, copies * kernels_per_copy(source)


def run(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return completed, time.perf_counter() - started


def measure_tracekit(trace: Path, work: Path) -> Measured:
    store = work / "store.db"
    for leftover in work.glob("store.db*"):
        leftover.unlink()
    completed, wall = run([sys.executable, str(HERE / "analyze_stages.py"), str(trace),
                           str(store)])
    for leftover in work.glob("store.db*"):
        leftover.unlink()
    if completed.returncode != 0:
        return Measured(None, None, {}, (completed.stderr.strip().splitlines() or ["?"])[-1])
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    seconds = report["seconds"]
    # the rest of the ingest transaction (run row, commit), and everything outside the
    # ingest and the stages (interpreter, imports, creating the store, printing the JSON)
    seconds["commit"] = seconds["ingest"] - seconds["hash"] - seconds["parse"] - seconds["link"]
    seconds["start"] = wall - seconds["ingest"] - seconds["stages"]
    return Measured(wall, report["peak_rss_mib"], seconds)


def measure_script(python: str, script: str, trace: Path) -> Measured:
    completed, wall = run([python, "-c", script + PEAK, str(trace)])
    if completed.returncode != 0:
        return Measured(None, None, {}, (completed.stderr.strip().splitlines() or ["?"])[-1][:80])
    lines = completed.stdout.strip().splitlines()
    return Measured(wall, int(lines[-1]) / 1024, {"inner": float(lines[-2])})


def load_average() -> str:
    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--traces", nargs="+", default=[*REAL_TRACES, "synthetic"],
                        choices=[*REAL_TRACES, "synthetic"])
    parser.add_argument("--work", type=Path, default=None, help="folder for the traces")
    parser.add_argument("--hta-python", default=None,
                        help="python with HolisticTraceAnalysis installed")
    parser.add_argument("--others-max-mib", type=float, default=1200,
                        help="run json.load and HTA only on files up to this size")
    parser.add_argument("--tracekit-max-mib", type=float, default=float("inf"),
                        help="skip inputs larger than this altogether")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="tracekit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"started {time.strftime('%Y-%m-%d %H:%M')}, load average {load_average()}, "
          f"{os.cpu_count()} CPUs", flush=True)
    print("| input | kernels | MiB | tool | wall s | peak RSS MiB | "
          + " | ".join(STAGE_COLUMNS) + " | wall / json.load |")
    print("|---|---:|---:|---|---:|---:|" + "---:|" * len(STAGE_COLUMNS) + "---:|", flush=True)
    try:
        for name in options.traces:
            for kernels in options.kernels:
                trace, actual = make_input(name, kernels, work)
                size = trace.stat().st_size / 2**20
                if size > options.tracekit_max_mib:
                    continue
                results = {"tracekit analyze": measure_tracekit(trace, work)}
                if size <= options.others_max_mib:
                    results["json.load"] = measure_script(sys.executable, JSON_LOAD, trace)
                    if options.hta_python:
                        results["HTA TraceAnalysis"] = measure_script(options.hta_python, HTA,
                                                                      trace)
                baseline = results.get("json.load")
                for tool, measured in results.items():
                    stages = " | ".join(
                        f"{measured.stages[c]:.1f}" if tool == "tracekit analyze" and
                        c in measured.stages else "" for c in STAGE_COLUMNS)
                    ratio = (f"{measured.wall / baseline.wall:.2f}"
                             if baseline and baseline.wall and measured.wall else "")
                    wall = f"{measured.wall:.1f}" if measured.wall else f"failed: {measured.note}"
                    peak = f"{measured.peak_mib:,.0f}" if measured.peak_mib else ""
                    print(f"| {name} | {actual:,} | {size:,.0f} | {tool} | {wall} | {peak} | "
                          f"{stages} | {ratio} |", flush=True)
                if not options.keep:
                    trace.unlink()
    finally:
        print(f"ended {time.strftime('%Y-%m-%d %H:%M')}, load average {load_average()}",
              flush=True)
        if not options.keep and options.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
