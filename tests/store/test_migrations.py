"""A store made by an older tracekit (schema 0001) is upgraded in place, data kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from tests.support.helpers import make_old_store
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


def test_0006_stores_the_run_gpu_of_runs_already_analyzed(tmp_path):
    """Runs stored before the GPU was decided once get the decision from their devices (or,
    without devices, from the NAME (ARCH) an earlier --gpu left in runs.gpu)."""
    run = ("INSERT INTO runs (id, source_path, sha256, format, tracekit_version, created_at, "
           "status, gpu) VALUES ({id}, '/t/{id}', '{id}', 'nsys-sqlite', '0.1.0', "
           "'2026-11-01 00:00:00', 'complete', {gpu})")
    device = ("INSERT INTO devices (run_id, device_index, name, compute_major, compute_minor, "
              "arch, arch_source) VALUES ({run}, {index}, '{name}', {major}, {minor}, '{arch}', "
              "'trace')")
    path = tmp_path / "old.db"
    make_old_store(
        f"sqlite:///{path}", "0005",
        run.format(id=1, gpu="'NVIDIA H100 80GB HBM3 (sm90)'"),
        device.format(run=1, index=0, name="NVIDIA H100 80GB HBM3", major=9, minor=0,
                      arch="sm90"),
        run.format(id=2, gpu="'NVIDIA A100-SXM4-80GB (sm80)'"),
        device.format(run=2, index=0, name="NVIDIA A100-SXM4-80GB", major=8, minor=0,
                      arch="sm80"),
        device.format(run=2, index=1, name="NVIDIA H100 80GB HBM3", major=9, minor=0,
                      arch="sm90"),
        run.format(id=3, gpu="'RTX 5090 (sm120)'"),
        run.format(id=4, gpu="NULL"))
    store = open_store(str(path))
    try:
        with store.connect() as connection:
            rows = connection.execute(text(
                "SELECT id, arch, gpu_model, gpu_model_reason FROM runs ORDER BY id")).all()
    finally:
        store.dispose()
    assert [tuple(row) for row in rows] == [
        (1, "sm90", "h100-sxm", None),
        (2, None, None, "the run's devices are different products: a100-sxm4-80gb, h100-sxm"),
        (3, "sm120", "rtx-5090", None),
        (4, None, None, "the trace names no GPU product; pass --gpu with its name"),
    ]
