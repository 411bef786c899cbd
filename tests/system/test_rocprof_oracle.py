"""Oracle for the rocprofv3 readers: one synthetic job written as a rocpd database (both
schema versions, with and without views), as JSON and as every CSV generation gives the same
store and the same analysis; each format also equals a direct read of its own file."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.rocprof_scenario import amd_job
from tracekit.cli import cli
from tracekit.synth.rocprof import Job, write_csv, write_json, write_rocpd

FORMATS = ["rocpd-3.0.0", "rocpd-3.0.3", "rocpd-3.0.3-tables-only", "json", "json-core-api",
           "csv-0.3", "csv-0.4", "csv-0.7", "csv-1.0", "csv-rocpd"]


def write(job: Job, kind: str, folder: Path) -> Path:
    """The job in format ``kind``; the path to analyze."""
    if kind.startswith("rocpd"):
        schema = kind.split("-")[1]
        return write_rocpd(job, folder / "results.db", schema=schema,
                           views="tables-only" not in kind)
    if kind.startswith("json"):
        write_json(job, folder / "json", marker_style="core_api" if "core" in kind
                   else "range_api", stream_ids="core" not in kind)
        return folder / "json"
    write_csv(job, folder / "csv", version=kind.removeprefix("csv-"))
    return folder / "csv"


def analyze(path: Path, store: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(store), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def stored(store: Path) -> dict[str, Any]:
    """What the store holds, in terms every format must agree on."""
    connection = sqlite3.connect(store)
    try:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return sorted(connection.execute(sql).fetchall(), key=repr)
        return {
            "kernels": rows("SELECT n.name, k.device, k.start_ns, k.end_ns, k.grid_x, k.block_x, "
                            "k.grid_y, k.grid_z, k.block_y, k.block_z, "
                            "k.global_pid, k.global_tid, k.launch_start_ns, k.launch_end_ns, "
                            "k.phase FROM kernels k JOIN kernel_names n ON n.id = k.name_id"),
            "ranges": rows("SELECT kind, text, start_ns, end_ns, global_tid, global_pid "
                           "FROM nvtx_ranges"),
            "calls": rows("SELECT a.name, r.start_ns, r.end_ns, r.global_tid, r.global_pid "
                          "FROM runtime_calls r JOIN api_names a ON a.id = r.name_id"),
            "devices": rows("SELECT device_index, global_pid, name, arch, compute_major, "
                            "compute_minor, sm_count FROM devices"),
            "steps": rows("SELECT phase, start_ns, end_ns, global_tid FROM steps"),
        }
    finally:
        connection.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, Any]:
    """The JSON output analyzed: what every other format must give."""
    folder = tmp_path_factory.mktemp("reference")
    path = write(amd_job(), "json", folder)
    document = analyze(path, folder / "store.db")
    return {"document": document, "store": stored(folder / "store.db")}


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    return {"kernels": sorted((k["name"], k["count"], k["total_ns"], k["op"], k["path"],
                               json.dumps(k["phase_ns"], sort_keys=True))
                              for k in document["kernels"]),
            "phases": {phase: (data["steps"], data["gpu_ns"], data["gemm_ns"])
                       for phase, data in document["phases"].items()},
            "verdict": document["verdict"]}


@pytest.mark.parametrize("kind", FORMATS)
def test_every_format_gives_the_same_numbers(kind, reference, tmp_path):
    job = amd_job()
    path = write(job, kind, tmp_path)
    document = analyze(path, tmp_path / "store.db")
    got_numbers, want_numbers = comparable(document), comparable(reference["document"])
    if kind == "csv-rocpd":  # its devices have no names (see below): no GPU in the verdict
        got_numbers.pop("verdict"), want_numbers.pop("verdict")
    assert got_numbers == want_numbers
    got, want = stored(tmp_path / "store.db"), reference["store"]
    if kind == "csv-rocpd":
        # `rocpd convert` writes no agent_info.csv: "Agent N" (the node id; the CPU is node
        # 0 here) cannot become the GPU ordinal, and the devices have no names
        assert {row[0] for row in got["devices"]} == {1, 2}
        assert all(row[2] is None for row in got["devices"])
        got["kernels"] = [(row[0], row[1] - 1, *row[2:]) for row in got["kernels"]]
    else:
        assert got["devices"] == want["devices"]
    assert got["kernels"] == want["kernels"]
    assert got["steps"] == want["steps"]
    assert got["calls"] == want["calls"]
    if kind.startswith("csv"):  # CSV has no operation per ROCTx record: start == end is a mark
        assert [r[1:] for r in got["ranges"]] == [r[1:] for r in want["ranges"]]
    else:
        assert got["ranges"] == want["ranges"]


def test_the_reference_is_the_job(reference):
    """The shared reference against the scenario's own truth: every dispatch, its time,
    its launch, its phase."""
    job = amd_job()
    kernels = reference["store"]["kernels"]
    totals = Counter()
    counts = Counter()
    for name, _device, start, end, *_rest in kernels:
        totals[name] += end - start
        counts[name] += 1
    assert {name: (counts[name], totals[name]) for name in counts} == job.kernel_totals()
    assert all(row[12] is not None for row in kernels)  # every dispatch has its HIP launch
    phases = Counter(row[14] for row in kernels)
    assert phases == {"prefill": 18, "decode": 20, None: 2}
    assert {row[0] for row in reference["store"]["devices"]} == {0, 1}


def test_rocpd_matches_a_direct_read_of_the_database(tmp_path):
    """The rocpd store against rocprofiler-sdk's own joins (its ``kernels`` view logic,
    written out here: dispatch → symbol → display_name, matching guid)."""
    path = write(amd_job(), "rocpd-3.0.3", tmp_path)
    connection = sqlite3.connect(path)
    suffixes = [name.removeprefix("rocpd_kernel_dispatch") for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE "
        "'rocpd_kernel_dispatch_%'")]
    truth: Counter[str] = Counter()
    for suffix in suffixes:
        for name, duration in connection.execute(
                f'SELECT s.display_name, d."end" - d.start FROM "rocpd_kernel_dispatch{suffix}" d '
                f'JOIN "rocpd_info_kernel_symbol{suffix}" s ON s.id = d.kernel_id '
                "AND s.guid = d.guid"):
            truth[name] += duration
    connection.close()
    document = analyze(path, tmp_path / "store.db")
    assert {k["name"]: k["total_ns"] for k in document["kernels"]} == dict(truth)


def test_csv_matches_a_direct_read_of_its_files(tmp_path):
    path = write(amd_job(), "csv-1.0", tmp_path)
    truth: Counter[str] = Counter()
    for file in path.glob("*_kernel_trace.csv"):
        with file.open(newline="") as stream:
            for row in csv.DictReader(stream):
                truth[row["Kernel_Name"]] += int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
    document = analyze(path, tmp_path / "store.db")
    assert {k["name"]: k["total_ns"] for k in document["kernels"]} == dict(truth)
