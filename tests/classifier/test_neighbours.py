"""Neighbour evidence: a GEMM whose name carries no types (vLLM/SGLang's Triton
``fused_moe_kernel``) launched right after an activation-quantize kernel on the same stream
takes that kernel's activation type, below counters and op dtypes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tests.support.layers_scenario import FUSED_MOE, QUANT_FP8, write_model_trace
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, StepSpec

INT8_QUANT = ("void vllm::dynamic_scaled_int8_quant_kernel<c10::BFloat16, float>"
              "(const c10::BFloat16 *, signed char *, float *, int)")
FP4_QUANT = "cvt_fp16_to_fp4"
NORM = ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, float, int, int)")
PREFILL = "execute_context_1(64)_generation_0(0)"


def classification(store: Store, run_id: int, name: str) -> dict[str, Any]:
    with store.connect() as connection:
        return dict(connection.execute(text(
            "SELECT c.* FROM classifications c JOIN kernel_names n ON n.id = c.name_id "
            "WHERE c.run_id = :run_id AND n.name = :name"),
            {"run_id": run_id, "name": name}).mappings().one())


def analyzed(store: Store, trace: Path) -> int:
    return analyze(store, [trace], AnalysisOptions()).run_id


def test_fused_moe_after_fp8_quantize_is_fp8(store: Store,
                                             make_trace: Callable[..., Path]) -> None:
    trace = make_trace([RankSpec(pid=500, steps=[StepSpec(PREFILL, [
        KernelSpec(QUANT_FP8, 2_000), KernelSpec(FUSED_MOE, 30_000), KernelSpec(NORM, 1_000),
        KernelSpec(QUANT_FP8, 2_000), KernelSpec(FUSED_MOE, 20_000)], repeat=3)])])
    result = classification(store, analyzed(store, trace), FUSED_MOE)
    assert (result["op"], result["path"], result["activations"], result["evidence"],
            result["confidence"]) == ("grouped_gemm", "fp8", "e4m3", "neighbour", "medium")
    assert result["reason"].startswith(
        "100% of its 6 launches follow the fp8 activation-quantize kernel "
        "vllm::scaled_fp8_quant_kernel_strided on the same stream: e4m3 activations")


def test_int8_quantize_gives_int8(store: Store, make_trace: Callable[..., Path]) -> None:
    trace = make_trace([RankSpec(pid=501, steps=[StepSpec(PREFILL, [
        KernelSpec(INT8_QUANT, 2_000), KernelSpec(FUSED_MOE, 30_000)], repeat=2)])])
    result = classification(store, analyzed(store, trace), FUSED_MOE)
    assert (result["path"], result["activations"], result["evidence"]) == (
        "int8", "int8", "neighbour")


def test_fp4_activations_on_a_gpu_without_fp4_stay_unknown(
        store: Store, make_trace: Callable[..., Path]) -> None:
    """An H100 has no FP4 MMA: the quantize kernel's own FP4 is refused there (feasibility),
    so it says nothing of its neighbour; on a B200 it does."""
    steps = [StepSpec(PREFILL, [KernelSpec(FP4_QUANT, 2_000), KernelSpec(FUSED_MOE, 30_000)],
                      repeat=2)]
    on_h100 = classification(store, analyzed(store, make_trace([RankSpec(pid=502,
                                                                          steps=steps)])),
                             FUSED_MOE)
    assert (on_h100["path"], on_h100["evidence"]) == ("unknown", "name")
    b200 = RankSpec(pid=503, gpu_name="NVIDIA B200", compute_capability=(10, 0), steps=steps)
    on_b200 = classification(store, analyzed(store, make_trace([b200])), FUSED_MOE)
    assert (on_b200["path"], on_b200["activations"], on_b200["evidence"]) == (
        "fp4", "e2m1", "neighbour")


def test_a_minority_of_launches_after_a_quantize_kernel_says_nothing(
        store: Store, make_trace: Callable[..., Path]) -> None:
    trace = make_trace([RankSpec(pid=504, steps=[StepSpec(PREFILL, [
        KernelSpec(QUANT_FP8, 2_000), KernelSpec(FUSED_MOE, 30_000), KernelSpec(NORM, 1_000),
        KernelSpec(FUSED_MOE, 30_000), KernelSpec(FUSED_MOE, 30_000)], repeat=2)])])
    result = classification(store, analyzed(store, trace), FUSED_MOE)
    assert (result["path"], result["evidence"]) == ("unknown", "name")


def test_a_quantize_kernel_on_another_stream_is_no_neighbour(
        store: Store, make_trace: Callable[..., Path]) -> None:
    trace = make_trace([RankSpec(pid=505, steps=[StepSpec(PREFILL, [
        KernelSpec(QUANT_FP8, 2_000, stream=9), KernelSpec(FUSED_MOE, 30_000)], repeat=2)])])
    result = classification(store, analyzed(store, trace), FUSED_MOE)
    assert result["path"] == "unknown"


def test_the_moe_torch_trace(store: Store, tmp_path: Path) -> None:
    """vllm::moe_forward's BF16 input types are not trusted; the quantize kernel before each
    fused_moe_kernel launch is."""
    run_id = analyzed(store, write_model_trace(tmp_path / "moe.json", "moe"))
    result = classification(store, run_id, FUSED_MOE)
    assert (result["path"], result["evidence"]) == ("fp8", "neighbour")
    assert "vllm::moe_forward is not a plain matmul" in result["reason"]


def test_op_dtypes_outrank_the_neighbour(store: Store, tmp_path: Path) -> None:
    """An untyped Triton GEMM launched by aten::mm with BF16 inputs is BF16, whatever ran
    before it."""
    import json

    untyped = "triton_tem_fused_mm_t_0"
    events: list[dict[str, Any]] = []
    for index in range(2):
        base = 100.0 * index
        for offset, (kernel, external) in enumerate([(QUANT_FP8, None), (untyped, 7 + index)]):
            correlation = 10 * index + offset + 1
            launch: dict[str, Any] = {"correlation": correlation}
            if external is not None:
                launch["External id"] = external
                events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                               "tid": 1, "ts": base + 10 * offset, "dur": 5,
                               "args": {"External id": external,
                                        "Input type": ["c10::BFloat16", "c10::BFloat16"],
                                        "Input Dims": [[8, 64], [64, 64]]}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": base + 10 * offset + 1, "dur": 1,
                           "args": launch})
            events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                           "ts": base + 10 * offset + 3, "dur": 2,
                           "args": {**launch, "device": 0, "stream": 7}})
    trace = tmp_path / "untyped.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "deviceProperties": [
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]}))
    result = classification(store, analyzed(store, trace), untyped)
    assert (result["path"], result["evidence"]) == ("bf16", "op_dtypes")
