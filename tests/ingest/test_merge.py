"""Several files, one run: every record of every file kept and counted, on every input kind
that comes as several files (nsys exports, Kineto traces, CUPTI records, Nsight Compute CSVs),
on SQLite and PostgreSQL; files that are not one job refused, store unchanged."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from tests.benchmarks.replicate import cupti_ranks, kineto_ranks, replicate
from tests.support.helpers import assert_one_line_error
from tests.support.paths import H200_FIXTURES
from tracekit.cli import cli
from tracekit.errors import InputError
from tracekit.ingest.pipeline import ingest
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

START_UTC_NS = 1_780_000_000 * 10**9
GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas")


def nsys_rank(path: Path, rank: int, *, pid: int | None = None, steps: int = 3,
              start_ns: int = START_UTC_NS, host: str = "node0", gemm_ns: int = 40_000,
              gpu: str = "NVIDIA H100 80GB HBM3") -> Path:
    """An nsys export of one rank of a job: its own process and GPU, vLLM-style steps."""
    spec = RankSpec(pid=pid or 4000 + rank, device=rank, gpu_name=gpu, steps=[
        StepSpec(f"execute_context_0(0)_generation_{s}({s})",
                 [KernelSpec(GEMM, gemm_ns, count=4),
                  KernelSpec(f"void rank_kernel<{rank}>(int)", 2_000, count=rank + 1)])
        for s in range(steps)])
    return write_scenario(Scenario(ranks=[spec], session_start_utc_ns=start_ns,
                                   hostname=host), path)


def nsys_own_counts(path: Path) -> dict[str, int]:
    connection = sqlite3.connect(path)
    try:
        def count(sql: str) -> int:
            return int(connection.execute(sql).fetchone()[0])
        return {"kernels": count("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
                "nvtx_ranges": count("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59")}
    finally:
        connection.close()


def per_file(store: Store, run_id: int) -> dict[int, dict[str, int]]:
    """Records of each input file of the run, counted in the store (through the file of the
    process that recorded them)."""
    params = {"r": run_id}
    with store.connect() as connection:
        kernels = dict(connection.execute(text(
            "SELECT p.file_index, COUNT(*) FROM kernels k JOIN processes p "
            "ON p.run_id = k.run_id AND p.global_pid = k.global_pid WHERE k.run_id = :r "
            "GROUP BY p.file_index"), params).all())
        ranges = dict(connection.execute(text(
            "SELECT p.file_index, COUNT(*) FROM nvtx_ranges e JOIN processes p "
            "ON p.run_id = e.run_id AND p.global_pid = e.global_pid WHERE e.run_id = :r "
            "AND e.kind = 'push_pop' GROUP BY p.file_index"), params).all())
        cpu_ops = dict(connection.execute(text(
            "SELECT p.file_index, COUNT(*) FROM cpu_ops o JOIN processes p "
            "ON p.run_id = o.run_id AND p.global_pid = o.global_pid WHERE o.run_id = :r "
            "GROUP BY p.file_index"), params).all())
    files = sorted(set(kernels) | set(ranges) | set(cpu_ops))
    return {int(f): {"kernels": int(kernels.get(f, 0)), "nvtx_ranges": int(ranges.get(f, 0)),
                     "cpu_ops": int(cpu_ops.get(f, 0))} for f in files}


def file_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    with store.connect() as connection:
        rows = [dict(row) for row in connection.execute(text(
            "SELECT file_index, name, counts_json, trace_rank, gpus, id_shift, time_offset_ns "
            "FROM run_files WHERE run_id = :r ORDER BY file_index"), {"r": run_id}).mappings()]
    for row in rows:
        row["counts"] = json.loads(row["counts_json"] or "{}")
    return rows


@pytest.mark.parametrize("jobs", [1, 2])
def test_per_rank_nsys_exports_keep_every_record(store, tmp_path, jobs):
    folder = tmp_path / "job"
    folder.mkdir()
    paths = [nsys_rank(folder / f"rank{r}.sqlite", r, steps=3 + r) for r in range(3)]
    result = ingest(store, [folder], jobs=jobs)
    own = [nsys_own_counts(path) for path in paths]
    stored = per_file(store, result.run_id)
    assert [stored[i]["kernels"] for i in range(3)] == [c["kernels"] for c in own]
    assert [stored[i]["nvtx_ranges"] for i in range(3)] == [c["nvtx_ranges"] for c in own]
    rows = file_rows(store, result.run_id)
    assert [row["name"] for row in rows] == [p.name for p in paths]
    assert [row["counts"]["kernels"] for row in rows] == [c["kernels"] for c in own]
    assert all(row["gpus"] == "NVIDIA H100 80GB HBM3" for row in rows)
    with store.connect() as connection:
        totals = dict(connection.execute(text(
            "SELECT name, count FROM run_counts WHERE run_id = :r"), {"r": result.run_id}).all())
        names = connection.execute(text("SELECT COUNT(*) FROM kernel_names WHERE run_id = :r"),
                                   {"r": result.run_id}).scalar_one()
        devices = connection.execute(text(
            "SELECT device_index, name FROM devices WHERE run_id = :r ORDER BY device_index"),
            {"r": result.run_id}).all()
    assert totals["kernels"] == sum(c["kernels"] for c in own)
    # one row per unique name of the run: the GEMM is shared, each rank has its own kernel
    assert names == totals["kernel_names"] == 1 + 3
    assert [tuple(d) for d in devices] == [(r, "NVIDIA H100 80GB HBM3") for r in range(3)]


def test_the_same_folder_again_is_the_stored_run(store, tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(2):
        nsys_rank(folder / f"rank{r}.sqlite", r)
    first = ingest(store, [folder], jobs=1)
    again = ingest(store, [folder], jobs=1)
    by_content = ingest(store, [folder], jobs=1, rehash=True)
    assert not first.existing and again.existing and by_content.existing
    assert first.run_id == again.run_id == by_content.run_id


def test_kineto_rank_files_keep_every_record(store, tmp_path, shared_trace):
    source = shared_trace("tracelens/b200__eager_trace.json.gz")
    paths = kineto_ranks(source, tmp_path / "ranks", 3)
    result = ingest(store, [tmp_path / "ranks"], jobs=2)
    stored = per_file(store, result.run_id)
    rows = file_rows(store, result.run_id)
    for index, path in enumerate(paths):
        events = json.loads(path.read_text())["traceEvents"]
        cats = Counter(e.get("cat") for e in events if e.get("ph") == "X")
        assert stored[index]["kernels"] == cats["kernel"] == 768
        assert stored[index]["cpu_ops"] == cats["cpu_op"]
        assert stored[index]["nvtx_ranges"] == cats["user_annotation"]
        assert rows[index]["counts"]["kernels"] == cats["kernel"]
        assert rows[index]["trace_rank"] == index
    # each rank's kernels link to its own ops only (External ids repeat across ranks)
    with store.connect() as connection:
        crossed = connection.execute(text(
            "SELECT COUNT(*) FROM kernels k JOIN cpu_ops o ON o.id = k.cpu_op_id "
            "WHERE k.run_id = :r AND o.global_pid <> k.global_pid"),
            {"r": result.run_id}).scalar_one()
        linked = connection.execute(text(
            "SELECT COUNT(*) FROM kernels WHERE run_id = :r AND cpu_op_id IS NOT NULL"),
            {"r": result.run_id}).scalar_one()
    assert crossed == 0 and linked > 0


def test_synthetic_kineto_ranks_keep_every_record(store, tmp_path):
    """The same without the shared traces: the project's own H200 torch trace as 2 ranks."""
    paths = kineto_ranks(H200_FIXTURES / "torch-trace.pt.trace.json.gz", tmp_path / "r", 2)
    result = ingest(store, [tmp_path / "r"], jobs=1)
    stored = per_file(store, result.run_id)
    for index, path in enumerate(paths):
        events = json.loads(path.read_text())["traceEvents"]
        kernels = sum(1 for e in events if e.get("cat") == "kernel" and e.get("ph") == "X")
        assert stored[index]["kernels"] == kernels > 0


