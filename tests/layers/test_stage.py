"""The layer stage on synthetic traces whose truth is known: torch-profiler traces of a dense
and a MoE model (module frames, shapes, CUDA-graph replays; tests/support/layers_scenario.py),
nsys exports with vLLM's, SGLang's and TensorRT-LLM's layer ranges and with no evidence at all
(tracekit.synth, nsys's real schema). On every input the rows of each (name, phase) sum to
that name's GEMM launches and time in kernel_groups."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.layers_scenario import (
    DENSE_SHAPE,
    DOWN,
    FUSED_MOE,
    HEAD,
    HIDDEN,
    MOE_SHAPE,
    PROJ,
    assert_sums_match_groups,
    layer_rows,
    layer_table,
    replicate_in_store,
    write_model_trace,
)
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.layers.stage import attribute_layers
from tracekit.store import open_store
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, StepSpec

PREFILL = "execute_context_1(64)_generation_0(0)"
DECODE = "execute_context_0(0)_generation_8(8)"


def attributed(store: Store, trace: Path, shape: ModelShape | None) -> int:
    """Analyze ``trace``, then attribute its layers with ``shape``; returns the run id."""
    run_id = analyze(store, [trace], AnalysisOptions()).run_id
    with store.begin() as connection:
        attribute_layers(connection, run_id, shape)
    assert_sums_match_groups(store, run_id)
    return run_id


# -- torch-profiler traces -------------------------------------------------------------------

def test_dense_model_by_module_frames(store: Store, tmp_path: Path) -> None:
    """Frames alone: one kernel serves attention and MLP projections and is split between
    them; lm_head is the Linear directly in LlamaForCausalLM; graph replays of a kernel that
    serves one group inherit it, of one that serves two stay unknown."""
    trace = write_model_trace(tmp_path / "dense.json", "dense", graph_steps=1)
    run_id = attributed(store, trace, None)
    table = layer_table(store, run_id)
    assert table == {
        (PROJ, "prefill", "attention", "module"): 8, (PROJ, "prefill", "mlp", "module"): 4,
        (PROJ, "decode", "attention", "module"): 16, (PROJ, "decode", "mlp", "module"): 8,
        (PROJ, "decode", "unknown", "inherited"): 12,
        (DOWN, "prefill", "mlp", "module"): 2, (DOWN, "decode", "mlp", "module"): 4,
        (DOWN, "decode", "mlp", "inherited"): 2,
        (HEAD, "prefill", "lm_head", "module"): 1, (HEAD, "decode", "lm_head", "module"): 2,
        (HEAD, "decode", "lm_head", "inherited"): 1,
    }
    rows = {(r["name"], r["phase"], r["layer"], r["source"]): r for r in layer_rows(store, run_id)}
    replay = rows[(PROJ, "decode", "unknown", "inherited")]["detail"]
    assert "CUDA-graph replay" in replay and "attention 67%, mlp 33%" in replay
    assert rows[(DOWN, "decode", "mlp", "inherited")]["confidence"] == "medium"
    assert rows[(PROJ, "decode", "attention", "module")]["confidence"] == "high"
    head = rows[(HEAD, "prefill", "lm_head", "module")]["detail"]
    assert head == ("module frames LlamaForCausalLM › Linear: a Linear directly inside "
                    "LlamaForCausalLM is its output projection")


def test_dense_model_by_shapes(store: Store, tmp_path: Path) -> None:
    """No frames, the model's config: each weight shape names its projection; q/o
    (256 × 256) would also be down_proj at tp 2, the run's other shapes say tp 1."""
    trace = write_model_trace(tmp_path / "dense.json", "dense", frames=False, graph_steps=1)
    run_id = attributed(store, trace, DENSE_SHAPE)
    table = layer_table(store, run_id)
    assert table[(PROJ, "prefill", "attention", "shapes")] == 8
    assert table[(PROJ, "prefill", "mlp", "shapes")] == 4
    assert table[(DOWN, "decode", "mlp", "shapes")] == 4
    assert table[(HEAD, "decode", "lm_head", "shapes")] == 2
    # PROJ's replays: its launches are attention and MLP, the launch count says per layer
    assert table[(PROJ, "decode", "decoder_layers", "launch_count")] == 12
    assert table[(DOWN, "decode", "mlp", "inherited")] == 2
    details = {r["detail"] for r in layer_rows(store, run_id) if r["source"] == "shapes"}
    assert any("q_proj at tp 1 or o_proj at tp 1" in d and "the run's shapes say tp 1" in d
               for d in details)


