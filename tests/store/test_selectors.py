"""Run selectors: one definition for `tracekit report/diff RUN`, `--label` and `store.run()`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from tests.support.helpers import assert_one_line_error
from tracekit.cli import cli
from tracekit.errors import InputError, TracekitError
from tracekit.store.db import Store
from tracekit.store.selectors import check_label, is_selector_word, resolve_run
from tracekit.synth.nsys import Scenario


def _add_runs(store: Store, labels: list[str | None]) -> None:
    with store.begin() as connection:
        for index, label in enumerate(labels):
            connection.execute(text(
                "INSERT INTO runs (source_path, sha256, format, tracekit_version, created_at, "
                "label, status) VALUES (:source, :sha, 'nsys_sqlite', '0', CURRENT_TIMESTAMP, "
                ":label, 'complete')"), {"source": f"t{index}", "sha": f"{index:064d}",
                                         "label": label})


@pytest.mark.parametrize("word", ["latest", "LATEST", " Latest ", "-1", "-0", "7", "007"])
def test_selector_words_are_refused_as_labels(word: str) -> None:
    assert is_selector_word(word)
    with pytest.raises(TracekitError, match="looks like a run selector"):
        check_label(word)


@pytest.mark.parametrize("label", ["nvfp4-a", "run 3", "²", "-1a", "latest-fp4", None])
def test_other_labels_are_accepted(label: str | None) -> None:
    check_label(label)


def test_resolve_run_by_position_id_label_and_latest_in_any_case(store: Store) -> None:
    _add_runs(store, ["base", None, "twice", "twice"])
    with store.connect() as connection:
        ids = [row[0] for row in connection.execute(text("SELECT id FROM runs ORDER BY id"))]
        assert resolve_run(connection, "latest") == resolve_run(connection, "LaTeSt") == ids[-1]
        assert resolve_run(connection, "-2") == ids[-2]
        assert resolve_run(connection, str(ids[0])) == resolve_run(connection, ids[0]) == ids[0]
        assert resolve_run(connection, "base") == ids[0]
        for bad, message in (("-9", "holds 4 run"), ("-0", "holds 4 run"),
                             ("99", "not in the store"), ("twice", "names runs"),
                             ("²", "no run '²'"), ("nope", "no run 'nope'")):
            with pytest.raises(InputError, match=message):
                resolve_run(connection, bad)


def test_empty_store_says_so(store: Store) -> None:
    with store.connect() as connection, pytest.raises(InputError, match="no runs yet"):
        resolve_run(connection, "latest")


def test_cli_refuses_a_label_spelled_latest_in_capitals(
        make_trace: Callable[..., Path], simple_scenario: Scenario, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(make_trace(simple_scenario)), "--store",
                                      str(tmp_path / "s.db"), "--label", "Latest"])
    assert_one_line_error(result.exit_code, result.stderr, "run selector")
    assert not (tmp_path / "s.db").exists()
