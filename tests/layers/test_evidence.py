"""Each piece of layer evidence on its own: module class chains, layer range texts, weight
shapes against a config, launches per step, kernel families, and how calls combine."""

from __future__ import annotations

import pytest

from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.layers.counts import count_call
from tracekit.layers.kernels import kernel_call
from tracekit.layers.markers import decide_path, parse, path_layer
from tracekit.layers.model import Call, decide
from tracekit.layers.modules import class_role, decide_chain, frame_class, moe_mlp_classes
from tracekit.layers.shapes import Signature, read_signatures, run_degree, weight_fits

LLAMA_8B = ModelShape(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, vocab_size=128256,
                      num_hidden_layers=32)
GPT_OSS = ModelShape(hidden_size=2880, intermediate_size=2880, num_attention_heads=64,
                     num_key_value_heads=8, head_dim=64, vocab_size=201088, num_experts=128,
                     num_hidden_layers=36)


# -- module frames ---------------------------------------------------------------------------

def test_frame_class_drops_the_prefix_and_the_instance_number() -> None:
    assert frame_class("nn.Module: QKVParallelLinear_12") == "QKVParallelLinear"
    assert frame_class("nn.Module: Qwen2_5_VLModel_0") == "Qwen2_5_VLModel"
    assert frame_class("nn.Module: Linear") == "Linear"


B200_CHAINS = [
    ["GptOssForCausalLM", "TransformerBlock", "OAIAttention", "QKVParallelLinear"],
    ["GptOssForCausalLM", "TransformerBlock", "OAIAttention", "RowParallelLinear"],
    ["GptOssForCausalLM", "TransformerBlock", "MLPBlock", "Linear"],
    ["GptOssForCausalLM", "TransformerBlock", "MLPBlock", "FusedMoE"],
    ["LogitsProcessor"],
    ["GptOssForCausalLM", "VocabParallelEmbedding"],
]


def test_gpt_oss_chains_of_the_b200_trace() -> None:
    """vLLM's gpt-oss: the Linear inside MLPBlock (which holds FusedMoE) is the router."""
    moe_mlps = moe_mlp_classes(B200_CHAINS)
    assert moe_mlps == {"MLPBlock"}
    layers = [decide_chain(chain, moe_mlps, "module").layer for chain in B200_CHAINS]
    assert layers == ["attention", "attention", "moe_router", "moe_experts", "lm_head",
                      "embedding"]


@pytest.mark.parametrize(("chain", "layer"), [
    (["LlamaForCausalLM", "LlamaModel", "LlamaDecoderLayer", "LlamaAttention", "Linear"],
     "attention"),
    (["LlamaForCausalLM", "LlamaModel", "LlamaDecoderLayer", "LlamaMLP", "Linear"], "mlp"),
    (["LlamaForCausalLM", "Linear"], "lm_head"),
    (["Qwen2MoeForCausalLM", "Qwen2MoeModel", "Qwen2MoeDecoderLayer", "Qwen2MoeSparseMoeBlock",
      "ReplicatedLinear"], "moe_router"),
    (["Qwen2MoeSparseMoeBlock", "Qwen2MoeMLP", "MergedColumnParallelLinear"], "moe_experts"),
    (["MixtralSparseMoeBlock", "MixtralBlockSparseTop2MLP", "Linear"], "moe_experts"),
    (["Qwen2VLForConditionalGeneration", "Qwen2VisionTransformerPretrainedModel",
      "Qwen2VLVisionBlock", "VisionAttention", "Linear"], "vision"),
    (["LlamaDecoderLayer", "Linear"], "decoder_layers"),
    (["DeepseekV2DecoderLayer", "DeepseekV2MLAAttention", "MergedColumnParallelLinear"],
     "attention"),
    (["LlamaModel", "LlamaRotaryEmbedding"], None),
    (["Qwen2MoeSparseMoeBlock", "SiLU"], None),
    (["MyWrapper", "Linear"], None),
])
def test_class_chains(chain: list[str], layer: str | None) -> None:
    call = decide_chain(chain, moe_mlp_classes([chain]), "module")
    assert call.layer == layer, call.detail
    assert call.source == "module" and " › ".join(chain[-4:]) in call.detail


def test_unknown_classes_are_transparent() -> None:
    assert class_role("MyCustomWrapper") is None
    call = decide_chain(["LlamaMLP", "MyCustomWrapper", "Linear"], frozenset(), "module")
    assert call.layer == "mlp"


# -- layer NVTX ranges -----------------------------------------------------------------------

def test_the_pythooks_dict_text_names_the_module_path() -> None:
    label = parse("{'Module': 'LlamaForCausalLM.model.layers.3.mlp.down_proj', "
                  "'TrainableParams': {'weight': [4096, 14336]}, 'Inputs': [[8, 14336]]}")
    assert label is not None and (label.kind, label.value, label.format) == (
        "path", "LlamaForCausalLM.model.layers.3.mlp.down_proj", "pythooks")
    assert parse("execute_context_0(0)_generation_8(8)") is None
    assert parse("Deepseekv3MoE") == parse("Deepseekv3MoE")
    assert parse("Deepseekv3MoE").kind == "class"  # type: ignore[union-attr]


