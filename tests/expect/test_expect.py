"""Expectations: checkpoint declarations, GPU capability, engine log evidence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.expect.gguf_files import write_gguf
from tests.support import paths
from tracekit.datafiles import load_table
from tracekit.errors import ConfigError, InputError
from tracekit.expect.checkpoint import declaration_from_word, read_declaration
from tracekit.expect.context import load_expectations
from tracekit.expect.logs import match_line, scan_log
from tracekit.gpus import (
    GpuSpec,
    KernelArch,
    arch_from_capability,
    arch_from_gpu_name,
    kernel_archs,
    known_archs,
    native_paths,
    normalize_arch,
    parse_gpu,
    runs_on,
    short_gpu_name,
)
from tracekit.vocabulary import PATHS

CHECKPOINTS = paths.CHECKPOINTS
VOCABULARY = set(PATHS)  # the public path words (tests/rules pins the list itself)

# file → (expected path, label, format contains, kv cache)
DECLARED = {
    "modelopt-nvfp4": ("fp4", "W4A4 NVFP4", "NVFP4 W4A4 (ModelOpt)", "fp8"),
    "modelopt-nvfp4/hf_quant_config.json": ("fp4", "W4A4 NVFP4", "NVFP4 W4A4 (ModelOpt)", "fp8"),
    "modelopt-fp8.hf_quant_config.json": ("fp8", "W8A8 FP8", "FP8 W8A8 (ModelOpt)", "fp8"),
    "modelopt-w4a8-awq.hf_quant_config.json": ("fp8", "W4A8 INT4-AWQ + FP8", "(ModelOpt)", None),
    "modelopt-nvfp4-w4a16.config.json": ("weight_only", "W4A16 NVFP4", "NVFP4 W4A16", None),
    "modelopt-mixed.config.json": ("fp8", "mixed W8A8 FP8 + W4A16 NVFP4", "mixed precision", "fp8"),
    "ct-nvfp4-w4a4.config.json": ("fp4", "W4A4 NVFP4", "nvfp4-pack-quantized", None),
    "ct-nvfp4a16.config.json": ("weight_only", "W4A16 NVFP4", "compressed-tensors", None),
    "ct-w4a16.config.json": ("weight_only", "W4A16 INT4", "pack-quantized", None),
    "ct-w8a8-int8.config.json": ("int8", "W8A8 INT8", "int-quantized", None),
    "ct-w8a8-fp8.config.json": ("fp8", "W8A8 FP8", "float-quantized", "fp8"),
    "ct-mxfp4-w4a4.quantization_config.json": ("fp4", "W4A4 MXFP4", "mxfp4-pack-quantized", None),
    "fp8-block.config.json": ("fp8", "W8A8 FP8 block-128", "(fp8", None),
    "gpt-oss-mxfp4.config.json": ("weight_only", "W4A16 MXFP4", "MXFP4 W4A16 (mxfp4", None),
    "gptq.config.json": ("weight_only", "W4A16 INT4", "(GPTQ", None),
    "awq.config.json": ("weight_only", "W4A16 INT4", "(AWQ", None),
    "bnb-nf4.config.json": ("weight_only", "W4A16 NF4", "(bitsandbytes)", None),
    "bnb-int8.config.json": ("int8", "W8A8 INT8 LLM.int8()", "(bitsandbytes)", None),
    "bf16.config.json": ("bf16", "BF16", "BF16 (unquantized)", None),
    "trtllm-nvfp4.config.json": ("fp4", "W4A4 NVFP4", "(TensorRT-LLM)", "fp8"),
    "quark-fp8.config.json": ("fp8", "W8A8 FP8", "(Quark)", None),
}


@pytest.mark.parametrize("relative", sorted(DECLARED))
def test_every_checkpoint_format_parses(relative: str) -> None:
    path, label, fmt, kv = DECLARED[relative]
    declaration = read_declaration(CHECKPOINTS / relative)
    assert declaration.path == path
    assert declaration.label == label
    assert fmt in declaration.format
    assert declaration.kv_cache == kv
    assert (
        declaration.source
        and Path(declaration.source).name in relative
        or relative.startswith("modelopt-nvfp4")
    )
    assert declaration.paths <= VOCABULARY


def test_same_nvfp4_label_w4a4_and_w4a16_differ() -> None:
    w4a4 = read_declaration(CHECKPOINTS / "ct-nvfp4-w4a4.config.json")
    w4a16 = read_declaration(CHECKPOINTS / "ct-nvfp4a16.config.json")
    assert w4a4.quant == w4a16.quant == "NVFP4"
    assert (w4a4.path, w4a4.activations) == ("fp4", "nvfp4")
    assert (w4a16.path, w4a16.activations) == ("weight_only", None)


def test_modelopt_nvfp4_with_null_activations_is_w4a16() -> None:
    declaration = read_declaration(CHECKPOINTS / "modelopt-nvfp4-w4a16.config.json")
    assert declaration.scheme == "W4A16"
    assert any("input_activations null" in note for note in declaration.notes)


def test_excluded_layers_and_mixed_layers() -> None:
    nvfp4 = read_declaration(CHECKPOINTS / "modelopt-nvfp4")
    assert "lm_head" in nvfp4.excluded
    mixed = read_declaration(CHECKPOINTS / "modelopt-mixed.config.json")
    assert mixed.mixed and mixed.paths == {"fp8", "weight_only"}
    assert {layer.scheme for layer in mixed.layers} == {"W8A8", "W4A16"}


def test_mxfp4_is_weight_only_with_engine_alternatives() -> None:
    declaration = read_declaration(CHECKPOINTS / "gpt-oss-mxfp4.config.json")
    assert declaration.path == "weight_only"
    assert declaration.alternatives == {"fp8", "fp4"}
    assert "lm_head" in declaration.excluded


def test_directory_reads_config_and_kv_from_hf_quant_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        '{"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "modelopt", '
        '"quant_algo": "NVFP4"}}'
    )
    (tmp_path / "hf_quant_config.json").write_text(
        '{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", '
        '"kv_cache_quant_algo": "FP8"}}'
    )
    declaration = read_declaration(tmp_path)
    assert declaration.path == "fp4" and declaration.kv_cache == "fp8"
    assert declaration.source == str(tmp_path / "config.json")


def test_autogptq_and_autoawq_side_configs(tmp_path: Path) -> None:
    gptq = tmp_path / "gptq"
    gptq.mkdir()
    (gptq / "config.json").write_text('{"torch_dtype": "float16"}')
    (gptq / "quantize_config.json").write_text(
        '{"bits": 4, "group_size": 128, "desc_act": false, "sym": true, "damp_percent": 0.01}'
    )
    declaration = read_declaration(gptq)
    assert (declaration.path, declaration.method, declaration.compute_dtype) == (
        "weight_only",
        "gptq",
        "fp16",
    )
    awq = tmp_path / "quant_config.json"
    awq.write_text('{"zero_point": true, "q_group_size": 128, "w_bit": 4, "version": "GEMM"}')
    assert "AWQ, group 128" in read_declaration(awq).format


def test_vlm_text_config_quantization(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        '{"text_config": {"torch_dtype": "bfloat16", "quantization_config": '
        '{"quant_method": "fp8", "activation_scheme": "dynamic"}}}'
    )
    assert read_declaration(config).path == "fp8"


# ---------------------------------------------------------------------------------------------
# GGUF


@pytest.mark.parametrize(
    ("file_type", "path", "name"),
    [
        (15, "int8", "Q4_K_M"),
        (7, "int8", "Q8_0"),
        (1, "fp16", "F16"),
        (32, "bf16", "BF16"),
        (39, "int8", "NVFP4"),
    ],
)
def test_gguf_file_types(tmp_path: Path, file_type: int, path: str, name: str) -> None:
    declaration = read_declaration(write_gguf(tmp_path / "m.gguf", file_type))
    assert declaration.path == path
    assert declaration.method == "gguf"
    assert name in declaration.format and "llama" in declaration.format


def test_gguf_mxfp4_allows_native_fp4_and_directory_lookup(tmp_path: Path) -> None:
    write_gguf(tmp_path / "gpt-oss-20b-MXFP4.gguf", 38)
    declaration = read_declaration(tmp_path)
    assert declaration.path == "int8" and "fp4" in declaration.alternatives


@pytest.mark.parametrize("file_type", [None, 999])
def test_gguf_without_known_file_type_is_a_config_error(
    tmp_path: Path, file_type: int | None
) -> None:
    path = write_gguf(tmp_path / "m.gguf", file_type)
    with pytest.raises(ConfigError, match="m.gguf"):
        read_declaration(path)


def test_truncated_gguf_is_a_config_error(tmp_path: Path) -> None:
    full = write_gguf(tmp_path / "full.gguf", 15).read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(full[:40])
    with pytest.raises(ConfigError, match="cut.gguf.*truncated"):
        read_declaration(cut)


# ---------------------------------------------------------------------------------------------
# Errors and --expect


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("broken.json", "broken.json: not valid JSON .* at line 2, column 1"),
        ("missing.json", "missing.json: no such file"),
    ],
)
def test_unreadable_configs_raise_config_error_naming_the_file(name: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        read_declaration(CHECKPOINTS / name)


def test_config_without_declaration_and_empty_directory(tmp_path: Path) -> None:
    bare = tmp_path / "config.json"
    bare.write_text('{"model_type": "llama"}')
    with pytest.raises(ConfigError, match="no quantization declaration"):
        read_declaration(bare)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        read_declaration(empty)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="list.json"):
        read_declaration(listed)


def test_weights_and_binary_files_are_config_errors(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00\x01")
    with pytest.raises(ConfigError, match="model.safetensors: is a weights file"):
        read_declaration(weights)
    blob = tmp_path / "blob"
    blob.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="blob: neither a JSON config nor a GGUF file"):
        read_declaration(blob)


def test_unknown_method_and_modelopt_algo_are_declarations_not_understood(
        tmp_path: Path) -> None:
    mystery = read_declaration(CHECKPOINTS / "unknown-method.json")
    assert (mystery.path, mystery.method) == ("unknown", "mystery_quant")
    assert mystery.not_understood and "'mystery_quant'" in mystery.not_understood
    path = tmp_path / "hf_quant_config.json"
    path.write_text('{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP3"}}')
    algo = read_declaration(path)
    assert algo.path == "unknown" and "'FP3'" in (algo.not_understood or "")
    assert algo.label == "modelopt (not understood)"


@pytest.mark.parametrize(
    ("word", "path"),
    [
        ("fp4", "fp4"),
        ("FP8", "fp8"),
        ("weight-only", "weight_only"),
        ("weight_only", "weight_only"),
        ("bf16", "bf16"),
    ],
)
def test_expect_words(word: str, path: str) -> None:
    declaration = declaration_from_word(word)
    assert declaration.path == path and declaration.method == "expect"


def test_expect_rejects_non_path_words() -> None:
    with pytest.raises(ConfigError, match="nvfp4.*not a datatype path"):
        declaration_from_word("nvfp4")


# ---------------------------------------------------------------------------------------------
# GPU capability


@pytest.mark.parametrize(
    ("major", "minor", "arch"),
    [
        (7, 0, "sm70"),
        (7, 5, "sm75"),
        (8, 0, "sm80"),
        (8, 6, "sm86"),
        (8, 9, "sm89"),
        (9, 0, "sm90"),
        (10, 0, "sm100"),
        (10, 3, "sm103"),
        (12, 0, "sm120"),
        (12, 1, "sm121"),
    ],
)
def test_arch_from_capability(major: int, minor: int, arch: str) -> None:
    assert arch_from_capability(major, minor) == arch
    assert arch in known_archs()


@pytest.mark.parametrize(
    ("name", "arch", "short"),
    [
        ("NVIDIA H100 80GB HBM3", "sm90", "H100"),
        ("NVIDIA H200", "sm90", "H200"),
        ("NVIDIA GeForce RTX 5090", "sm120", "RTX 5090"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm120", "RTX PRO 6000 Blackwell"),
        ("NVIDIA B200", "sm100", "B200"),
        ("NVIDIA GB200", "sm100", "GB200"),
        ("NVIDIA B300 SXM6 AC", "sm103", "B300"),
        ("NVIDIA GB10", "sm121", "GB10"),
        ("NVIDIA A100-SXM4-80GB", "sm80", "A100"),
        ("NVIDIA A10G", "sm86", "A10G"),
        ("NVIDIA GeForce RTX 4090", "sm89", "RTX 4090"),
        ("NVIDIA L40S", "sm89", "L40S"),
        ("NVIDIA RTX 6000 Ada Generation", "sm89", "RTX 6000 Ada"),
        ("Tesla V100-SXM2-16GB", "sm70", "V100"),
        ("Tesla T4", "sm75", "T4"),
        ("AMD Instinct MI300X", "gfx942", "MI300X"),
        ("AMD Instinct MI355X", "gfx950", "MI355X"),
    ],
)
def test_arch_from_gpu_name(name: str, arch: str, short: str) -> None:
    assert arch_from_gpu_name(name) == arch
    assert short_gpu_name(name) == short


def test_unknown_gpu_name() -> None:
    assert arch_from_gpu_name("Imaginary Accelerator 9000") is None
    assert native_paths("sm999") == frozenset()


@pytest.mark.parametrize(
    ("arch", "has", "lacks"),
    [
        ("sm70", {"fp16"}, {"bf16", "fp8", "fp4"}),
        ("sm80", {"bf16", "int8", "tf32"}, {"fp8", "fp4"}),
        ("sm86", {"bf16"}, {"fp8", "fp4"}),
        ("sm89", {"fp8"}, {"fp4"}),
        ("sm90", {"fp8", "bf16"}, {"fp4"}),
        ("sm100", {"fp4", "fp8"}, set()),
        ("sm103", {"fp4", "fp8"}, set()),
        ("sm120", {"fp4", "fp8"}, set()),
        ("sm121", {"fp4", "fp8"}, set()),
        ("gfx942", {"fp8"}, {"fp4"}),
        ("gfx950", {"fp4", "fp8"}, set()),
    ],
)
def test_native_paths(arch: str, has: set[str], lacks: set[str]) -> None:
    native = native_paths(arch)
    assert has <= native and not (lacks & native)
    assert "weight_only" not in native and native <= VOCABULARY


def test_capability_table_cites_every_arch() -> None:
    for arch, row in load_table("_gpus.toml")["arch"].items():
        assert row.get("cite"), arch


@pytest.mark.parametrize(
    ("value", "arch"),
    [
        ("sm90", "sm90"),
        ("sm_120a", "sm120"),
        ("12.0", "sm120"),
        ("gfx942", "gfx942"),
        ("RTX 5090", "sm120"),
        ("H100", "sm90"),
    ],
)
def test_parse_gpu(value: str, arch: str) -> None:
    assert parse_gpu(value).arch == arch


@pytest.mark.parametrize(
    ("value", "arch"),
    [
        ("SM_90a", "sm90"),
        ("sm100f", "sm100"),
        ("12.1", "sm121"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
    ],
)
def test_normalize_arch(value: str, arch: str) -> None:
    assert normalize_arch(value) == arch


def test_parse_gpu_rejects_unknown() -> None:
    with pytest.raises(ConfigError, match="--gpu"):
        parse_gpu("toaster")


def test_kernel_arch_examples_from_the_table() -> None:
    for row in load_table("_gpus.toml")["kernel_arch"]:
        for example in row.get("examples", []):
            assert kernel_archs(example), (row["id"], example)
        for example in row.get("not_examples", []):
            assert not kernel_archs(example), (row["id"], example)


@pytest.mark.parametrize(
    ("name", "device", "ok"),
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "sm90", True),
        ("nvjet_sm100_tst_128x256_64x4_2x1_v_bz_TNT", "sm90", False),  # newer than the device
        (
            "sm89_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n",
            "sm120",
            True,
        ),  # cuBLAS runs sm89 kernels on sm120
        ("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8", "sm120", True),
        ("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8", "sm75", False),
        ("vllm::enable_sm120_only<Gemm>", "sm121", False),  # vllm#30163
        ("vllm::enable_sm120_family<Gemm>", "sm121", True),
        ("vllm::enable_sm100f_only<Gemm>", "sm103", True),
        ("vllm::enable_sm100f_only<Gemm>", "sm120", False),
        ("cutlass::Kernel2<vllm::enable_sm80_to_sm89<Gemm>>", "sm86", True),
        ("cutlass::Kernel2<vllm::enable_sm80_to_sm89<Gemm>>", "sm90", False),
        ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_gfx942", "gfx942", True),
        ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_gfx950", "gfx942", False),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "gfx942", False),
    ],
)
def test_kernel_runs_on(name: str, device: str, ok: bool) -> None:
    tokens = kernel_archs(name)
    assert tokens
    assert all(runs_on(t, device) for t in tokens) is ok


def test_runs_on_scopes() -> None:
    assert runs_on(KernelArch("sm90", "sm90", "exact"), "sm90")
    assert not runs_on(KernelArch("sm90", "sm90", "exact"), "sm100")
    (sm90a,) = kernel_archs("flash_fwd_sm90a_kernel")
    assert runs_on(sm90a, "sm90") and not runs_on(sm90a, "sm100")
    (sm100a,) = kernel_archs("bmm_E2m1_E2m1E2m1_Fp32_t128x8x512_TN_sm100a")
    assert runs_on(sm100a, "sm103") and not runs_on(sm100a, "sm90") and not runs_on(sm100a, "sm120")


# ---------------------------------------------------------------------------------------------
# Engine logs


def test_every_log_pattern_example_matches_its_pattern() -> None:
    for row in load_table("_log_patterns.toml")["pattern"]:
        for example in row["examples"]:
            evidence = match_line(example, 1)
            assert evidence is not None and evidence.rule == row["id"], (row["id"], example)
            assert evidence.path is None or evidence.path in VOCABULARY


@pytest.mark.parametrize(
    ("line", "kernel", "path"),
    [
        (
            "INFO Using FlashInferCuteDslNvFp4W4A16LinearKernel for NVFP4 GEMM",
            "FlashInferCuteDslNvFp4W4A16LinearKernel",
            "weight_only",
        ),
        ("INFO Using CutlassNvFp4LinearKernel for NVFP4 GEMM", "CutlassNvFp4LinearKernel", "fp4"),
        (
            "INFO Using MarlinNvFp4LinearKernel for NVFP4 GEMM",
            "MarlinNvFp4LinearKernel",
            "weight_only",
        ),
        (
            "INFO Selected CutlassFP8ScaledMMLinearKernel for ModelOptFp8LinearMethod",
            "CutlassFP8ScaledMMLinearKernel",
            "fp8",
        ),
        (
            "INFO Selected MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod",
            "MarlinFP8ScaledMMLinearKernel",
            "weight_only",
        ),
        (
            "INFO Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['MARLIN']",  # noqa: E501
            "FLASHINFER_CUTLASS",
            "fp4",
        ),
        (
            "INFO Using 'MARLIN' NvFp4 MoE backend out of potential backends: []",
            "MARLIN",
            "weight_only",
        ),
        ("INFO Using 'TRITON' Mxfp4 MoE backend.", "TRITON", "weight_only"),
        (
            "INFO Using 'FLASHINFER_TRTLLM_MXFP4_MXFP8' Mxfp4 MoE backend.",
            "FLASHINFER_TRTLLM_MXFP4_MXFP8",
            "fp8",
        ),
        (
            "INFO Using 'FLASHINFER_TRTLLM_MXFP4_BF16' Mxfp4 MoE backend.",
            "FLASHINFER_TRTLLM_MXFP4_BF16",
            "weight_only",
        ),
    ],
)
def test_log_kernel_lines(line: str, kernel: str, path: str) -> None:
    evidence = match_line(line, 7)
    assert evidence is not None
    assert (evidence.kernel, evidence.path, evidence.line_no) == (kernel, path, 7)


def test_scan_log_strips_colours_counts_repeats_and_reads_devices(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    warning = (
        "Your GPU does not have native support for FP4 computation but FP4 quantization is being "
        "used. Weight-only FP4 compression will be used leveraging the Marlin kernel."
    )
    log.write_text(
        "\n".join(
            [
                "INFO 07-01 12:00:00 [core.py:1] starting",
                f"\x1b[1;33mWARNING 07-01 12:00:01 [marlin_utils_fp4.py:9]\x1b[0m {warning}",
                "  Device 0: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes",
                f"(EngineCore pid=9) WARNING 07-01 12:00:02 [marlin_utils_fp4.py:9] {warning}",
                "INFO 07-01 12:00:03 [__init__.py:5] Using MarlinNvFp4LinearKernel for NVFP4 GEMM",
                "\xff\xfe binary noise",
            ]
        ),
        encoding="latin-1",
    )
    evidence = scan_log(log)
    assert [e.rule for e in evidence] == [
        "vllm-marlin-fp4-warning",
        "llamacpp-device",
        "vllm-linear-kernel",
    ]
    marlin = evidence[0]
    assert marlin.line_no == 2 and marlin.count == 2 and "\x1b" not in marlin.text
    assert marlin.kind == "fallback-warning" and marlin.path == "weight_only"
    assert evidence[1].gpu_arch == "sm120" and evidence[1].kernel == "NVIDIA GeForce RTX 5090"


def test_scan_log_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.log"):
        scan_log(tmp_path / "nope.log")


# ---------------------------------------------------------------------------------------------
# Expectations gathered from the command line


@dataclass
class _Options:
    model: Path | None = None
    expect: str | None = None
    gpu: str | None = None
    logs: tuple[Path, ...] = ()


def test_load_expectations_reads_everything(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("INFO Using MarlinNvFp4LinearKernel for NVFP4 GEMM\n")
    result = load_expectations(
        _Options(model=CHECKPOINTS / "modelopt-nvfp4", gpu="RTX 5090", logs=(log,))
    )
    assert result.declaration is not None and result.declaration.path == "fp4"
    assert result.gpu == GpuSpec(arch="sm120", name="RTX 5090")
    assert [e.kernel for e in result.log_evidence] == ["MarlinNvFp4LinearKernel"]
    assert result.model_label == "modelopt-nvfp4" and result.warnings == ()


def test_load_expectations_turns_problems_into_warnings(tmp_path: Path) -> None:
    result = load_expectations(
        _Options(
            model=CHECKPOINTS / "broken.json",
            expect="nvfp4",
            gpu="toaster",
            logs=(tmp_path / "x.log",),
        )
    )
    assert result.declaration is None and result.gpu is None
    assert len(result.warnings) == 4
    assert "broken.json" in result.warnings[0] and "x.log" in result.warnings[3]


def test_expect_word_overrides_model() -> None:
    result = load_expectations(
        _Options(model=CHECKPOINTS / "ct-nvfp4a16.config.json", expect="fp4")
    )
    assert result.declaration is not None and result.declaration.path == "fp4"
    assert "overrides" in result.warnings[0]
