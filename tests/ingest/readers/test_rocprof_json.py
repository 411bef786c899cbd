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
