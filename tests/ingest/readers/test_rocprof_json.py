"""rocprofv3 JSON ingest: the real MI350X trace against a direct read of the file (every
dispatch, the total GPU time to the nanosecond), its devices, GEMM paths and the plain
"no inference phases" summary; synthetic files for links, ROCTx ranges and layouts."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.helpers import ingest_into, query
from tracekit.cli import cli
from tracekit.findings.rules import load_rules

MI350X = "tracelens-rocprof/908_results.json.gz"


def direct_read(path: Path) -> dict[str, Any]:
    """The oracle: the whole document with the standard library, counted in Python."""
    with gzip.open(path, "rt") as stream:
        document = json.load(stream)
    [process] = document["rocprofiler-sdk-tool"]
    dispatches = process["buffer_records"]["kernel_dispatch"]
    names = {symbol["kernel_id"]: symbol["formatted_kernel_name"]
             for symbol in process["kernel_symbols"]}
    per_name: Counter[str] = Counter()
    for record in dispatches:
        per_name[names[record["dispatch_info"]["kernel_id"]]] += (
            record["end_timestamp"] - record["start_timestamp"])
    return {
        "dispatches": len(dispatches),
        "gpu_ns": sum(r["end_timestamp"] - r["start_timestamp"] for r in dispatches),
        "names": per_name,
        "threads": {r["thread_id"] for r in dispatches},
        "first_start": min(r["start_timestamp"] for r in dispatches),
        "pid": process["metadata"]["pid"],
    }


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def test_real_mi350x_trace_counts_every_dispatch(shared_trace, store_path):
    path = shared_trace(MI350X)
    truth = direct_read(path)
    assert truth["dispatches"] == 43_915
    run = ingest_into(store_path, path)
    [(count, total, first)] = query(
        store_path, "SELECT COUNT(*), SUM(end_ns - start_ns), MIN(start_ns) FROM kernels "
        "WHERE run_id = ?", run)
    assert count == truth["dispatches"]
    assert total == truth["gpu_ns"]  # to the nanosecond
    assert first == truth["first_start"]  # absolute ns, as rocprofv3 wrote them
    per_name = dict(query(store_path, "SELECT n.name, SUM(k.end_ns - k.start_ns) FROM kernels k "
                                      "JOIN kernel_names n ON n.id = k.name_id GROUP BY n.name"))
    assert per_name == dict(truth["names"])
    assert {tid for (tid,) in query(store_path, "SELECT DISTINCT global_tid FROM kernels")
            } == truth["threads"]
    assert query(store_path, "SELECT DISTINCT global_pid FROM kernels") == [(truth["pid"],)]
    assert query(store_path, "SELECT device_index, name, arch, arch_source, sm_count, "
                             "compute_major, compute_minor FROM devices") == [
        (0, "AMD Instinct MI350X", "gfx950", "trace", 256, 9, 5)]
    [(short, mangled)] = query(store_path, "SELECT short_name, mangled_name FROM kernel_names "
                                           "WHERE name LIKE 'ncclDevKernel_Generic_1%'")
    assert short == "ncclDevKernel_Generic_1" and mangled.endswith(".kd")


def test_real_mi350x_trace_summary_says_no_inference_phases(shared_trace, tmp_path):
    path = shared_trace(MI350X)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["run"]["format"] == "rocprof-json"
    assert document["run"]["gpu"] == "AMD Instinct MI350X (gfx950)"
    gemms = [k for k in document["kernels"] if k["op"] == "gemm"]
    assert gemms and all(k["name"].startswith("Cijk_") for k in gemms)
    assert {k["path"] for k in gemms} == {"bf16"}  # BF16 Tensile (hipBLASLt) kernels
    assert sum(k["count"] for k in document["kernels"]) == 43_915
    missing = load_rules().rules["phases-missing"].render()
    assert "No inference phases found" in missing
    assert missing in [f["message"] for f in document["findings"]]
    summary = CliRunner().invoke(cli, ["report", "latest", "--store", store])
    assert summary.exit_code == 0, summary.output
    assert "No inference phases found" in " ".join(summary.output.split())
    assert "bf16" in summary.output


# -- synthetic files (tracekit.synth.rocprof) ------------------------------------------------

def test_rows_are_the_same_on_both_store_back_ends(store, tmp_path):
    from sqlalchemy import text

    from tests.support.rocprof_scenario import amd_job
    from tracekit.ingest.pipeline import ingest
    from tracekit.synth.rocprof import write_json

    job = amd_job()
    run = ingest(store, [tmp_path / "json"] if write_json(job, tmp_path / "json") else []).run_id
    with store.engine.connect() as connection:
        row = connection.execute(text(
            "SELECT COUNT(*), SUM(end_ns - start_ns), COUNT(launch_start_ns), "
            "COUNT(DISTINCT global_pid) FROM kernels WHERE run_id = :r"), {"r": run}).one()
        names = connection.execute(text(
            "SELECT COUNT(*), COUNT(short_name), COUNT(mangled_name) FROM kernel_names "
            "WHERE run_id = :r"), {"r": run}).one()
    dispatches = sum(len(p.dispatches) for p in job.processes)
    assert tuple(row) == (dispatches, sum(t for _, t in job.kernel_totals().values()),
                          dispatches, 2)
    assert tuple(names) == (3, 3, 3)


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("marker_style", ["range_api", "core_api"])
def test_layouts_and_marker_styles_read_the_same(tmp_path, store_path, indent, marker_style):
    from tests.support.rocprof_scenario import DECODE, amd_job
    from tracekit.synth.rocprof import write_json

    write_json(amd_job(), tmp_path / "json", marker_style=marker_style, indent=indent,
               stream_ids=marker_style == "range_api")
    ingest_into(store_path, tmp_path / "json")
    assert query(store_path, "SELECT kind, COUNT(*) FROM nvtx_ranges GROUP BY kind") == [
        ("mark", 2), ("push_pop", 8)]
    assert query(store_path, "SELECT COUNT(*) FROM nvtx_ranges WHERE text = ?", DECODE) == [(5,)]
    assert query(store_path, "SELECT COUNT(*) FROM kernels WHERE launch_start_ns IS NOT NULL"
                 ) == [(40,)]


def test_a_dispatch_without_its_symbol_is_kept(tmp_path, store_path):
    from tests.support.rocprof_scenario import amd_job
    from tracekit.synth.rocprof import write_json

    [path, _] = write_json(amd_job(), tmp_path / "json")
    document = json.loads(path.read_text())
    process = document["rocprofiler-sdk-tool"][0]
    process["kernel_symbols"] = [s for s in process["kernel_symbols"] if s["kernel_id"] != 1]
    path.write_text(json.dumps(document))
    run = ingest_into(store_path, tmp_path / "json")
    assert query(store_path, "SELECT COUNT(*) FROM kernels k JOIN kernel_names n "
                             "ON n.id = k.name_id WHERE n.name = '<kernel id 1>'") == [(8,)]
    [(meta,)] = query(store_path, "SELECT meta_json FROM runs WHERE id = ?", run)
    assert json.loads(meta)["records"]["dispatches_without_symbol"] == 8


@pytest.mark.parametrize(("damage", "fragment"), [
    (lambda text: text[: len(text) // 2], "JSON is truncated"),
    (lambda text: text.replace('"start_timestamp":', '"start_timestamp":"x", "s":', 1),
     "a record is not what the profiler writes"),
    (lambda text: '{"rocprofiler-sdk-tool": []}', "holds no process"),
    (lambda text: text.replace('"kernel_dispatch":[{', '"kernel_dispatch":[], "x":[{', 1),
     "holds no kernel dispatch"),
])
def test_damaged_files_are_one_line(tmp_path, damage, fragment):
    from tests.support.helpers import analyze_bad
    from tests.support.rocprof_scenario import amd_job
    from tracekit.synth.rocprof import write_json

    job = amd_job()
    job.processes = job.processes[:1]
    [path] = write_json(job, tmp_path / "json")
    path.write_text(damage(path.read_text()))
    analyze_bad(tmp_path, path, fragment)
