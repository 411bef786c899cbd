"""The layer attribution on traces recorded on real GPUs: the TraceLens B200 vLLM gpt-oss trace
and H100 Qwen1.5 trace (module frames; recorded by others, skipped without
``$TRACEKIT_SHARED_TRACES``), and the H200 torch-profiler fixture recorded with shapes
(fixtures/h200: gemms.py multiplies by the weights of one Llama-3-8B layer)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tests.support.layers_scenario import assert_sums_match_groups, layer_rows
from tests.support.paths import H200_FIXTURES
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.layers.stage import attribute_layers
from tracekit.store import open_store
from tracekit.store.db import Store

B200 = "tracelens/b200__eager_trace.json.gz"
QWEN = "tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.redacted.json.gz"
#: gpt-oss-120b's config (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json)
GPT_OSS_120B = ModelShape(hidden_size=2880, intermediate_size=2880, num_attention_heads=64,
                          num_key_value_heads=8, head_dim=64, vocab_size=201088,
                          num_hidden_layers=36, num_experts=128)
#: Llama-3-8B's (https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json)
LLAMA_3_8B = ModelShape(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                        num_key_value_heads=8, head_dim=128, vocab_size=128256,
                        num_hidden_layers=32)


def _run(tmp_path: Path, trace: Path, shape: ModelShape | None,
         drop_frames: bool = False) -> tuple[Store, int]:
    store = open_store(str(tmp_path / "store.db"))
    run_id = analyze(store, [trace], AnalysisOptions()).run_id
    with store.begin() as connection:
        if drop_frames:  # the same trace as if recorded without with_stack
            connection.execute(text("DELETE FROM nvtx_ranges WHERE kind = 'module'"))
            connection.execute(text("UPDATE run_counts SET count = 0 "
                                    "WHERE name = 'module_frames'"))
        attribute_layers(connection, run_id, shape)
    assert_sums_match_groups(store, run_id)
    return store, run_id


def _by_layer(rows: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for row in rows:
        counts[(row["layer"], row["source"])] += row["launches"]
    return counts


def test_b200_vllm_gpt_oss_by_module_frames(shared_trace: Any, tmp_path: Path) -> None:
    """36 layers: QKVParallelLinear and RowParallelLinear under OAIAttention, the Linear router
    and FusedMoE under MLPBlock, lm_head under LogitsProcessor; with gpt-oss-120b's config the
    shapes agree (tp 8) and are never needed."""
    store, run_id = _run(tmp_path, shared_trace(B200), GPT_OSS_120B)
    rows = layer_rows(store, run_id)
    assert _by_layer(rows) == {("attention", "module"): 72, ("moe_router", "module"): 36,
                               ("moe_experts", "module"): 72, ("lm_head", "module"): 1}
    names = {row["name"][:24]: row["layer"] for row in rows}
    assert names["nvjet_tst_64x16_64x16_2x"] == "moe_router"
    assert names["bmm_MxE4m3_MxE2m1MxE4m3_"] == "moe_experts"
    assert not any("says" in row["detail"] for row in rows)  # no weaker source disagrees
    store.dispose()


def test_b200_vllm_gpt_oss_by_shapes_alone(shared_trace: Any, tmp_path: Path) -> None:
    """Without the frames: the addmm weights against gpt-oss-120b's dimensions at tp 8 (qkv
    640 × 2880, o 2880 × 512, router 128 × 2880 — also one rank's two KV heads at tp 4,
    dropped once the run's shapes say tp 8 — lm_head 25136 × 2880); the MoE GEMMs' op
    (vllm::moe_forward) has no weight shape, their kernel family says experts."""
    store, run_id = _run(tmp_path, shared_trace(B200), GPT_OSS_120B, drop_frames=True)
    rows = layer_rows(store, run_id)
    assert _by_layer(rows) == {("attention", "shapes"): 72, ("moe_router", "shapes"): 36,
                               ("moe_experts", "kernel_name"): 72, ("lm_head", "shapes"): 1}
    router = next(r["detail"] for r in rows if r["layer"] == "moe_router")
    assert "N=128 K=2880 is router" in router and "the run's shapes say tp 8" in router
    store.dispose()


def test_h100_qwen_hf_modules(shared_trace: Any, tmp_path: Path) -> None:
    """Hugging Face Linear under Qwen2Attention / Qwen2MLP; the launches the redacted trace
    lost their op and launch records for cannot inherit from a kernel that served both."""
    store, run_id = _run(tmp_path, shared_trace(QWEN), None)
    counts = _by_layer(layer_rows(store, run_id))
    assert counts[("attention", "module")] == 96  # 24 layers × q, k, v, o
    assert counts[("mlp", "module")] == 72  # 24 layers × gate, up, down
    assert counts[("unknown", "inherited")] == 73
    store.dispose()


def test_h200_fixture_by_its_real_shapes(tmp_path: Path) -> None:
    """gemms.py multiplies x by W[14336, 4096] (one Llama-3-8B gate/up projection) in every
    dtype and by W[4096, 4096] (q/o-shaped) with a bias and in fp64; bmm has no weight.
    Each variant ran 3 times in its step and once in the warm-up."""
    store, run_id = _run(tmp_path, H200_FIXTURES / "torch-trace.pt.trace.json.gz", LLAMA_3_8B)
    rows = layer_rows(store, run_id)
    counts = _by_layer(rows)
    assert counts == {("mlp", "shapes"): 64, ("attention", "shapes"): 16,
                      ("unknown", "none"): 8}
    mlp = " | ".join(row["detail"] for row in rows if row["layer"] == "mlp")
    for op in ("aten::mm", "aten::_scaled_mm", "aten::_int_mm", "aten::_weight_int4pack_mm"):
        assert f"{op} weight N=14336 K=4096 is gate_proj or up_proj at tp 1" in mlp, op
    attention = {row["name"][:24] for row in rows if row["layer"] == "attention"}
    assert any(name.startswith("sm90_xmma_gemm_f64f64") for name in attention)
    bmm = [row for row in rows if row["layer"] == "unknown"]
    assert {row["name"][:22] for row in bmm} == {"nvjet_sm90_tst_256x128", "nvjet_sm90_tst_64x8_64"}
    assert all("no weight shape that tells" in row["detail"] for row in bmm)
    store.dispose()


def test_h100_bert_encoder_modules(shared_trace: Any, tmp_path: Path) -> None:
    """An encoder's Hugging Face layout: BertIntermediate and BertOutput are the feed-forward,
    BertSelfOutput (inside BertAttention) the attention's output, the MLM head lm_head."""
    store, run_id = _run(tmp_path, shared_trace(
        "tracelens/h100__gaunernst_bert-small-uncased__1016001.redacted.json.gz"), None)
    assert _by_layer(layer_rows(store, run_id)) == {
        ("attention", "module"): 16, ("mlp", "module"): 8, ("lm_head", "module"): 2}
    store.dispose()
