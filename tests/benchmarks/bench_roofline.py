"""Time the roofline section (``tracekit.roofline.roofline_section``) as a run grows.

The run is the synthetic Kineto fallback trace of ``tests/support/roofline_scenario.py`` (25
kernel launches, 21 of them linked to a CPU op with shapes) analyzed once, then replicated inside
the store N times with fresh External ids (one ``INSERT … SELECT`` per table), so a run of
10^6 kernels is built in seconds without writing a GB of JSON. The section is then built
three times per size in this process; the best time is printed with the kernel count.

    python tests/benchmarks/bench_roofline.py --kernels 10000 100000 1000000 --out /tmp/bench

What it measures is the link query (each GEMM launch → its CPU op through the
(run_id, external_id) index, grouped per op and then per signature), the counters query and
the per-signature Python work; the ingest and the other stages are not in the time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sqlalchemy import text

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))

from roofline_scenario import replicate_in_store, write_fallback_trace  # noqa: E402

from tracekit.analysis import AnalysisOptions, analyze  # noqa: E402
from tracekit.roofline import roofline_section  # noqa: E402
from tracekit.store import open_store  # noqa: E402

BASE_KERNELS = 25
def build(folder: Path, kernels: int) -> tuple[object, int]:
    """A store with one run of about ``kernels`` launches (copies of the scenario)."""
    copies = max(1, kernels // BASE_KERNELS)
    path = folder / f"roofline-{copies}.db"
    path.unlink(missing_ok=True)
    store = open_store(str(path))
    trace = write_fallback_trace(folder / "fallback.json")
    run_id = analyze(store, [trace], AnalysisOptions()).run_id
    replicate_in_store(store, run_id, copies)
    return store, run_id


def best_of(store: object, run_id: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        with store.connect() as connection:  # type: ignore[attr-defined]
            start = time.perf_counter()
            roofline_section(connection, run_id)
            best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench-roofline"))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    print("| kernels | roofline section |\n|---:|---:|")
    for kernels in options.kernels:
        store, run_id = build(options.out, kernels)
        with store.connect() as connection:  # type: ignore[attr-defined]
            total = connection.execute(text("SELECT COUNT(*) FROM kernels WHERE run_id = :r"),
                                       {"r": run_id}).scalar()
        print(f"| {total:,} | {best_of(store, run_id):.2f} s |", flush=True)
        store.dispose()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
