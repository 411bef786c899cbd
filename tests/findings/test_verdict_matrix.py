"""The verdict matrix: every case of ``verdict_matrix.toml`` gets its hand-written outcome per
(phase, layer group), and ``--fail-on error`` fails exactly on the cases marked ``errors``.

Each case is the judgement's input as the analysis builds it — the checkpoint's real config,
the GPU, the engine, the engine log lines and the GEMM time per layer group — so the matrix
tests the judgement alone; tests/system/test_verdict_cases.py runs traces end to end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests.support import paths
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.logs import match_line
from tracekit.findings import FindingContext, evaluate
from tracekit.findings.judgement import judge_run
from tracekit.findings.model import LayerTime, LayerVerdict
from tracekit.findings.rules import at_or_above, load_rules
from tracekit.gpus import parse_gpu
from tracekit.vocabulary import OUTCOMES

MATRIX = Path(__file__).with_name("verdict_matrix.toml")
CASES: list[dict[str, Any]] = tomllib.loads(MATRIX.read_text(encoding="utf-8"))["case"]


def context(case: dict[str, Any]) -> FindingContext:
    gpu = parse_gpu(case["gpu"]) if case.get("gpu") else None
    logs = [match_line(line, number) for number, line in enumerate(case.get("logs", []), 1)]
    return FindingContext(
        layers=tuple(LayerTime(phase=row["phase"], layer=row["layer"], path=row["path"],
                               ns=row["ns"], library=row.get("library"),
                               weights=row.get("weights"), activations=row.get("activations"),
                               source=row.get("source", "shapes"),
                               name=f"{row['library']}-{row['path']}-kernel")
                     for row in case["gemm"]),
        declaration=read_declaration(paths.CHECKPOINTS / case["checkpoint"]),
        gpu_arch=gpu.arch if gpu else None,
        gpu_name=gpu.name if gpu else None,
        engine=case.get("engine"),
        log_evidence=tuple(line for line in logs if line is not None),
        marker_steps=4,
    )


def matching(verdicts: tuple[LayerVerdict, ...], key: str) -> list[LayerVerdict]:
    """The verdicts a ``phase/layer[/path[/weights]]`` key names."""
    phase, layer, *rest = key.split("/")
    found = [v for v in verdicts if v.phase == phase and v.layer == layer]
    if rest:
        found = [v for v in found if v.ran == rest[0]]
    if len(rest) > 1:
        found = [v for v in found if v.weights == rest[1]]
    return found


def test_the_matrix_is_large_and_its_words_are_the_vocabulary() -> None:
    assert len(CASES) >= 30
    assert len({case["id"] for case in CASES}) == len(CASES)
    for case in CASES:
        assert set(case["expect"].values()) <= set(OUTCOMES), case["id"]
        assert set(case.get("findings", [])) | set(case.get("absent", [])) <= set(
            load_rules().rules), case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_layer_gets_its_outcome(case: dict[str, Any]) -> None:
    ctx = context(case)
    judged = judge_run(ctx, load_rules())
    verdicts = judged.verdicts
    table = "\n".join(f"  {v.phase}/{v.layer}/{v.ran}/{v.weights}: {v.outcome} — {v.reason}"
                      for v in verdicts)
    for key, outcome in case["expect"].items():
        found = matching(verdicts, key)
        assert found, f"{case['id']}: no verdict for {key}\n{table}"
        assert {v.outcome for v in found} == {outcome}, f"{case['id']}: {key}\n{table}"
    findings = evaluate(ctx, judged)
    rules = {f.rule for f in findings}
    assert set(case.get("findings", [])) <= rules, f"{case['id']}: {sorted(rules)}\n{table}"
    assert not set(case.get("absent", [])) & rules, f"{case['id']}: {sorted(rules)}"
    fails = any(at_or_above(f.severity, "error") for f in findings)
    assert fails == case["errors"], (
        f"{case['id']}: --fail-on error would {'fail' if fails else 'pass'}: "
        + "; ".join(f"{f.severity} {f.rule}" for f in findings))
    for rule in case.get("warnings", []):
        assert {f.severity for f in findings if f.rule == rule} == {"warning"}, case["id"]
    states = {j.phase: j.state for j in judged.judgements}
    assert states == case["states"], f"{case['id']}: phase states {states}"


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_phase_sentence_names_what_ran(case: dict[str, Any]) -> None:
    from tracekit.findings import verdict_sentences

    ctx = context(case)
    sentences = verdict_sentences(ctx)
    phases = {row["phase"] for row in case["gemm"]}
    assert {s.split(":")[0] for s in sentences} == phases
    for sentence in sentences:
        assert "{" not in sentence and "  " not in sentence
