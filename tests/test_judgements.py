"""Judgements kept: a stored run judged again with one new option keeps the earlier
judgement's other expectations (and says so), ``--fresh`` drops them (and says so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.api.test_api import build_example
from tracekit.analysis import AnalysisOptions
from tracekit.cli import cli
from tracekit.judgements import as_record, recall, same


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_example(tmp_path_factory.mktemp("example"))


def analyze(*args: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["analyze", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def log_evidence(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for finding in document["findings"] for item in finding["evidence"]
            if isinstance(item, dict) and item.get("source") == "log"]


def test_a_new_option_keeps_the_earlier_log_evidence(example: Path, tmp_path: Path) -> None:
    trace = example / "w4a4-fallback-marlin.sqlite"
    log = example / "engine-fallback.log"
    store = str(tmp_path / "s.db")
    first, _ = analyze(str(trace), "--store", store, "--model",
                       str(example / "checkpoints" / "w4a4"), "--log", str(log))
    assert log_evidence(first)
    assert first["run"]["meta"]["judgement"]["logs"] == [str(log.absolute())]
    # the same run, one new option: the --log and --model evidence stay (it was dropped)
    again, stderr = analyze(str(trace), "--store", store, "--gpu", "RTX 5090")
    assert log_evidence(again) == log_evidence(first)
    assert "kept from the earlier judgement: --log" in stderr and "--model" in stderr
    assert again["run"]["meta"]["judgement"]["gpu"] == "RTX 5090"
    assert again["verdict"] == first["verdict"]
    # nothing new: the stored analysis, evidence and all
    shown, _ = analyze(str(trace), "--store", store)
    assert log_evidence(shown) == log_evidence(first)
    # a new --log replaces the old one, and says so
    other = tmp_path / "quiet.log"
    other.write_text("INFO nothing about kernels here\n")
    replaced, stderr = analyze(str(trace), "--store", store, "--log", str(other))
    assert not log_evidence(replaced)
    assert "replaced: --log (was" in stderr and "engine-fallback.log" in stderr
    # --fresh: only what is given now
    fresh, stderr = analyze(str(trace), "--store", store, "--fresh", "--gpu", "RTX 5090")
    assert fresh["run"]["meta"]["judgement"] == {"gpu": "RTX 5090"}
    assert "--fresh" in stderr and "left out" in stderr


def test_recall_completes_what_was_not_given() -> None:
    previous = {"model": "/m", "logs": ["/a.log"], "gpu": "H100"}
    options, notes = recall(previous, AnalysisOptions(gpu="B200"))
    assert str(options.model) == "/m" and [str(p) for p in options.logs] == ["/a.log"]
    assert options.gpu == "B200"
    assert notes == ["kept from the earlier judgement: --log /a.log; --model /m",
                     "replaced: --gpu (was H100)"]
    assert same(as_record(options), options)
    untouched, nothing = recall({}, AnalysisOptions(gpu="B200"))
    assert untouched.gpu == "B200" and nothing == []
    fresh, said = recall(previous, AnalysisOptions(gpu="B200"), fresh=True)
    assert fresh.model is None and "--log, --model left out" in said[0]
