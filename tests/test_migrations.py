"""A store made by an older tracekit (schema 0001) is upgraded in place, data kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from tests.helpers import make_old_store
from tracekit.errors import StoreSchemaMismatch
from tracekit.store import db as store_db
from tracekit.store import open_store


def make_0001_store(path: Path) -> None:
    """Create a store at revision 0001 with one run in it, as tracekit 0.1.0-dev wrote it."""
    make_old_store(
        f"sqlite:///{path}", "0001",
        "INSERT INTO runs (id, source_path, sha256, format, tracekit_version, created_at, "
        "status) VALUES (7, '/traces/a.sqlite', 'abc', 'nsys-sqlite', '0.1.0', "
        "'2026-11-01 00:00:00', 'complete')")


def test_reader_names_the_upgrade_command(tmp_path):
    path = tmp_path / "old.db"
    make_0001_store(path)
    with pytest.raises(StoreSchemaMismatch) as info:
        open_store(str(path), write=False)
    assert "revision 0001" in info.value.one_line()
    assert "tracekit db upgrade" in info.value.one_line()


def test_writer_upgrades_and_keeps_runs(tmp_path):
    path = tmp_path / "old.db"
    make_0001_store(path)
    store = open_store(str(path))
    try:
        assert store.revision() == store_db.head_revision()
        with store.connect() as connection:
            assert "kernel_groups" in inspect(connection).get_table_names()
            sha = connection.execute(text("SELECT sha256 FROM runs WHERE id = 7")).scalar()
            assert sha == "abc"
    finally:
        store.dispose()
