"""rocprofv3 CSV ingest: every kernel-trace header generation, the three Agent_Id spellings,
``rocpd convert``'s one file for several processes (told apart by Guid), other CSVs skipped,
both store back ends, and one clear line for damaged files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support.helpers import analyze_bad, ingest_into, query
from tests.support.rocprof_scenario import amd_job
from tracekit.ingest.pipeline import ingest
from tracekit.synth.rocprof import write_csv


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def dispatches() -> int:
    return sum(len(p.dispatches) for p in amd_job().processes)


def test_rows_are_the_same_on_both_store_back_ends(store, tmp_path):
    folder = tmp_path / "csv"
    write_csv(amd_job(), folder, version="1.0")
    run = ingest(store, [folder]).run_id
    with store.engine.connect() as connection:
        row = connection.execute(text(
            "SELECT COUNT(*), COUNT(launch_start_ns), COUNT(DISTINCT device), "
            "COUNT(DISTINCT global_tid) FROM kernels WHERE run_id = :r"), {"r": run}).one()
        ranges = connection.execute(text("SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :r"),
                                    {"r": run}).scalar_one()
    assert tuple(row) == (dispatches(), dispatches(), 2, 2)
    assert ranges == sum(len(p.markers) for p in amd_job().processes)


def rewrite(path: Path, column: str, change) -> None:
    with path.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    for row in rows:
        row[column] = change(row[column])
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize(("version", "spelling", "agent_info", "devices"), [
    ("1.0", lambda value: value, True, {0, 1}),              # "Agent N": the node id → ordinal
    ("0.4", lambda value: value, True, {0, 1}),              # bare node id (0.3/0.4)
    ("1.0", lambda value: f"GPU {int(value.split()[1]) - 1}", False, {0, 1}),  # type-relative
    ("1.0", lambda value: value, False, {1, 2}),             # no agent info: as written
])
def test_agent_ids_become_gpu_ordinals(tmp_path, store_path, version, spelling, agent_info,
                                       devices):
    folder = tmp_path / "csv"
    write_csv(amd_job(), folder, version=version)
    for path in folder.glob("*_kernel_trace.csv"):
        rewrite(path, "Agent_Id", spelling)
    if not agent_info:
        for path in folder.glob("*_agent_info.csv"):
            path.unlink()
    ingest_into(store_path, folder)
    assert {row[0] for row in query(store_path, "SELECT DISTINCT device FROM kernels")} == devices


def test_rocpd_convert_puts_processes_in_one_file_told_apart_by_guid(tmp_path, store_path):
    folder = tmp_path / "out"
    written = write_csv(amd_job(), folder, version="rocpd")
    for role in ("kernel_trace", "hip_api_trace", "marker_api_trace"):
        parts = [path for path in written if path.name.endswith(f"_{role}.csv")]
        lines = [path.read_text().splitlines() for path in parts]
        (folder / f"out_{role}.csv").write_text(
            "\n".join([lines[0][0], *(line for part in lines for line in part[1:])]) + "\n")
        for path in parts:
            path.unlink()
    ingest_into(store_path, folder)
    # correlation ids repeat between the two processes: each kernel's launch is its own
    assert query(store_path, "SELECT COUNT(*), COUNT(DISTINCT k.global_pid) FROM kernels k "
                             "JOIN runtime_calls r ON r.correlation_id = k.correlation_id "
                             "AND r.global_pid = k.global_pid AND r.start_ns = "
                             "k.launch_start_ns") == [(dispatches(), 2)]


def test_other_csv_files_are_skipped_and_counted(tmp_path, store_path):
    folder = tmp_path / "csv"
    write_csv(amd_job(), folder, version="1.0")
    (folder / "4100_kernel_stats.csv").write_text(
        '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
        '"k",1,2,2.0,100.0,2,2,0.0\n')
    run = ingest_into(store_path, folder)
    [(meta,)] = query(store_path, "SELECT meta_json FROM runs WHERE id = ?", run)
    assert json.loads(meta)["skipped_files"] == {"4100_kernel_stats.csv": 1}
    assert query(store_path, "SELECT COUNT(*) FROM kernels") == [(dispatches(),)]


@pytest.mark.parametrize(("damage", "fragment"), [
    (lambda p: p.write_text('"Kind","Agent_Id","Start_Timestamp","End_Timestamp"\n'
                            '"KERNEL_DISPATCH","Agent 1",1,2\n'), "has no Kernel_Name column"),
    (lambda p: rewrite(p, "Start_Timestamp", lambda v: "soon"), "not a number"),
    (lambda p: rewrite(p, "Agent_Id", lambda v: "the big one"), "is not an agent"),
    (lambda p: p.write_text(p.read_text().splitlines()[0] + "\n"), "no kernel_trace.csv"),
])
def test_damaged_files_are_one_line(tmp_path, damage, fragment):
    folder = tmp_path / "csv"
    job = amd_job()
    job.processes = job.processes[:1]
    write_csv(job, folder, version="1.0")
    damage(folder / "4100_kernel_trace.csv")
    analyze_bad(tmp_path, folder, fragment)
