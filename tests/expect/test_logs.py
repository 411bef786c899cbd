"""Engine log lines as the per-layer judgement reads them: fallback, format family and scope.

Every line here is printed by an engine as written (rules/_log_patterns.toml cites the file and
versions); the judgement matches a line to a layer group through ``LogEvidence.speaks_of``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint.declaration import LayerScheme
from tracekit.expect.checkpoint.layers import LayerDeclaration
from tracekit.expect.kernel_paths import expected_path, kernel_path_table
from tracekit.expect.logs import match_line, scan_log

VLLM = "(EngineCore pid=2301) {level} 07-01 12:00:00 [{file}] {message}"
SGLANG = "[2026-07-01 12:00:00 TP0] {message}"


def vllm(message: str, file: str = "__init__.py:1", level: str = "INFO") -> str:
    return VLLM.format(level=level, file=file, message=message)


@pytest.mark.parametrize(("line", "rule", "fallback", "fmt", "scope", "path"), [
    (vllm("Your GPU does not have native support for FP4 computation but FP4 quantization is "
          "being used. Weight-only FP4 compression will be used leveraging the Marlin kernel. "
          "This may degrade performance for compute-heavy workloads.", "marlin.py:35",
          "WARNING"), "vllm-marlin-fp4-warning", True, "nvfp4", None, "weight_only"),
    ("WARNING 09-10 12:00:00 [compressed_tensors.py:489] Current platform does not support "
     "cutlass NVFP4. Running CompressedTensorsW4A16Fp4.", "vllm-nvfp4-w4a16-fallback", True,
     "nvfp4", "linear", "weight_only"),
    ("INFO 09-10 12:00:00 [nvfp4_moe_support.py:50] Falling back to Marlin FP4 MoE kernel.",
     "vllm-nvfp4-moe-marlin-fallback", True, "nvfp4", "moe", "weight_only"),
    (vllm("NVFP4 linear falling back to the slow and unoptimized emulation backend as no "
          "optimized backend is available (unavailable reasons:", level="WARNING"),
     "vllm-nvfp4-emulation", True, "nvfp4", "linear", "bf16"),
    (vllm("Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', "
          "'MARLIN']."), "vllm-moe-backend", False, "nvfp4", "moe", "weight_only"),
    (vllm("Using 'FLASHINFER_TRTLLM' NvFp4 MoE backend out of potential backends: "
          "['FLASHINFER_TRTLLM', 'MARLIN']."), "vllm-moe-backend", False, "nvfp4", "moe", "fp4"),
    (vllm("Using TRITON Fp8 MoE backend out of potential backends: ['TRITON', 'MARLIN']."),
     "vllm-moe-backend", False, "fp8", "moe", "fp8"),
    (vllm("Using 'MARLIN' Mxfp4 MoE backend."), "vllm-moe-backend", False, "mxfp4", "moe",
     "weight_only"),
    (vllm("Using MarlinLinearKernel for mixed-precision linear"), "vllm-mixed-precision-kernel",
     False, "wna16", "linear", "weight_only"),
    (vllm("Using CutlassNvFp4LinearKernel for NVFP4 GEMM"), "vllm-linear-kernel", False,
     "nvfp4", "linear", "fp4"),
    (vllm("Using FlashInferCuteDslNvFp4W4A16LinearKernel for NVFP4 GEMM"), "vllm-linear-kernel",
     False, "nvfp4", "linear", "weight_only"),
    (vllm("Selected MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod"), "vllm-selected-kernel",
     False, "fp8", "linear", "weight_only"),
    (vllm("Selected CutlassInt8ScaledMMLinearKernel for model.layers.0.mlp.down_proj"),
     "vllm-selected-kernel", False, "int8", "linear", "int8"),
    (vllm("No Mxfp4 MoE backend supports activation=mxfp8 for the deployment configuration. "
          "Falling back to 'MARLIN' with BF16 activations.", "mxfp4.py:556", "WARNING"),
     "vllm-mxfp4-bf16-fallback", True, "mxfp4", "moe", "weight_only"),
    ("INFO 09-10 12:00:00 [mxfp4.py:61] Using FlashInfer MXFP4 BF16 backend for SM100, For "
     "faster performance on SM100, consider setting VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, "
     "though this may impact accuracy.", "vllm-gpt-oss-mxfp4-backend", False, "mxfp4", "moe",
     "weight_only"),
    ("INFO 09-10 12:00:00 [mxfp4.py:51] Using FlashInfer MXFP4 MXFP8 CUTLASS backend for SM100",
     "vllm-gpt-oss-mxfp4-backend", False, "mxfp4", "moe", "fp8"),
    ("INFO 09-10 12:00:00 [mxfp4.py:94] Using Marlin backend", "vllm-gpt-oss-mxfp4-plain-backend",
     False, "mxfp4", "moe", "weight_only"),
    (vllm("MXFP8->BF16 load-time dequant complete (8 experts/layer); MoE now runs in BF16 with "
          "no per-step dequant.", "modelopt.py:1449"), "vllm-mxfp8-bf16-dequant", True,
     "mxfp8", "moe", "bf16"),
    (SGLANG.format(message="NVFP4 w4a4 requires compute capability >= 10.0; serving this "
                   "checkpoint weight-only via FP4 Marlin instead. Activation quantization is "
                   "ignored."), "sglang-nvfp4-marlin", True, "nvfp4", "linear", "weight_only"),
    (SGLANG.format(message="NVFP4 w4a4 MoE requires compute capability >= 10.0; serving this "
                   "checkpoint weight-only via FP4 Marlin instead. Activation quantization is "
                   "ignored."), "sglang-nvfp4-marlin", True, "nvfp4", "moe", "weight_only"),
    ("[2026-07-01 12:00:00] Detected SM100 and MXFP4 quantization format for GPT-OSS model, "
     "enabling FlashInfer MXFP4 MOE kernel.", "sglang-gpt-oss-moe-kernel", False, "mxfp4",
     "moe", "fp8"),
    ("[2026-07-01 12:00:00] Detected GPT-OSS model, enabling triton_kernels MOE kernel.",
     "sglang-gpt-oss-moe-kernel", False, "mxfp4", "moe", "weight_only"),
])
def test_recognized_lines_carry_fallback_format_and_scope(
        line: str, rule: str, fallback: bool, fmt: str, scope: str | None, path: str) -> None:
    evidence = match_line(line, 7)
    assert evidence is not None and evidence.rule == rule, evidence
    assert (evidence.announces_fallback, evidence.format, evidence.scope, evidence.path) == (
        fallback, fmt, scope, path)
    as_dict = evidence.as_dict()
    assert as_dict["announces_fallback"] is fallback and as_dict["format"] == fmt


def test_a_line_speaks_of_the_layer_groups_of_its_format_and_scope() -> None:
    nvfp4 = LayerScheme(("*",), "nvfp4", "nvfp4", "W4A4", "fp4", "NVFP4")
    experts = expected_path(LayerDeclaration("moe_experts", "quantized", nvfp4, "t"), "sm100",
                            "vllm")
    dense = expected_path(LayerDeclaration("mlp", "quantized", nvfp4, "t"), "sm100", "vllm")
    moe_line = match_line("INFO 09-10 12:00:00 [nvfp4_moe_support.py:50] Falling back to Marlin "
                          "FP4 MoE kernel.")
    warning = match_line(vllm("Your GPU does not have native support for FP4 computation but "
                              "FP4 quantization is being used."))
    fp8_line = match_line(vllm("Using TRITON Fp8 MoE backend out of potential backends: []."))
    assert moe_line is not None and warning is not None and fp8_line is not None
    assert moe_line.speaks_of(experts.family, experts.scope)
    assert not moe_line.speaks_of(dense.family, dense.scope)
    assert warning.speaks_of(dense.family, dense.scope)  # the warning names no scope
    assert not fp8_line.speaks_of(experts.family, experts.scope)


def test_line_formats_are_kernel_path_families() -> None:
    """The format words of the log patterns are the families of rules/_kernel_paths.toml."""
    families = {fmt.family for fmt in kernel_path_table().formats} | {"unquantized", "mxfp6"}
    table = load_table("_log_patterns.toml")
    used = {row["format"] for row in table["pattern"] if "format" in row}
    used |= set(table["context_format"].values())
    used |= {row["format"] for row in table["kernel_format"]}
    assert used <= families


def test_every_fallback_line_says_which_format() -> None:
    for row in load_table("_log_patterns.toml")["pattern"]:
        assert row.get("versions") and row.get("cite"), row["id"]
        if row.get("announces_fallback") and not row.get("format"):
            for example in row["examples"]:
                evidence = match_line(example)
                assert evidence is not None and evidence.format, (row["id"], example)


def test_scan_log_keeps_the_fields(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("\n".join([
        "\x1b[33mWARNING 09-10 12:00:00 [compressed_tensors.py:489] Current platform does not "
        "support cutlass NVFP4. Running CompressedTensorsW4A16Fp4.\x1b[0m",
        "INFO 09-10 12:00:00 [nvfp4_moe_support.py:50] Falling back to Marlin FP4 MoE kernel.",
        "INFO 09-10 12:00:00 [nvfp4_moe_support.py:50] Falling back to Marlin FP4 MoE kernel.",
    ]) + "\n", encoding="utf-8")
    found = scan_log(log)
    assert [(e.rule, e.scope, e.count) for e in found] == [
        ("vllm-nvfp4-w4a16-fallback", "linear", 1), ("vllm-nvfp4-moe-marlin-fallback", "moe", 2)]
    assert all(e.announces_fallback for e in found)
