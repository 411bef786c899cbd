"""The layer table end to end: what the findings stage stores in ``layer_verdicts``, and how
the document, the terminal, the HTML report and the Python API show it. On SQLite and
PostgreSQL."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from sqlalchemy import text

from tests.support import paths
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.report.html import write_html
from tracekit.report.terminal import render
from tracekit.store.db import Store
from tracekit.vocabulary import LAYERS, OUTCOMES


def fp8_checkpoint(folder: Path) -> Path:
    checkpoint = folder / "Llama-3.1-8B-FP8"
    checkpoint.mkdir()
    shutil.copyfile(paths.CHECKPOINTS / "ct-w8a8-fp8.config.json", checkpoint / "config.json")
    return checkpoint


def stored_verdicts(store: Store, run_id: int) -> list[dict[str, object]]:
    with store.connect() as connection:
        return [dict(row) for row in connection.execute(text(
            "SELECT phase, layer, declared, expected, expected_kind, ran, total_ns, share, "
            "outcome, severity FROM layer_verdicts WHERE run_id = :r ORDER BY phase, layer"),
            {"r": run_id}).mappings()]


def test_each_phase_and_layer_is_judged_and_stored(store, make_trace, simple_scenario,
                                                   tmp_path):
    result = analyze(store, [make_trace(simple_scenario)],
                     AnalysisOptions(model=fp8_checkpoint(tmp_path)))
    rows = stored_verdicts(store, result.run_id)
    assert rows, "no layer verdicts stored"
    assert {r["layer"] for r in rows} <= set(LAYERS)
    assert {r["outcome"] for r in rows} <= set(OUTCOMES)
    # the scenario's BF16 GEMMs under a W8A8 FP8 checkpoint on an H100: a silent fallback
    assert {(r["phase"], r["ran"], r["outcome"], r["severity"]) for r in rows} == {
        ("prefill", "bf16", "silent_fallback", "error"),
        ("decode", "bf16", "silent_fallback", "error")}
    assert all(r["expected"] == "fp8" and r["expected_kind"] == "native" for r in rows)
    # the document's layer table is the stored rows, with their evidence
    table = result.document["layers"]
    assert [(r["phase"], r["layer"], r["ran"], r["outcome"]) for r in table] == [
        ("prefill", "unknown", "bf16", "silent_fallback"),
        ("decode", "unknown", "bf16", "silent_fallback")]
    assert table[0]["declared"] == "W8A8 FP8" and table[0]["share"] == 1.0
    assert table[0]["reason"]
    # judged again: rewritten, not appended
    checkpoint = tmp_path / "Llama-3.1-8B-FP8"
    again = analyze(store, [make_trace(simple_scenario)], AnalysisOptions(model=checkpoint))
    assert (again.run_id, again.existing) == (result.run_id, True)
    assert stored_verdicts(store, again.run_id) == rows


def test_without_a_declaration_there_is_no_layer_table_to_show(store, make_trace,
                                                                simple_scenario, tmp_path):
    result = analyze(store, [make_trace(simple_scenario)], AnalysisOptions())
    assert {r["outcome"] for r in result.document["layers"]} == {"no_declaration"}
    out = io.StringIO()
    render(result.document, out)
    assert "each judged against what it declares" not in out.getvalue()
    page = write_html(result.document, store, result.run_id, tmp_path / "report.html")
    assert 'id="tk-layers"' not in page.read_text(encoding="utf-8")


def test_the_terminal_html_and_api_show_the_layer_table(store, make_trace, simple_scenario,
                                                        tmp_path):
    import tracekit

    result = analyze(store, [make_trace(simple_scenario)],
                     AnalysisOptions(model=fp8_checkpoint(tmp_path)))
    out = io.StringIO()
    render(result.document, out)
    printed = out.getvalue()
    assert "layers (each judged against what it declares)" in printed
    assert "silent fallback" in printed and "W8A8 FP8" in printed
    page = write_html(result.document, store, result.run_id, tmp_path / "report.html")
    html = page.read_text(encoding="utf-8")
    assert 'id="tk-layers"' in html and "silent fallback" in html
    run = tracekit.open_store(store.url).run(result.run_id)
    frame = run.layers()
    assert list(frame["outcome"].astype(str)) == ["silent_fallback", "silent_fallback"]
    assert str(frame["outcome"].dtype) == "category"
    assert list(frame["outcome"].cat.categories) == list(OUTCOMES)
    assert list(frame["layer"].cat.categories) == list(LAYERS)
    assert frame["share"].dtype.kind == "f"
