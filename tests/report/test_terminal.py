"""The terminal summary as a person reads it: at 80 and 120 columns, in the singular where a
count is one, with the operand types of each top kernel and the roof each roofline row sits
against. Real runs of synthetic nsys exports and of the synthetic Kineto fallback trace,
analyzed by the real pipeline."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import paths
from tests.support.roofline_scenario import write_fallback_trace
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.report.terminal import render
from tracekit.store.db import Store, open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

#: an FP8 × FP4 CUTLASS GEMM (MXFP8 activations, MXFP4 weights) that runs at FP8 rate
FP8_FP4_GEMM = ("cutlass3x_sm100_sptensorop_spgemm_e4m3_e2m1_f32_f16_f16_128x128x256_0_tnt_"
                "align32_q_1sm")
BF16_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
             "execute_segment_k_off_kernel__5x_cublas")
WIDTHS = (80, 120)


def printed(document: dict[str, Any], width: int) -> str:
    stream = io.StringIO()
    render(document, stream, width=width)
    return stream.getvalue()


def analyzed(store: Store, trace: Path, **options: Any) -> dict[str, Any]:
    return analyze(store, [trace], AnalysisOptions(**options)).document


@pytest.fixture(scope="module")
def terminal_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return open_store(str(tmp_path_factory.mktemp("terminal") / "store.db"), write=True)


@pytest.fixture(scope="module")
def fp8_fp4_run(terminal_store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One B200 rank, one prefill step: one FP8×FP4 GEMM launch, nothing else."""
    step = StepSpec("execute_context_1(128)_generation_0(0)", [KernelSpec(FP8_FP4_GEMM, 30_000)])
    scenario = Scenario(ranks=[RankSpec(pid=7, gpu_name="NVIDIA B200", compute_capability=(10, 0),
                                        sm_count=148, steps=[step])])
    trace = write_scenario(scenario, tmp_path_factory.mktemp("one") / "one.sqlite")
    return analyzed(terminal_store, trace)


@pytest.fixture(scope="module")
def make_trace_module(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("traces")
    return lambda scenario: write_scenario(scenario, folder / f"t{id(scenario)}.sqlite")


@pytest.fixture(scope="module")
def declared_run(terminal_store: Store, make_trace_module: Any) -> dict[str, Any]:
    """BF16 GEMMs on an H100 under a W8A8 FP8 checkpoint: a layer table with a fallback."""
    scenario = Scenario(ranks=[RankSpec(pid=4242, steps=[
        StepSpec("execute_context_1(512)_generation_0(0)",
                 [KernelSpec(BF16_GEMM, 40_000, count=4)], repeat=2),
        StepSpec("execute_context_0(0)_generation_4(4)", [KernelSpec(BF16_GEMM, 9_000, count=4)],
                 repeat=3)])])
    return analyzed(terminal_store, make_trace_module(scenario),
                    model=paths.CHECKPOINTS / "ct-w8a8-fp8.config.json")


def test_a_count_of_one_is_singular(fp8_fp4_run: dict[str, Any]) -> None:
    out = " ".join(printed(fp8_fp4_run, 120).split())
    assert "1 kernel · 1 unique name ·" in out
    assert "1 process · 1 thread" in out
    assert not re.search(r"\b1 (kernels|unique names|processes|threads|steps)\b", out), out


@pytest.mark.parametrize("width", WIDTHS)
def test_titles_stay_on_one_line_and_words_are_never_cut(declared_run: dict[str, Any],
                                                          width: int) -> None:
    out = printed(declared_run, width)
    lines = out.splitlines()
    for title in ("devices", "GEMM time by datatype path", "phases",
                  "layers (each judged against what it declares)", "top kernels by GPU time (of 1)",
                  "launching threads"):
        assert title in lines, f"{title!r} is not a line of its own at {width} columns:\n{out}"
    assert max(len(line) for line in lines if "┃" in line or "│" in line) <= width
    # a narrow terminal wraps prose between words; path words stay whole
    assert "weight_…" not in out and "silent fallba" not in out.replace("silent fallback", "")
    table = out[out.index("layers (each"):out.index("top kernels")]
    assert "bf16" in table and "fp8" in table


@pytest.mark.parametrize("width", WIDTHS)
def test_top_kernels_show_the_operand_types(fp8_fp4_run: dict[str, Any], width: int) -> None:
    out = printed(fp8_fp4_run, width)
    row = next(line for line in out.splitlines() if "cutlass3x" in line)
    # the path is the MMA's (FP8), the operands say the weights are FP4 (activations × weights)
    assert " fp8 " in row and "e4m3×e2m1" in row, out
    assert "operands" in out


@pytest.fixture(scope="module")
def fallback_document(terminal_store: Store,
                      tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    trace = write_fallback_trace(tmp_path_factory.mktemp("fallback") / "fallback.json")
    return analyzed(terminal_store, trace, model=paths.CHECKPOINTS / "ct-nvfp4-w4a4.config.json")


def test_a_bandwidth_bound_row_names_the_bandwidth_roof(fallback_document: dict[str, Any]
                                                        ) -> None:
    out = " ".join(printed(fallback_document, 140).split())
    # prefill is compute-bound under the BF16 roof; decode is bandwidth-bound at 1.79 TB/s
    assert "compute (BF16 roof 210 TFLOP/s)" in out
    assert "bandwidth (1.79 TB/s roof)" in out
    assert "bandwidth (BF16" not in out


def test_no_hint_promises_log_lines_that_are_not_printed(fallback_document: dict[str, Any]
                                                         ) -> None:
    silent = [f for f in fallback_document["findings"] if f["rule"] == "silent-fallback"]
    assert silent, fallback_document["findings"]
    for finding in silent:
        assert not any(item.get("source") == "log" for item in finding["evidence"])
        hints = [item["text"] for item in finding["evidence"] if item.get("source") == "hint"]
        assert hints and not any("below" in hint for hint in hints), hints
    assert "log lines below" not in printed(fallback_document, 140)


def test_a_trace_without_shapes_says_record_shapes_not_unlinked(terminal_store: Store,
                                                                shared_trace: Any) -> None:
    """AlexNet's GEMMs all sit inside aten::linear / aten::cudnn_convolution, but the trace has
    no record_shapes: the reason says that, and how to record it."""
    document = analyzed(terminal_store, shared_trace(
        "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"))
    out = " ".join(printed(document, 140).split())
    assert "not linked to a framework op" not in out
    assert "recorded without operand shapes" in out and "record_shapes=True" in out
    # its cuDNN implicit-GEMM convolutions are GEMM time, and the summary says so
    assert "of it convolutions" in out and "gemm (conv)" in out
    assert document["summary"]["convolution_gemm_ns"] > 0
