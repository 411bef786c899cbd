"""Benchmark: the whole `tracekit analyze` command on real traces made longer, every input kind.

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_scaling.py --kernels 10000 100000 1000000 --out /tmp/scaling

For each input kind it takes one real trace — the torch profiler trace of vLLM on a B200 (or,
without ``../shared/traces``, the H200 torch trace of ``fixtures/h200``), the two nsys 2026.2
exports of an H100 pair, the H200 CUPTI records and Nsight Compute CSV, the rocprofv3 JSON of
a PyTorch job on 8 MI350X and a synthetic rocpd database (HIP launches, graph replays, ROCTx
steps: what the MI350X file, kernels only, lacks) — replicates it with
fresh ids (``replicate.py``) to about each requested number of kernels, and times
``tracekit analyze FILE --store NEW.db --json`` in a fresh process: wall time, peak RSS
(getrusage of the child) and µs per kernel, so growth that is not linear shows as a rising
µs/kernel column. ``--kinds`` picks some of them. Files are kept in ``--out`` (they are big:
a 10^6-kernel torch trace is about 8 GB), reused when present.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replicate import replicate  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: real traces recorded by others: $TRACEKIT_SHARED_TRACES, else shared/traces beside the repo
SHARED = Path(os.environ.get("TRACEKIT_SHARED_TRACES") or REPO.parent / "shared" / "traces")
FIXTURES = REPO / "fixtures" / "h200"

#: kind -> (source candidates, first found wins; kernels in one copy are counted by replicating)
KINDS: dict[str, list[Path]] = {
    "kineto": [SHARED / "tracelens" / "b200__eager_trace.json.gz",
               FIXTURES / "torch-trace.pt.trace.json.gz"],
    "nsys": [SHARED / "nsys-ai" / "h100_2gpu_1s.sqlite"],
    "nsys-mfu": [SHARED / "nsys-ai" / "mfu_2gpu_before.sqlite"],
    "cupti": [FIXTURES / "cupti.jsonl.gz"],
    "ncu": [FIXTURES / "ncu.csv"],
    "rocprof": [SHARED / "tracelens-rocprof" / "908_results.json.gz"],
    "rocpd": [],  # the synthetic vLLM-on-ROCm job as a rocpd database, made in --out
}
SUFFIX = {"kineto": ".json", "nsys": ".sqlite", "nsys-mfu": ".sqlite", "cupti": ".jsonl",
          "ncu": ".csv", "rocprof": "_results.json", "rocpd": ".rocpd"}


def synthetic_rocpd(out: Path) -> Path:
    """The AMD job of the test suite (2 processes, HIP launches, graph replays, ROCTx steps;
    ~19,000 dispatches) as a rocpd 3.0.3 database, built once in ``out``."""
    path = out / "rocpd-base.rocpd"
    if not path.exists():
        sys.path.insert(0, str(REPO))
        from tests.support.rocprof_scenario import amd_job
        from tracekit.synth.rocprof import write_rocpd

        write_rocpd(amd_job(repeat=500), path, schema="3.0.3")
    return path


def kernels_per_copy(source: Path, scratch: Path, suffix: str) -> int:
    target = scratch / f"one{suffix}"
    count = replicate(source, target, 1)
    target.unlink()
    return count


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a command run in a fresh process (its own rusage)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {child.returncode}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-scaling"))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores", file=sys.stderr)
    print("| input | copies | kernels | file | analyze | peak RSS | µs / kernel |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in options.kinds:
        source = (synthetic_rocpd(options.out) if kind == "rocpd" else
                  next((p for p in KINDS[kind] if p.exists()), None))
        if source is None:
            print(f"| {kind} | – | – | – | not available | | |")
            continue
        per_copy = kernels_per_copy(source, options.out, SUFFIX[kind])
        for wanted in options.kernels:
            copies = max(1, math.ceil(wanted / per_copy))
            trace = options.out / f"{kind}-{copies}{SUFFIX[kind]}"
            if not trace.exists():
                replicate(source, trace, copies)
            store = options.out / f"{kind}-{copies}.db"
            for leftover in (store, Path(f"{store}-wal"), Path(f"{store}-shm")):
                leftover.unlink(missing_ok=True)
            wall, peak = timed(["tracekit", "analyze", str(trace), "--store", str(store),
                                "--json"])
            kernels = per_copy * copies
            size = trace.stat().st_size / 2**20
            print(f"| {kind} ({source.name}) | {copies:,} | {kernels:,} | {size:,.0f} MiB | "
                  f"{wall:.1f} s | {peak:,.0f} MiB | {wall / kernels * 1e6:.1f} |", flush=True)
            store.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
