"""`tracekit analyze` grows linearly with the trace, per input kind, on real shapes.

Each input is a real trace replicated with fresh ids (``tests/benchmarks/replicate.py``): the
shape a longer profile of the same program has. The analysis of 8× the copies must take at most
10× the time of the base (after a warm-up, in one process), a ratio that machine speed cancels
out of. A quadratic join hides on small synthetic inputs and shows here: on the torch trace
with shapes, the classifier's kernel ↔ CPU-op join made 8× the copies take ~19× the time.

Base sizes are chosen so that the per-copy work, not the fixed cost of loading rules and
classifying the (unchanging) unique names, dominates the base run. The fixtures recorded on
an H200 run in CI; real traces recorded by others (``tests/conftest.py: shared_traces_dir``)
join them where present.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.benchmarks.replicate import replicate
from tests.support.paths import H200_FIXTURES as FIXTURES
from tests.support.paths import shared_traces_dir
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.store import open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

GROWTH = 8
MAX_RATIO = 10.0

#: (id, trace, base copies): the fixtures made by tracekit's own capture on an H200
FIXTURE_INPUTS = [
    ("kineto-h200", FIXTURES / "torch-trace.pt.trace.json.gz", 4),
    ("cupti-h200", FIXTURES / "cupti.jsonl.gz", 2),
    ("ncu-h200", FIXTURES / "ncu.csv", 4),
]
#: the same, for the real traces recorded by others (skipped when they are absent)
SHARED_INPUTS = [
    ("kineto-b200-vllm", "tracelens/b200__eager_trace.json.gz", 2),
    ("kineto-h100-qwen", "tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.redacted.json.gz", 2),
    ("kineto-a100-nccl", "hta/nccl_parser_config__nccl_data.json.gz", 2),
    ("nsys-h100-wan", "nsys-ai/h100_2gpu_1s.sqlite", 8),
    ("nsys-h100-mfu", "nsys-ai/mfu_2gpu_before.sqlite", 8),
    ("rocprof-mi350x", "tracelens-rocprof/908_results.json.gz", 1),
]


def cpu_seconds() -> float:
    """CPU time of this process (its threads included) and of its finished children (the
    workers that read a big file in ranges, ``kineto_split``)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def analyze_seconds(trace: Path, store_path: Path) -> float:
    """CPU time of the whole analysis (ingest, every stage, the document) into a new store.

    CPU time (``cpu_seconds``), not wall time: what other processes do on a busy machine then
    does not enter the ratio. The work is SQL and Python, in this process and its workers.
    """
    store = open_store(str(store_path))
    try:
        start = cpu_seconds()
        analyze(store, [trace], AnalysisOptions())
        return cpu_seconds() - start
    finally:
        store.dispose()


def assert_linear(source: Path, base_copies: int, tmp_path: Path) -> None:
    suffix = "".join(s for s in source.suffixes if s != ".gz")
    base = tmp_path / f"base{suffix}"
    big = tmp_path / f"big{suffix}"
    replicate(source, base, base_copies)
    replicate(source, big, base_copies * GROWTH)
    assert_grows_linearly(analyze_seconds, base, big, tmp_path)


def assert_grows_linearly(seconds: Callable[[Path, Path], float], base: Path, big: Path,
                          tmp_path: Path) -> None:
    """``big`` (GROWTH x ``base``) takes at most MAX_RATIO x the time: one warm-up, the best of
    two base runs, and a second look at the big one only when the first was over the bound
    (a busy machine only ever slows a run down). ``seconds(input, store_path)`` times one run."""
    seconds(base, tmp_path / "warm.db")
    small = min(seconds(base, tmp_path / f"base{i}.db") for i in range(2))
    large = seconds(big, tmp_path / "big.db")
    if large > MAX_RATIO * small:
        large = min(large, seconds(big, tmp_path / "big2.db"))
    assert large <= MAX_RATIO * small, (
        f"{GROWTH}x the input took {large / small:.1f}x the time "
        f"({small:.2f} s -> {large:.2f} s): something in analyze grows faster than the trace")


@pytest.mark.slow
@pytest.mark.parametrize(("trace", "copies"), [(t, c) for _, t, c in FIXTURE_INPUTS],
                         ids=[i for i, _, _ in FIXTURE_INPUTS])
def test_fixture_traces_analyze_linearly(trace: Path, copies: int, tmp_path: Path) -> None:
    assert_linear(trace, copies, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("relative", "copies"), [(r, c) for _, r, c in SHARED_INPUTS],
                         ids=[i for i, _, _ in SHARED_INPUTS])
def test_real_traces_analyze_linearly(relative: str, copies: int, tmp_path: Path) -> None:
    base = shared_traces_dir()
    if base is None or not (base / relative).exists():
        pytest.skip(f"real trace {relative} not available")
    assert_linear(base / relative, copies, tmp_path)


@pytest.mark.slow
def test_synthetic_nsys_export_analyzes_linearly(tmp_path: Path) -> None:
    """nsys's real schema, two ranks, marker steps with prefill and decode GEMMs."""
    gemm = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
    scenario = Scenario(ranks=[RankSpec(pid=100 + rank, steps=[
        StepSpec("execute_context_1(512)_generation_0(0)",
                 [KernelSpec(gemm, 40_000, count=8)], repeat=25),
        StepSpec("execute_context_0(0)_generation_8(8)",
                 [KernelSpec(gemm, 9_000, count=8)], graph=True, repeat=100),
    ]) for rank in range(2)])
    source = write_scenario(scenario, tmp_path / "one.sqlite")
    assert_linear(source, 2, tmp_path)


@pytest.mark.slow
def test_a_folder_of_rank_files_analyzes_linearly(tmp_path: Path) -> None:
    """Two Kineto rank files read as parts and merged into one run (in-process: --jobs 1):
    8x the copies in each file, at most 10x the time."""
    from tests.benchmarks.replicate import kineto_ranks

    source = FIXTURES / "torch-trace.pt.trace.json.gz"
    base, big = tmp_path / "base", tmp_path / "big"
    kineto_ranks(source, base, 2, copies=2)
    kineto_ranks(source, big, 2, copies=2 * GROWTH)

    def seconds(folder: Path, store_path: Path) -> float:
        store = open_store(str(store_path))
        try:
            start = time.process_time()
            analyze(store, [folder], AnalysisOptions(jobs=1))
            return time.process_time() - start
        finally:
            store.dispose()

    assert_grows_linearly(seconds, base, big, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rocpd", "rocprof-json", "rocprof-csv"])
def test_synthetic_rocprof_outputs_analyze_linearly(kind: str, tmp_path: Path) -> None:
    """The synthetic vLLM-on-ROCm job (HIP launches, graph replays, ROCTx steps) in each
    rocprofv3 format: ~19,000 dispatches at the base, replicated (rocpd, JSON) or laid out
    8x longer (CSV, one folder per size)."""
    from tests.support.rocprof_scenario import amd_job
    from tracekit.synth.rocprof import write_csv, write_json, write_rocpd

    if kind == "rocprof-csv":
        base, big = tmp_path / "base", tmp_path / "big"
        write_csv(amd_job(repeat=500), base)
        write_csv(amd_job(repeat=500 * GROWTH), big)
        assert_grows_linearly(analyze_seconds, base, big, tmp_path)
        return
    if kind == "rocpd":
        source = write_rocpd(amd_job(repeat=500), tmp_path / "one.rocpd", schema="3.0.3")
    else:
        [source, _] = write_json(amd_job(repeat=250), tmp_path / "json")
        source = source.rename(tmp_path / "one_results.json")
    assert_linear(source, 1, tmp_path)
