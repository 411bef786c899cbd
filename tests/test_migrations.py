"""A store made by an older tracekit (schema 0001) is upgraded in place, data kept."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from tracekit.errors import StoreSchemaMismatch
from tracekit.store import db as store_db
from tracekit.store import open_store


def make_0001_store(path: Path) -> None:
    """Create a store at revision 0001 with one run in it, as tracekit 0.1.0-dev wrote it."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location",
                               str(resources.files("tracekit.store") / "migrations"))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(text(
            "INSERT INTO runs (id, source_path, sha256, format, tracekit_version, created_at, "
            "status) VALUES (7, '/traces/a.sqlite', 'abc', 'nsys-sqlite', '0.1.0', "
            "'2026-11-01 00:00:00', 'complete')"))
    engine.dispose()


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
