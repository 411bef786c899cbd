"""Time the layer stage (``tracekit.layers.stage.attribute_layers``) on real shapes and on big
nsys exports. Run by hand (pytest does not collect it)::

    python tests/benchmarks/bench_layers.py --out /tmp/bench-layers \\
        --real "$TRACEKIT_SHARED_TRACES/tracelens/b200__eager_trace.json.gz" --copies 40 \\
        --store-copies 10 --nsys-kernels 1000000

Inputs, each analyzed once into its own store (the analysis is not timed):

- ``--real``: a real torch-profiler trace replicated ``--copies`` times with fresh ids and
  shifted times (``replicate.py``: the B200 vLLM gpt-oss trace has 768 kernels and 436 module
  frames per copy), then made ``--store-copies`` times longer inside the store (its kernels,
  ops and module frames copied with shifted times, ``tests/support/layers_scenario.py``);
  timed without a config and with gpt-oss-120b's dimensions (shapes for every op);
- ``--nsys-kernels``: the synthetic nsys export of ``bench_analyze.py`` (a few thousand
  names, step ranges every 100 launches, no layer evidence), timed without a config (from
  ``kernel_groups`` alone) and with one that gives ``num_hidden_layers`` (one pass over the
  undecided names' launches for the launch counts);
- ``--nsys-real``: a real nsys export replicated to about ``--nsys-kernels`` kernels (the
  nsys-ai H100 capture: 4.9 NVTX events per kernel, scanned once for layer range texts).

Each measurement is the best of three, CPU time of this process (the SQL runs in it).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

from sqlalchemy import text

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from bench_analyze import build as build_nsys  # noqa: E402
from replicate import replicate  # noqa: E402

from tests.support.layers_scenario import replicate_in_store  # noqa: E402
from tracekit.analysis import AnalysisOptions, analyze  # noqa: E402
from tracekit.expect.checkpoint.shape import ModelShape  # noqa: E402
from tracekit.layers.stage import attribute_layers  # noqa: E402
from tracekit.store import open_store  # noqa: E402

GPT_OSS_120B = ModelShape(hidden_size=2880, intermediate_size=2880, num_attention_heads=64,
                          num_key_value_heads=8, head_dim=64, vocab_size=201088,
                          num_hidden_layers=36, num_experts=128)
LAYERS_ONLY = ModelShape(num_hidden_layers=32)


def best_of(store: object, run_id: int, shape: ModelShape | None, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        with store.begin() as connection:  # type: ignore[attr-defined]
            started = time.process_time()
            attribute_layers(connection, run_id, shape)
            best = min(best, time.process_time() - started)
    return best


def sizes(store: object, run_id: int) -> str:
    with store.connect() as connection:  # type: ignore[attr-defined]
        kernels = connection.execute(text(
            "SELECT COUNT(*) FROM kernels WHERE run_id = :r"), {"r": run_id}).scalar_one()
        frames = connection.execute(text(
            "SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :r"), {"r": run_id}).scalar_one()
    return f"{kernels:,} kernels, {frames:,} NVTX rows (ranges and module frames)"


def analyzed(trace: Path, store_path: Path) -> tuple[object, int]:
    store_path.unlink(missing_ok=True)
    store = open_store(str(store_path))
    return store, analyze(store, [trace], AnalysisOptions()).run_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--real", type=Path)
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--store-copies", type=int, default=10)
    parser.add_argument("--nsys-kernels", type=int, default=0)
    parser.add_argument("--nsys-real", type=Path)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    print("| input | size | config | stage CPU s |\n|---|---|---|---|")
    if options.real is not None:
        trace = options.out / f"real-x{options.copies}.json"
        if not trace.exists():
            replicate(options.real, trace, options.copies)
        store, run_id = analyzed(trace, options.out / "real.db")
        for copies in (1, options.store_copies):
            if copies > 1:
                replicate_in_store(store, run_id, copies)
            for label, shape in (("none", None), ("gpt-oss-120b", GPT_OSS_120B)):
                print(f"| {options.real.name} ×{options.copies}×{copies} | "
                      f"{sizes(store, run_id)} | {label} | {best_of(store, run_id, shape):.2f} |",
                      flush=True)
    if options.nsys_kernels:
        trace = options.out / f"nsys-{options.nsys_kernels}.sqlite"
        if not trace.exists():
            build_nsys(trace, options.nsys_kernels)
        store, run_id = analyzed(trace, options.out / "nsys.db")
        for label, shape in (("none", None), ("num_hidden_layers 32", LAYERS_ONLY)):
            print(f"| synthetic nsys | {sizes(store, run_id)} | {label} | "
                  f"{best_of(store, run_id, shape):.2f} |", flush=True)
    if options.nsys_real is not None and options.nsys_kernels:
        base = options.nsys_real
        with sqlite3.connect(base) as connection:
            per_copy = connection.execute(
                "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        copies = max(1, options.nsys_kernels // per_copy)
        trace = options.out / f"nsys-real-x{copies}.sqlite"
        if not trace.exists():
            replicate(base, trace, copies)
        store, run_id = analyzed(trace, options.out / "nsys-real.db")
        for label, shape in (("none", None), ("num_hidden_layers 32", LAYERS_ONLY)):
            print(f"| {base.name} ×{copies} | {sizes(store, run_id)} | {label} | "
                  f"{best_of(store, run_id, shape):.2f} |", flush=True)


if __name__ == "__main__":
    main()
