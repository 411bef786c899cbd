"""The expected path per layer group × GPU × engine (rules/_kernel_paths.toml).

Each case is one row family of the table, stated as an engine's source says it; the checkpoint
configs of tests/data/checkpoints give the declared schemes where one exists.
"""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tracekit.errors import TracekitError
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.declaration import LayerScheme
from tracekit.expect.checkpoint.layers import LayerDeclaration, declare_layers
from tracekit.expect.kernel_paths import (
    ENGINES,
    KINDS,
    combine_engines,
    declared_format,
    expected_path,
    kernel_path_table,
    rank,
    scheme_path,
)
from tracekit.gpus import known_archs
from tracekit.vocabulary import PATHS

NVIDIA = ("sm70", "sm75", "sm80", "sm86", "sm87", "sm89", "sm90", "sm100", "sm103", "sm110",
          "sm120", "sm121")
AMD = ("gfx90a", "gfx942", "gfx950")


def scheme(weights: str | None, activations: str | None, quant: str = "") -> LayerScheme:
    path = ("weight_only" if activations is None else
            "fp4" if activations in ("nvfp4", "mxfp4") else
            "fp8" if activations.startswith(("fp8", "mxfp8")) else "int8")
    return LayerScheme(("*",), weights, activations, "", path, quant or (weights or "").upper())


def quantized(layer: str, declared: LayerScheme) -> LayerDeclaration:
    return LayerDeclaration(layer, "quantized", declared, "test")


NVFP4 = scheme("nvfp4", "nvfp4", "NVFP4")
NVFP4A16 = scheme("nvfp4", None, "NVFP4")
MXFP4A16 = scheme("mxfp4", None, "MXFP4")
FP8 = scheme("fp8", "fp8", "FP8")
FP8_BLOCK = scheme("fp8", "fp8", "FP8 block-128")
INT8 = scheme("int8", "int8", "INT8")
GPTQ = scheme("int4", None, "INT4")
Q4_K = scheme("q4_k", "q8_1", "Q4_K_M")
GGUF_MXFP4 = scheme("mxfp4", "q8_1", "MXFP4_MOE")


@pytest.mark.parametrize(("declared", "layer", "arch", "engine", "path", "kind"), [
    # NVFP4 W4A4: native from sm100, Marlin before it (hardware-limited), refused by TRT-LLM
    (NVFP4, "mlp", "sm100", "vllm", "fp4", "native"),
    (NVFP4, "moe_experts", "sm103", "vllm", "fp4", "native"),
    (NVFP4, "mlp", "sm120", "vllm", "fp4", "native"),
    (NVFP4, "mlp", "sm90", "vllm", "weight_only", "hardware_fallback"),
    (NVFP4, "moe_experts", "sm80", "vllm", "weight_only", "hardware_fallback"),
    (NVFP4, "mlp", "sm90", "sglang", "weight_only", "hardware_fallback"),
    (NVFP4, "mlp", "sm100", "sglang", "fp4", "native"),
    (NVFP4, "mlp", "sm90", "trtllm", "unknown", "unsupported"),
    (NVFP4, "mlp", "sm100", "trtllm", "fp4", "native"),
    (NVFP4, "mlp", "gfx942", "vllm", "bf16", "hardware_fallback"),
    # NVFP4 W4A16: weight-only by design everywhere
    (NVFP4A16, "mlp", "sm100", "vllm", "weight_only", "by_design"),
    (NVFP4A16, "mlp", "sm120", "sglang", "weight_only", "by_design"),
    # FP8: Marlin W8A16 before sm89, native from sm89
    (FP8, "attention", "sm80", "vllm", "weight_only", "hardware_fallback"),
    (FP8, "attention", "sm86", "sglang", "weight_only", "hardware_fallback"),
    (FP8, "attention", "sm89", "vllm", "fp8", "native"),
    (FP8, "attention", "sm90", "trtllm", "fp8", "native"),
    (FP8, "attention", "sm80", "trtllm", "unknown", "unsupported"),
    # block FP8: vLLM's dense list puts FP8 Marlin before Triton on sm89; its MoE oracle does not
    (FP8_BLOCK, "mlp", "sm89", "vllm", "weight_only", "engine_fallback"),
    (FP8_BLOCK, "moe_experts", "sm89", "vllm", "fp8", "native"),
    (FP8_BLOCK, "mlp", "sm89", "sglang", "fp8", "native"),
    (FP8_BLOCK, "mlp", "sm90", "vllm", "fp8", "native"),
    (FP8_BLOCK, "mlp", "sm120", "trtllm", "unknown", "unsupported"),
    # INT8 W8A8
    (INT8, "mlp", "sm80", "vllm", "int8", "native"),
    (INT8, "mlp", "sm100", "vllm", "unknown", "unknown"),
    # GPTQ / AWQ: weight-only by design
    (GPTQ, "mlp", "sm90", "vllm", "weight_only", "by_design"),
    (GPTQ, "moe_experts", "sm80", "sglang", "weight_only", "by_design"),
    (GPTQ, "mlp", "sm100", "trtllm", "unknown", "unsupported"),
    (GPTQ, "mlp", "sm80", "llama.cpp", "unknown", "unsupported"),
    # GGUF: int8 activations in llama.cpp, cuBLAS FP16 for large batches on Volta
    (Q4_K, "mlp", "sm89", "llama.cpp", "int8", "native"),
    (Q4_K, "mlp", "sm70", "llama.cpp", "fp16", "by_design"),
    (Q4_K, "mlp", "sm90", "sglang", "int8", "native"),
    (Q4_K, "mlp", "sm90", "trtllm", "unknown", "unsupported"),
])
def test_expected_path_row_families(declared: LayerScheme, layer: str, arch: str, engine: str,
                                    path: str, kind: str) -> None:
    got = expected_path(quantized(layer, declared), arch, engine)
    assert (got.path, got.kind) == (path, kind), got
    assert got.cite, "every answer names its source"
    assert got.engine == engine