def test_cupti_files_of_ranks_keep_every_record(store, tmp_path):
    paths = cupti_ranks(H200_FIXTURES / "cupti.jsonl.gz", tmp_path / "r", 2)
    result = ingest(store, [tmp_path / "r"], jobs=1)
    stored = per_file(store, result.run_id)
    rows = file_rows(store, result.run_id)
    for index, path in enumerate(paths):
        own = Counter(json.loads(line)["kind"] for line in path.read_text().splitlines())
        assert stored[index]["kernels"] == own["kernel"] == rows[index]["counts"]["kernels"]
        assert rows[index]["trace_rank"] == index


def test_nsight_compute_files_count_each_launch_once(store, tmp_path, shared_trace):
    """Per file: the launches it added plus those another file of the session already gave
    are the file's own launches; 12 files of 6 sessions are 6 launches."""
    folder = shared_trace("llm-perf-opt/kernel_0001_ncu.details.csv").parent
    result = ingest(store, [folder])
    rows = file_rows(store, result.run_id)
    assert len(rows) == 12
    for row in rows:
        with (folder / row["name"]).open(newline="") as stream:
            launches = len({line.split(",", 1)[0] for line in stream.read().splitlines()[1:]})
        assert row["counts"]["kernels"] + row["counts"]["repeated_launches"] == launches
    with store.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM kernels WHERE run_id = :r"),
                                  {"r": result.run_id}).scalar_one() == 6


