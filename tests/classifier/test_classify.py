"""Classification of real kernel names, evidence precedence, feasibility and the store stage."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import sqlalchemy as sa

from tests.support import paths
from tracekit.classifier import NameEvidence, classify_name, classify_names, load_ruleset
from tracekit.classifier.names import prepare

RULESET = load_ruleset(use_env=False)
MATH_OPS = {"gemm", "grouped_gemm", "gemv", "attention"}
# The labelled corpus and its accuracy targets are tested in tests/classifier/test_corpus.py.
CORPUS_NAMES = [
    json.loads(line)["name"]
    for corpus in sorted(paths.CORPUS.glob("*.jsonl"))
    for line in corpus.read_text(encoding="utf-8").splitlines()
]


@pytest.mark.parametrize(
    "name",
    [
        "fused_moe_kernel",
        "scaled_mm_kernel",
        "BatchDecodeWithPagedKVCacheKernel",
        "nvjet_sm90_…",
        "void marlin_moe_wna16::Marlin<11258999069…",
        "void marlin::Marlin<(long)1125899906909952, (long)11258999…",
    ],
)
def test_names_that_do_not_decide_are_unknown_with_a_reason(name):
    result = classify_name(name, RULESET)
    assert result.path == "unknown"
    assert result.reason and result.confidence == "low"


def test_a_marlin_name_cut_after_a_16_bit_activation_id_is_weight_only():
    """Marlin takes only 4/8-bit and FP8/FP4 weights: once the activation id is whole and
    16-bit, the cut weight id cannot change the path (an INT8 activation id, W4A8, can)."""
    result = classify_name("void marlin_moe_wna16::Marlin<1125899906909960l, 56294995348…", RULESET)
    assert (result.path, result.activations, result.rule) == ("weight_only", "bf16",
                                                             "marlin-weight-cut")


def test_results_keep_input_order_and_duplicates():
    names = [
        "nvjet_tst_192x8_64x8_4x1_v_bz_TNT",
        "volta_sgemm_64x64_nt",
        "",
        "nvjet_tst_192x8_64x8_4x1_v_bz_TNT",
    ]
    results = classify_names(names, RULESET)
    assert [r.name for r in results] == names
    assert [r.path for r in results] == ["bf16", "fp32", "unknown", "bf16"]
    assert results[2].reason == "empty kernel name"


def test_truncated_names_keep_what_is_left():
    cut = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroup..."
    assert classify_name(cut, RULESET).path == "bf16"
    gone = (
        "void cutlass::device_kernel<vllm::enable_sm90_or_later<cutlass::gemm::kernel::"
        "GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gem…"
    )
    result = classify_name(gone, RULESET)
    assert result.path == "unknown" and "truncated" in result.reason


def test_mangled_names_are_demangled():
    mangled = (
        "_ZN7cutlass7Kernel2I50cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4EEvNT_6ParamsE"
    )
    prepared = prepare(mangled)
    assert prepared.demangled and prepared.text.startswith("void cutlass::Kernel2<")
    assert classify_name(mangled, RULESET).path == "tf32"


@pytest.mark.parametrize(
    ("printed", "text"),
    [
        # rocprof prints the kernel descriptor symbol: the mangled name plus ".kd"
        ("_ZN5aiter19fmha_fwd_hd128_bf16E.kd", "aiter::fmha_fwd_hd128_bf16"),
        ("_gemm_afp4wfp4_kernel.kd", "_gemm_afp4wfp4_kernel"),
        ("mul_mat_q.kd", "mul_mat_q"),
        # only a trailing ".kd" is the descriptor suffix
        ("my.kd_kernel", "my.kd_kernel"),
    ],
)
def test_rocprof_kernel_descriptor_suffix_is_dropped(printed, text):
    prepared = prepare(printed)
    assert prepared.text == text
    assert prepared.original == printed
    # the answer is the one the bare symbol gets
    assert replace(classify_name(printed, RULESET), name=text) == classify_name(text, RULESET)


def test_mangled_name_that_fails_to_demangle_is_kept():
    prepared = prepare("_Znot_a_real_mangled_name")
    assert not prepared.demangled and prepared.text == "_Znot_a_real_mangled_name"


def test_marlin_ids_separate_w4a16_w4a8_and_fp8_weight_only():
    def marlin(a, b):
        return classify_name(
            f"void marlin::Marlin<{a}l, {b}l, {a}l, {a}l, 256, 1, 8, 8, 4, false>(const int4*)",
            RULESET,
        )

    bf16, fp16, int8, e4m3, u4b8, fp4 = (
        1125899906909960,
        1125899906910725,
        1125899906909952,
        2814749767172868,
        1125899907892224,
        562949953487106,
    )
    assert marlin(bf16, u4b8).path == "weight_only"
    assert marlin(fp16, fp4).path == "weight_only"
    assert marlin(int8, u4b8).path == "int8"
    assert marlin(e4m3, fp4).path == "fp8"
    assert marlin(bf16, e4m3).weights == "e4m3"
    unknown_id = marlin(bf16, 1234567890123)
    assert unknown_id.path == "unknown" and "not in table" in unknown_id.reason


# --- evidence precedence ------------------------------------------------------------------------

NVJET = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
MOE = "fused_moe_kernel"


def test_counters_override_the_name():
    ev = NameEvidence(
        counters={
            "sm__ops_path_tensor_src_fp8.sum": 1e9,
            "sm__ops_path_tensor_src_bf16_dst_fp32.sum": 0.0,
        }
    )
    result = classify_name(NVJET, RULESET, evidence=ev)
    assert (result.path, result.evidence, result.confidence) == ("fp8", "counters", "high")
    assert "the name said bf16" in result.reason


def test_counters_confirm_weight_only():
    name = (
        "void marlin::Marlin<1125899906909960l, 1125899907892224l, 1125899906909960l, "
        "1125899906909960l, 256>(const int4*)"
    )
    ev = NameEvidence(counters={"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 5e8})
    result = classify_name(name, RULESET, evidence=ev)
    assert (result.path, result.evidence) == ("weight_only", "counters")


def test_real_ncu_counters_from_an_rtx_5090(shared_trace):
    """A real ncu CSV of an RTX 5090 (CodeGandee/llm-perf-opt, read from the traces folder when
    present): a CUTLASS BF16 GEMM counts BF16 tensor ops."""
    path = shared_trace("llm-perf-opt/kernel_0016_ncu.metrics.csv")
    import csv

    rows = list(csv.DictReader(path.open()))
    counters = {}
    for row in rows:
        value = row["Metric Value"].replace(",", "")
        try:
            counters[row["Metric Name"]] = float(value)
        except ValueError:
            continue
    result = classify_name(
        rows[0]["Kernel Name"], RULESET, evidence=NameEvidence(counters=counters)
    )
    assert (result.path, result.evidence) == ("bf16", "counters")


def test_op_dtypes_decide_only_when_the_name_does_not():
    ev = NameEvidence(
        op_name="aten::addmm", op_dtypes=("c10::BFloat16", "c10::BFloat16", "c10::BFloat16")
    )
    assert (
        classify_name("nvjet_sss_64x8_64x16_4x1_v_bz_TNT", RULESET, evidence=ev).evidence
        == "op_dtypes"
    )
    explicit = classify_name(
        "sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128", RULESET, evidence=ev
    )
    assert (explicit.path, explicit.evidence) == ("fp8", "name")


def test_custom_op_dtypes_are_not_trusted():
    """vllm::moe_forward says BF16 inputs; its GEMMs run MXFP4 x MXFP8 (the 8×B200 vLLM trace,
    https://github.com/AMD-AGI/TraceLens/blob/171dd74721ca1ec45709e5805b68ae1f65e27811/tests/traces/b200/eager_trace.json.gz)."""
    ev = NameEvidence(op_name="vllm::moe_forward", op_dtypes=("c10::BFloat16", "c10::BFloat16", ""))
    result = classify_name(MOE, RULESET, evidence=ev)
    assert result.path == "unknown" and "not trusted" in result.reason


def test_scaled_mm_op_dtypes_give_fp8():
    ev = NameEvidence(
        op_name="aten::_scaled_mm",
        op_dtypes=("c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"),
    )
    result = classify_name("nvjet_sm100_…", RULESET, evidence=ev)
    assert (result.path, result.evidence, result.confidence) == ("fp8", "op_dtypes", "medium")


def test_log_line_is_the_last_resort():
    ev = NameEvidence(log_path="weight_only", log_line="Using MarlinNvFp4 for NVFP4 GEMM")
    result = classify_name(MOE, RULESET, evidence=ev)
    assert (result.path, result.evidence, result.confidence) == ("weight_only", "log", "low")
    named = classify_name(NVJET, RULESET, evidence=ev)
    assert named.path == "bf16"


# --- feasibility --------------------------------------------------------------------------------

FP4 = "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_TNT"
TRTLLM_GEN = (
    "bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_transOut_"
    "schedS_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f"
)


@pytest.mark.parametrize("arch", ["sm80", "sm_90a", "9.0", "gfx942"])
def test_fp4_before_blackwell_is_recorded_not_guessed(arch):
    result = classify_name(FP4, RULESET, arch=arch)
    assert (result.path, result.evidence) == ("unknown", "feasibility")
    assert "fp4" in result.reason


@pytest.mark.parametrize("arch", ["sm100", "sm120", "10.0", None])
def test_fp4_on_blackwell_is_kept(arch):
    assert classify_name(FP4, RULESET, arch=arch).path == "fp4"


def test_sm100_only_kernel_cannot_run_on_sm120():
    assert classify_name(TRTLLM_GEN, RULESET, arch="sm100").path == "fp4"
    result = classify_name(TRTLLM_GEN, RULESET, arch="sm120")
    assert (result.path, result.evidence) == ("unknown", "feasibility")
    assert "sm120" in result.reason


def test_fp8_needs_ada_or_newer():
    name = "sm89_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize64x128x64"
    assert classify_name(name, RULESET, arch="sm89").path == "fp8"
    assert classify_name(name, RULESET, arch="sm86").path == "unknown"


# --- the store stage ----------------------------------------------------------------------------


def test_classify_run_writes_one_row_per_unique_name_with_op_evidence():
    from tracekit.classifier.stage import classify_run
    from tracekit.store import schema

    engine = sa.create_engine("sqlite://")
    schema.Base.metadata.create_all(engine)
    names = [NVJET, MOE, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64"]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(schema.RunRow.__table__),
            [
                {
                    "id": 1,
                    "source_path": "x",
                    "sha256": "0" * 64,
                    "format": "test",
                    "tracekit_version": "0",
                    "created_at": __import__("datetime").datetime.now(),
                }
            ],
        )
        conn.execute(
            sa.insert(schema.DeviceRow.__table__),
            [{"run_id": 1, "device_index": 0, "arch": "sm90"}],
        )
        conn.execute(
            sa.insert(schema.KernelNameRow.__table__),
            [{"id": i + 1, "run_id": 1, "source_key": i, "name": n} for i, n in enumerate(names)],
        )
        conn.execute(
            sa.insert(schema.KernelRow.__table__),
            [
                {"run_id": 1, "name_id": 1, "start_ns": 0, "end_ns": 1, "external_id": 7,
                 "cpu_op_id": 1},
                {"run_id": 1, "name_id": 2, "start_ns": 2, "end_ns": 3, "external_id": 8,
                 "cpu_op_id": 2},
            ],
        )
        conn.execute(
            sa.insert(schema.CpuOpRow.__table__),
            [
                {
                    "id": 1,
                    "run_id": 1,
                    "name": "aten::addmm",
                    "start_ns": 0,
                    "end_ns": 1,
                    "external_id": 7,
                    "input_types": "['c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16']",
                },
                {
                    "id": 2,
                    "run_id": 1,
                    "name": "aten::mm",
                    "start_ns": 2,
                    "end_ns": 3,
                    "external_id": 8,
                    "input_types": '["c10::Half", "c10::Half"]',
                },
            ],
        )
        assert classify_run(conn, 1, RULESET) == 3
        assert classify_run(conn, 1, RULESET) == 3  # re-running replaces, never duplicates
        rows = conn.execute(
            sa.select(
                schema.ClassificationRow.name_id,
                schema.ClassificationRow.path,
                schema.ClassificationRow.evidence,
            ).order_by(schema.ClassificationRow.name_id)
        ).all()
    assert [tuple(r) for r in rows] == [
        (1, "bf16", "name"),
        (2, "fp16", "op_dtypes"),
        (3, "bf16", "name"),
    ]


def test_keyword_index_never_hides_a_matching_rule():
    """The one-pass keyword prefilter must give exactly what per-rule keyword checks give."""
    from tracekit.classifier.engine import all_matches, rule_matches

    names = CORPUS_NAMES + [
        "fillfunctor_fill",
        "xdeep_gemm::sm90_fp8_gemm",
        "NCCL_allreduce",
        "Marlin<",
        "w4a16",
    ]
    for name in names:
        text = prepare(name).text
        indexed = [m.rule.id for m in all_matches(text, RULESET)]
        naive = [r.id for r in RULESET.rules if rule_matches(r, text) is not None]
        assert indexed == naive, name


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tracekit.classifier import OPS, PATHS  # noqa: E402

_FRAGMENTS = st.sampled_from(
    [
        "nvjet_",
        "tst_",
        "qq",
        "Marlin<",
        "1125899906909960l, ",
        "cutlass::",
        "float_e4m3_t",
        "_Z",
        "N7",
        "bmm_",
        "E2m1",
        "Fp32_",
        "…",
        "...",
        "(ggml_type)",
        "Cijk_Alik_Bljk_",
        "BBS_",
        "<",
        ">",
        " ",
        "\t",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=60), st.lists(_FRAGMENTS, max_size=12).map("".join)), max_size=8
    )
)
def test_any_names_get_one_well_formed_answer_each(names):
    results = classify_names(names, RULESET, arch="sm90")
    assert [r.name for r in results] == names
    for r in results:
        assert r.path in PATHS and r.op in OPS
        assert r.confidence in ("high", "medium", "low")
        assert r.evidence in ("counters", "name", "op_dtypes", "log", "feasibility", "none")
        assert r.path != "unknown" or r.reason


def test_op_types_do_not_name_a_helper_launched_beside_other_kernels():
    """An op's input types describe its matrix product; a kernel no rule knows that the op
    launched together with other kernels (scal_kernel beside cuBLAS's GEMM) stays unknown."""
    name = "void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>)"
    alone = classify_name(name, RULESET, evidence=NameEvidence(
        op_name="aten::mm", op_dtypes=("float", "float")))
    beside = classify_name(name, RULESET, evidence=NameEvidence(
        op_name="aten::mm", op_dtypes=("float", "float"), op_shared=True))
    assert (alone.path, alone.evidence) == ("fp32", "op_dtypes")
    assert (beside.path, beside.op) == ("unknown", "other")
    assert "together with other kernels" in beside.reason
