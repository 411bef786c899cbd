"""The verdict per layer, end to end: traces in, ``tracekit analyze --json --fail-on error`` out.

Each case writes a synthetic trace (``tests/support/layers_scenario.py``: torch-profiler traces
of a small dense Llama and a Qwen2-MoE, with module frames and operand shapes that can be left
out; ``tracekit.synth.nsys`` for Nsight Systems exports), analyzes it with a real release's
checkpoint config (``tests/data/checkpoints/``) through the command line, and checks the layer
table, the findings and the exit code of ``--fail-on error`` — which must fail exactly on the
silent fallbacks and degraded paths. tests/findings/verdict_matrix.toml holds the judgement's
cases without traces.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support import paths
from tests.support.layers_scenario import (
    DENSE_SHAPE,
    DOWN,
    HEAD,
    PROJ,
    QUANT_FP8,
    Kernels,
    write_model_trace,
)
from tracekit.cli import cli
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

#: a CUTLASS block-scaled FP4 GEMM as vLLM builds it for sm120 (tests/corpus)
FP4_SM120 = (
    "void cutlass::device_kernel<vllm::enable_sm120_family<cutlass::gemm::kernel::GemmUniversal<"
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120TmaWarpSpecializedBlockScaled"
    "<3, 2>, cute::tuple<cutlass::nv_float4_t<cutlass::float_e2m1_t>>>>>>(Params)")
#: cuBLASLt's FP8 GEMM on sm90
FP8_SM90 = ("sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
#: Marlin with BF16 activations and NVFP4 weights (vLLM ScalarType ids)
MARLIN_FP4 = (
    "void marlin::Marlin<(long)1125899906909960, (long)562949953487106, (long)1125899906909960, "
    "(long)2814749767172868, 256, 1, 8, 8, true, 4, 8, false>(Params)")
RTX_5090 = ("NVIDIA GeForce RTX 5090", 12, 0)
H100 = ("NVIDIA H100 80GB HBM3", 9, 0)


def analyze(trace: Path, store: Path, *options: str) -> tuple[int, dict[str, Any]]:
    """``tracekit analyze TRACE --json --fail-on error``: its exit code and document."""
    result = CliRunner().invoke(cli, ["analyze", str(trace), "--store", str(store), "--json",
                                      "--fail-on", "error", *options])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def table(document: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """(phase, layer, path) → outcome of the document's layer table."""
    return {(row["phase"], row["layer"], row["ran"]): row["outcome"]
            for row in document["layers"]}


def rules(document: dict[str, Any]) -> set[str]:
    return {finding["rule"] for finding in document["findings"]}


def with_dimensions(folder: Path, checkpoint: str, dims: dict[str, Any]) -> Path:
    """A checkpoint folder: a real release's quantization config with the small synthetic
    model's dimensions (the trace's weight shapes are that model's)."""
    config = json.loads((paths.CHECKPOINTS / checkpoint).read_text(encoding="utf-8"))
    section = config.get("quantization_config", config)
    target = folder / "ckpt"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
        **dims, "quantization_config": section}), encoding="utf-8")
    return target


DENSE_DIMS = {"hidden_size": DENSE_SHAPE.hidden_size,
              "intermediate_size": DENSE_SHAPE.intermediate_size,
              "num_attention_heads": DENSE_SHAPE.num_attention_heads,
              "num_key_value_heads": DENSE_SHAPE.num_key_value_heads,
              "head_dim": DENSE_SHAPE.head_dim, "vocab_size": DENSE_SHAPE.vocab_size,
              "num_hidden_layers": DENSE_SHAPE.num_hidden_layers}
#: W4A4 NVFP4 attention on FP4 tensor cores, the MLP dequantized into BF16 GEMMs
PARTIAL = Kernels(attention=FP4_SM120, mlp=PROJ, down=DOWN, head=HEAD)