def test_better_paths_beyond_the_declaration() -> None:
    gpt_oss = quantized("moe_experts", MXFP4A16)
    assert expected_path(gpt_oss, "sm100", "vllm").better == {"fp8"}
    assert expected_path(gpt_oss, "sm100", "sglang").better == {"fp8"}
    assert expected_path(gpt_oss, "sm90", "vllm").better == frozenset()
    assert expected_path(gpt_oss, "sm120", "vllm").kernels.startswith("Marlin MXFP4")
    llama = expected_path(quantized("moe_experts", GGUF_MXFP4), "sm120", "llama.cpp")
    assert (llama.path, llama.better) == ("int8", {"fp4"})
    # llama.cpp's native FP4 MMQ is the mma.sync one of sm120/121, not sm100's tcgen05
    assert expected_path(quantized("moe_experts", GGUF_MXFP4), "sm100", "llama.cpp").better \
        == frozenset()
    assert expected_path(quantized("mlp", FP8_BLOCK), "sm89", "vllm").better == {"fp8"}


def test_unknown_engine_combines_the_engines_that_can_run_it() -> None:
    nvfp4_h100 = expected_path(quantized("mlp", NVFP4), "sm90")
    assert (nvfp4_h100.path, nvfp4_h100.kind, nvfp4_h100.engine) == (
        "weight_only", "hardware_fallback", None)
    assert "vLLM" in nvfp4_h100.kernels and "TensorRT-LLM" not in nvfp4_h100.kernels
    # block FP8 on sm89: vLLM's FP8 Marlin is legal, so FP8 is "better", never expected
    block = expected_path(quantized("mlp", FP8_BLOCK), "sm89")
    assert (block.path, block.better) == ("weight_only", {"fp8"})
    # nobody can: unknown with each engine's answer
    nobody = expected_path(quantized("mlp", NVFP4A16), "sm70")
    assert nobody.kind == "unknown" and "TensorRT-LLM: unsupported" in nobody.reason


def test_combine_engines_keeps_only_paths_at_or_above_the_expected_one() -> None:
    answers = [scheme_path(NVFP4, "linear", "sm100", engine) for engine in ENGINES]
    combined = combine_engines(answers)
    assert combined.path == "fp4" and combined.better == frozenset()


