"""``tracekit diff``: the canonical comparison, FP4×FP4 kernels against Marlin W4A16, one GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.report_scenario import (  # noqa: E402
    CHROMIUM,
    FP4_GEMM,
    MARLIN_GEMM,
    analyzed_run,
    chromium,
    open_test_store,
)
from tracekit.cli import cli  # noqa: E402
from tracekit.report.diff import diff_documents, render_diff  # noqa: E402
from tracekit.report.document import build_document  # noqa: E402


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("diff")
    store = open_test_store(folder)
    fp4 = analyzed_run(store, folder / "fp4.sqlite", gemm=FP4_GEMM, label="nvfp4-w4a4")
    marlin = analyzed_run(store, folder / "marlin.sqlite", gemm=MARLIN_GEMM,
                          label="nvfp4-marlin")
    with store.connect() as connection:
        documents = build_document(connection, fp4), build_document(connection, marlin)
    store.dispose()
    return {"folder": folder, "store_path": str(folder / "store.db"), "fp4": fp4,
            "marlin": marlin, "diff": diff_documents(*documents)}


def test_gemm_paths_move_per_phase(pair: dict[str, Any]) -> None:
    decode = pair["diff"]["phases"]["decode"]["paths"]
    assert decode["fp4"]["a_share"] > 0.9 and decode["fp4"]["b_share"] == 0
    assert decode["weight_only"]["a_share"] == 0 and decode["weight_only"]["b_share"] > 0.9
    assert decode["weight_only"]["share_change"] == pytest.approx(
        decode["weight_only"]["b_share"])
    prefill = pair["diff"]["phases"]["prefill"]
    assert prefill["a"]["steps"] == prefill["b"]["steps"] == 1
    assert set(pair["diff"]["phases"]) == {"prefill", "decode"}


def test_headline_names_both_paths(pair: dict[str, Any]) -> None:
    decode = next(s for s in pair["diff"]["headline"] if s.startswith("decode"))
    assert "mostly fp4" in decode and "mostly weight_only" in decode
    assert pair["diff"]["warnings"] == []


def test_kernels_on_one_side_only(pair: dict[str, Any]) -> None:
    kernels = pair["diff"]["kernels"]
    assert [k["name"] for k in kernels["only_a"]] == [FP4_GEMM]
    assert [k["name"] for k in kernels["only_b"]] == [MARLIN_GEMM]
    assert kernels["common"] == 4
    assert kernels["reclassified"] == []


def test_findings_that_differ(pair: dict[str, Any]) -> None:
    findings = pair["diff"]["findings"]
    assert [f["rule"] for f in findings["only_a"]] == ["unknown-gemm-share"]
    assert [f["rule"] for f in findings["only_b"]] == ["declared-path-not-run"]
    assert findings["only_b"][0]["severity"] == "error"


def test_terminal_rendering(pair: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as stream:
        render_diff(pair["diff"], stream)
    shown = out.read_text()
    assert "mostly weight_only" in shown
    assert "only in B" in shown and "declared-path-not-run" in shown
    assert "\x1b[" not in shown  # plain when not a terminal


def test_cli_json_and_html(pair: dict[str, Any]) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["diff", "nvfp4-w4a4", "-1", "--store", pair["store_path"],
                                 "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["a"]["id"] == pair["fp4"] and document["b"]["id"] == pair["marlin"]
    html = pair["folder"] / "diff.html"
    result = runner.invoke(cli, ["diff", str(pair["fp4"]), str(pair["marlin"]), "--store",
                                 pair["store_path"], "--html", str(html)])
    assert result.exit_code == 0, result.output
    page = html.read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # a finding message quotes it
    assert "<img src=x" not in page
    assert "declared-path-not-run" in page


def test_cli_unknown_run_is_one_line(pair: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli, ["diff", "1", "99", "--store", pair["store_path"]])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "tracekit: error: run 99 is not in the store (`tracekit runs` lists them)"]


@pytest.mark.chromium
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_diff_page_renders_in_chromium(pair: dict[str, Any], tmp_path: Path) -> None:
    html = pair["folder"] / "diff-browser.html"
    result = CliRunner().invoke(cli, ["diff", "-2", "latest", "--store", pair["store_path"],
                                      "--html", str(html)])
    assert result.exit_code == 0, result.output
    dumped = chromium(html, tmp_path / "profile", "--enable-logging=stderr", "--v=0",
                      "--dump-dom")
    assert [line for line in dumped.stderr.splitlines() if "CONSOLE" in line] == []
    assert 'data-state="rendered"' in dumped.stdout
    assert "<img" not in dumped.stdout
