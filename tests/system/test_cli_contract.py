"""The command line's contract: CI gates, re-analysis, output paths, labels and closed pipes."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from tests.support.helpers import assert_one_line_error, query
from tracekit.cli import cli


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_fail_on_refuses_an_unreadable_model_before_touching_the_store(make_trace,
                                                                      simple_scenario, tmp_path):
    store = tmp_path / "s.db"
    code, _, stderr = run("analyze", str(make_trace(simple_scenario)), "--store", str(store),
                          "--model", str(tmp_path / "typo"), "--fail-on", "error")
    assert_one_line_error(code, stderr, "typo", "--fail-on")
    assert not store.exists()


def test_without_fail_on_an_unreadable_model_is_a_warning(make_trace, simple_scenario,
                                                          tmp_path):
    code, _, stderr = run("analyze", str(make_trace(simple_scenario)), "--store",
                          str(tmp_path / "s.db"), "--model", str(tmp_path / "typo"))
    assert code == 0 and "warning" in stderr


def test_same_trace_again_shows_the_stored_verdict(make_trace, simple_scenario, tmp_path):
    trace, store = make_trace(simple_scenario), str(tmp_path / "s.db")
    code, first, _ = run("analyze", str(trace), "--store", store, "--expect", "fp8", "--json")
    assert code == 0
    code, again, stderr = run("analyze", str(trace), "--store", store, "--json")
    assert code == 0 and "showing the stored analysis" in stderr
    assert json.loads(again)["verdict"] == json.loads(first)["verdict"]
    code, _, stderr = run("analyze", str(trace), "--store", store, "--expect", "bf16")
    assert "judged again" in stderr


def test_html_into_a_missing_folder_is_refused_before_ingest(make_trace, simple_scenario,
                                                            tmp_path):
    store = tmp_path / "s.db"
    code, _, stderr = run("analyze", str(make_trace(simple_scenario)), "--store", str(store),
                          "--html", str(tmp_path / "nope" / "r.html"))
    assert_one_line_error(code, stderr, "does not exist")
    assert not store.exists() or query(store, "SELECT COUNT(*) FROM runs") == [(0,)]


def test_labels_that_look_like_run_selectors_are_refused(make_trace, simple_scenario,
                                                         tmp_path):
    for label in ("latest", "-1", "3"):
        code, _, stderr = run("analyze", str(make_trace(simple_scenario)), "--store",
                              str(tmp_path / "s.db"), "--label", label)
        assert_one_line_error(code, stderr, "run selector")


def test_a_closed_pipe_is_not_a_failure(make_trace, simple_scenario, tmp_path):
    store = str(tmp_path / "s.db")
    assert run("analyze", str(make_trace(simple_scenario)), "--store", store)[0] == 0
    for command in (["report", "1"], ["diff", "1", "1"], ["runs"]):
        process = subprocess.Popen([sys.executable, "-m", "tracekit", *command, "--store", store],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdout is not None
        process.stdout.readline()
        process.stdout.close()  # like `| head -1`
        assert process.wait(timeout=60) == 0, command


def test_usage_errors_click_finds_are_one_line(tmp_path):
    """A path that does not exist, a missing argument, a bad choice, an unknown command:
    one line naming it and the help to read, exit 2 (click's own message is four lines)."""
    for args, fragment in ((["rules", "test", str(tmp_path / "missing")], "missing"),
                           (["analyze"], "FILES"),
                           (["analyze", "x.json", "--fail-on", "bogus"], "bogus"),
                           (["no-such-command"], "no-such-command")):
        code, _, stderr = run(*args)
        assert_one_line_error(code, stderr, fragment, "--help")


def test_an_unreadable_trace_is_one_line(tmp_path):
    import os

    import pytest

    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    trace = tmp_path / "rank0.json"
    trace.write_text('{"traceEvents": []}')
    trace.chmod(0)
    code, _, stderr = run("analyze", str(trace), "--store", str(tmp_path / "s.db"))
    assert_one_line_error(code, stderr, "rank0.json", "permission denied")
    assert not (tmp_path / "s.db").exists()
