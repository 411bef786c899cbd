"""Findings and verdicts: expected (checkpoint x GPU) vs observed (classified kernels), per phase.

Each test builds a small store directly (runs, kernel_names, classifications, kernels, devices,
steps, nvtx_ranges) and calls ``evaluate_run``, as the analyze command will.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from tests.support import paths
from tracekit.aggregate import refresh_kernel_groups
from tracekit.expect.checkpoint import Declaration, declaration_from_word, read_declaration
from tracekit.expect.logs import LogEvidence, match_line
from tracekit.findings import FindingContext, evaluate, verdict_sentences
from tracekit.findings.model import PathTime
from tracekit.findings.rules import SEVERITY_ORDER, at_or_above, load_rules
from tracekit.findings.stage import evaluate_run
from tracekit.gpus import parse_gpu
from tracekit.run_gpu import settle_run_gpu
from tracekit.store.db import Store
from tracekit.store.schema import (
    ClassificationRow,
    DeviceRow,
    FindingRow,
    KernelNameRow,
    KernelRow,
    NvtxRangeRow,
    RunRow,
    StepRow,
)

CHECKPOINTS = paths.CHECKPOINTS

# Kernel names of GEMM families the rules decode (CUTLASS FP4, Marlin, trtllm-gen, FlashInfer).
FP4_SM120 = (
    "void cutlass::device_kernel<vllm::enable_sm120_family<cutlass::gemm::kernel::GemmUniversal<"
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120TmaWarpSpecializedBlockScaled"
    "<3, 2>, cute::tuple<cutlass::nv_float4_t<cutlass::float_e2m1_t>>>>>>(Params)"
)
FP4_SM100 = (
    "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue4m3xf4_ue4m3xf4_f32_bf16_bf16"
)
MARLIN_FP4 = (
    "void marlin::Marlin<(long)1125899906909960, (long)562949953487106, (long)1125899906909960, "
    "(long)2814749767172868, 256, 1, 8, 8, true, 4, 8, false>(Params)"
)
MARLIN_FP8 = (
    "void marlin::Marlin<(long)1125899906909960, (long)2814749767172868, (long)1125899906909960, "
    "(long)1125899906909960, 256, 1, 8, 8, true, 4, -1, false>(Params)"
)
FP8_SM90 = "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
FP8_SM89 = "sm89_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_tensor16x8x32_kernel"  # noqa: E501
BF16_NVJET = "nvjet_tst_128x256_64x4_2x1_v_bz_TNT"
BF16_NVJET_SM100 = "nvjet_sm100_tst_128x256_64x4_2x1_v_bz_TNT"
OAI_MXFP4 = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu"
TRTLLM_MXFP8 = (
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x256u2_s4_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut"
)
FUSED_MOE = "fused_moe_kernel"
FLASH_BF16 = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>"  # noqa: E501
FLASH_FP8 = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<__nv_fp8_e4m3, __nv_bfloat16>"

RTX_5090 = ("NVIDIA GeForce RTX 5090", 12, 0)
H100 = ("NVIDIA H100 80GB HBM3", 9, 0)
A100 = ("NVIDIA A100-SXM4-80GB", 8, 0)
B200 = ("NVIDIA B200", 10, 0)
GB10 = ("NVIDIA GB10", 12, 1)


@dataclass(frozen=True)
class K:
    """A kernel family in a fake run: its classification and how much time it takes per phase."""

    name: str
    op: str
    path: str
    library: str | None = None
    activations: str | None = None
    weights: str | None = None
    ns: dict[str | None, int] | None = None  # phase → total ns (split into 4 records)


_RUN_SEQ = itertools.count(1)


def make_run(
    store: Store,
    kernels: Sequence[K],
    *,
    device: tuple[str, int, int] | None = RTX_5090,
    marker_steps: int = 2,
    heuristic_steps: int = 0,
    nvtx: Sequence[tuple[str, str | None]] = (),
) -> int:
    """Insert a run with the given kernels (each split into 4 records per phase)."""
    with store.begin() as conn:
        run_id = conn.execute(
            RunRow.__table__.insert().values(
                source_path="fake.sqlite",
                sha256=f"{next(_RUN_SEQ):064x}",
                format="nsys-sqlite",
                tracekit_version="test",
                created_at=dt.datetime.now(dt.timezone.utc),
            )
        ).inserted_primary_key[0]
        if device is not None:
            conn.execute(
                DeviceRow.__table__.insert().values(
                    run_id=run_id,
                    device_index=0,
                    name=device[0],
                    compute_major=device[1],
                    compute_minor=device[2],
                )
            )
        records = []
        t = 0
        for key, kernel in enumerate(kernels):
            name_id = conn.execute(
                KernelNameRow.__table__.insert().values(
                    run_id=run_id, source_key=key, name=kernel.name
                )
            ).inserted_primary_key[0]
            conn.execute(
                ClassificationRow.__table__.insert().values(
                    run_id=run_id,
                    name_id=name_id,
                    op=kernel.op,
                    path=kernel.path,
                    library=kernel.library,
                    activations=kernel.activations,
                    weights=kernel.weights,
                    rule="test",
                    evidence="name",
                    confidence="high",
                )
            )
            for phase, ns in (kernel.ns or {}).items():
                for _ in range(4):
                    records.append(
                        {
                            "run_id": run_id,
                            "name_id": name_id,
                            "device": 0,
                            "start_ns": t,
                            "end_ns": t + ns // 4,
                            "phase": phase,
                        }
                    )
                    t += ns
        if records:
            conn.execute(KernelRow.__table__.insert(), records)
        for i in range(marker_steps):
            conn.execute(
                StepRow.__table__.insert().values(
                    run_id=run_id, phase="decode", source="marker", start_ns=i, end_ns=i + 1
                )
            )
        for i in range(heuristic_steps):
            conn.execute(
                StepRow.__table__.insert().values(
                    run_id=run_id, phase="decode", source="heuristic", start_ns=i, end_ns=i + 1
                )
            )
        for kind, text in nvtx:
            conn.execute(
                NvtxRangeRow.__table__.insert().values(run_id=run_id, kind=kind, start_ns=0,
                                                       text=text)
            )
    return run_id


def judge(store: Store, run_id: int, declaration: Declaration | None = None,  # type: ignore[no-untyped-def]
          *, gpu: str | None = None, **kwargs):
    """The analysis' last stages: the groups, the run's GPU (``--gpu``, the log's device
    line), the findings."""
    with store.begin() as conn:
        refresh_kernel_groups(conn, run_id)
        settle_run_gpu(conn, run_id, parse_gpu(gpu) if gpu else None,
                       kwargs.get("log_evidence", ()))
        findings = evaluate_run(conn, run_id, declaration=declaration, **kwargs)
    with store.connect() as conn:
        verdict = conn.execute(select(RunRow.verdict).where(RunRow.id == run_id)).scalar_one()
    return findings, verdict


def rules_of(findings) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.rule for f in findings}


def errors(findings) -> list:  # type: ignore[no-untyped-def]
    return [f for f in findings if f.severity == "error"]


W4A4 = read_declaration(CHECKPOINTS / "ct-nvfp4-w4a4.config.json")
W4A16 = read_declaration(CHECKPOINTS / "ct-nvfp4a16.config.json")
FP8 = read_declaration(CHECKPOINTS / "modelopt-fp8.hf_quant_config.json")
MXFP4 = read_declaration(CHECKPOINTS / "gpt-oss-mxfp4.config.json")
MIXED = read_declaration(CHECKPOINTS / "modelopt-mixed.config.json")
MODELOPT_NVFP4 = read_declaration(CHECKPOINTS / "modelopt-nvfp4")

LM_HEAD_BF16 = K(
    BF16_NVJET, "gemm", "bf16", "cublas", "bf16", ns={"prefill": 40_000, "decode": 30_000}
)


# ---------------------------------------------------------------------------------------------
# The canonical story: the same NVFP4 label twice on an RTX 5090


def test_nvfp4_w4a4_on_sm120_running_fp4_kernels_is_confirmed(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                FP4_SM120,
                "gemm",
                "fp4",
                "cutlass",
                "nvfp4",
                "nvfp4",
                ns={"prefill": 900_000, "decode": 600_000},
            ),
            LM_HEAD_BF16,
        ],
    )
    findings, verdict = judge(store, run, W4A4)
    assert not errors(findings)
    assert "silent-fallback" not in rules_of(findings)
    assert "prefill:" in verdict and "decode:" in verdict
    assert "native path, no fallback" in verdict and "ran fp4 (CUTLASS)" in verdict


def test_nvfp4_w4a4_on_sm120_running_marlin_is_a_silent_fallback(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                MARLIN_FP4,
                "gemm",
                "weight_only",
                "Marlin",
                "bf16",
                "nvfp4",
                ns={"prefill": 900_000, "decode": 940_000},
            ),
            K(
                BF16_NVJET,
                "gemm",
                "bf16",
                "cublas",
                "bf16",
                ns={"prefill": 50_000, "decode": 60_000},
            ),
        ],
    )
    findings, verdict = judge(store, run, W4A4)
    fallbacks = [f for f in findings if f.rule == "silent-fallback"]
    assert {f.phase for f in fallbacks} == {"prefill", "decode"}
    decode = next(f for f in fallbacks if f.phase == "decode")
    assert decode.severity == "error"
    assert decode.share == pytest.approx(0.94, abs=0.01)  # the bf16 GEMMs are lm_head & co.
    assert decode.message.startswith("decode: 94% of GEMM time ran weight_only (Marlin, BF16 math)")
    assert (
        "declares W4A4 NVFP4 and the RTX 5090 (sm120) computes FP4 natively — silent fallback."
        in decode.message
    )
    assert any(e.get("source") == "kernel" and e["name"] == MARLIN_FP4 for e in decode.evidence)
    assert "silent fallback" in verdict.splitlines()[1]
    # the findings table holds the same rows
    with store.connect() as conn:
        rows = conn.execute(select(FindingRow.__table__).where(FindingRow.run_id == run)).all()
    assert {r.rule for r in rows} == rules_of(findings)
    stored = next(r for r in rows if r.rule == "silent-fallback" and r.phase == "decode")
    assert json.loads(stored.evidence_json)[0]["source"] == "gemm_time"


def test_a_fallback_the_engine_log_announced_is_logged_not_silent(store: Store) -> None:
    run = make_run(store, [
        K(MARLIN_FP4, "gemm", "weight_only", "Marlin", "bf16", "nvfp4",
          ns={"prefill": 900_000, "decode": 940_000}),
        K(BF16_NVJET, "gemm", "bf16", "cublas", "bf16", ns={"prefill": 50_000, "decode": 60_000}),
    ])
    line = match_line("INFO 07-01 [__init__.py:5] Using MarlinNvFp4LinearKernel for NVFP4 GEMM",
                      12)
    assert line is not None
    findings, verdict = judge(store, run, W4A4, log_evidence=[line])
    assert "silent-fallback" not in rules_of(findings) and not errors(findings)
    logged = [f for f in findings if f.rule == "logged-fallback"]
    assert {f.phase for f in logged} == {"prefill", "decode"}
    decode = next(f for f in logged if f.phase == "decode")
    assert decode.severity == "warning"
    assert "a fallback the engine announced (log line 12: \"" in decode.message
    assert "MarlinNvFp4LinearKernel" in decode.message
    assert any(e.get("source") == "log" and e["line"] == 12 for e in decode.evidence)
    assert "a fallback the engine announced" in verdict.splitlines()[1]


def test_the_same_label_gets_opposite_verdicts(store: Store) -> None:
    native = make_run(store, [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})])
    marlin = make_run(
        store, [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})]
    )
    assert W4A4.quant == "NVFP4"
    assert not errors(judge(store, native, W4A4)[0])
    assert errors(judge(store, marlin, W4A4)[0])


def test_declared_w4a16_running_marlin_is_not_an_error(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                MARLIN_FP4,
                "gemm",
                "weight_only",
                "Marlin",
                "bf16",
                "nvfp4",
                ns={"prefill": 800_000, "decode": 900_000},
            ),
            LM_HEAD_BF16,
        ],
    )
    marlin_warning = match_line(
        "WARNING [marlin_utils_fp4.py:9] Your GPU does not have native support for FP4 computation but "  # noqa: E501
        "FP4 quantization is being used. Weight-only FP4 compression will be used leveraging the Marlin kernel.",  # noqa: E501
        3,
    )
    assert marlin_warning is not None
    findings, verdict = judge(store, run, W4A16, log_evidence=[marlin_warning])
    assert not errors(findings)
    assert not any(f.severity == "warning" for f in findings)
    unused = [f for f in findings if f.rule == "native-unused"]
    assert unused and all(f.severity == "info" for f in unused)
    assert "RTX 5090 (sm120) computes FP4 natively" in unused[0].message
    # the Marlin warning alone is never a verdict: reported as info, kernels decide
    assert "log-fallback-unconfirmed" in rules_of(findings)
    assert "weight-only by design" in verdict


def test_marlin_warning_with_native_fp4_kernels_is_info_only(store: Store) -> None:
    run = make_run(store, [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000_000})])
    warning = match_line(
        "Your GPU does not have native support for FP4 computation but FP4 quantization", 40
    )
    findings, _ = judge(store, run, W4A4, log_evidence=[warning])
    assert [f.rule for f in findings if f.severity != "info"] == []
    assert "log-fallback-unconfirmed" in rules_of(findings)


# ---------------------------------------------------------------------------------------------
# FP8: expected Marlin on sm80, fallback on sm90


def test_fp8_checkpoint_on_a100_running_fp8_marlin_is_hardware_limited(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP8, "gemm", "weight_only", "marlin", "bf16", "fp8", ns={"decode": 1_000_000})],
        device=A100,
    )
    findings, verdict = judge(store, run, FP8)
    assert not errors(findings)
    limited = [f for f in findings if f.rule == "hardware-limited"]
    assert limited and limited[0].severity == "info"
    assert "A100 (sm80) has no native FP8" in verdict and "not a fallback" in verdict


def test_fp8_checkpoint_on_h100_running_fp8_marlin_is_a_fallback(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP8, "gemm", "weight_only", "marlin", "bf16", "fp8", ns={"decode": 1_000_000})],
        device=H100,
    )
    findings, verdict = judge(store, run, FP8)
    assert [f.rule for f in errors(findings)] == ["silent-fallback"]
    assert "H100 (sm90) computes FP8 natively — silent fallback" in verdict


def test_fp8_checkpoint_on_h100_running_fp8_kernels(store: Store) -> None:
    run = make_run(
        store,
        [K(FP8_SM90, "gemm", "fp8", "cublas", "fp8", ns={"prefill": 10_000, "decode": 10_000})],
        device=H100,
    )
    findings, _ = judge(store, run, FP8)
    assert not errors(findings)


def test_nvfp4_w4a4_on_h100_running_marlin_is_hardware_limited(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})],
        device=H100,
    )
    findings, verdict = judge(store, run, W4A4)
    assert not errors(findings) and "hardware-limited" in rules_of(findings)
    assert "has no native FP4" in verdict


# ---------------------------------------------------------------------------------------------
# MXFP4 (gpt-oss) and mixed checkpoints


def test_mxfp4_on_b200_running_mxfp8_is_not_a_fallback(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                TRTLLM_MXFP8,
                "grouped_gemm",
                "fp8",
                "trtllm-gen",
                "mxfp8",
                "mxfp4",
                ns={"prefill": 500_000, "decode": 500_000},
            ),
            K(
                BF16_NVJET_SM100,
                "gemm",
                "bf16",
                "cublas",
                "bf16",
                ns={"prefill": 100_000, "decode": 100_000},
            ),
        ],
        device=B200,
    )
    findings, verdict = judge(store, run, MXFP4)
    assert not errors(findings) and not any(f.severity == "warning" for f in findings)
    assert "silent fallback" not in verdict and "native-unused" not in rules_of(findings)


def test_mxfp4_on_sm120_running_marlin_is_info(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                MARLIN_FP4,
                "grouped_gemm",
                "weight_only",
                "Marlin",
                "bf16",
                "mxfp4",
                ns={"decode": 1_000_000},
            )
        ],
    )
    findings, _ = judge(store, run, MXFP4)
    assert not errors(findings)
    assert "native-unused" in rules_of(findings)


def test_mxfp4_on_h100_running_oai_triton_is_expected(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                OAI_MXFP4,
                "grouped_gemm",
                "weight_only",
                "triton",
                "bf16",
                "mxfp4",
                ns={"decode": 1_000_000},
            )
        ],
        device=H100,
    )
    findings, verdict = judge(store, run, MXFP4)
    assert not errors(findings) and "native-unused" not in rules_of(findings)
    assert "weight-only by design" in verdict


def test_mixed_checkpoint_weight_only_layers_are_by_design(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FP8_SM89, "gemm", "fp8", "cublas", "fp8", ns={"decode": 300_000}),
            K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 700_000}),
        ],
    )
    findings, _ = judge(store, run, MIXED)
    assert not errors(findings)


def test_mixed_checkpoint_with_its_native_layers_gone_is_a_fallback(store: Store) -> None:
    run = make_run(
        store,
        [
            K(MARLIN_FP8, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 300_000}),
            K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 700_000}),
        ],
    )
    findings, _ = judge(store, run, MIXED)
    assert [f.rule for f in errors(findings)] == ["silent-fallback"]


def test_small_bf16_share_from_excluded_layers_is_not_a_fallback(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 700_000}),
            K(
                BF16_NVJET, "gemm", "bf16", "cublas", "bf16", ns={"decode": 300_000}
            ),  # lm_head, router …
        ],
    )
    findings, _ = judge(store, run, W4A4)
    assert not errors(findings)


def test_partial_weight_only_fallback_in_a_pure_w4a4_checkpoint(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"prefill": 600_000}),
            K(MARLIN_FP4, "grouped_gemm", "weight_only", "marlin", "bf16", ns={"prefill": 400_000}),
        ],
    )
    findings, _ = judge(store, run, W4A4)
    fallback = next(f for f in findings if f.rule == "silent-fallback")
    assert fallback.share == pytest.approx(0.4)
    assert fallback.message.startswith(
        "prefill: 40% of GEMM time ran weight_only (Marlin, BF16 math)"
    )


# ---------------------------------------------------------------------------------------------
# Without a checkpoint, without a GPU


def test_no_declaration_gives_verdict_without_errors(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 940, "prefill": 60})],
    )
    findings, verdict = judge(store, run, None)
    assert not errors(findings)
    assert (
        "decode: 100% of GEMM time ran weight_only (Marlin, BF16 math); no checkpoint declaration"
        in verdict
    )


def test_expect_word_declaration(store: Store) -> None:
    run = make_run(
        store, [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})]
    )
    findings, verdict = judge(store, run, declaration_from_word("fp4"))
    assert [f.rule for f in errors(findings)] == ["silent-fallback"]
    assert "although --expect states W4A4 FP4 and the RTX 5090 (sm120)" in verdict


def test_unknown_gpu_makes_the_fallback_a_warning(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})],
        device=None,
    )
    findings, verdict = judge(store, run, W4A4)
    assert not errors(findings)
    assert [f.rule for f in findings if f.severity == "warning"] == ["fallback-unverified"]
    assert "pass --gpu" in verdict


def test_gpu_override_and_log_device(store: Store) -> None:
    run = make_run(
        store,
        [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})],
        device=None,
    )
    findings, verdict = judge(store, run, W4A4, gpu="sm120")
    assert errors(findings) and "(sm120) computes FP4 natively" in verdict
    device_line = match_line(
        "  Device 0: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes", 1
    )
    findings, verdict = judge(store, run, W4A4, log_evidence=[device_line])
    assert errors(findings) and "RTX 5090 (sm120)" in verdict
    # --gpu fills what the trace leaves unknown and never overrides what it recorded (the
    # rule of tracekit/run_gpu.py): the H100 run given --gpu A100 is still judged as the
    # H100 it ran on (sm90 computes FP8: a silent fallback), and the disagreement is a
    # warning. (Before the run's GPU was decided once, the findings let --gpu win here and
    # called the run hardware-limited, while the classifier kept the trace's sm90.)
    h100_run = make_run(
        store,
        [K(MARLIN_FP8, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})],
        device=H100,
    )
    with store.begin() as conn:
        decided = settle_run_gpu(conn, h100_run, parse_gpu("A100"))
    assert decided.arch == "sm90" and len(decided.warnings) == 1
    assert "--gpu A100 (sm80) disagrees with the trace" in decided.warnings[0]
    findings, verdict = judge(store, h100_run, FP8, gpu="A100")
    assert errors(findings) and "H100 (sm90) computes FP8 natively" in verdict


# ---------------------------------------------------------------------------------------------
# Other findings


def test_unknown_gemm_time_above_threshold(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FUSED_MOE, "grouped_gemm", "unknown", "triton", ns={"decode": 400_000}),
            K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 600_000}),
        ],
    )
    findings, _ = judge(store, run, W4A4)
    unknown = next(f for f in findings if f.rule == "unknown-gemm-time")
    assert unknown.severity == "warning" and unknown.share == pytest.approx(0.4)
    assert "fused_moe_kernel" in unknown.message
    assert "-t cublas" in unknown.message and "torch profiler trace" in unknown.message
    assert "-t cublas" in (unknown.hint or "") and "ncu" in (unknown.hint or "")
    findings, _ = judge(store, run, W4A4, unknown_threshold=0.5)
    assert "unknown-gemm-time" not in rules_of(findings)


def test_mostly_unknown_phase_gets_no_verdict(store: Store) -> None:
    run = make_run(store, [K(FUSED_MOE, "grouped_gemm", "unknown", "triton", ns={"decode": 1_000})])
    findings, verdict = judge(store, run, W4A4)
    assert not errors(findings)
    assert "unknown datatype path — no verdict" in verdict


def test_heuristic_and_missing_phases(store: Store) -> None:
    kernels = [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})]
    heuristic = make_run(store, kernels, marker_steps=0, heuristic_steps=5)
    findings, _ = judge(store, heuristic, W4A4)
    assert next(f for f in findings if f.rule == "phases-heuristic").severity == "info"
    missing = make_run(
        store, [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={None: 1_000})], marker_steps=0
    )
    findings, verdict = judge(store, missing, W4A4)
    assert "phases-missing" in rules_of(findings)
    assert verdict.startswith("whole run (no inference steps):")  # no steps at all
    marked = make_run(store, kernels, marker_steps=3)
    assert not {"phases-heuristic", "phases-missing"} & rules_of(judge(store, marked, W4A4)[0])


def test_one_heuristic_step_is_counted_in_the_singular(store: Store) -> None:
    kernels = [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})]
    findings, _ = judge(store, make_run(store, kernels, marker_steps=0, heuristic_steps=1), W4A4)
    message = next(f for f in findings if f.rule == "phases-heuristic").message
    assert message.endswith("(1 heuristic step).")


def test_nvtx_domain_without_ranges(store: Store) -> None:
    kernels = [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})]
    lost = make_run(store, kernels, nvtx=[("domain_create", "vllm")])
    finding = next(f for f in judge(store, lost, W4A4)[0] if f.rule == "nvtx-ranges-lost")
    assert finding.severity == "warning" and "'vllm'" in finding.message
    kept = make_run(
        store,
        kernels,
        nvtx=[("domain_create", "vllm"), ("push_pop", "execute_context_1(8)_generation_0(0)")],
    )
    assert "nvtx-ranges-lost" not in rules_of(judge(store, kept, W4A4)[0])


def test_kernel_built_for_another_architecture(store: Store) -> None:
    run = make_run(
        store,
        [
            K(BF16_NVJET_SM100, "gemm", "bf16", "cublas", "bf16", ns={"decode": 250}),
            K(FP8_SM90, "gemm", "fp8", "cublas", "fp8", ns={"decode": 750}),
        ],
        device=H100,
    )
    findings, _ = judge(store, run, FP8)
    mismatch = next(f for f in findings if f.rule == "kernel-arch-mismatch")
    assert mismatch.severity == "error" and mismatch.share == pytest.approx(0.25, abs=0.01)
    assert "nvjet_sm100" in mismatch.message and "sm90" in mismatch.message


def test_older_arch_kernels_on_newer_gpu_are_fine(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FP8_SM89, "gemm", "fp8", "cublas", "fp8", ns={"decode": 500}),  # cuBLAS 12.8 on sm120
            K(
                "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8",
                "gemm",
                "bf16",
                "cutlass",
                ns={"decode": 500},
            ),
        ],
    )
    assert "kernel-arch-mismatch" not in rules_of(judge(store, run, FP8)[0])


def test_sm120_only_build_on_gb10(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                "void cutlass::device_kernel<vllm::enable_sm120_only<Gemm>>(Params)",
                "gemm",
                "fp8",
                "cutlass",
                ns={"decode": 1_000},
            )
        ],
        device=GB10,
    )
    assert "kernel-arch-mismatch" in rules_of(judge(store, run, FP8)[0])


def test_kv_cache_declared_fp8_but_attention_reads_bf16(store: Store) -> None:
    kernels = [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})]
    bf16_kv = make_run(
        store,
        kernels + [K(FLASH_BF16, "attention", "bf16", "flash-attn", "bf16", ns={"decode": 500})],
    )
    finding = next(
        f for f in judge(store, bf16_kv, MODELOPT_NVFP4)[0] if f.rule == "kv-cache-16bit"
    )
    assert finding.severity == "warning" and "FP8 KV cache" in finding.message
    fp8_kv = make_run(
        store,
        kernels
        + [K(FLASH_FP8, "attention", "fp8", "flashinfer", "bf16", "fp8", ns={"decode": 500})],
    )
    assert "kv-cache-16bit" not in rules_of(judge(store, fp8_kv, MODELOPT_NVFP4)[0])
    # a classifier that calls FP8-KV attention "bf16" (16-bit math): the name still shows fp8 KV
    named = make_run(
        store, kernels + [K(FLASH_FP8, "attention", "bf16", "flashinfer", ns={"decode": 500})]
    )
    assert "kv-cache-16bit" not in rules_of(judge(store, named, MODELOPT_NVFP4)[0])
    # no KV declaration: nothing to compare
    assert "kv-cache-16bit" not in rules_of(judge(store, bf16_kv, W4A4)[0])


def test_rerun_replaces_findings(store: Store) -> None:
    run = make_run(
        store, [K(MARLIN_FP4, "gemm", "weight_only", "marlin", "bf16", ns={"decode": 1_000})]
    )
    judge(store, run, W4A4)
    judge(store, run, W4A16)
    with store.connect() as conn:
        rows = conn.execute(select(FindingRow.rule).where(FindingRow.run_id == run)).scalars().all()
    assert "silent-fallback" not in rows


def test_empty_run(store: Store) -> None:
    run = make_run(store, [], marker_steps=0)
    findings, verdict = judge(store, run, W4A4)
    assert findings == [] and verdict == "No GEMM kernels were classified in this run — no verdict."


# ---------------------------------------------------------------------------------------------
# Pure engine and rule data


def test_evaluate_is_pure_and_sorted_by_severity() -> None:
    ctx = FindingContext(
        gemm=(
            PathTime("decode", "weight_only", 940, "Marlin", "bf16"),
            PathTime("decode", "unknown", 60),
        ),
        declaration=W4A4,
        gpu_arch="sm120",
        gpu_name="NVIDIA GeForce RTX 5090",
        heuristic_steps=3,
    )
    findings = evaluate(ctx)
    assert [f.severity for f in findings] == sorted(
        (f.severity for f in findings), key=lambda s: -SEVERITY_ORDER[s]
    )
    assert verdict_sentences(ctx) == [
        "decode: 94% of GEMM time ran weight_only (Marlin, BF16 math) although the checkpoint declares "  # noqa: E501
        "W4A4 NVFP4 and the RTX 5090 (sm120) computes FP4 natively — silent fallback."
    ]


def test_severity_order_and_fail_on() -> None:
    assert SEVERITY_ORDER["error"] > SEVERITY_ORDER["warning"] > SEVERITY_ORDER["info"]
    assert at_or_above("error", "warning") and not at_or_above("info", "warning")


def test_finding_rules_are_complete() -> None:
    rules = load_rules()
    required = {
        "silent-fallback",
        "native-unused",
        "unknown-gemm-time",
        "phases-heuristic",
        "nvtx-ranges-lost",
        "kernel-arch-mismatch",
        "kv-cache-16bit",
        "hardware-limited",
    }
    assert required <= set(rules.rules)
    assert rules.rule("silent-fallback").severity == "error"
    assert rules.rule("kernel-arch-mismatch").severity == "error"
    assert rules.rule("native-unused").severity == "info"
    for rule in rules.rules.values():
        assert rule.cite, rule.id


def test_log_evidence_dict() -> None:
    evidence = LogEvidence(
        line_no=3, text="x", kind="fallback-warning", rule="r", engine="vllm", path="weight_only"
    )
    assert evidence.as_dict()["line"] == 3


def test_emulation_dequant_to_bf16_is_a_fallback(store: Store) -> None:
    run = make_run(
        store,
        [
            K(
                "void vllm::dequant_nvfp4_kernel<__nv_bfloat16>(Params)",
                "dequantize",
                "weight_only",
                ns={"decode": 100_000},
            ),
            K(BF16_NVJET, "gemm", "bf16", "cublas", "bf16", ns={"decode": 1_000_000}),
        ],
    )
    findings, verdict = judge(store, run, W4A4)
    fallback = next(f for f in findings if f.rule == "silent-fallback")
    assert fallback.share == pytest.approx(1.0) and "ran bf16 (cuBLAS)" in fallback.message


def test_mxfp4_opt_in_verdict(store: Store) -> None:
    run = make_run(
        store,
        [K(TRTLLM_MXFP8, "grouped_gemm", "fp8", "trtllm-gen", "mxfp8", ns={"decode": 1_000})],
        device=B200,
    )
    _, verdict = judge(store, run, MXFP4)
    assert "engine chose quantized activations — not a fallback" in verdict


def test_w4a16_declaration_running_fp4_is_opted_in(store: Store) -> None:
    run = make_run(store, [K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"decode": 1_000})])
    findings, verdict = judge(store, run, W4A16)
    assert not errors(findings) and "not a fallback" in verdict


def test_a_sliver_of_unattributed_bf16_is_not_judged(store: Store) -> None:
    run = make_run(
        store,
        [
            K(FP4_SM120, "gemm", "fp4", "cutlass", ns={"prefill": 500_000, "decode": 500_000}),
            K(
                BF16_NVJET, "gemm", "bf16", "cublas", "bf16", ns={None: 50_000}
            ),  # warm-up, no marker
        ],
    )
    findings, verdict = judge(store, run, W4A4)
    assert not errors(findings)
    assert "unattributed" not in verdict


def test_every_rule_message_renders_with_its_declared_fields() -> None:
    from tracekit.datafiles import load_table

    sample = {
        "phase": "decode",
        "share": 0.5,
        "observed": "weight_only",
        "detail": " (Marlin)",
        "declarer": "the checkpoint declares",
        "declared": "W4A4 NVFP4",
        "gpu": "RTX 5090",
        "arch": "sm120",
        "native": "FP4",
        "threshold": 0.2,
        "examples": "`x`",
        "steps": 3,
        "domains": "'vllm'",
        "count": 1,
        "example": "`k`",
        "token": "sm100",
        "kv": "FP8",
        "line": 3,
        "text": "t",
        "correlation_ids": 2,
        "external_ids": 3,
        "subject": "50% of GEMM time",
        "rest": "; lm_head (9%) ran bf16 as excluded",
        "expected": "weight_only",
        "kernels": "Marlin W4A16",
        "file": "config.json",
        "why": "quant_method 'hqq' is not read",
        "problem": "config.json: not valid JSON",
        "launches": 4,
        "rank": 3,
        "aligned": 120,
        "ranks": 8,
        "excess": 0.18,
    }
    rules = load_rules()
    for row in load_table("_findings.toml")["rule"]:
        fields = {key: sample[key] for key in row["fields"]}
        assert rules.rule(row["id"]).render(**{"phase": None, "share": None, **fields})
    for template in rules.verdict.values():
        assert template.format(**sample)