def test_without_evidence_every_gemm_is_unknown_with_the_reason(store: Store,
                                                               tmp_path: Path) -> None:
    trace = write_model_trace(tmp_path / "dense.json", "dense", frames=False, shapes=False)
    run_id = attributed(store, trace, None)
    rows = layer_rows(store, run_id)
    reason = next(r["detail"] for r in rows if r["name"] == PROJ)
    assert "no nn.Module frames" in reason and "record_shapes" not in reason
    assert "--model" in reason
    # without a config not even "once per step" speaks: nothing says this is an LLM's forward
    assert {r["layer"] for r in rows} == {"unknown"}


def test_moe_model_by_module_frames(store: Store, tmp_path: Path) -> None:
    """vLLM's layout: the router is the linear directly in the sparse MoE block, the shared
    expert's MLP an expert, the untyped Triton MoE GEMM an expert by its frame and, in
    replays, by its kernel family."""
    trace = write_model_trace(tmp_path / "moe.json", "moe", graph_steps=1)
    run_id = attributed(store, trace, MOE_SHAPE)
    table = layer_table(store, run_id)
    assert table[(FUSED_MOE, "decode", "moe_experts", "module")] == 8
    assert table[(FUSED_MOE, "decode", "moe_experts", "kernel_name")] == 4
    assert table[(PROJ, "decode", "moe_router", "module")] == 4
    assert table[(PROJ, "decode", "moe_experts", "module")] == 4
    assert table[(PROJ, "decode", "attention", "module")] == 8
    assert table[(DOWN, "decode", "moe_experts", "module")] == 4
    assert table[(DOWN, "decode", "moe_experts", "inherited")] == 2
    assert table[(HEAD, "prefill", "lm_head", "module")] == 1


