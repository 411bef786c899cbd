"""Benchmark: classify 10,000 distinct kernel names (target: under one second).

Run: ``python tests/benchmarks/bench_classify.py [N]``. Names are the labelled corpus varied
into distinct strings (tile sizes, template numbers, suffixes), so the mix of families and
name lengths matches real traces; the rule set is loaded once, outside the timing.
Not collected by pytest (the file name does not start with ``test_``).

Recorded 2026-11-29 on the 2-core development container, 65 rules, while other sessions kept
the load average at 7-10: 0.37-0.87 s for 10,000 distinct names (37-87 us/name); rule loading
0.07-0.1 s. Classification is per distinct name and never loops over kernel records.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from tracekit.classify import classify_names, load_ruleset

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "kernel_names.jsonl"


def distinct_names(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct names derived from the corpus."""
    rng = random.Random(seed)
    base = [json.loads(line)["name"] for line in CORPUS.read_text().splitlines()]
    names: set[str] = set()
    while len(names) < count:
        name = rng.choice(base)
        variant = rng.randrange(4)
        if variant == 0:
            name = f"{name}_{rng.randrange(10**6)}"
        elif variant == 1:
            name = (
                name.replace("128", str(rng.choice([16, 32, 64, 96, 192, 256])), 1)
                + f"_v{rng.randrange(10**5)}"
            )
        elif variant == 2:
            name = f"{name[: rng.randrange(20, 120)]}…{rng.randrange(10**6)}"
        else:
            name = f"my_custom_kernel_{rng.randrange(10**9)}<float, {rng.randrange(512)}>"
        names.add(name)
    return sorted(names)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    t0 = time.perf_counter()
    ruleset = load_ruleset(use_env=False)
    t1 = time.perf_counter()
    names = distinct_names(count)
    t2 = time.perf_counter()
    results = classify_names(names, ruleset)
    t3 = time.perf_counter()
    unknown = sum(r.path == "unknown" for r in results)
    print(f"rules loaded: {len(ruleset.rules)} in {t1 - t0:.3f} s")
    print(
        f"classified {len(names)} distinct names in {t3 - t2:.3f} s "
        f"({(t3 - t2) / len(names) * 1e6:.1f} us/name); {unknown} unknown"
    )
    if t3 - t2 >= 1.0 and count <= 10_000:
        raise SystemExit("slower than the 1 s target")


if __name__ == "__main__":
    main()
