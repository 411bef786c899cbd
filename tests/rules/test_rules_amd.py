"""AMD and portable kernel families: the corpus files amd.jsonl / portable.jsonl and the
truncation behaviour of the hipBLASLt, CK, aiter and ROCm rules.

The cut names below are real names (from tests/corpus/amd.jsonl or TraceLens' MI300X traces)
shortened by hand at the positions that matter; each comment says what the cut removes.
"""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tracekit.classifier import classify_name, classify_names, load_ruleset

RULESET = load_ruleset(use_env=False)
CORPUS_DIR = paths.CORPUS
FILES = ("amd.jsonl", "portable.jsonl")
KEYS = {"name", "path", "op", "weights", "activations", "family", "source", "why"}
MATH_OPS = {"gemm", "grouped_gemm", "gemv", "attention"}


def _rows(file: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS_DIR / file).read_text().splitlines()]


@pytest.mark.parametrize("file", FILES)
def test_corpus_rows_are_complete_and_cited(file):
    rows = _rows(file)
    assert rows
    for row in rows:
        assert KEYS <= set(row) <= KEYS | {"arch", "note"}, row["name"]  # README: both optional
        assert row["source"].startswith("https://"), row["name"]
        assert "shared/" not in row["source"]
        assert row["why"].strip()
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("file", FILES)
def test_corpus_paths_and_abstentions(file):
    rows = _rows(file)
    results = classify_names([row["name"] for row in rows], RULESET)
    wrong = [
        f"{row['path']} != {r.path} ({r.rule}): {row['name'][:100]}"
        for row, r in zip(rows, results, strict=True)
        if r.path != row["path"]
    ]
    assert len(wrong) <= 0.03 * len(rows), "\n".join(wrong)
    for row, r in zip(rows, results, strict=True):
        if row["path"] == "unknown" and row["op"] in MATH_OPS:
            assert r.path == "unknown" or r.confidence == "low", row["name"]


def test_amd_corpus_covers_the_families():
    families = {row["family"] for row in _rows("amd.jsonl")}
    assert {"hipblaslt", "ck", "aiter", "miopen", "rocm-vllm"} <= families
    families = {row["family"] for row in _rows("portable.jsonl")}
    assert {"triton", "llamacpp", "bitsandbytes", "awq-gptq-exllama"} <= families


HIPBLASLT = (
    "Cijk_Ailk_Bljk_F8H_HHS_BH_Bias_GG_HAS_SAB_SAV_UserArgs_MT16x16x32_MI16x16x1_SN_LDSB0_GRVWA8"
)


@pytest.mark.parametrize(
    ("name", "path"),
    [
        (HIPBLASLT, "weight_only"),
        # cut after the type section: the types are all visible
        ("Cijk_Ailk_Bljk_F8H_HHS_BH_Bias_GG…", "weight_only"),
        ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x224x64_MI16x...", "bf16"),
        ("Cijk_Alik_Bljk_F8SS_MXAE8B…", "fp8"),
    ],
)
def test_hipblaslt_decides_when_the_type_section_is_visible(name, path):
    assert classify_name(name, RULESET).path == path


@pytest.mark.parametrize(
    "name",
    [
        # cut inside the type section: F8 may begin F8H_HHS (weight-only) as well as F8BS (fp8)
        "Cijk_Ailk_Bljk_F8…",
        "Cijk_Ailk_Bljk_F8H_H…",
        "Cijk_Ailk_Bljk_HH_F8…",
    ],
)
def test_hipblaslt_cut_inside_the_type_section_is_not_confident(name):
    result = classify_name(name, RULESET)
    assert result.path == "unknown" and result.confidence == "low"


def test_hipblaslt_xf32_is_not_fp32():
    name = "Cijk_Ailk_Bljk_S_MX_B_UserArgs_MT32x16x32_MI16x16x1_SN_LDSB0_GRVWA2_GRVWB2_GSU1"
    assert classify_name(name, RULESET).path == "tf32"
    plain = "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1"
    assert classify_name(plain, RULESET).path == "fp32"


