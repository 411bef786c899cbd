"""The analysis document (``tracekit/report/document.py``), section by section, for a small
synthetic run whose every number is summed here by hand from the scenario.

The run is ``tests/support/report_scenario.py``'s: one B200, a prefill step (a quantize
kernel, 4 Marlin W4A16 GEMMs of 80 µs, attention 50 µs, an unknown GEMM-shaped kernel 9 µs and
an unknown other kernel 4 µs) then 6 decode steps (4 GEMMs of 12 µs, attention 8 µs, the
unknown GEMM 3 µs); classifications, steps and one finding are written straight into the
store, so this pins the document, not the rules. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.report_scenario import (
    ATTENTION,
    EVIL_NAME,
    MARLIN_GEMM,
    QUANT,
    SCRIPT_NAME,
    analyzed_run,
)
from tracekit.aggregate import refresh_kernel_groups
from tracekit.ingest.pipeline import ingest
from tracekit.report.document import DOCUMENT_VERSION, build_document
from tracekit.store.db import Store
from tracekit.vocabulary import PHASES

DECODE_STEPS = 6
GEMM_NS = {"prefill": 4 * 80_000, "decode": DECODE_STEPS * 4 * 12_000}  # 320,000 / 288,000
ATTENTION_NS = {"prefill": 50_000, "decode": DECODE_STEPS * 8_000}
UNKNOWN_GEMM_NS = {"prefill": 9_000, "decode": DECODE_STEPS * 3_000}
PREFILL_ONLY = {QUANT: 6_000, SCRIPT_NAME: 4_000}


def document_of(store: Store, run_id: int) -> dict[str, Any]:
    with store.connect() as connection:
        return build_document(connection, run_id)


@pytest.fixture
def marlin_run(store: Store, tmp_path: Path) -> tuple[Store, int]:
    run_id = analyzed_run(store, tmp_path / "trace.sqlite", gemm=MARLIN_GEMM, label="marlin",
                          decode_steps=DECODE_STEPS)
    with store.begin() as connection:  # the scenario's steps name their thread, not process
        connection.execute(text(
            "UPDATE steps SET global_pid = (SELECT MIN(k.global_pid) FROM kernels k "
            "WHERE k.step_id = steps.id) WHERE run_id = :r"), {"r": run_id})
    return store, run_id


def test_the_sections_and_the_run(marlin_run):
    store, run_id = marlin_run
    document = document_of(store, run_id)
    assert list(document) == ["tracekit_document", "run", "devices", "ranks", "iterations",
                              "summary", "verdict", "phases", "phase_attribution", "layers",
                              "findings", "launchers", "roofline", "kernels"]
    assert document["tracekit_document"] == DOCUMENT_VERSION == 1
    run = document["run"]
    assert (run["id"], run["format"], run["producer"], run["label"]) == (
        run_id, "nsys-sqlite", "nsys", "marlin")
    assert run["source"].endswith("trace.sqlite") and len(run["sha256"]) == 64
    assert run["model_label"] == "Llama-3.1-8B-Instruct-FP4 </title><b>x</b>"  # as stored
    assert run["gpu"] == "NVIDIA B200 (sm100)"
    assert run["meta"]["counts"]["kernels"] == 44
    json.dumps(document)  # what --json prints: plain JSON types only


def test_devices(marlin_run):
    store, run_id = marlin_run
    [device] = document_of(store, run_id)["devices"]
    assert {key: device[key] for key in ("index", "name", "compute_capability", "arch",
                                         "sm_count")} == {
        "index": 0, "name": "NVIDIA B200", "compute_capability": "10.0", "arch": "sm100",
        "sm_count": 148}


def test_kernels_one_entry_per_name_slowest_first(marlin_run):
    store, run_id = marlin_run
    entries = document_of(store, run_id)["kernels"]
    table = {entry["name"]: (entry["count"], entry["total_ns"], entry["op"], entry["path"])
             for entry in entries}
    assert table == {
        MARLIN_GEMM: (4 + DECODE_STEPS * 4, sum(GEMM_NS.values()), "gemm", "weight_only"),
        ATTENTION: (1 + DECODE_STEPS, sum(ATTENTION_NS.values()), "attention", "bf16"),
        EVIL_NAME: (1 + DECODE_STEPS, sum(UNKNOWN_GEMM_NS.values()), "gemm", "unknown"),
        QUANT: (1, 6_000, "quantize", "fp4"),
        SCRIPT_NAME: (1, 4_000, "other", "unknown"),
    }
    assert [entry["name"] for entry in entries] == [MARLIN_GEMM, ATTENTION, EVIL_NAME, QUANT,
                                                    SCRIPT_NAME]
    marlin = entries[0]
    assert marlin["phase_ns"] == {**dict.fromkeys(PHASES, 0), **GEMM_NS}
    assert (marlin["weights"], marlin["activations"], marlin["library"], marlin["rule"],
            marlin["evidence"], marlin["confidence"]) == ("fp4", "bf16", "marlin", "marlin",
                                                          "name", "high")


def test_phases_sum_steps_tokens_and_gemm_time_by_path(marlin_run):
    store, run_id = marlin_run
    phases = document_of(store, run_id)["phases"]
    assert list(phases) == list(PHASES)
    prefill, decode = phases["prefill"], phases["decode"]
    assert (prefill["steps"], prefill["ranks"], prefill["source"], prefill["prefill_tokens"],
            prefill["decode_tokens"]) == (1, 1, "marker", 512, 0)
    assert (decode["steps"], decode["ranks"], decode["source"], decode["prefill_tokens"],
            decode["decode_tokens"]) == (DECODE_STEPS, 1, "marker", 0, 8 * DECODE_STEPS)
    for phase in ("prefill", "decode"):
        gpu = (GEMM_NS[phase] + ATTENTION_NS[phase] + UNKNOWN_GEMM_NS[phase]
               + (sum(PREFILL_ONLY.values()) if phase == "prefill" else 0))
        assert phases[phase]["gpu_ns"] == gpu
        assert phases[phase]["gemm_ns"] == GEMM_NS[phase] + UNKNOWN_GEMM_NS[phase]
        assert phases[phase]["gemm_ns_by_path"] == {"weight_only": GEMM_NS[phase],
                                                    "unknown": UNKNOWN_GEMM_NS[phase]}
    assert phases["mixed"]["steps"] == phases["unattributed"]["gpu_ns"] == 0


def test_summary_totals(marlin_run):
    store, run_id = marlin_run
    summary = document_of(store, run_id)["summary"]
    gemm = sum(GEMM_NS.values()) + sum(UNKNOWN_GEMM_NS.values())
    assert {key: summary[key] for key in ("kernel_count", "unique_kernel_names", "gpu_time_ns",
                                          "gemm_time_ns", "gemm_ns_by_path")} == {
        "kernel_count": 44, "unique_kernel_names": 5,
        "gpu_time_ns": gemm + sum(ATTENTION_NS.values()) + sum(PREFILL_ONLY.values()),
        "gemm_time_ns": gemm,
        "gemm_ns_by_path": {"weight_only": sum(GEMM_NS.values()),
                            "unknown": sum(UNKNOWN_GEMM_NS.values())}}
    assert list(summary["gemm_ns_by_path"]) == ["weight_only", "unknown"]  # biggest first
    assert summary["unknown_gemm_share"] == pytest.approx(sum(UNKNOWN_GEMM_NS.values()) / gemm)
    assert summary["processes"] >= 1 and summary["nvtx_ranges"] == 1 + DECODE_STEPS


def test_verdict_findings_attribution_and_launchers(marlin_run):
    store, run_id = marlin_run
    document = document_of(store, run_id)
    assert document["verdict"] == [
        "The checkpoint declares NVFP4, but decode GEMMs ran weight_only "
        "(FP4 weights dequantized into BF16 math)."]
    [finding] = document["findings"]
    assert (finding["rule"], finding["severity"], finding["phase"], finding["share"]) == (
        "declared-path-not-run", "error", "decode", 0.93)
    assert finding["evidence"] == [{"kernel": MARLIN_GEMM, "path": "weight_only"},
                                   {"kernel": EVIL_NAME, "path": "unknown"}]
    attribution = document["phase_attribution"]
    assert (attribution["method"], attribution["engines"], attribution["attributed_share"]) == (
        "marker", ["trtllm"], 1.0)
    assert attribution["message"] == ("phases from trtllm step markers; 100.0% of GPU time "
                                      "attributed")
    [launcher] = document["launchers"]
    assert (launcher["kernels"], launcher["gpu_ns"]) == (
        44, document["summary"]["gpu_time_ns"])


def test_findings_most_severe_first(marlin_run):
    store, run_id = marlin_run
    with store.begin() as connection:
        for rule, severity in (("a-note", "info"), ("a-warning", "warning")):
            connection.execute(text(
                "INSERT INTO findings (run_id, rule, severity, message) VALUES (:r, :rule, "
                ":severity, 'message')"), {"r": run_id, "rule": rule, "severity": severity})
    findings = document_of(store, run_id)["findings"]
    assert [(f["rule"], f["severity"]) for f in findings] == [
        ("declared-path-not-run", "error"), ("a-warning", "warning"), ("a-note", "info")]
    assert findings[1]["evidence"] == [] and findings[1]["phase"] is None


def test_a_run_before_the_stages_is_unclassified_and_unattributed(store, make_trace,
                                                                   simple_scenario):
    """Only ingested and grouped: every name is "other"/"unknown" with the reason "not
    classified", all GPU time is unattributed, and the sentence says why."""
    run_id = ingest(store, [make_trace(simple_scenario)]).run_id
    with store.begin() as connection:
        refresh_kernel_groups(connection, run_id)
    document = document_of(store, run_id)
    assert {(e["op"], e["path"], e["evidence"], e["confidence"], e["reason"])
            for e in document["kernels"]} == {("other", "unknown", "none", "low",
                                               "not classified")}
    total = document["summary"]["gpu_time_ns"]
    assert total == 2 * (4 * 40_000 + 2 * 2_000) + 3 * (4 * 9_000 + 1_500) + 700
    assert document["phases"]["unattributed"]["gpu_ns"] == total
    assert document["summary"]["gemm_time_ns"] == 0 and document["verdict"] == []
    attribution = document["phase_attribution"]
    assert (attribution["method"], attribution["attributed_share"]) == ("none", 0.0)
    assert attribution["message"] == (
        "nothing could be attributed to a phase: no step markers (among 5 ranges) and no "
        "kernel family that tells prefill from decode")
