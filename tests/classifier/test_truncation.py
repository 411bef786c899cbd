"""Names cut by profilers: the printers' limits, and which answers a cut name may still get.

A rule whose answer depends on text beyond the cut abstains with a reason starting
``truncated:``; a family whose every instantiation has one type keeps its answer.
"""

from __future__ import annotations

import pytest

from tracekit.classifier import classify_name, load_ruleset
from tracekit.classifier.names import prepare
from tracekit.classifier.truncation import base_name, cut_mark, marks, printer_of, printers

RULESET = load_ruleset(use_env=False)

#: the full names below are real (tests/corpus and rules/*.toml cite where each was printed)
DEEPGEMM_FP8_FP8 = (
    "void deep_gemm::sm100_fp8_fp4_gemm_1d1d_impl<(cute::UMMA::Major)0, (cute::UMMA::Major)0, "
    "128u, 128u, 0u, 0u, 0u, 240u, 128u, 128u, 1u, 128u, 128u, 128u, 6u, 128u, 128u, 2u, true, "
    "148u, true, (deep_gemm::GemmType)0, false, cutlass::float_e4m3_t, cutlass::float_e4m3_t, "
    "cutlass::bfloat16_t, deep_gemm::epilogue::transform::EpilogueIdentity>(int*, unsigned int, "
    "unsigned int, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, "
    "CUtensorMap_st)"
)
XMMA_FP32 = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_"
    "alignc4_execute_kernel__5x_cublas"
)
#: a real CUTLASS 3.x template name with a BF16 operand (cutlass-template-16bit's first example)
CUTLASS_BF16_TEMPLATE = RULESET.get("cutlass-template-16bit").examples[0].name


def printer(printer_id: str):
    return next(p for p in printers() if p.id == printer_id)


def test_the_printers_of_nsys_and_torch_are_known():
    nsys, torch = printer("nsys-stats-column"), printer("torch-table")
    assert (nsys.keep, nsys.mark) == (99, "…")
    assert (torch.keep, torch.mark) == (52, "...")
    assert set(marks()) == {"…", "..."}


@pytest.mark.parametrize("printer_id", ["nsys-stats-column", "torch-table"])
def test_a_cut_name_is_flagged_and_its_printer_named(printer_id):
    cut = printer(printer_id).cut(XMMA_FP32)
    kname = prepare(cut)
    assert kname.truncated and kname.cut_by == printer_id
    assert not cut.startswith(kname.text + "x")  # the mark is gone from what rules see


def test_the_table_examples_hold():
    for entry in printers():
        for full, printed in entry.examples:
            assert entry.cut(full) == printed, entry.id


def test_base_name_drops_namespaces_templates_and_parameters():
    marlin = "void marlin_moe_wna16::Marlin<1125899906909960l, 1l>(const int4 *)"
    assert base_name(marlin) == "Marlin"
    assert base_name("nvjet_tst_192x8_64x8_4x1_v_bz_TNT") == "nvjet_tst_192x8_64x8_4x1_v_bz_TNT"


def test_the_shared_deepgemm_fp8_fp4_kernel_is_decided_only_by_its_type_arguments():
    assert classify_name(DEEPGEMM_FP8_FP8, RULESET).path == "fp8"
    for printer_id in ("nsys-stats-column", "torch-table"):
        cut = printer(printer_id).cut(DEEPGEMM_FP8_FP8)
        result = classify_name(cut, RULESET)
        assert result.path == "unknown", (printer_id, result)
        assert result.reason.startswith("truncated:") and printer_id in result.reason
        assert result.rule == "deepgemm-fp8-fp4-untyped" or result.rule is None


def test_a_cut_without_mark_still_abstains_on_the_shared_kernel():
    # as an SGLang report printed it: cut, no mark, so nothing says "truncated", but the rule
    # for the shared kernel still cannot decide
    result = classify_name(
        "void deep_gemm::sm100_fp8_fp4_gemm_1d1d_impl<(cute::UMMA::Major)0, "
        "(cute::UMMA::Major)0, 1",
        RULESET,
    )
    assert result.path == "unknown" and "a_dtype" in result.reason


def test_a_rule_that_decides_from_absence_abstains_on_a_cut_name():
    assert classify_name(CUTLASS_BF16_TEMPLATE, RULESET).path == "bf16"
    # bf16 stays visible, whatever followed (an FP8 operand type?) is gone
    end = CUTLASS_BF16_TEMPLATE.index("bfloat16_t") + len("bfloat16_t, ")
    result = classify_name(CUTLASS_BF16_TEMPLATE[:end] + "…", RULESET)
    assert result.path == "unknown"
    assert result.reason.startswith("truncated:") and "cutlass-template-16bit" in result.reason