def test_nsight_compute_raw_pages_of_two_files(store, tmp_path):
    folder = tmp_path / "ncu"
    folder.mkdir()
    first = replicate(H200_FIXTURES / "ncu.csv", folder / "a.csv", 1)
    second = replicate(H200_FIXTURES / "ncu.csv", folder / "b.csv", 2)
    # the copies renumber IDs after the first: b.csv's second copy adds launches a.csv lacks
    result = ingest(store, [folder])
    rows = file_rows(store, result.run_id)
    assert rows[0]["counts"]["kernels"] == first
    assert rows[1]["counts"]["kernels"] + rows[1]["counts"]["repeated_launches"] == second


def test_real_nsys_exports_of_two_jobs_are_refused_or_kept_whole(tmp_path, shared_trace):
    """The issue's case: 3,442 + 4,010 kernels of two captures two days apart. Refused in
    one line, store unchanged; with --one-run both files whole: 7,452 kernels."""
    folder = shared_trace("nsys-ai/h100_2gpu_1s.sqlite").parent
    store = tmp_path / "s.db"
    refused = CliRunner().invoke(cli, ["analyze", str(folder), "--store", str(store)])
    assert_one_line_error(refused.exit_code, refused.stderr, "recorded at different times",
                          "h100_2gpu_1s.sqlite", "--one-run")
    if store.exists():
        assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
    kept = CliRunner().invoke(cli, ["analyze", str(folder), "--store", str(store), "--json",
                                    "--one-run"])
    assert kept.exit_code == 0, kept.stderr
    assert json.loads(kept.stdout)["summary"]["kernel_count"] == 7_452
    rows = sqlite3.connect(store).execute(
        "SELECT name, json_extract(counts_json, '$.kernels') FROM run_files ORDER BY 1").fetchall()
    assert rows == [("h100_2gpu_1s.sqlite", 3_442), ("mfu_2gpu_before.sqlite", 4_010)]


@pytest.mark.parametrize("folder, words", [
    ("hta", ["different GPUs", "NVIDIA A100-PG509-200", "Tesla V100-SXM2-32GB"]),
    ("tracelens", ["different GPUs", "NVIDIA B200", "NVIDIA H100 80GB HBM3"]),
])
def test_real_traces_of_different_gpus_are_not_merged(tmp_path, shared_trace, folder, words):
    path = shared_trace(folder)
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(tmp_path / "s.db")])
    assert_one_line_error(result.exit_code, result.stderr, *words, "--one-run")


def test_files_of_different_jobs_are_refused(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    nsys_rank(folder / "a.sqlite", 0)
    nsys_rank(folder / "b.sqlite", 1, gpu="NVIDIA B200")
    with pytest.raises(InputError, match="different GPUs"):
        ingest(_store(tmp_path), [folder], jobs=1)
    shutil.rmtree(folder)
    folder.mkdir()
    nsys_rank(folder / "a.sqlite", 0, host="node0")
    nsys_rank(folder / "b.sqlite", 1, host="node1")
    with pytest.raises(InputError, match="different hosts"):
        ingest(_store(tmp_path), [folder], jobs=1)


def _store(tmp_path: Path) -> Store:
    from tracekit.store.db import open_store

    return open_store(str(tmp_path / "refused.db"))


def test_the_same_file_twice_with_one_run_keeps_both_apart(store, tmp_path):
    """Copies of one file (the same pids and tids): the second file's ids are shifted, so
    each kernel still lands in the steps of its own process."""
    one = nsys_rank(tmp_path / "a.sqlite", 0)
    two = tmp_path / "b.sqlite"
    shutil.copyfile(one, two)
    result = ingest(store, [one, two], jobs=1, one_run=True)
    rows = file_rows(store, result.run_id)
    assert rows[0]["id_shift"] == 0 and rows[1]["id_shift"] > 0
    stored = per_file(store, result.run_id)
    assert stored[0] == stored[1] and stored[0]["kernels"] == nsys_own_counts(one)["kernels"]


def test_a_failure_in_one_file_leaves_no_run(store, tmp_path):
    paths = kineto_ranks(H200_FIXTURES / "torch-trace.pt.trace.json.gz", tmp_path / "r", 2)
    paths[1].write_text(paths[1].read_text()[:5000])  # cut off while being written
    with pytest.raises(InputError, match="rank-1"):
        ingest(store, [tmp_path / "r"], jobs=1)
    with store.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM runs")).scalar_one() == 0