CK_BF16_INT4 = (
    "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<"
    "ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, "
    "ck::tensor_layout::gemm::RowMajor, ck::bhalf_t, ck::pk_i4_t, float, ck::bhalf_t>, true>"
    "(ck::GridwiseGemm_xdl_cshuffle_v3::Argument)"
)


def test_ck_reads_a_and_b_together():
    result = classify_name(CK_BF16_INT4, RULESET)
    assert (result.path, result.weights, result.activations) == ("weight_only", "int4", "bf16")
    bf16 = CK_BF16_INT4.replace("ck::pk_i4_t", "ck::bhalf_t")
    assert classify_name(bf16, RULESET).path == "bf16"


def test_ck_cut_after_a_16_bit_a_type_abstains_as_truncated():
    # the B type, which could be ck::pk_i4_t (weight-only), is cut off
    cut = CK_BF16_INT4[: CK_BF16_INT4.index("ck::pk_i4_t")] + "…"
    result = classify_name(cut, RULESET)
    assert result.path == "unknown" and "cut" in result.reason
    # an FP8 A type decides even when cut: no B type makes an FP8-A GEMM 16-bit
    fp8 = cut.replace("ck::bhalf_t, …", "ck::f8_t, …")
    assert classify_name(fp8, RULESET).path == "fp8"


def test_ck_mangled_names_are_read_without_a_demangler():
    # std::bfloat16_t (DF16b) is beyond the libstdc++ demangler of older toolchains
    name = (
        "_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd_"
        "xdl_cshuffleINS_34GridwiseGemmMultipleD_xdl_cshuffleIDF16bDF16bDF16bfDF16bNS_5TupleIJEEE"
    )
    assert classify_name(name, RULESET).path == "bf16"
    cut = "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_co..."
    result = classify_name(cut, RULESET)
    assert result.path == "unknown" and result.op == "gemm"


def test_paged_attention_cut_before_the_cache_type_abstains():
    full = (
        "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
        "(vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, ck_tile::ComposedAttention<0u, "
        "false> >(__hip_bfloat16 const*)"
    )
    assert classify_name(full, RULESET).path == "bf16"
    cut = "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, ..."
    result = classify_name(cut, RULESET)
    assert result.path == "unknown" and result.op == "attention"
    fp8_cache = full.replace("__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0",
                             "__hip_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1")
    assert classify_name(fp8_cache, RULESET).path == "unknown"


@pytest.mark.parametrize(
    ("name", "path"),
    [
        # one scheme token decides an aiter kernel, also when the rest of the name is cut
        ("_ZN5aiter47fmoe_bf16_blockscaleFp8_g1u1_vs_sil…", "fp8"),
        ("aiter::fmha_fwd_hd128_bf16_r…", "bf16"),
        ("igemm_bwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_w...", "bf16"),
        # cut before the scheme token: nothing decides
        ("_ZN5aiter47fmoe_bf16_bl…", "unknown"),
    ],
)
def test_single_token_families_decide_on_cut_names(name, path):
    assert classify_name(name, RULESET).path == path


@pytest.mark.parametrize(
    "name",
    [
        "_gemm_a8w8_kernel",  # int8 or fp8 by the tensors passed
        "_dynamic_per_token_quant_fp8_i8_kernel",  # fp8 or int8 output
        "_fused_moe_kernel_mxfp4",  # bf16 / e4m3 / e2m1 activations
        "mul_mat_q",  # ggml type and activation precision are template arguments
        "wvSplitK_hf_sml_",  # bf16 or fp16
        "_ZN5aiter33mla_a8w8_qh16_qseqlen1_gqaratio16E",  # 8-bit, type in a table column only
    ],
)
def test_names_that_do_not_carry_the_type_stay_unknown(name):
    result = classify_name(name, RULESET)
    assert result.path == "unknown" and result.reason