@pytest.mark.parametrize(
    "name, path",
    [
        # every instantiation of the visible prefix has one type: the answer stands
        (XMMA_FP32[:99] + "…", "fp32"),
        ("fmhaSm100fKernel_QkvFp16OFp16H128PagedKvCausalP64MultiCtasKvVarSeqQ8K...", "fp16"),
        (
            "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, "
            "1125899906909960l, 2814749767…",
            "weight_only",
        ),
        ("void cutlass::device_kernel<machete::MacheteKernelTemplate<…", "weight_only"),
        ("sm90_xmma_gemm_e4m3f32_e4m3f32_f32_tn_n_tilesize128x128x128…", "fp8"),
    ],
)
def test_a_family_with_one_type_per_visible_prefix_still_answers(name, path):
    assert classify_name(name, RULESET).path == path


@pytest.mark.parametrize(
    "name",
    [
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, "
        "(int)4, (bool)0, …",
        "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupl...",
        "void gemmk1_kernel<float, 256, 5, false, false, fals...",
    ],
)
def test_a_cut_before_the_deciding_token_is_unknown_with_the_reason_truncated(name):
    result = classify_name(name, RULESET)
    assert result.path == "unknown"
    assert result.reason.startswith("truncated:")


def test_printer_of_matches_only_the_exact_limit():
    assert printer_of("x" * 99, "…").id == "nsys-stats-column"
    assert printer_of("x" * 52, "...").id == "torch-table"
    assert printer_of("x" * 30, "...") is None


@pytest.mark.parametrize(
    "printed, mark",
    [("sm80_xmma_gemm_f32f32…", "…"), ("sm80_xmma_gemm_f32f32...", "..."),
     ("sm80_xmma_gemm_f32f32..", ".."), ("sm80_xmma_gemm_f32f32 ....", "...."),
     ("sm80_xmma_gemm_f32f32……", "……"), ("sm80_xmma_gemm_f32f32 … ...", "… ..."),
     ("sm80_xmma_gemm_f32f32", ""), ("void f<float>(float*)", ""), ("a.b", "")],
)
def test_any_ellipsis_that_ends_a_name_is_a_cut_mark(printed, mark):
    assert cut_mark(printed) == mark
    kname = prepare(printed)
    assert kname.truncated == bool(mark)
    assert kname.text == "sm80_xmma_gemm_f32f32" or not mark


#: real names (tests/corpus) cut at 40 characters, the width of a profiler's narrow table:
#: each rule's deciding token is at or beyond the cut
CUT_AT_40 = [
    # the first of two operand types is visible, the second (the 8-bit weight) is not
    "cutlass_tensorop_bf16_s16816gemm_bf16_s8_128x32_64x9_tn_align16",
    # a compute type first, the data type in the cublasGemvTensor arguments beyond the cut
    "void gemmk1_kernel<float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched"
    "<__half const>, cublasGemvTensorStridedBatched<__half const>, "
    "cublasGemvTensorStridedBatched<__half>, float, true, true>(cublasGemmk1Params<float, "
    "cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, "
    "cublasGemvTensorStridedBatched<__half>, float>)",
]


@pytest.mark.parametrize("full", CUT_AT_40)
@pytest.mark.parametrize("mark", ["…", "...", "......"])
def test_a_name_cut_at_40_characters_before_its_deciding_token_is_unknown(full, mark):
    assert classify_name(full, RULESET).path not in ("unknown",)
    result = classify_name(full[:40] + mark, RULESET)
    assert result.path == "unknown", result
    assert result.reason.startswith("truncated:")


def test_a_pattern_that_reaches_the_cut_abstains():
    # (ggml_type)1 is F16, but the visible "1" may be the start of 10..19 (quantized types)
    name = "void mul_mat_q<(ggml_type)1…"
    result = classify_name(name, RULESET)
    assert result.path == "unknown" and "pattern reaches the cut" in result.reason


def test_a_decisive_group_that_took_no_part_makes_a_cut_name_unknown(tmp_path):
    (tmp_path / "my-gemm.toml").write_text("""
id = "my-gemm"
description = "a GEMM whose compute type comes first and whose data type may follow"
op = "gemm"
priority = 99
patterns = ['my_gemm<(?P<compute>float)(?:, data<(?P<data>half)>)?']
decisive = ["data"]
references = ["test"]

[decode]
compute = "type_tokens"
data = "type_tokens"

[[example]]
name = "my_gemm<float>"
path = "fp32"

[[example]]
name = "your_gemm<float>"
match = false
""")
    ruleset = load_ruleset([tmp_path], use_env=False)
    assert classify_name("my_gemm<float>", ruleset).path == "fp32"
    assert classify_name("my_gemm<float, data<half>>", ruleset).path == "fp16"
    cut = classify_name("my_gemm<float, da…", ruleset)
    assert cut.path == "unknown" and "(data) is not in the visible part" in cut.reason


def test_decisive_must_name_a_group(tmp_path):
    from tracekit.errors import RuleFileError

    (tmp_path / "my-gemm.toml").write_text("""
id = "my-gemm"
description = "d"
op = "gemm"
path = "bf16"
patterns = ['my_gemm']
decisive = ["dtype"]
references = ["test"]
""")
    with pytest.raises(RuleFileError, match="decisive group 'dtype' is not a named group"):
        load_ruleset([tmp_path], use_env=False)