def test_analyze_with_model_attributes_by_shapes(tmp_path: Path) -> None:
    """``--model`` gives the stage its dimensions through the analysis."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": HIDDEN, "intermediate_size": 512,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64,
        "vocab_size": 1100, "num_hidden_layers": 2, "torch_dtype": "bfloat16"}))
    trace = write_model_trace(tmp_path / "dense.json", "dense", frames=False)
    store = open_store(str(tmp_path / "store.db"))
    try:
        run_id = analyze(store, [trace], AnalysisOptions(model=model)).run_id
        table = layer_table(store, run_id)
        assert table[(DOWN, "decode", "mlp", "shapes")] == 4
        assert_sums_match_groups(store, run_id)
    finally:
        store.dispose()


# -- nsys exports with layer ranges ----------------------------------------------------------

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
LM_HEAD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501


def pythooks(path: str, weight: list[int], inputs: list[list[int]]) -> str:
    """The range text PytHooks pushes (vLLM nvtx_pytorch_hooks.py: '{}'.format(marker_dict),
    'Module' first, then 'TrainableParams', 'Inputs')."""
    return "{}".format({"Module": path, "TrainableParams": {"weight": weight}, "Inputs": inputs})


def vllm_layer(prefix: str, index: int, m: int) -> list[KernelSpec]:
    """One decoder layer's GEMMs, each inside the ranges vLLM's layer-wise tracing pushes."""
    model = f"{prefix}.model"
    layer = f"{model}.layers.{index}"

    def ranges(module: str, weight: list[int], k: int) -> tuple[str, ...]:
        return (pythooks(prefix, [], [[m]]), pythooks(model, [], [[m]]),
                pythooks(layer, [], [[m, 4096]]),
                pythooks(f"{layer}.{module.split('.')[0]}", [], [[m, 4096]]),
                pythooks(f"{layer}.{module}", weight, [[m, k]]))

    return [KernelSpec(GEMM, 9_000, ranges=ranges("self_attn.qkv_proj", [6144, 4096], 4096)),
            KernelSpec(GEMM, 7_000, ranges=ranges("self_attn.o_proj", [4096, 4096], 4096)),
            KernelSpec(GEMM, 20_000, ranges=ranges("mlp.gate_up_proj", [28672, 4096], 4096)),
            KernelSpec(GEMM, 11_000, ranges=ranges("mlp.down_proj", [4096, 14336], 14336))]


def test_vllm_layerwise_nvtx_ranges(store: Store, make_trace: Callable[..., Path]) -> None:
    """vLLM --enable-layerwise-nvtx-tracing in eager mode; decode replayed as CUDA graphs
    (whose launches are the graph's: they inherit, or stay unknown)."""
    prefix = "LlamaForCausalLM"
    head = KernelSpec(LM_HEAD, 5_000, ranges=(pythooks(prefix, [], [[8]]), pythooks(
        f"{prefix}.logits_processor", [], [[8, 4096]])))
    eager = [kernel for index in range(2) for kernel in vllm_layer(prefix, index, 8)] + [head]
    trace = make_trace([RankSpec(pid=300, steps=[
        StepSpec(PREFILL, eager, repeat=2),
        StepSpec(DECODE, [KernelSpec(GEMM, 5_000, count=8)], graph=True, repeat=3),
        StepSpec(DECODE, [KernelSpec(LM_HEAD, 5_000)], repeat=3)])])
    run_id = attributed(store, trace, ModelShape(num_hidden_layers=2))
    table = layer_table(store, run_id)
    assert table == {
        (GEMM, "prefill", "attention", "nvtx"): 8, (GEMM, "prefill", "mlp", "nvtx"): 8,
        # replays of a kernel that served attention and MLP: 8 per step, 4 × 2 layers
        (GEMM, "decode", "decoder_layers", "launch_count"): 24,
        (LM_HEAD, "prefill", "lm_head", "nvtx"): 2,
        # decode's lm_head ran outside the graph without ranges: once per step
        (LM_HEAD, "decode", "lm_head", "launch_count"): 3,
    }
    rows = {(r["name"], r["phase"], r["layer"]): r for r in layer_rows(store, run_id)}
    assert rows[(GEMM, "prefill", "attention")]["detail"].startswith(
        "layer range LlamaForCausalLM.model.layers.")


def test_sglang_and_trtllm_layer_ranges(store: Store, make_trace: Callable[..., Path]) -> None:
    """SGLang's module prefix ``model``; TensorRT-LLM's architectures joined by '|'; its
    layer-wise benchmarks' class-named ranges (a GatedMLP inside Deepseekv3MoE is the shared
    expert, the gate an own class)."""
    sglang = [KernelSpec(GEMM, 4_000, ranges=(pythooks("model.model.layers.0.mlp.experts", [],
                                                       [[8, 2048]]),))]
    trtllm = [KernelSpec(LM_HEAD, 4_000, ranges=(pythooks(
        "DeepseekV3ForCausalLM|DeepseekV3ForCausalLM.model.layers.1.self_attn", [], [[8]]),))]
    classes = [KernelSpec(LM_HEAD, 3_000, ranges=("Deepseekv3MoE", "GatedMLP")),
               KernelSpec(GEMM, 3_000, ranges=("Deepseekv3MoE", "DeepseekV3Gate")),
               KernelSpec(GEMM, 3_000, ranges=("MLA",))]
    trace = make_trace([RankSpec(pid=301, steps=[StepSpec(PREFILL, sglang + trtllm + classes)])])
    run_id = attributed(store, trace, None)
    assert layer_table(store, run_id) == {
        (GEMM, "prefill", "moe_experts", "nvtx"): 1, (GEMM, "prefill", "moe_router", "nvtx"): 1,
        (GEMM, "prefill", "attention", "nvtx"): 1,
        (LM_HEAD, "prefill", "attention", "nvtx"): 1,
        (LM_HEAD, "prefill", "moe_experts", "nvtx"): 1}


def test_nsys_export_without_evidence(store: Store, make_trace: Callable[..., Path]) -> None:
    """Step markers only: the kernel family and the launch count speak; the rest is unknown,
    saying which evidence would decide."""
    trace = make_trace([RankSpec(pid=302, steps=[
        StepSpec(PREFILL, [KernelSpec(GEMM, 30_000, count=8), KernelSpec(FUSED_MOE, 9_000),
                           KernelSpec(LM_HEAD, 5_000)], repeat=2),
        StepSpec(DECODE, [KernelSpec(GEMM, 9_000, count=7), KernelSpec(LM_HEAD, 5_000)],
                 repeat=3)])])
    run_id = attributed(store, trace, ModelShape(hidden_size=4096, num_hidden_layers=4))
    table = layer_table(store, run_id)
    assert table == {
        (GEMM, "prefill", "decoder_layers", "launch_count"): 16,
        (GEMM, "decode", "unknown", "none"): 21,  # 7 per step: no multiple of 4
        (FUSED_MOE, "prefill", "moe_experts", "kernel_name"): 2,
        (LM_HEAD, "prefill", "lm_head", "launch_count"): 2,
        (LM_HEAD, "decode", "lm_head", "launch_count"): 3}
    reason = next(r["detail"] for r in layer_rows(store, run_id) if r["layer"] == "unknown")
    assert "--enable-layerwise-nvtx-tracing" in reason and "record_shapes=True" in reason


def test_a_run_without_gemms_writes_nothing(store: Store, make_trace: Callable[..., Path]) -> None:
    elementwise = "void at::native::vectorized_elementwise_kernel<4>(int)"
    trace = make_trace([RankSpec(pid=303, steps=[StepSpec(PREFILL, [KernelSpec(elementwise,
                                                                               1_000)])])])
    run_id = analyze(store, [trace], AnalysisOptions()).run_id
    with store.begin() as connection:
        assert attribute_layers(connection, run_id, DENSE_SHAPE) == 0
    assert layer_table(store, run_id) == {}


def test_a_new_model_reattributes_a_stored_run(store: Store, tmp_path: Path) -> None:
    trace = write_model_trace(tmp_path / "dense.json", "dense", frames=False)
    run_id = attributed(store, trace, None)
    assert {key[2] for key in layer_table(store, run_id) if key[0] == DOWN} == {"unknown"}
    with store.begin() as connection:
        attribute_layers(connection, run_id, DENSE_SHAPE)
    assert {key[2] for key in layer_table(store, run_id) if key[0] == DOWN} == {"mlp"}
    assert_sums_match_groups(store, run_id)


# -- cost --------------------------------------------------------------------------------------

def test_the_stage_grows_linearly(tmp_path: Path) -> None:
    """8× the launches (with their module frames and ops) costs at most ~12× the time: every
    launch is a few index seeks, the frames a window pass and a seek each, the groupings
    sort (measured 7.0-7.2× from 3,680 to 29,440 kernels, 10× on 10× the B200 trace in
    bench_layers.py); a seek that scanned the frames would be ~64×. Timed in turns (best of
    five), so a slow spell of the machine falls on both sizes."""

    def build(copies: int) -> tuple[Any, int]:
        store = open_store(str(tmp_path / f"scale{copies}.db"))
        trace = write_model_trace(tmp_path / "base.json", "moe", graph_steps=1)
        run_id = analyze(store, [trace], AnalysisOptions()).run_id
        replicate_in_store(store, run_id, copies)
        return store, run_id

    def once(store: Any, run_id: int) -> float:
        with store.begin() as connection:
            start = time.process_time()
            attribute_layers(connection, run_id, MOE_SHAPE)
            return time.process_time() - start

    small, large = build(40), build(320)
    once(*small), once(*large)
    turns = [(once(*small), once(*large)) for _ in range(5)]
    ratio = min(big for _, big in turns) / min(little for little, _ in turns)
    assert_sums_match_groups(*large)
    assert ratio <= 12, ratio
    for store, _ in (small, large):
        store.dispose()