@pytest.mark.parametrize(
    ("name", "path"),
    [
        # rocprof prints the code-object kernel descriptor: symbol + ".kd", often still mangled
        ("_ZN5aiter19fmha_fwd_hd128_bf16E.kd", "bf16"),
        ("_ZN5aiter47fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256E.kd", "fp8"),
        ("_gemm_afp4wfp4_kernel.kd", "fp4"),
        ("mul_mat_q.kd", "unknown"),
    ],
)
def test_rocprof_kernel_descriptor_suffix(name, path):
    assert classify_name(name, RULESET).path == path


def test_ck_tile_batch_prefill_fmha_is_not_flashinfers():
    """CK-tile's FmhaBatchPrefillWithPagedKVCacheKernel contains FlashInfer's kernel name; the
    FlashInfer rule excludes it, so ck-tile-fmha decides at an ordinary priority."""
    from tracekit.classifier.engine import all_matches
    from tracekit.classifier.names import prepare

    name = next(r["name"] for r in _rows("amd.jsonl")
                if "FmhaBatchPrefillWithPagedKVCacheKernelI" in r["name"])
    matching = [m.rule.id for m in all_matches(prepare(name).text, RULESET)]
    assert "flashinfer-attention" not in matching
    assert matching[0] == "ck-tile-fmha"
    assert classify_name(name, RULESET).path == "bf16"
    flashinfer = "BatchPrefillWithPagedKVCacheKernel"
    assert [m.rule.id for m in all_matches(flashinfer, RULESET)][0] == "flashinfer-attention"


@pytest.mark.parametrize(
    "name", ["_dynamic_per_token_quant_fp8_i8_kernel", "_static_per_tensor_quant_fp8_i8_kernel"]
)
def test_aiter_fp8_or_int8_quantizers_get_no_fp8_answer_from_any_rule(name):
    """aiter's *_quant_fp8_i8_kernel writes FP8 or INT8 by its output tensor: no rule may say
    fp8 for it, not even one that a priority change would let win."""
    from tracekit.classifier.engine import all_matches

    matches = all_matches(name, RULESET)
    assert [m.rule.id for m in matches] == ["triton-quantize-untyped"]
    assert classify_name(name, RULESET).path == "unknown"


def test_every_gemm_of_the_real_mi350x_trace_is_bf16_and_its_helpers_are_not_matrix_math(
        shared_trace):
    """The rocprofv3 trace of a training run on an MI350X (gfx950, TraceLens's fork): its
    kernel symbols hold hipBLASLt's whole gfx950 library. Every Cijk_A…_B… contraction in it is
    BBS (BF16 in, BF16 out, FP32 compute) and classified bf16 on gfx950; every Cijk_<type>_…
    PostGSU / GA and Dijk_…_Reduction helper is op other, no path."""
    import gzip
    import json
    import re

    from tracekit.classifier import classify_names

    path = shared_trace("tracelens-rocprof/908_results.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        record = json.load(stream)["rocprofiler-sdk-tool"][0]
    names = sorted({s["kernel_name"] for s in record["kernel_symbols"]
                    if s["kernel_name"].startswith(("Cijk_", "Dijk_"))})
    gemms = [n for n in names if re.match(r"Cijk_A[a-z]+_B[a-z]+_", n)]
    helpers = [n for n in names if n not in gemms]
    assert len(gemms) > 4000 and len(helpers) > 1000
    for name, answer in zip(gemms, classify_names(gemms, RULESET, arch="gfx950"), strict=True):
        assert (answer.path, answer.op, answer.rule) == ("bf16", "gemm", "hipblaslt-tensile"), name
    for name, answer in zip(helpers, classify_names(helpers, RULESET, arch="gfx950"),
                            strict=True):
        assert (answer.path, answer.op, answer.rule) == ("unknown", "other", "hipblaslt-aux"), name
    dispatched = {s["kernel_id"] for s in record["kernel_symbols"]} & {
        d["dispatch_info"]["kernel_id"] for d in record["buffer_records"]["kernel_dispatch"]}
    assert dispatched
