"""Several ``tracekit analyze`` processes writing one store at once.

SQLite: WAL plus a busy timeout plus writers that take the lock up front (BEGIN IMMEDIATE),
so writers queue instead of failing with "database is locked". PostgreSQL: plain
transactions; the first open of an empty database migrates under an advisory lock.
Each test starts on an empty store, so the migration race is part of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from tracekit.store.db import open_store
from tracekit.synth.nsys import (
    KernelSpec,
    RankSpec,
    Scenario,
    StepSpec,
    kernel_totals,
    write_scenario,
)

WRITERS = 4


def distinct_trace(path: Path, index: int, *, steps: int = 40) -> Path:
    """A trace of its own: kernel names, process and GPU differ per ``index``."""
    kernels = [KernelSpec(f"void writer{index}_kernel_{k}<float, {k}>(int)", 1_000 + k,
                          count=25) for k in range(8)]
    rank = RankSpec(pid=1000 + index, device=index % 2, steps=[
        StepSpec(f"execute_context_0(0)_generation_{s}({s})", kernels) for s in range(steps)])
    return write_scenario(Scenario(ranks=[rank]), path)


def launch(paths: list[Path], store_url: str) -> list[subprocess.Popen[str]]:
    """Start one ``tracekit analyze`` per path, all at once."""
    return [subprocess.Popen([sys.executable, "-m", "tracekit", "analyze", str(path),
                              "--store", store_url, "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TRACEKIT_STORE": ""})
            for path in paths]


def finish(processes: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    results = []
    for process in processes:
        _stdout, stderr = process.communicate(timeout=600)
        results.append((process.returncode, stderr))
    return results


def stored_totals(store_url: str) -> dict[str, dict[str, tuple[int, int]]]:
    """source file name -> kernel name -> (count, total_ns), read back from the store."""
    store = open_store(store_url, write=False)
    try:
        with store.connect() as connection:
            rows = connection.execute(text(
                "SELECT r.source_path, n.name, COUNT(*), SUM(k.end_ns - k.start_ns) "
                "FROM kernels k JOIN kernel_names n ON n.id = k.name_id "
                "JOIN runs r ON r.id = k.run_id GROUP BY r.source_path, n.name")).all()
    finally:
        store.dispose()
    totals: dict[str, dict[str, tuple[int, int]]] = {}
    for source, name, count, total in rows:
        totals.setdefault(Path(source).name, {})[name] = (int(count), int(total))
    return totals


def test_four_writers_each_land_whole(store_url: str, tmp_path: Path) -> None:
    traces = [distinct_trace(tmp_path / f"writer{i}.sqlite", i) for i in range(WRITERS)]
    results = finish(launch(traces, store_url))
    for returncode, stderr in results:
        assert "locked" not in stderr.lower()
        assert returncode == 0, stderr
    totals = stored_totals(store_url)
    assert set(totals) == {path.name for path in traces}
    for path in traces:
        assert totals[path.name] == kernel_totals(path)
    store = open_store(store_url, write=False)
    try:
        with store.connect() as connection:
            runs = connection.execute(text("SELECT COUNT(*) FROM runs")).scalar_one()
            classified = connection.execute(text(
                "SELECT COUNT(DISTINCT run_id) FROM classifications")).scalar_one()
    finally:
        store.dispose()
    assert runs == WRITERS and classified == WRITERS


def test_same_file_from_four_writers_is_one_run(store_url: str, tmp_path: Path) -> None:
    """Dedup holds under a race: one writer stores the run, the others report it."""
    path = distinct_trace(tmp_path / "same.sqlite", 9, steps=10)
    results = finish(launch([path] * WRITERS, store_url))
    for returncode, stderr in results:
        assert returncode == 0, stderr
        assert "locked" not in stderr.lower()
    assert sum("already in the store" in stderr for _, stderr in results) <= WRITERS - 1
    totals = stored_totals(store_url)
    assert totals == {path.name: kernel_totals(path)}


def rank_file(path: Path, rank: int) -> Path:
    """One rank of one job: its own process and GPU, the job's capture start and host."""
    kernels = [KernelSpec(f"void rank{rank}_kernel_{k}<float, {k}>(int)", 1_000 + k, count=25)
               for k in range(4)] + [KernelSpec("void shared_gemm<bf16>(int)", 5_000, count=5)]
    spec = RankSpec(pid=2000 + rank, device=rank, steps=[
        StepSpec(f"execute_context_0(0)_generation_{s}({s})", kernels) for s in range(20)])
    return write_scenario(Scenario(ranks=[spec], session_start_utc_ns=1_780_000_000 * 10**9,
                                   hostname=f"node{rank}"), path)


def test_hosts_adding_ranks_of_one_job_at_once_end_as_one_run(store_url: str,
                                                             tmp_path: Path) -> None:
    """One `analyze --job` per host (here: process), all at once, into one store: one run
    holding every rank's records, each file once; the run judged with all of them."""
    traces = [rank_file(tmp_path / f"rank{r}.sqlite", r) for r in range(WRITERS)]
    processes = [subprocess.Popen([sys.executable, "-m", "tracekit", "analyze", str(path),
                                   "--store", store_url, "--job", "train-42", "--jobs", "1",
                                   "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "TRACEKIT_STORE": ""})
                 for path in traces]
    for returncode, stderr in finish(processes):
        assert returncode == 0, stderr
    again = subprocess.run([sys.executable, "-m", "tracekit", "analyze", str(traces[0]),
                            "--store", store_url, "--job", "train-42", "--json"],
                           capture_output=True, text=True,
                           env={**os.environ, "TRACEKIT_STORE": ""}, check=True)
    assert "already in run" in again.stderr  # the same file again is not added twice
    store = open_store(store_url, write=False)
    try:
        with store.connect() as connection:
            runs = connection.execute(text("SELECT id, job FROM runs")).all()
            assert [job for _, job in runs] == ["train-42"]
            run_id = runs[0][0]
            files = connection.execute(text(
                "SELECT name, counts_json FROM run_files WHERE run_id = :r ORDER BY name"),
                {"r": run_id}).all()
            stored = dict(connection.execute(text(
                "SELECT p.file_index, COUNT(*) FROM kernels k JOIN processes p "
                "ON p.run_id = k.run_id AND p.global_pid = k.global_pid WHERE k.run_id = :r "
                "GROUP BY p.file_index"), {"r": run_id}).all())
            indexes = dict(connection.execute(text(
                "SELECT name, file_index FROM run_files WHERE run_id = :r"), {"r": run_id}).all())
            groups = connection.execute(text(
                "SELECT COUNT(DISTINCT global_pid), SUM(count) FROM kernel_groups "
                "WHERE run_id = :r"), {"r": run_id}).one()
    finally:
        store.dispose()
    assert [name for name, _ in files] == [path.name for path in traces]
    for path in traces:
        own = sum(count for count, _ in kernel_totals(path).values())
        assert stored[indexes[path.name]] == own
        assert json.loads(dict(files)[path.name])["kernels"] == own
    # the last judgement saw every rank
    assert groups[0] == WRITERS
    assert groups[1] == sum(sum(c for c, _ in kernel_totals(p).values()) for p in traces)
