"""Folders as users have them: stray files skipped with one warning, audit run folders read
whole (trace, engine.log, run.json), a report beside its own export read once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.helpers import assert_one_line_error, query
from tracekit.cli import cli
from tracekit.errors import InputError
from tracekit.ingest.inputs import gather_inputs


def test_a_folder_stands_for_its_traces_and_names_what_it_skipped(tmp_path, make_trace,
                                                                  simple_scenario):
    folder = tmp_path / "ranks"
    folder.mkdir()
    trace = make_trace(simple_scenario, "trace.sqlite")
    shutil.move(trace, folder / "b.sqlite")
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (folder / "notes.txt").write_text("what I ran\n")
    (folder / ".hidden").write_text("x")
    gathered = gather_inputs([folder])
    assert [p.name for p in gathered.files] == ["b.sqlite"]
    assert gathered.spec.id == "nsys-sqlite"
    [note] = gathered.notes
    assert "skipped 2 file(s) that are not traces: config.json, notes.txt" in note


def test_a_stray_file_no_longer_refuses_the_folder(tmp_path, make_trace, simple_scenario):
    """`tracekit analyze FOLDER` with a config.json beside the trace: analyzed, exit 0, one
    warning naming the skipped file (it was refused as an unknown format)."""
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.move(make_trace(simple_scenario), folder / "trace.sqlite")
    (folder / "config.json").write_text("{}")
    result = CliRunner().invoke(cli, ["analyze", str(folder), "--store",
                                      str(tmp_path / "s.db"), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "tracekit: warning:" in result.stderr and "config.json" in result.stderr
    assert json.loads(result.stdout)["summary"]["kernel_count"] > 0


def test_a_file_passed_by_name_must_be_a_trace(tmp_path):
    stray = tmp_path / "config.json"
    stray.write_text("{}")
    with pytest.raises(InputError, match="config.json"):
        gather_inputs([stray])


def test_a_folder_without_traces_says_what_it_holds(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "README.md").write_text("# notes\n")
    with pytest.raises(InputError, match=r"holds no trace files \(it holds README.md\)"):
        gather_inputs([folder])


def test_files_of_different_formats_are_refused_in_one_line(tmp_path, make_trace,
                                                           simple_scenario):
    trace = make_trace(simple_scenario)
    ncu = tmp_path / "k.csv"
    ncu.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name"\n')
    result = CliRunner().invoke(cli, ["analyze", str(trace), str(ncu), "--store",
                                      str(tmp_path / "s.db")])
    assert_one_line_error(result.exit_code, result.stderr, "different formats", "nsys-sqlite",
                          "ncu-csv", "its own `tracekit analyze`")


def test_a_report_beside_its_export_is_read_once(tmp_path, make_trace, simple_scenario):
    folder = tmp_path / "capture"
    folder.mkdir()
    shutil.move(make_trace(simple_scenario), folder / "report.sqlite")
    # the head nsys writes (parsers/nsys-rep.toml): detected as a report, never converted
    (folder / "report.nsys-rep").write_bytes(b"NVIDIA Tegra Profiler Report 1.\n")
    gathered = gather_inputs([folder])
    assert [p.name for p in gathered.files] == ["report.sqlite"]
    assert any("report.nsys-rep: read through its export report.sqlite" in note
               for note in gathered.notes)


def audit_folder(tmp_path: Path, trace: Path, *, moved: bool = False) -> Path:
    """A run folder as `tracekit audit` leaves it: the trace, engine.log, run.json."""
    folder = tmp_path / "tracekit-runs" / "20261201-090000"
    folder.mkdir(parents=True)
    target = folder / trace.name
    shutil.move(trace, target)
    (folder / "engine.log").write_text(
        "INFO 12-01 09:00:01 [gpu_model_runner.py:1] Starting to load model\n")
    listed = tmp_path / "elsewhere" / trace.name if moved else target
    (folder / "run.json").write_text(json.dumps({
        "tracekit_run": 1, "status": "complete", "engine": "vllm",
        "gpu": {"requested": "H100", "detected": []}, "traces": [str(listed)],
        "log": "engine.log"}))
    return folder


@pytest.mark.parametrize("moved", [False, True])
def test_an_audit_run_folder_is_its_trace_its_log_and_its_record(tmp_path, make_trace,
                                                                 simple_scenario, moved):
    folder = audit_folder(tmp_path, make_trace(simple_scenario), moved=moved)
    gathered = gather_inputs([folder])
    assert [p.name for p in gathered.files] == ["trace0.sqlite"]
    assert gathered.logs == [folder / "engine.log"]
    assert gathered.record is not None and gathered.record["engine"] == "vllm"
    store = tmp_path / "s.db"
    result = CliRunner().invoke(cli, ["analyze", str(folder), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["run"]["engine"] == "vllm"
    assert query(store, "SELECT engine FROM runs") == [("vllm",)]
    assert document["summary"]["kernel_count"] > 0
