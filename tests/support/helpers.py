"""Small helpers shared by the ingest, bad-input and store tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from tracekit.cli import cli
from tracekit.ingest.pipeline import ingest
from tracekit.store import open_store


def make_old_store(url: str, revision: str, *statements: str) -> None:
    """A store at an older schema ``revision`` (as an older tracekit left it), then
    ``statements`` run on it."""
    from importlib import resources

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            config = Config()
            config.set_main_option("script_location",
                                   str(resources.files("tracekit.store") / "migrations"))
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            for statement in statements:
                connection.execute(text(statement))
    finally:
        engine.dispose()


def query(store_path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of one SQL statement over a SQLite store file."""
    connection = sqlite3.connect(store_path)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


def ingest_into(store_path: Path, *paths: Path) -> int:
    """Ingest ``paths`` as one run into the store at ``store_path``; its run id."""
    store = open_store(str(store_path))
    try:
        return ingest(store, list(paths)).run_id
    finally:
        store.dispose()


def store_row_counts(url: str) -> dict[str, int]:
    """Rows in every store table (read through a reader's connection, on any database)."""
    from tracekit.store.schema import Base

    store = open_store(url, write=False)
    try:
        with store.connect() as connection:
            return {table.name: connection.execute(
                text(f"SELECT COUNT(*) FROM {table.name}")).scalar_one()
                for table in Base.metadata.sorted_tables}
    finally:
        store.dispose()


def assert_one_line_error(code: int, stderr: str, *fragments: str) -> None:
    """Exit 2, exactly one ``tracekit: error:`` line holding every fragment, no traceback."""
    assert code == 2, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("tracekit: error: ")
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def analyze_bad(tmp_path: Path, target: Path, *fragments: str) -> None:
    """``tracekit analyze target`` fails with one line naming it, and writes no run."""
    store = tmp_path / "bad.db"
    open_store(str(store)).dispose()
    result = CliRunner().invoke(cli, ["analyze", str(target), "--store", str(store)],
                                catch_exceptions=False)
    assert_one_line_error(result.exit_code, result.stderr, str(target), *fragments)
    assert query(store, "SELECT COUNT(*) FROM runs") == [(0,)]