def test_a_partial_fallback_told_by_module_frames_fails_the_gate(tmp_path: Path) -> None:
    trace = write_model_trace(tmp_path / "t.json", kernels=PARTIAL, device=RTX_5090)
    code, document = analyze(trace, tmp_path / "s.db", "--model",
                             str(paths.CHECKPOINTS / "ct-nvfp4-w4a4.config.json"))
    outcomes = table(document)
    for phase in ("prefill", "decode"):
        assert outcomes[(phase, "attention", "fp4")] == "as_declared"
        assert outcomes[(phase, "mlp", "bf16")] == "silent_fallback"
        assert outcomes[(phase, "lm_head", "bf16")] == "excluded"
    assert all("module" in row["sources"] for row in document["layers"])
    assert code == 1 and "silent-fallback" in rules(document)
    # what the fallback costs is re-costed for the MLP's GEMMs, not the excluded lm_head's
    for item in document["roofline"]["fallback"]:
        mlp_ns = sum(row["ns"] for row in document["layers"]
                     if row["phase"] == item["phase"] and row["layer"] == "mlp")
        assert item["time_ns"] == mlp_ns
    decode = next(s for s in document["verdict"] if s.startswith("decode:"))
    assert decode.startswith("decode: the MLP (")
    assert "silent fallback; attention (" in decode and "lm_head (" in decode


def test_the_same_fallback_told_by_operand_shapes(tmp_path: Path) -> None:
    trace = write_model_trace(tmp_path / "t.json", kernels=PARTIAL, device=RTX_5090,
                              frames=False)
    checkpoint = with_dimensions(tmp_path, "ct-nvfp4-w4a4.config.json", DENSE_DIMS)
    code, document = analyze(trace, tmp_path / "s.db", "--model", str(checkpoint))
    outcomes = table(document)
    assert outcomes[("decode", "attention", "fp4")] == "as_declared"
    assert outcomes[("decode", "mlp", "bf16")] == "silent_fallback"
    assert outcomes[("decode", "lm_head", "bf16")] == "excluded"
    assert {s for row in document["layers"] for s in row["sources"]} <= {"shapes",
                                                                          "inherited"}
    assert code == 1


def test_the_same_fallback_told_by_launches_per_step(tmp_path: Path) -> None:
    """No frames, no shapes: the BF16 GEMMs are launched once per decoder layer each step,
    so they are not lm_head — a fallback of the decoder layers."""
    trace = write_model_trace(tmp_path / "t.json", kernels=PARTIAL, device=RTX_5090,
                              frames=False, shapes=False)
    checkpoint = with_dimensions(tmp_path, "ct-nvfp4-w4a4.config.json", DENSE_DIMS)
    code, document = analyze(trace, tmp_path / "s.db", "--model", str(checkpoint))
    outcomes = table(document)
    assert outcomes[("decode", "decoder_layers", "bf16")] == "silent_fallback"
    assert outcomes[("decode", "decoder_layers", "fp4")] == "as_declared"
    assert outcomes[("decode", "lm_head", "bf16")] == "excluded"
    assert code == 1


def test_nothing_telling_the_layers_is_said_and_never_a_confident_error(tmp_path: Path
                                                                        ) -> None:
    trace = write_model_trace(tmp_path / "t.json", kernels=PARTIAL, device=RTX_5090,
                              frames=False, shapes=False)
    code, document = analyze(trace, tmp_path / "s.db", "--expect", "fp4")
    outcomes = table(document)
    assert outcomes[("decode", "unknown", "fp4")] == "as_declared"
    assert outcomes[("decode", "unknown", "bf16")] == "undetermined"
    undetermined = [f for f in document["findings"] if f["rule"] == "layers-undetermined"]
    assert undetermined and {f["severity"] for f in undetermined} == {"warning"}
    assert "record_shapes=True" in undetermined[0]["message"]
    assert code == 0


