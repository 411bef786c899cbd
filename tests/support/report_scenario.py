"""Helpers of the report tests: a small analyzed run, independent of the classify/phases
stages, and headless Chromium.

The trace is a real nsys-schema SQLite file from ``tracekit.synth.nsys``, ingested by the real
pipeline; classifications, steps (from the NVTX step markers), kernel phases, findings and
the verdict are then written straight into the store, so the report tests pin down the
report, not the rules. One kernel is named like an XSS payload on purpose.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from sqlalchemy import text

from tracekit.aggregate import refresh_kernel_groups
from tracekit.ingest.pipeline import ingest
from tracekit.store.db import Store, open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

EVIL_NAME = "<img src=x onerror=alert(1)>"
SCRIPT_NAME = "</script><script>alert(1)</script>"
FP4_GEMM = ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<"
            "cutlass::gemm::collective::CollectiveMma<nv_float4_t<float_e2m1_t>, "
            "Sm100BlockScaledTmaUmma>>>(Params)")
MARLIN_GEMM = ("void marlin::Marlin<(vllm::ScalarTypeId)5, 256, 1, 8, 8, true, 4, 8, "
               "false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int, int, int)")
ATTENTION = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, "
             "cutlass::bfloat16_t>>(Flash_fwd_params)")
QUANT = "void vllm::cvt_fp16_to_fp4<__nv_bfloat16, false>(int, int, int64_t const*, int*)"

CLASSES = {
    FP4_GEMM: ("gemm", "fp4", "e2m1", "e2m1", "fp32", "cutlass", "cutlass-nvfp4", "name", "high"),
    MARLIN_GEMM: ("gemm", "weight_only", "fp4", "bf16", "fp32", "marlin", "marlin",
                  "name", "high"),
    ATTENTION: ("attention", "bf16", None, "bf16", "fp32", "flash-attn", "flash-attn",
                "name", "high"),
    QUANT: ("quantize", "fp4", None, None, None, "vllm", "vllm-quant", "name", "medium"),
    EVIL_NAME: ("gemm", "unknown", None, None, None, None, None, "none", "low"),
    SCRIPT_NAME: ("other", "unknown", None, None, None, None, None, "none", "low"),
}

PREFILL_TEXT = "execute_context_1(512)_generation_0(0)"
DECODE_TEXT = "execute_context_0(0)_generation_8(8)"


def scenario(gemm: str, *, decode_steps: int = 6, stream2: int = 13) -> Scenario:
    """One GPU, two streams: a prefill step then decode steps, around ``gemm``."""
    prefill = [KernelSpec(QUANT, 6_000), KernelSpec(gemm, 80_000, count=4),
               KernelSpec(ATTENTION, 50_000, stream=stream2),
               KernelSpec(EVIL_NAME, 9_000, stream=stream2),
               KernelSpec(SCRIPT_NAME, 4_000)]
    decode = [KernelSpec(gemm, 12_000, count=4), KernelSpec(ATTENTION, 8_000, stream=stream2),
              KernelSpec(EVIL_NAME, 3_000, stream=stream2)]
    steps = [StepSpec(PREFILL_TEXT, prefill),
             StepSpec(DECODE_TEXT, decode, repeat=decode_steps)]
    return Scenario(ranks=[RankSpec(pid=4242, gpu_name="NVIDIA B200",
                                    compute_capability=(10, 0), sm_count=148, steps=steps)])


@cache
def _scenario_file(gemm: str, decode_steps: int) -> Path:
    """Each scenario is written once per test session (writing nsys's schema takes seconds)."""
    folder = Path(tempfile.mkdtemp(prefix="tracekit-report-scenario-"))
    return write_scenario(scenario(gemm, decode_steps=decode_steps), folder / "trace.sqlite")


def analyzed_run(store: Store, trace: Path, *, gemm: str = FP4_GEMM, label: str | None = None,
                 decode_steps: int = 6) -> int:
    """Write, ingest and "analyze" a scenario; returns the run id."""
    shutil.copyfile(_scenario_file(gemm, decode_steps), trace)
    run_id = ingest(store, [trace], label=label).run_id
    with store.begin() as connection:
        annotate(connection, run_id, declared_fp4=True)
    return run_id


def annotate(connection, run_id: int, *, declared_fp4: bool) -> None:  # type: ignore[no-untyped-def]
    """The run's GPU (as the analysis decides it), then classifications, steps, kernel
    phases, a finding and the verdict, written directly."""
    from tracekit.run_gpu import settle_run_gpu

    settle_run_gpu(connection, run_id)
    names = dict(connection.execute(text(
        "SELECT name, id FROM kernel_names WHERE run_id = :r"), {"r": run_id}).all())
    for name, name_id in names.items():
        op, path, weights, acts, accum, library, rule, evidence, confidence = CLASSES.get(
            name, ("other", "unknown", None, None, None, None, None, "none", "low"))
        connection.execute(text(
            "INSERT INTO classifications (run_id, name_id, op, path, weights, activations, accum, "
            "library, rule, evidence, confidence, reason) VALUES (:r, :n, :op, :path, :w, :a, "
            ":acc, :lib, :rule, :ev, :conf, :reason)"),
            {"r": run_id, "n": name_id, "op": op, "path": path, "w": weights, "a": acts,
             "acc": accum, "lib": library, "rule": rule, "ev": evidence, "conf": confidence,
             "reason": "name says nothing about types" if path == "unknown" else None})
    ranges = connection.execute(text(
        "SELECT id, start_ns, end_ns, text, global_tid FROM nvtx_ranges WHERE run_id = :r "
        "AND kind = 'push_pop' ORDER BY start_ns"), {"r": run_id}).all()
    for nvtx_id, start, end, marker, tid in ranges:
        match = re.search(r"context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)", marker or "")
        if not match:
            continue
        prefill, decode = int(match.group(1)), int(match.group(3))
        phase = "mixed" if prefill and decode else "prefill" if prefill else "decode"
        step_id = connection.execute(text(
            "INSERT INTO steps (run_id, nvtx_id, engine, phase, source, text, start_ns, end_ns, "
            "global_tid, prefill_tokens, decode_tokens) VALUES (:r, :nvtx, 'trtllm', :phase, "
            "'marker', :text, :s, :e, :tid, :pt, :dt) RETURNING id"),
            {"r": run_id, "nvtx": nvtx_id, "phase": phase, "text": marker, "s": start, "e": end,
             "tid": tid, "pt": int(match.group(2)), "dt": int(match.group(4))}).scalar()
        connection.execute(text(
            "UPDATE kernels SET step_id = :step, phase = :phase WHERE run_id = :r "
            "AND launch_start_ns BETWEEN :s AND :e"),
            {"step": step_id, "phase": phase, "r": run_id, "s": start, "e": end})
        connection.execute(text(
            "UPDATE steps SET gpu_start_ns = (SELECT MIN(start_ns) FROM kernels "
            "WHERE run_id = :r AND step_id = :step), gpu_end_ns = (SELECT MAX(end_ns) "
            "FROM kernels WHERE run_id = :r AND step_id = :step) WHERE id = :step"),
            {"r": run_id, "step": step_id})
    connection.execute(text("UPDATE kernels SET phase = 'unattributed' WHERE run_id = :r "
                            "AND phase IS NULL"), {"r": run_id})
    refresh_kernel_groups(connection, run_id)
    paths = {path for path, in connection.execute(text(
        "SELECT DISTINCT c.path FROM classifications c WHERE c.run_id = :r AND c.op = 'gemm'"),
        {"r": run_id})}
    if declared_fp4 and "weight_only" in paths:
        verdict = ("The checkpoint declares NVFP4, but decode GEMMs ran weight_only "
                   "(FP4 weights dequantized into BF16 math).")
        connection.execute(text(
            "INSERT INTO findings (run_id, rule, severity, message, phase, share, evidence_json) "
            "VALUES (:r, 'declared-path-not-run', 'error', :m, 'decode', 0.93, :ev)"),
            {"r": run_id, "m": "Declared fp4, observed weight_only in 93% of decode GEMM time",
             "ev": json.dumps([{"kernel": MARLIN_GEMM, "path": "weight_only"},
                               {"kernel": EVIL_NAME, "path": "unknown"}])})
    else:
        verdict = "GEMMs ran FP4×FP4 block-scaled math, as the checkpoint declares."
        connection.execute(text(
            "INSERT INTO findings (run_id, rule, severity, message, phase, share, evidence_json) "
            "VALUES (:r, 'unknown-gemm-share', 'warning', :m, NULL, 0.05, :ev)"),
            {"r": run_id, "m": f"5% of GEMM time has no determined path, e.g. {EVIL_NAME}",
             "ev": json.dumps([EVIL_NAME, SCRIPT_NAME])})
    connection.execute(text("UPDATE runs SET verdict = :v, model_label = :m WHERE id = :r"),
                       {"v": verdict, "m": "Llama-3.1-8B-Instruct-FP4 </title><b>x</b>",
                        "r": run_id})


def open_test_store(folder: Path) -> Store:
    """A fresh SQLite store in ``folder``."""
    return open_store(str(folder / "store.db"), write=True)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WINDOW = (1400, 2000)


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run Debian's headless Chromium on ``page`` (flags that work as root, offline)."""
    assert CHROMIUM is not None
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
               f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars",
               "--virtual-time-budget=10000", *extra, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
