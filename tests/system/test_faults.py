"""Faults: a writer killed mid-ingest, a read-only store, a full disk.

The store must stay consistent through all of them: no half run, the next analyze works,
and a store that cannot be written gives one line on stderr and exit code 2.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.helpers import store_row_counts
from tests.support.stores import (
    FilesystemUnavailable,
    mountable_folder,
    read_only,
    tmpfs,
)
from tracekit.store.db import open_store
from tracekit.synth.nsys import (
    KernelSpec,
    RankSpec,
    Scenario,
    StepSpec,
    kernel_totals,
    write_scenario,
)


def small_trace(path: Path) -> Path:
    kernels = [KernelSpec(f"void fault_kernel_{k}<float>(int)", 2_000 + k, count=20)
               for k in range(10)]
    steps = [StepSpec(f"execute_context_0(0)_generation_{s}({s})", kernels) for s in range(10)]
    return write_scenario(Scenario(ranks=[RankSpec(pid=321, steps=steps)]), path)


def big_trace(path: Path, doublings: int) -> Path:
    """A small trace whose kernel and runtime rows are doubled in SQL ``doublings`` times.

    Building 10^6 records through the scenario builder takes a minute; copying the table
    onto itself (shifted in time and correlation id) takes a second.
    """
    small_trace(path)
    with sqlite3.connect(path) as connection:
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"):
            for step in range(doublings):
                connection.execute(f"CREATE TEMP TABLE t AS SELECT * FROM {table}")
                connection.execute(
                    f'UPDATE t SET start = start + {10**9 << step}, "end" = "end" + '
                    f"{10**9 << step}, correlationId = correlationId + {10**7 << step}")
                connection.execute(f"INSERT INTO {table} SELECT * FROM t")
                connection.execute("DROP TABLE t")
    connection.close()
    return path


#: the PostgreSQL application name of this test run's writers, so the wait below watches our
#: own COPY and not another process's on a shared server (libpq reads PGAPPNAME)
APPLICATION = f"tracekit-faults-{os.getpid()}"


def analyze(path: Path, store_url: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tracekit", "analyze", str(path), "--store",
                             store_url, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PGAPPNAME": APPLICATION})


def wait_until_copying(store_url: str, process: subprocess.Popen[str], deadline: float) -> None:
    """Block until the writer is inside its ingest transaction, copying kernel rows."""
    if "://" not in store_url:
        wal = Path(store_url + "-wal")
        while time.monotonic() < deadline and process.poll() is None:
            # The schema is a few hundred kB of WAL; 8 MB means kernel rows are going in.
            if wal.exists() and wal.stat().st_size > 8 << 20:
                return
            time.sleep(0.01)
    else:
        engine = create_engine(store_url)
        try:
            while time.monotonic() < deadline and process.poll() is None:
                with engine.connect() as connection:
                    copying = connection.execute(text(
                        "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' "
                        "AND query LIKE 'COPY kernels%' AND application_name = :application"),
                        {"application": APPLICATION}).scalar_one()
                if copying:
                    time.sleep(0.2)
                    return
                time.sleep(0.01)
        finally:
            engine.dispose()
    pytest.fail(f"analyze ended (rc {process.poll()}) before it was seen copying kernels")


@pytest.mark.slow
def test_kill_during_ingest_leaves_no_half_run(store_url: str, tmp_path: Path) -> None:
    source = big_trace(tmp_path / "big.sqlite", doublings=8 if "://" not in store_url else 6)
    process = analyze(source, store_url)
    try:
        wait_until_copying(store_url, process, time.monotonic() + 300)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    if "://" not in store_url:
        with sqlite3.connect(store_url) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        connection.close()
    counts = store_row_counts(store_url)
    assert counts["runs"] == 0 and counts["kernels"] == 0 and counts["kernel_names"] == 0
    retry = analyze(source, store_url)
    _stdout, stderr = retry.communicate(timeout=600)
    assert retry.returncode == 0, stderr
    expected = kernel_totals(source)
    counts = store_row_counts(store_url)
    assert counts["runs"] == 1
    assert counts["kernels"] == sum(count for count, _ in expected.values())


def assert_one_line_error(process: subprocess.Popen[str], *words: str) -> None:
    _stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracekit: error:"), stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("what", ["folder", "file"])
def test_read_only_store_is_one_line(tmp_path: Path, what: str) -> None:
    """A store that cannot be written: one line, exit 2, store unchanged, still readable."""
    source = small_trace(tmp_path / "a.sqlite")
    other = write_scenario(Scenario(ranks=[RankSpec(pid=5, steps=[
        StepSpec("s", [KernelSpec("other_kernel", 100)])])]), tmp_path / "b.sqlite")
    try:
        with mountable_folder(tmp_path / "fs") as folder:
            store = Path(folder) / "store.db"
            first = analyze(source, str(store))
            assert first.communicate(timeout=300) and first.returncode == 0
            before = store.read_bytes()
            with read_only(folder, file_only=what == "file"):
                if what == "file" and os.geteuid() != 0:
                    # The folder stays writable, so SQLite could still make its -wal; the
                    # file's own permission bits are what must stop the writer.
                    assert not os.access(store, os.W_OK)
                assert_one_line_error(analyze(other, str(store)), "cannot be written")
            assert store.read_bytes() == before
            assert store_row_counts(str(store))["runs"] == 1
    except FilesystemUnavailable as exc:
        pytest.skip(str(exc))


def test_full_disk_is_one_line_and_leaves_the_store_whole(tmp_path: Path) -> None:
    source = big_trace(tmp_path / "big.sqlite", doublings=5)  # 64k kernels: > 2 MB of rows
    small = small_trace(tmp_path / "small.sqlite")
    try:
        with tmpfs(tmp_path / "tiny", "2m") as folder:
            store = Path(folder) / "store.db"
            done = analyze(small, str(store))
            _out, err = done.communicate(timeout=300)
            assert done.returncode == 0, err
            assert_one_line_error(analyze(source, str(store)), "disk is full")
            with sqlite3.connect(store) as connection:
                assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            connection.close()
            counts = store_row_counts(str(store))
            assert counts["runs"] == 1 and counts["kernels"] == 2_000
    except FilesystemUnavailable as exc:
        pytest.skip(str(exc))


def test_full_disk_in_a_later_stage_is_a_store_error(tmp_path: Path) -> None:
    """Analysis stages write in their own transaction; a full disk there is one line too."""
    from sqlalchemy.exc import OperationalError

    from tracekit.errors import StoreError

    store = open_store(str(tmp_path / "store.db"))
    try:
        with pytest.raises(StoreError, match="disk is full"):
            with store.begin():
                raise OperationalError("COMMIT", {}, sqlite3.OperationalError(
                    "database or disk is full"))
        with pytest.raises(OperationalError, match="no such table"):  # others pass through
            with store.begin() as connection:
                connection.execute(text("SELECT * FROM no_such_table"))
    finally:
        store.dispose()