def test_fp8_moe_with_untyped_fused_moe_is_judged_by_its_quantize_kernels(tmp_path: Path
                                                                          ) -> None:
    """vLLM's Triton fused_moe_kernel carries no dtype; the FP8 quantize kernel launched
    before each one tells it, so the most common FP8 MoE deployment on an H100 gets its
    verdict — next to the BF16 router and lm_head, which the checkpoint leaves 16-bit."""
    fp8 = Kernels(attention=FP8_SM90, mlp=FP8_SM90, down=FP8_SM90, head=HEAD, router=PROJ)
    trace = write_model_trace(tmp_path / "t.json", "moe", kernels=fp8, device=H100)
    code, document = analyze(trace, tmp_path / "s.db", "--model",
                             str(paths.CHECKPOINTS / "fp8-block-qwen3-30b-a3b"))
    outcomes = table(document)
    assert outcomes[("decode", "moe_experts", "fp8")] == "as_declared"
    assert outcomes[("decode", "attention", "fp8")] == "as_declared"
    assert outcomes[("decode", "moe_router", "bf16")] == "excluded"
    assert outcomes[("decode", "lm_head", "bf16")] == "excluded"
    moe = next(k for k in document["kernels"] if k["name"] == "fused_moe_kernel")
    assert (moe["path"], moe["evidence"]) == ("fp8", "neighbour")
    assert code == 0 and not rules(document) & {"silent-fallback", "degraded-path"}


def test_fp8_moe_without_anything_typing_the_experts_is_no_false_error(tmp_path: Path
                                                                       ) -> None:
    fp8 = Kernels(attention=FP8_SM90, mlp=FP8_SM90, down=FP8_SM90, head=HEAD, router=PROJ,
                  experts_quantize=None)
    trace = write_model_trace(tmp_path / "t.json", "moe", kernels=fp8, device=H100)
    code, document = analyze(trace, tmp_path / "s.db", "--model",
                             str(paths.CHECKPOINTS / "fp8-block-qwen3-30b-a3b"))
    outcomes = table(document)
    assert outcomes[("decode", "moe_experts", "unknown")] == "unknown"
    assert outcomes[("decode", "moe_router", "bf16")] == "excluded"
    assert code == 0 and "silent-fallback" not in rules(document)
    assert QUANT_FP8 not in {k["name"] for k in document["kernels"]}


def test_cuda_graph_replays_inherit_their_layers(tmp_path: Path) -> None:
    trace = write_model_trace(tmp_path / "t.json", kernels=PARTIAL, device=RTX_5090,
                              graph_steps=3)
    code, document = analyze(trace, tmp_path / "s.db", "--model",
                             str(paths.CHECKPOINTS / "ct-nvfp4-w4a4.config.json"))
    decode = [row for row in document["layers"] if row["phase"] == "decode"]
    assert {row["layer"] for row in decode} == {"attention", "mlp", "lm_head"}
    assert any("inherited" in row["sources"] for row in decode)
    assert code == 1


def test_a_graph_level_nsys_report_says_which_flag_records_the_kernels(tmp_path: Path) -> None:
    gemm = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
    trace = write_scenario(Scenario(ranks=[RankSpec(pid=700, steps=[
        StepSpec("execute_context_1(512)_generation_0(0)", [KernelSpec(gemm, 40_000, count=4)],
                 repeat=2),
        StepSpec("execute_context_0(0)_generation_4(4)", [KernelSpec(gemm, 9_000, count=4)],
                 graph=True, graph_nodes=False, repeat=6),
    ])]), tmp_path / "graphs.sqlite")
    checkpoint = tmp_path / "bf16"
    checkpoint.mkdir()
    shutil.copyfile(paths.CHECKPOINTS / "bf16.config.json", checkpoint / "config.json")
    code, document = analyze(trace, tmp_path / "s.db", "--model", str(checkpoint))
    gap = [f for f in document["findings"] if f["rule"] == "graph-kernels-missing"]
    assert len(gap) == 1 and gap[0]["severity"] == "warning"
    assert "6 CUDA graph launch(es)" in gap[0]["message"]
    hint = next(e["text"] for e in gap[0]["evidence"] if e["source"] == "hint")
    assert "--cuda-graph-trace=node" in hint
    assert code == 0
