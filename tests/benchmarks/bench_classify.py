"""Benchmark: classify 10,000 distinct kernel names (target: under one second).

Run: ``python tests/benchmarks/bench_classify.py [N] [--mangled]``. Names are the labelled
corpus varied into distinct strings (tile sizes, template numbers, suffixes), so the mix of
families and name lengths matches real traces; the rule set is loaded once, outside the timing.
Not collected by pytest (the file name does not start with ``test_``).

``--mangled`` times the worst case of the demangler instead: N distinct mangled names that the
C++ runtime's demangler cannot read (the corpus' Composable Kernel / aiter names with
``DF16b`` = ``std::bfloat16_t``, one template integer varied), so every one goes to the
binutils ``c++filt`` fallback, in one batch (``tracekit.classifier.demangle``). Real traces
hold tens to hundreds of distinct Composable Kernel names, not 10,000.

Classification is per distinct name and never loops over kernel records. Measured figures:
tests/benchmarks/README.md (bench_classify.py).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from tracekit.classifier import classify_names, load_ruleset

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


def distinct_mangled_names(count: int) -> list[str]:
    """``count`` distinct valid mangled names the C++ runtime's demangler cannot read."""
    base = [
        json.loads(line)["name"]
        for line in (CORPUS.parent / "amd.jsonl").read_text().splitlines()
        if "DF16b" in line and "..." not in json.loads(line)["name"]
    ]
    names: list[str] = []
    for number in range(count):
        name = base[number % len(base)]
        # the first template integer literal (Li<n>E) takes a new value: still a valid name
        start = name.index("ELi") + 3
        end = name.index("E", start)
        names.append(f"{name[:start]}{10_000 + number}{name[end:]}")
    return names


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 10_000
    t0 = time.perf_counter()
    ruleset = load_ruleset(use_env=False)
    t1 = time.perf_counter()
    names = distinct_mangled_names(count) if "--mangled" in sys.argv else distinct_names(count)
    t2 = time.perf_counter()
    results = classify_names(names, ruleset)
    t3 = time.perf_counter()
    unknown = sum(r.path == "unknown" for r in results)
    print(f"rules loaded: {len(ruleset.rules)} in {t1 - t0:.3f} s")
    print(
        f"classified {len(names)} distinct names in {t3 - t2:.3f} s "
        f"({(t3 - t2) / len(names) * 1e6:.1f} us/name); {unknown} unknown"
    )
    if t3 - t2 >= 1.0 and count <= 10_000 and "--mangled" not in sys.argv:
        raise SystemExit("slower than the 1 s target")


if __name__ == "__main__":
    main()
