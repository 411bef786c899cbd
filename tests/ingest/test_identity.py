"""A stored input is found by its path and file signature, else by its content hash.

The signature (device, inode, size, modification time) spares re-reading a 1 GB export to
show its stored analysis; ``--rehash`` checks the content instead; a new input is hashed on
a thread while it is ingested, and bytes already stored under another path give back that
run with nothing kept.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import BF16_GEMM
from tracekit.errors import InputError
from tracekit.ingest import identity, pipeline
from tracekit.ingest.pipeline import ingest
from tracekit.ingest.readers import nsys_sqlite
from tracekit.store.db import HEAD_REVISION, Store, scripts_head_revision
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec


def counts(store: Store) -> dict[str, int]:
    with store.connect() as connection:
        return {table: connection.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one()
                for table in ("runs", "kernels", "kernel_names", "nvtx_ranges", "run_counts")}


def no_hashing(monkeypatch: pytest.MonkeyPatch) -> list[list[Path]]:
    """Record every file set hashed from now on."""
    hashed: list[list[Path]] = []
    original = identity.sha256_of

    def recording(paths, stop=None):  # type: ignore[no-untyped-def]
        hashed.append(list(paths))
        return original(paths, stop)

    monkeypatch.setattr(identity, "sha256_of", recording)
    monkeypatch.setattr(pipeline, "sha256_of", recording)
    return hashed


def test_unchanged_file_is_found_without_reading_it(store, make_trace, simple_scenario,
                                                    monkeypatch):
    trace = make_trace(simple_scenario)
    first = ingest(store, [trace])
    hashed = no_hashing(monkeypatch)
    again = ingest(store, [trace])
    assert again.existing and again.run_id == first.run_id
    assert hashed == []


def test_the_hash_is_the_content_hash(store, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    run_id = ingest(store, [trace]).run_id
    with store.connect() as connection:
        stored = connection.execute(text("SELECT sha256, source_stat FROM runs WHERE id = :r"),
                                    {"r": run_id}).one()
    assert stored.sha256 == identity.sha256_of([trace])
    assert stored.source_stat == identity.stat_signature([trace])


def test_a_touched_file_is_hashed_once_then_known_again(store, make_trace, simple_scenario,
                                                         monkeypatch):
    trace = make_trace(simple_scenario)
    run_id = ingest(store, [trace]).run_id
    before = counts(store)
    info = trace.stat()
    os.utime(trace, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    hashed = no_hashing(monkeypatch)
    again = ingest(store, [trace])
    assert again.existing and again.run_id == run_id
    assert len(hashed) == 1 and counts(store) == before  # ingested, rolled back
    third = ingest(store, [trace])
    assert third.existing and len(hashed) == 1  # the new signature was remembered


def test_same_bytes_at_another_path_give_the_stored_run(store, make_trace, simple_scenario,
                                                         tmp_path):
    trace = make_trace(simple_scenario)
    run_id = ingest(store, [trace]).run_id
    before = counts(store)
    copy = shutil.copyfile(trace, tmp_path / "copy.sqlite")
    again = ingest(store, [copy])
    assert again.existing and again.run_id == run_id
    assert counts(store) == before


def test_rehash_sees_content_changed_behind_an_unchanged_signature(store, make_trace,
                                                                   simple_scenario, tmp_path):
    """Same size and time (an editor that restores mtime): only --rehash notices."""
    trace = make_trace(simple_scenario)
    run_id = ingest(store, [trace]).run_id
    info = trace.stat()
    with sqlite3.connect(trace) as connection:
        connection.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + 1 "
                           "WHERE rowid = 1")
    connection.close()
    os.utime(trace, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert trace.stat().st_size == info.st_size and trace.stat().st_ino == info.st_ino
    assert ingest(store, [trace]).run_id == run_id  # trusted signature: the stored run
    fresh = ingest(store, [trace], rehash=True)
    assert not fresh.existing and fresh.run_id != run_id
    assert ingest(store, [trace], rehash=True).run_id == fresh.run_id


def test_rehash_of_an_unchanged_file_is_the_stored_run(store, make_trace, simple_scenario,
                                                        monkeypatch):
    trace = make_trace(simple_scenario)
    run_id = ingest(store, [trace]).run_id
    hashed = no_hashing(monkeypatch)
    again = ingest(store, [trace], rehash=True)
    assert again.existing and again.run_id == run_id and len(hashed) == 1


def test_a_failed_ingest_stops_hashing(store, make_trace, simple_scenario, monkeypatch):
    trace = make_trace(simple_scenario)

    def explode(*_args: object) -> None:
        raise InputError("injected failure")

    monkeypatch.setattr(nsys_sqlite, "_copy_devices", explode)
    with pytest.raises(InputError):
        ingest(store, [trace])
    assert [t.name for t in threading.enumerate() if t.name == "tracekit-hash"] == []
    assert counts(store)["runs"] == 0


def test_rehash_on_the_command_line(tmp_path, make_trace):
    trace = make_trace(Scenario(ranks=[RankSpec(pid=3, steps=[
        StepSpec(None, [KernelSpec(BF16_GEMM, 1_000)])])]))
    store = tmp_path / "s.db"
    command = [sys.executable, "-m", "tracekit", "analyze", str(trace), "--store", str(store),
               "--json"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    again = subprocess.run([*command, "--rehash"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "already in the store as run 1" in again.stderr


def test_the_head_revision_constant_is_alembics():
    assert HEAD_REVISION == scripts_head_revision()
