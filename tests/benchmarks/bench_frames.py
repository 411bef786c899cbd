"""Benchmark: ``run.kernels()`` against ``pandas.read_sql`` of the same query, time and memory.

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_frames.py --kernels 1000000 10000000 --out /tmp/bench

For each size it builds the nsys-schema export of ``bench_analyze.py`` (3,000 long templated
names, 2 GPUs × 5 streams, one step per 100 launches), analyzes it into a fresh SQLite store
(``--store`` another URL, e.g. PostgreSQL; the store is emptied first), then reads the run's
kernel records with the default columns — start, end, duration, name, op, path, phase, step,
device, stream, launching thread — two ways, each in a fresh process:

- ``tracekit``: ``tracekit.open_store(url).run(id).kernels()``;
- ``read_sql``: ``pandas.read_sql`` of the SELECT that gives the same columns (names, ops,
  paths and phases joined in as text, as a user would write it).

Each process first imports pandas and opens the store, then resets the kernel's peak-RSS
mark (``/proc/self/clear_refs``), reads, and reports: wall time, the frame's own size
(``DataFrame.memory_usage(deep=True)``) and the peak RSS above the pre-read baseline. The
issue's bound is peak ≤ 2 × frame for ``tracekit``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

READ_SQL = """
SELECT k.start_ns, k.end_ns, k.end_ns - k.start_ns AS duration_ns, n.name,
       COALESCE(c.op, 'other') AS op, COALESCE(c.path, 'unknown') AS path,
       COALESCE(k.phase, 'unattributed') AS phase, k.step_id, k.device, k.stream, k.global_tid
FROM kernels k JOIN kernel_names n ON n.id = k.name_id
LEFT JOIN classifications c ON c.run_id = k.run_id AND c.name_id = k.name_id
WHERE k.run_id = {run_id} ORDER BY k.id
"""


def _kib(field: str) -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(rf"{field}:\s+(\d+) kB", status)
    return int(match.group(1)) if match else 0


def measure(url: str, run_id: int, method: str) -> dict[str, float]:
    """In this process: read the run's kernels one way; time, frame size, peak RSS growth."""
    import pandas as pd
    import pandas.io.sql  # noqa: F401  (imports are not part of the read)

    import tracekit
    import tracekit.api.kernels  # noqa: F401

    store = tracekit.open_store(url)
    run = store.run(run_id)
    engine = store.reader().engine
    with engine.connect():
        pass  # the pool's first connection exists before the baseline
    Path("/proc/self/clear_refs").write_text("5")
    baseline = _kib("VmRSS")
    started = time.perf_counter()
    if method == "tracekit":
        frame = run.kernels()
    else:
        with engine.connect() as connection:
            frame = pd.read_sql(READ_SQL.format(run_id=run_id), connection)
    seconds = time.perf_counter() - started
    peak = _kib("VmHWM") - baseline
    size = int(frame.memory_usage(deep=True).sum())
    return {"rows": len(frame), "seconds": seconds, "frame_mb": size / 1e6,
            "peak_mb": peak * 1024 / 1e6, "ratio": peak * 1024 / size if size else 0.0}


def _child(url: str, run_id: int, method: str) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, "--measure", method, "--store", url, "--run", str(run_id)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def prepare(kernels: int, out: Path, url: str | None, keep: bool) -> tuple[str, int]:
    """Build the export and analyze it; returns the store URL and the run id. With ``keep``
    the stores of an earlier ``--keep`` run are used again (the same bytes: no new analysis)."""
    sys.path.insert(0, str(HERE))
    from bench_analyze import build

    import tracekit

    trace = out / f"frames-{kernels}.sqlite"
    if not trace.exists():
        build(trace, kernels)
    if url is None:
        database = out / f"frames-{kernels}.db"
        for stale in out.glob(f"frames-{kernels}.db*") if not keep else ():
            stale.unlink()
        url = str(database)
    elif not keep:
        store = tracekit.open_store(url)
        try:
            ids = store.runs().index.tolist()
            if ids:
                store.delete(ids)
        except tracekit.TracekitError:
            pass  # a new database: nothing to empty
        store.close()
    started = time.perf_counter()
    run = tracekit.analyze(trace, store=url)
    print(f"# {kernels:,} kernels analyzed in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    run.store.close()
    return url, run.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench-frames"))
    parser.add_argument("--store", default=None, help="store URL (default: a SQLite file)")
    parser.add_argument("--measure", choices=("tracekit", "read_sql"), help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true",
                        help="keep the stores afterwards, and reuse those an earlier --keep left")
    parser.add_argument("--skip-read-sql-above", type=int, default=10**8,
                        help="leave read_sql out for bigger runs (it may not fit in memory)")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.store, args.run, args.measure)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    print("| kernels | method | time | frame | peak RSS growth | peak / frame |")
    print("|---:|---|---:|---:|---:|---:|")
    for kernels in args.kernels:
        url, run_id = prepare(kernels, args.out, args.store, args.keep)
        methods = ["tracekit"] + (["read_sql"] if kernels <= args.skip_read_sql_above else [])
        for method in methods:
            result = _child(url, run_id, method)
            print(f"| {kernels:,} | {method} | {result['seconds']:.1f} s | "
                  f"{result['frame_mb']:.0f} MB | {result['peak_mb']:.0f} MB | "
                  f"{result['ratio']:.2f} |", flush=True)
    if not args.keep and args.store is None:
        for kernels in args.kernels:
            for leftover in args.out.glob(f"frames-{kernels}.db*"):
                leftover.unlink()


if __name__ == "__main__":
    main()