def test_checkpoint_layers_get_their_own_expected_paths() -> None:
    declaration = read_declaration(paths.CHECKPOINTS / "gpt-oss-mxfp4.config.json")
    layers = declare_layers(declaration)
    experts = expected_path(layers["moe_experts"], "sm100", "vllm")
    assert (experts.path, experts.kind, experts.format) == ("weight_only", "by_design",
                                                            "mxfp4_w4a16")
    assert experts.scope == "moe" and experts.family == "mxfp4"
    attention = expected_path(layers["attention"], "sm100", "vllm")
    assert (attention.path, attention.kind) == ("bf16", "by_design")


def test_mixed_groups_and_unknown_inputs_say_why() -> None:
    mixed = LayerDeclaration("mlp", "mixed", None, "a; b", schemes=(NVFP4, FP8))
    assert expected_path(mixed, "sm100", "vllm").kind == "unknown"
    assert "per-module" in expected_path(mixed, "sm100", "vllm").reason
    assert expected_path(quantized("mlp", NVFP4), None, "vllm").reason == \
        "the GPU's architecture is unknown"
    assert "capability table" in expected_path(quantized("mlp", NVFP4), "sm99", "vllm").reason
    assert "not an engine" in expected_path(quantized("mlp", NVFP4), "sm90", "tgi").reason
    odd = scheme("int4", "nvfp4")
    assert "no format" in scheme_path(odd, "linear", "sm90", "vllm").reason
    # spellings parse_arch reads
    assert expected_path(quantized("mlp", NVFP4), "9.0", "vllm").kind == "hardware_fallback"


def test_every_declared_checkpoint_scheme_has_a_format() -> None:
    configs = [p for p in sorted(paths.CHECKPOINTS.iterdir()) if p.is_dir() or p.suffix == ".json"]
    assert len(configs) > 40
    for config in configs:
        try:
            declaration = read_declaration(config)
        except TracekitError:  # configs that declare nothing are other tests' business
            continue
        for layer in declaration.layers:
            if layer.path in ("fp4", "fp8", "int8", "weight_only"):
                assert declared_format(layer) is not None, (config.name, layer)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_format_has_an_answer_on_every_nvidia_gpu(engine: str) -> None:
    """No NVIDIA cell falls off the table: each is a row, an explicit unknown included."""
    table = kernel_path_table()
    for fmt in table.formats:
        for arch in NVIDIA:
            for scope in ("linear", "moe"):
                got = scheme_path(_scheme_of(fmt.id), scope, arch, engine)
                assert got.format == fmt.id
                assert "has no row" not in got.reason, (fmt.id, arch, engine, scope)
                assert got.kind in KINDS and got.path in PATHS


def test_every_capability_table_arch_gets_an_answer() -> None:
    for arch in sorted(known_archs()):
        for engine in (*ENGINES, None):
            got = scheme_path(NVFP4, "linear", arch, engine)
            assert got.kind in KINDS and got.reason


def test_table_words_are_checked() -> None:
    table = kernel_path_table()
    assert {row.kind for row in table.rows} <= set(KINDS)
    assert all(rank(path) <= 2 for row in table.rows for path in row.better)
    families = {fmt.family for fmt in table.formats}
    assert families == {"nvfp4", "mxfp4", "mxfp8", "fp8", "int8", "wna16", "gguf"}


def _scheme_of(format_id: str) -> LayerScheme:
    """A declared scheme that is this format."""
    fmt = next(f for f in kernel_path_table().formats if f.id == format_id)
    made = fmt.sample_scheme()
    assert declared_format(made) == fmt, format_id
    return made


def test_the_document_schema_names_every_kind() -> None:
    schema = json.loads((paths.REPO / "docs" / "schema" / "analysis.schema.json").read_text(
        encoding="utf-8"))
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "expected_kind" in node.get("properties", {}):
                found.append(node["properties"]["expected_kind"]["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert found and all(set(e) == {*KINDS, None} for e in found)
