"""How each format's entries decide modules: matching kinds, every quant_method engines accept,
per-module overrides, the legacy compression_config key, the model's dimensions, and a broken
--model. Small configs here are written for the test (each says which documented layout it
follows); the real releases are tests/data/checkpoints/<case>/ (test_checkpoint_cases.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support import paths
from tracekit.cli import cli
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.files import method_row, quant_methods
from tracekit.expect.checkpoint.layers import declare_layers
from tracekit.expect.checkpoint.matching import matcher
from tracekit.expect.checkpoint.shape import shape_from_config
from tracekit.expect.context import load_expectations

CHECKPOINTS = paths.CHECKPOINTS
LLAMA_DIMS = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
              "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 8,
              "vocab_size": 32000, "torch_dtype": "bfloat16"}


def write_model(folder: Path, quantization: dict[str, Any] | None = None,
                **files: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(LLAMA_DIMS)
    if quantization is not None:
        config["quantization_config"] = quantization
    (folder / "config.json").write_text(json.dumps(config))
    for name, content in files.items():
        (folder / f"{name}.json").write_text(json.dumps(content))
    return folder


def statuses(folder: Path) -> dict[str, str]:
    return {layer: d.status for layer, d in declare_layers(read_declaration(folder)).items()}


# ---------------------------------------------------------------------------------------------
# Matching kinds


@pytest.mark.parametrize(
    ("pattern", "kind", "name", "hit"),
    [
        ("re:.*self_attn.*", "ct", "model.layers.3.self_attn.q_proj", True),
        ("re:.*mlp.gate$", "ct", "model.layers.3.mlp.gate_proj", False),
        ("lm_head", "ct", "language_model.lm_head", False),  # exact names only
        ("model.layers.0*", "wildcard", "model.layers.0.mlp.down_proj", True),
        ("model.layers.1.*", "wildcard", "model.layers.10.mlp.down_proj", False),
        ("model.layers.0.self_attn", "wildcard", "model.layers.0.self_attn.o_proj", True),
        ("mlp.gate", "substring", "model.layers.0.mlp.gate_proj", True),  # AutoAWQ's semantics
        ("gate", "dotted", "model.layers.0.block_sparse_moe.gate", True),
        ("gate", "dotted", "model.layers.0.mlp.gate_proj", False),
        ("model.layers.*.self_attn", "dotted", "model.layers.7.self_attn.q_proj", True),
        (r"model\.layers\.([2-9]\d*|[1-9]\d+)\..*", "regex", "model.layers.1.mlp.up_proj", False),
        (r"model\.layers\.([2-9]\d*|[1-9]\d+)\..*", "regex", "model.layers.12.mlp.up_proj", True),
        ("re:(unbalanced", "ct", "anything", False),  # a pattern no engine compiles matches nothing
    ],
)
def test_matching_kinds(pattern: str, kind: str, name: str, hit: bool) -> None:
    assert matcher(pattern, kind)(name) is hit


# ---------------------------------------------------------------------------------------------
# Every quant_method vLLM or SGLang accept is read or not understood, never an error

#: the names the brief of this work listed, each must be in the table
LISTED = ["torchao", "auto-round", "hqq", "fp_quant", "moe_wna16", "gptq_marlin_24",
          "petit_nvfp4", "exl3", "experts_int8", "inc", "awq_marlin", "gguf", "w8a8_int8",
          "w8a8_fp8"]


@pytest.mark.parametrize("method", LISTED)
def test_listed_methods_are_in_the_table(method: str) -> None:
    assert method_row(method) is not None


def test_every_table_row_cites_its_engines() -> None:
    for name, row in quant_methods().items():
        assert row.get("reader"), name
        assert name == "trtllm" or row.get("engines"), name
        if row["reader"] == "not_understood":
            assert row.get("reason"), name


@pytest.mark.parametrize("method", sorted(quant_methods()))
def test_every_method_gives_a_declaration(method: str, tmp_path: Path) -> None:
    folder = write_model(tmp_path / method, {"quant_method": method, "bits": 4,
                                             "group_size": 128})
    declaration = read_declaration(folder)
    layers = declare_layers(declaration)
    if declaration.not_understood is not None:
        assert declaration.path == "unknown"
        assert all("not understood" in d.reason for d in layers.values())
        assert layers["lm_head"].status == "not_targeted"
    else:
        assert declaration.path != "unknown" or declaration.method in {"gguf"}
    assert declaration.shape is not None and declaration.shape.num_hidden_layers == 4


@pytest.mark.parametrize("spelling", ["modelopt-fp4", "MODELOPT_FP4", "gptq-marlin", "awq"])
def test_method_spellings(spelling: str) -> None:
    assert method_row(spelling) is not None


def test_unknown_method_is_not_understood_with_the_layers_it_cannot_judge(
        tmp_path: Path) -> None:
    declaration = read_declaration(write_model(tmp_path / "m", {"quant_method": "sparkle"}))
    assert declaration.not_understood is not None and "'sparkle'" in declaration.not_understood
    layers = declare_layers(declaration)
    assert layers["attention"].status == "quantized"
    assert layers["attention"].scheme is not None and layers["attention"].scheme.path == "unknown"
    assert layers["lm_head"].sixteen_bit


# ---------------------------------------------------------------------------------------------
# Per-module declarations of the formats


def test_legacy_compression_config_is_compressed_tensors_not_bf16() -> None:
    declaration = read_declaration(CHECKPOINTS / "ct-legacy-fp8-phi-3-mini")
    assert (declaration.method, declaration.path) == ("compressed-tensors", "fp8")
    assert any("compression_config" in note for note in declaration.notes)


def test_modelopt_mixed_precision_from_a_quant_cfg_json(tmp_path: Path) -> None:
    # TensorRT-LLM layout: hf_quant_config.json says MIXED_PRECISION, quant_cfg.json lists
    # the layers (written here after TensorRT-LLM's quant_cfg.json keys)
    folder = write_model(
        tmp_path / "mixed",
        hf_quant_config={"producer": {"name": "modelopt"},
                         "quantization": {"quant_algo": "MIXED_PRECISION",
                                          "kv_cache_quant_algo": "FP8",
                                          "exclude_modules": ["lm_head"]}},
        quant_cfg={"quant_algo": "MIXED_PRECISION", "quantized_layers": {
            f"model.layers.{i}.{leaf}": {"quant_algo": algo}
            for i in range(4)
            for leaf, algo in [("self_attn.q_proj", "FP8"), ("self_attn.k_proj", "FP8"),
                               ("self_attn.v_proj", "FP8"), ("self_attn.o_proj", "FP8"),
                               ("mlp.gate_proj", "NVFP4"), ("mlp.up_proj", "NVFP4"),
                               ("mlp.down_proj", "W4A16_NVFP4")]}})
    layers = declare_layers(read_declaration(folder))
    assert layers["attention"].status == "quantized"
    assert layers["attention"].scheme is not None and layers["attention"].scheme.path == "fp8"
    assert layers["mlp"].status == "mixed"
    assert {s.path for s in layers["mlp"].schemes} == {"fp4", "weight_only"}
    assert layers["mlp"].counts == (8, 4)
    assert layers["lm_head"].status == "excluded"


def test_mixed_precision_without_layers_anywhere_is_not_understood(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m", {"quant_method": "modelopt",
                                          "quant_algo": "MIXED_PRECISION"})
    declaration = read_declaration(folder)
    assert declaration.not_understood and "quantized_layers" in declaration.not_understood


def test_gptq_lm_head_true_quantizes_lm_head(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "g", {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                          "desc_act": False, "lm_head": True})
    layers = declare_layers(read_declaration(folder))
    assert layers["lm_head"].status == "quantized"
    assert "lm_head: true" in layers["lm_head"].reason


def test_gptq_modules_in_block_to_quantize_leaves_the_rest_16_bit(tmp_path: Path) -> None:
    # the optimum GPTQ key as TheBloke/dolphin-2.5-mixtral-8x7b-GPTQ uses it
    folder = write_model(tmp_path / "g", {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                          "modules_in_block_to_quantize": [
                                              ["self_attn.k_proj", "self_attn.v_proj",
                                               "self_attn.q_proj"], ["self_attn.o_proj"]]})
    got = statuses(folder)
    assert got["attention"] == "quantized" and got["mlp"] == "not_targeted"


def test_gptqmodel_dynamic_skips_and_overrides_per_layer(tmp_path: Path) -> None:
    layers = declare_layers(read_declaration(CHECKPOINTS / "gptqmodel-dynamic-tinyllama"))
    mlp = layers["mlp"]
    by_scheme = dict(zip((s.scheme for s in mlp.schemes), mlp.counts, strict=True))
    assert by_scheme == {"W16A16": 60, "W4A16": 3, "W8A16": 3}  # 20 skipped, 1 + 1 layers
    assert "dynamic" in mlp.reason


def test_quark_w4a8_weight_list_stores_int4_and_layer_configs_override(tmp_path: Path) -> None:
    # AMD Quark export keys (vLLM quark.py): a weight spec list, per-name layer_quant_config
    fp8 = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}
    int4 = {"dtype": "int4", "qscheme": "per_channel", "is_dynamic": False}
    folder = write_model(tmp_path / "q", {
        "quant_method": "quark", "exclude": ["lm_head"],
        "global_quant_config": {"weight": [fp8, int4], "input_tensors": fp8},
        "layer_quant_config": {"*down_proj": {"weight": fp8, "input_tensors": fp8}},
        "layer_type_quant_config": {}})
    layers = declare_layers(read_declaration(folder))
    assert layers["attention"].scheme is not None
    assert (layers["attention"].scheme.scheme, layers["attention"].scheme.path) == ("W4A8", "fp8")
    assert layers["mlp"].status == "mixed"
    assert {s.scheme for s in layers["mlp"].schemes} == {"W4A8", "W8A8"}


@pytest.mark.parametrize(
    ("config", "scheme", "path"),
    [
        # transformers TorchAoConfig serialization
        ({"quant_method": "torchao", "quant_type": {"default": {
            "_type": "Int4WeightOnlyConfig", "_data": {"group_size": 128}}}}, "W4A16",
         "weight_only"),
        ({"quant_method": "torchao", "quant_type": {"default": {
            "_type": "Float8DynamicActivationFloat8WeightConfig"}}}, "W8A8", "fp8"),
        # HQQ as transformers' HqqConfig writes it
        ({"quant_method": "hqq", "quant_config": {"weight_quant_params": {
            "nbits": 4, "group_size": 64}}, "skip_modules": ["lm_head"]}, "W4A16", "weight_only"),
        # FP-Quant (transformers FPQuantConfig)
        ({"quant_method": "fp_quant", "forward_dtype": "nvfp4"}, "W4A4", "fp4"),
        # AutoRound: weight-only int4, and NVFP4 with activations
        ({"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True}, "W4A16",
         "weight_only"),
        ({"quant_method": "auto-round", "bits": 4, "act_bits": 4, "data_type": "nv_fp",
          "group_size": 16}, "W4A4", "fp4"),
        # SGLang names that fix the scheme
        ({"quant_method": "w8a8_int8"}, "W8A8", "int8"),
        ({"quant_method": "w8a8_fp8"}, "W8A8", "fp8"),
        ({"quant_method": "moe_wna16", "bits": 4, "group_size": 64,
          "linear_quant_method": "awq"}, "W4A16", "weight_only"),
    ],
)
def test_methods_read_into_schemes(config: dict[str, Any], scheme: str, path: str,
                                   tmp_path: Path) -> None:
    declaration = read_declaration(write_model(tmp_path / "m", config))
    assert declaration.not_understood is None
    attention = declare_layers(declaration)["attention"]
    assert attention.scheme is not None
    assert (attention.scheme.scheme, attention.scheme.path) == (scheme, path)


def test_experts_only_methods_leave_the_other_linears_16_bit(tmp_path: Path) -> None:
    config = dict(LLAMA_DIMS, num_local_experts=8, model_type="mixtral",
                  quantization_config={"quant_method": "experts_int8"})
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    got = statuses(folder)
    assert got["moe_experts"] == "quantized" and got["attention"] == "not_targeted"
    assert got["mlp"] == "not_targeted"


def test_sglang_w4afp8_declares_experts_and_linear_layers_apart(tmp_path: Path) -> None:
    layers = declare_layers(read_declaration(write_model(tmp_path / "w",
                                                         {"quant_method": "w4afp8"})))
    assert layers["moe_experts"].scheme is not None and layers["attention"].scheme is not None
    assert layers["moe_experts"].scheme.scheme == "W4A8"
    assert layers["attention"].scheme.scheme == "W8A8"


def test_a_target_naming_the_vision_tower_quantizes_it(tmp_path: Path) -> None:
    fp8 = {"num_bits": 8, "type": "float", "strategy": "tensor"}
    folder = write_model(tmp_path / "v", {"quant_method": "compressed-tensors", "config_groups": {
        "text": {"targets": ["Linear"], "weights": fp8, "input_activations": fp8},
        "vision": {"targets": ["re:visual.*"], "weights": fp8}}})
    layers = declare_layers(read_declaration(folder))
    assert layers["vision"].status == "quantized"
    assert layers["vision"].scheme is not None and layers["vision"].scheme.scheme == "W8A16"
    assert layers["lm_head"].status == "not_targeted"  # "Linear" does not reach lm_head


# ---------------------------------------------------------------------------------------------
# Dimensions


def test_shape_of_latent_attention_and_moe_layers() -> None:
    shape = shape_from_config(json.loads(
        (CHECKPOINTS / "fp8-block-deepseek-v3" / "config.json").read_text()))
    assert shape is not None and shape.latent_attention
    assert [shape.layer_is_moe(i) for i in (0, 2, 3, 60)] == [False, False, True, True]
    assert shape.expert_intermediate_size == 2048


def test_shape_of_qwen_dense_layers_llama4_interleave_and_linear_attention() -> None:
    qwen = shape_from_config({"model_type": "qwen3_moe", "num_hidden_layers": 4,
                              "num_experts": 8, "mlp_only_layers": [1]})
    assert qwen is not None and [qwen.layer_is_moe(i) for i in range(4)] == [
        True, False, True, True]
    llama4 = shape_from_config({"text_config": {"num_hidden_layers": 4, "num_local_experts": 16,
                                                "interleave_moe_layer_step": 2}})
    assert llama4 is not None and [llama4.layer_is_moe(i) for i in range(4)] == [
        False, True, False, True]
    hybrid = shape_from_config(json.loads(
        (CHECKPOINTS / "modelopt-mixed-qwen3.6-27b" / "config.json").read_text()))
    assert hybrid is not None and hybrid.has_vision is True
    assert [hybrid.attention_kind(i) for i in range(4)] == ["linear", "linear", "linear", "full"]


# ---------------------------------------------------------------------------------------------
# A broken --model


class _Options:
    def __init__(self, model: Path) -> None:
        self.model = model
        self.expect = None
        self.gpu = None
        self.logs: tuple[Path, ...] = ()


def test_invalid_json_model_error_names_file_and_line() -> None:
    result = load_expectations(_Options(CHECKPOINTS / "broken.json"))
    assert result.declaration is None and result.model_error is not None
    assert "broken.json" in result.model_error and "line 2" in result.model_error
    assert "\n" not in result.model_error


def test_unreadable_config_is_a_model_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    folder = write_model(tmp_path / "locked")
    (folder / "config.json").chmod(0)
    result = load_expectations(_Options(folder))
    assert result.model_error is not None and "cannot read" in result.model_error


def test_a_binary_config_is_a_model_error(tmp_path: Path) -> None:
    folder = tmp_path / "garbled"
    folder.mkdir()
    (folder / "config.json").write_bytes(b"\xff\xfe\x00 not text")
    result = load_expectations(_Options(folder))
    assert result.model_error is not None and "config.json" in result.model_error


def test_not_understood_is_a_warning_not_a_model_error(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m", {"quant_method": "exl3"})
    result = load_expectations(_Options(folder))
    assert result.model_error is None and result.declaration is not None
    assert any("not understood" in w for w in result.warnings)


def test_fail_on_with_a_broken_model_says_what_is_wrong(make_trace, simple_scenario,
                                                        tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    result = CliRunner().invoke(cli, ["analyze", str(make_trace(simple_scenario)), "--store",
                                      str(store), "--model", str(CHECKPOINTS / "broken.json"),
                                      "--fail-on", "error"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1 and "broken.json: not valid JSON" in lines[0]
    assert "line 2" in lines[0] and "analyzing without" not in lines[0]
    assert not store.exists()
