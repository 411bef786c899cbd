"""The run's GPU is decided once per analysis (``tracekit/run_gpu.py``) and stored
(``runs.arch``, ``runs.gpu``, ``runs.gpu_model``); the classifier, the findings and the
roofline read that one decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sqlalchemy import text

from tests.conftest import BF16_GEMM
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.cli import cli
from tracekit.gpus import GpuSpec, parse_gpu
from tracekit.run_gpu import DeviceRow, LogDevice, StoredGpu, decide_run_gpu
from tracekit.store.db import open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec

H100 = DeviceRow(1, "sm90", 9, 0, "NVIDIA H100 80GB HBM3", "trace")
A100 = DeviceRow(2, None, 8, 0, "NVIDIA A100-SXM4-80GB", "trace")
MI300X = DeviceRow(3, "sm94", 9, 4, "AMD Instinct MI300X", "trace")
SAMPLE = DeviceRow(4, "sm120", 12, 0, "NVIDIA Engineering Sample", "trace")
NAMELESS = DeviceRow(5, None, None, None, None, None)


def test_the_trace_decides_and_gpu_never_overrides_it() -> None:
    decided = decide_run_gpu([H100], parse_gpu("A100"))
    assert (decided.arch, decided.label, decided.model.model.key) == (
        "sm90", "NVIDIA H100 80GB HBM3 (sm90)", "h100-sxm")
    assert decided.warnings == ("--gpu A100 (sm80) disagrees with the trace, which recorded "
                                "NVIDIA H100 80GB HBM3 (sm90): the trace's GPU is used",)
    assert decided.devices == (H100,)


def test_device_archs_in_the_tables_spelling() -> None:
    decided = decide_run_gpu([MI300X, A100])  # ROCm's "9.4" is gfx942; A100's arch is its cc
    assert [d.arch for d in decided.devices] == ["gfx942", "sm80"]
    assert decided.arch is None  # devices of different architectures: no one arch
    assert decided.label == "AMD Instinct MI300X (gfx942)"
    assert decided.model.model is None and "different products" in (decided.model.reason or "")


def test_gpu_fills_what_the_trace_leaves_unknown() -> None:
    decided = decide_run_gpu([NAMELESS], parse_gpu("RTX 5090"))
    (device,) = decided.devices
    assert (device.arch, device.name, device.arch_source) == ("sm120", "RTX 5090", "user")
    assert (decided.arch, decided.model.model.key, decided.warnings) == ("sm120", "rtx-5090", ())
    # a later analysis without --gpu keeps the fill; another --gpu replaces it
    assert decide_run_gpu([device]).arch == "sm120"
    again = decide_run_gpu([device], parse_gpu("sm100"))
    assert (again.arch, again.warnings) == ("sm100", ())


def test_gpu_names_the_product_the_trace_cannot_name() -> None:
    decided = decide_run_gpu([SAMPLE], GpuSpec("sm120", "NVIDIA GeForce RTX 5090"))
    assert decided.devices[0].name == "NVIDIA GeForce RTX 5090"
    assert decided.model.model.key == "rtx-5090" and decided.arch == "sm120"
    assert decide_run_gpu([SAMPLE]).model.model is None


def test_without_devices_gpu_then_the_log_then_what_was_said_before() -> None:
    log = LogDevice("sm120", "NVIDIA GeForce RTX 5090")
    assert decide_run_gpu([], parse_gpu("sm100"), log).arch == "sm100"
    from_log = decide_run_gpu([], None, log)
    assert (from_log.arch, from_log.label) == ("sm120", "NVIDIA GeForce RTX 5090 (sm120)")
    earlier = StoredGpu(arch="sm90", name="H100")
    assert decide_run_gpu([], earlier=earlier).arch == "sm90"
    assert decide_run_gpu([], None, log, earlier).arch == "sm120"
    nothing = decide_run_gpu([])
    assert nothing.arch is None and nothing.label is None
    assert "pass --gpu" in (nothing.model.reason or "")


FP4 = "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_TNT"


def _stored(store: Any, run_id: int) -> tuple[Any, ...]:
    with store.connect() as connection:
        run = connection.execute(text(
            "SELECT arch, gpu, gpu_model FROM runs WHERE id = :r"), {"r": run_id}).one()
        path = connection.execute(text(
            "SELECT c.path FROM classifications c JOIN kernel_names n ON n.id = c.name_id "
            "WHERE c.run_id = :r AND n.name = :name"), {"r": run_id, "name": FP4}).scalar()
    return (*run, path)


def test_every_stage_reads_the_one_decision(make_trace: Any, tmp_path: Path) -> None:
    """A trace whose GPU the table does not know (sm99): the FP4 kernel is refused by the
    feasibility check; --gpu sm100 fills the device, and classifier, findings and runs agree;
    a later analysis without --gpu keeps the fill."""
    trace = make_trace(Scenario(ranks=[RankSpec(
        pid=7, gpu_name="NVIDIA Engineering Sample", compute_capability=(9, 9),
        steps=[StepSpec("execute_context_1(64)_generation_0(0)", [KernelSpec(FP4, 5_000)])])]))
    store = open_store(str(tmp_path / "store.db"))
    try:
        first = analyze(store, [trace], AnalysisOptions(expect="fp4"))
        assert _stored(store, first.run_id) == (
            "sm99", "NVIDIA Engineering Sample (sm99)", None, "unknown")
        judged = analyze(store, [trace], AnalysisOptions(expect="fp4", gpu="sm100"))
        assert _stored(store, judged.run_id) == (
            "sm100", "NVIDIA Engineering Sample (sm100)", None, "fp4")
        document = judged.document
        assert document["devices"][0]["arch"] == "sm100"
        assert document["devices"][0]["arch_source"] == "user"
        assert document["verdict"] == ["prefill: 100% of GEMM time ran fp4 (cuBLAS), as "
                                       "--expect states (W4A4 FP4) — native path, no fallback."]
        assert document["roofline"]["gpu"] is None  # an architecture names no product
        assert "Engineering Sample" in document["roofline"]["gpu_reason"]
        again = analyze(store, [trace], AnalysisOptions(expect="fp8"))
        assert _stored(store, again.run_id)[0] == "sm100"
        told = analyze(store, [trace], AnalysisOptions(expect="fp4", gpu="B200"))
        assert _stored(store, told.run_id) == ("sm100", "B200 (sm100)", "b200", "fp4")
        assert told.document["roofline"]["gpu"]["model"] == "b200"
        assert told.document["warnings"] == []
    finally:
        store.dispose()


def test_a_disagreeing_gpu_is_a_warning_in_the_document(make_trace: Any, simple_scenario: Any,
                                                         tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store.db"))
    try:
        result = analyze(store, [make_trace(simple_scenario)], AnalysisOptions(gpu="A100"))
        assert result.document["warnings"] == [
            "--gpu A100 (sm80) disagrees with the trace, which recorded NVIDIA H100 80GB HBM3 "
            "(sm90): the trace's GPU is used"]
        assert result.document["run"]["gpu"] == "NVIDIA H100 80GB HBM3 (sm90)"
        assert result.document["roofline"]["gpu"]["model"] == "h100-sxm"
    finally:
        store.dispose()


def test_amd_capability_is_read_as_its_gfx_architecture(make_trace, tmp_path):
    """nsys writes an AMD GPU's gfx942 as compute capability 9.4: the document says gfx942."""
    scenario = Scenario(ranks=[RankSpec(pid=3, gpu_name="AMD Instinct MI300X",
                                        compute_capability=(9, 4), sm_count=304,
                                        steps=[StepSpec(None, [KernelSpec(BF16_GEMM, 10)])])])
    result = CliRunner().invoke(cli, ["analyze", str(make_trace(scenario)), "--store",
                                      str(tmp_path / "s.db"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert [device["arch"] for device in document["devices"]] == ["gfx942"]
    assert document["run"]["gpu"] == "AMD Instinct MI300X (gfx942)"