@pytest.mark.parametrize(("path", "layer"), [
    ("LlamaForCausalLM.model.layers.0.self_attn.qkv_proj", "attention"),
    ("model.model.layers.3.mlp.experts", "moe_experts"),
    ("Qwen3MoeForCausalLM.model.layers.1.mlp.gate", "moe_router"),
    ("GptOssForCausalLM.model.layers.0.mlp.router", "moe_router"),
    ("LlamaForCausalLM.logits_processor", "lm_head"),
    ("LlamaForCausalLM.lm_head", "lm_head"),
    ("LlamaForCausalLM.model.layers.7", "decoder_layers"),
    ("LlamaForCausalLM.model", None),
])
def test_module_paths(path: str, layer: str | None) -> None:
    assert path_layer(path) == layer
    assert decide_path(path).layer == layer


# -- shapes ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "k", "layers"), [
    (6144, 4096, {"attention"}),  # qkv_proj at tp 1
    (768, 4096, {"attention"}),  # qkv_proj at tp 8 ((32 + 2·8) · 128 / 8)
    (14336, 4096, {"mlp"}),
    (28672 // 4, 4096, {"mlp"}),  # gate_up_proj at tp 4
    (4096, 1792, {"mlp"}),  # down_proj at tp 8
    (128256, 4096, {"lm_head"}),
    (16032, 4096, {"lm_head"}),  # lm_head at tp 8
    (1000, 4096, set()),
])
def test_llama_8b_weights(n: int, k: int, layers: set[str]) -> None:
    assert {fit.layer for fit in weight_fits(n, k, LLAMA_8B)} == layers


def test_a_config_without_a_dimension_never_matches_what_needs_it() -> None:
    partial = ModelShape(hidden_size=4096, intermediate_size=14336)
    assert {fit.layer for fit in weight_fits(14336, 4096, partial)} == {"mlp"}
    assert weight_fits(6144, 4096, partial) == []  # no heads: no attention reading


def test_the_run_degree_drops_readings_at_other_degrees() -> None:
    """gpt-oss: the router (128 × 2880) is also two KV heads of one rank at tp 4; the
    run's qkv_proj (5120 × 2880 at tp 1) says tp 1, which leaves the router."""
    router = Signature("aten::mm", '["c10::BFloat16", "c10::BFloat16"]',
                       "[[8, 2880], [2880, 128]]")
    qkv = Signature("aten::mm", '["c10::BFloat16", "c10::BFloat16"]',
                    "[[8, 2880], [2880, 5120]]")
    alone = read_signatures([router], GPT_OSS)[router]
    assert alone is not None and alone.layer is None and alone.ambiguous
    assert "moe_router" in alone.detail and "attention" in alone.detail
    together = read_signatures([router, qkv], GPT_OSS)
    assert together[router] is not None and together[router].layer == "moe_router"  # type: ignore[union-attr]
    assert together[qkv] is not None and together[qkv].layer == "attention"  # type: ignore[union-attr]
    assert run_degree([weight_fits(5120, 2880, GPT_OSS)]) == 1


def test_ops_without_a_weight_say_nothing() -> None:
    bmm = Signature("aten::bmm", '["c10::BFloat16", "c10::BFloat16"]',
                    "[[32, 8, 128], [32, 128, 4096]]")
    custom = Signature("vllm::moe_forward", '["c10::BFloat16"]', "[[8, 2880]]")
    no_shapes = Signature("aten::mm", None, None)
    assert read_signatures([bmm, custom, no_shapes], LLAMA_8B) == {
        bmm: None, custom: None, no_shapes: None}


# -- launches per step -----------------------------------------------------------------------

def test_launches_per_step() -> None:
    per_layer = count_call({64: 10, 128: 1}, layers=32)
    assert per_layer is not None and per_layer.layer == "decoder_layers"
    assert "2×/4×" not in per_layer.detail and "num_hidden_layers (32)" in per_layer.detail
    once = count_call({1: 40}, layers=32)
    assert once is not None and once.layer == "lm_head" and once.source == "launch_count"
    assert count_call({1: 40}, layers=None) is None  # nothing says it is a decoder's forward
    assert count_call({3: 16}, layers=32) is None  # the H200 fixture: 3 per step
    assert count_call({1: 1}, layers=32) is None  # one step tells nothing
    assert count_call({1: 5, 2: 5}, layers=32) is None


# -- kernel families -------------------------------------------------------------------------

def test_kernel_families() -> None:
    grouped = kernel_call("fused_moe_kernel", "grouped_gemm", "triton-untyped-moe")
    assert grouped is not None and grouped.layer == "moe_experts"
    assert kernel_call("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm", "nvjet") is None
    dense = kernel_call("gemm_Bfloat16_E2m1E2m1_Fp32_t128x8x512u2_sm100f", "gemm",
                        "trtllm-gen-gemm")
    assert dense is None


# -- combining -------------------------------------------------------------------------------

def test_the_strongest_source_that_names_a_group_decides() -> None:
    module = Call("attention", "module", "frames say attention")
    shapes = Call("mlp", "shapes", "weight says mlp")
    chosen = decide([module, shapes])
    assert (chosen.layer, chosen.source) == ("attention", "module")
    assert "shapes says mlp" in chosen.detail
    vague = decide([Call("decoder_layers", "module", "in a decoder layer"),
                    Call("attention", "shapes", "q_proj")])
    assert (vague.layer, vague.source) == ("attention", "shapes")
    unknown = decide([Call(None, "shapes", "fits two", ambiguous=True)])
    assert (unknown.layer, unknown.source, unknown.detail) == ("unknown", "shapes", "fits two")
    assert decide([]).source == "none"
