"""The analysis pipeline (``tracekit/analysis.py``): what the options become in the store and
the document, when a stored run is shown and when it is judged again, and that re-running the
derived stages rewrites their tables instead of appending to them. On SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import BF16_GEMM
from tests.support import paths
from tracekit.analysis import AnalysisOptions, analyze, check_inputs, run_stages
from tracekit.errors import InputError, TracekitError
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec

FP8_DECLARED = "prefill: 100% of GEMM time ran bf16 (cuBLAS) although the checkpoint declares " \
               "W8A8 FP8 and the H100 (sm90) computes FP8 natively — silent fallback."
#: a GEMM whose name does not say its types (tests/corpus/nvidia.jsonl): path "unknown"
UNKNOWN_PATH_GEMM = "marlin_moe_wna16::Marlin"
BF16_AS_DECLARED = "prefill: 100% of GEMM time ran bf16 (cuBLAS), consistent with the " \
                   "declaration (BF16)."


def fp8_checkpoint(folder: Path) -> Path:
    """A checkpoint folder named like a model whose config.json declares W8A8 FP8."""
    checkpoint = folder / "Llama-3.1-8B-FP8"
    checkpoint.mkdir()
    shutil.copyfile(paths.CHECKPOINTS / "ct-w8a8-fp8.config.json", checkpoint / "config.json")
    return checkpoint


def run_row(store: Store, run_id: int) -> dict[str, object]:
    with store.connect() as connection:
        return dict(connection.execute(text(
            "SELECT label, engine, model_label, gpu, arch, verdict FROM runs WHERE id = :r"),
            {"r": run_id}).mappings().one())


def row_counts(store: Store, run_id: int) -> dict[str, int]:
    """Rows per derived table of one run."""
    with store.connect() as connection:
        return {table: connection.execute(text(
            f"SELECT COUNT(*) FROM {table} WHERE run_id = :r"), {"r": run_id}).scalar_one()
            for table in ("classifications", "steps", "kernel_groups", "layer_times",
                          "layer_verdicts", "findings")}


def test_options_become_the_stored_run(store, make_trace, simple_scenario, tmp_path):
    options = AnalysisOptions(model=fp8_checkpoint(tmp_path), label="baseline", engine="vllm")
    result = analyze(store, [make_trace(simple_scenario)], options)
    assert result.existing is False
    assert run_row(store, result.run_id) == {
        "label": "baseline", "engine": "vllm", "model_label": "Llama-3.1-8B-FP8",
        "gpu": "NVIDIA H100 80GB HBM3 (sm90)", "arch": "sm90",
        "verdict": FP8_DECLARED + "\n" + FP8_DECLARED.replace("prefill", "decode", 1)}
    document = result.document
    assert (document["run"]["label"], document["run"]["engine"],
            document["run"]["model_label"]) == ("baseline", "vllm", "Llama-3.1-8B-FP8")
    assert [(f["rule"], f["severity"], f["phase"]) for f in document["findings"]] == [
        ("silent-fallback", "error", "prefill"), ("silent-fallback", "error", "decode")]
    assert document["warnings"] == []


def test_the_same_trace_again_shows_the_stored_analysis(store, make_trace, simple_scenario,
                                                        tmp_path):
    trace = make_trace(simple_scenario)
    first = analyze(store, [trace], AnalysisOptions(model=fp8_checkpoint(tmp_path)))
    before = row_counts(store, first.run_id)
    again = analyze(store, [trace], AnalysisOptions(label="renamed"))
    assert (again.run_id, again.existing) == (first.run_id, True)
    assert again.document["verdict"] == first.document["verdict"]
    assert again.document["findings"] == first.document["findings"]
    assert again.document["run"]["label"] == "renamed"  # a label alone is stored, not judged
    assert run_row(store, first.run_id)["label"] == "renamed"
    assert row_counts(store, first.run_id) == before


def test_something_new_to_judge_by_judges_the_stored_run_again(store, make_trace,
                                                               simple_scenario, tmp_path):
    trace = make_trace(simple_scenario)
    first = analyze(store, [trace], AnalysisOptions(model=fp8_checkpoint(tmp_path)))
    before = row_counts(store, first.run_id)
    again = analyze(store, [trace], AnalysisOptions(expect="bf16", warnings=["from the CLI"]))
    assert (again.run_id, again.existing) == (first.run_id, True)
    assert again.document["verdict"][0] == BF16_AS_DECLARED
    assert again.document["findings"] == []
    assert again.document["warnings"] == ["from the CLI"]
    # --expect states the declaration anew: the earlier --model is replaced, and said so
    [replaced] = again.notes
    assert replaced.startswith("replaced: --model (was ")
    # what the new options do not say is kept: the model's name from the first analysis
    assert run_row(store, first.run_id)["model_label"] == "Llama-3.1-8B-FP8"
    after = row_counts(store, first.run_id)
    assert {table: after[table] for table in ("classifications", "steps", "kernel_groups")} == {
        table: before[table] for table in ("classifications", "steps", "kernel_groups")}
    assert (before["findings"], after["findings"]) == (2, 0)


def test_rerunning_the_stages_rewrites_their_tables(store, make_trace, simple_scenario):
    result = analyze(store, [make_trace(simple_scenario)], AnalysisOptions(expect="fp8"))
    before = row_counts(store, result.run_id)
    assert all(before[table] > 0 for table in before), before
    document = run_stages(store, result.run_id, AnalysisOptions(expect="fp8"))
    assert row_counts(store, result.run_id) == before
    assert document["verdict"] == result.document["verdict"]
    assert document["summary"] == result.document["summary"]


def test_warnings_of_unreadable_options_reach_the_document(store, make_trace, simple_scenario,
                                                           tmp_path):
    result = analyze(store, [make_trace(simple_scenario)],
                     AnalysisOptions(model=tmp_path / "typo", gpu="H100", warnings=["first"]))
    warnings = result.document["warnings"]
    assert warnings[0] == "first"
    assert len(warnings) == 2 and warnings[1].startswith("--model: ")
    assert "typo" in warnings[1] and "without the checkpoint's declaration" in warnings[1]
    assert result.document["run"]["model_label"] is None


def test_a_trace_without_kernels_needs_allow_no_kernels(store, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    with sqlite3.connect(trace) as connection:  # an nsys capture without `-t cuda`
        connection.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    connection.close()
    with pytest.raises(InputError, match="recorded no CUDA kernels"):
        analyze(store, [trace], AnalysisOptions())
    with store.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM runs")).scalar_one() == 0
    result = analyze(store, [trace], AnalysisOptions(allow_no_kernels=True))
    assert (result.existing, result.document["summary"]["kernel_count"]) == (False, 0)
    assert result.document["kernels"] == []
    assert result.document["phases"]["prefill"]["steps"] == 2  # the NVTX markers are kept


@pytest.mark.parametrize(("field", "value"), [
    ("model", Path("ckpt")), ("expect", "fp8"), ("gpu", "H100"), ("logs", (Path("log"),)),
    ("rules_dirs", (Path("rules"),)), ("engine", "vllm"),
])
def test_rejudge_is_whatever_changes_a_verdict(field, value):
    assert AnalysisOptions(**{field: value}).rejudge is True


def test_label_and_thresholds_do_not_rejudge():
    """The engine does (which kernels it can launch per layer decides the expected path)."""
    assert AnalysisOptions(label="x", unknown_threshold=0.5,
                           allow_no_kernels=True, rehash=True).rejudge is False


def test_check_inputs_refuses_what_analyze_would_refuse_later(tmp_path, make_trace,
                                                              simple_scenario):
    """The CLI calls it before it opens a store, so these create no store file."""
    with pytest.raises(InputError, match="no such file"):
        check_inputs([tmp_path / "missing.sqlite"], None)
    (tmp_path / "notes.txt").write_text("not a trace\n")
    with pytest.raises(InputError, match="unrecognized text file"):
        check_inputs([tmp_path / "notes.txt"], None)
    with pytest.raises(TracekitError, match="run selector"):
        check_inputs([make_trace(simple_scenario)], "latest")
    check_inputs([make_trace(simple_scenario)], "baseline")


def test_the_unknown_threshold_is_passed_to_the_findings(store, make_trace):
    """A third of the GEMM time has no determined path (Marlin printed without its type ids,
    tests/corpus/nvidia.jsonl): a finding under a 0.2 threshold, none under 0.5."""
    trace = make_trace(Scenario(ranks=[RankSpec(pid=11, steps=[StepSpec(None, [
        KernelSpec(UNKNOWN_PATH_GEMM, 5_000), KernelSpec(BF16_GEMM, 10_000)])])]))
    strict = analyze(store, [trace], AnalysisOptions(unknown_threshold=0.2, expect="bf16"))
    assert strict.document["summary"]["unknown_gemm_share"] == pytest.approx(1 / 3)
    assert "unknown-gemm-time" in [f["rule"] for f in strict.document["findings"]]
    relaxed = run_stages(store, strict.run_id,
                         AnalysisOptions(unknown_threshold=0.5, expect="bf16"))
    assert "unknown-gemm-time" not in [f["rule"] for f in relaxed["findings"]]
