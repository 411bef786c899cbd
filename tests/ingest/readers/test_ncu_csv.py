"""Nsight Compute CSV ingest: the real RTX 5090 details CSVs against a direct count, both
page layouts across ncu versions, .ncu-rep without ncu, and bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.helpers import analyze_bad, ingest_into, query
from tracekit.cli import cli
from tracekit.ingest.readers.ncu_csv import parse_value

REAL = [f"llm-perf-opt/kernel_{n}_ncu.{kind}.csv"
        for n in ("0001", "0003", "0005", "0009", "0013", "0016")
        for kind in ("details", "metrics")]
UNIT_NS = {"ns": 1, "nsecond": 1, "us": 1000, "usecond": 1000, "ms": 10**6, "msecond": 10**6}


def metric_cells(path: Path) -> list[tuple[str, str]]:
    """(metric, value) of every metric row of a details-page CSV."""
    with path.open(newline="") as stream:
        return [(row["Metric Name"], row["Metric Value"]) for row in csv.DictReader(stream)
                if row["Metric Name"].strip()]


def raw_truth(path: Path) -> dict[str, Any]:
    """Launches, total duration and tensor counters straight from the CSV (the oracle)."""
    with path.open(newline="") as stream:
        rows = list(csv.DictReader(line for line in stream if not line.startswith("==")))
    launches = {row["ID"] for row in rows}
    total = 0
    counters: dict[str, float] = {}
    for row in rows:
        if row["Metric Name"] == "gpu__time_duration.sum":
            value = float(row["Metric Value"].replace(",", ""))
            total += round(value * UNIT_NS[row["Metric Unit"]])
        if row["Metric Name"].startswith("sm__ops_path_tensor") and row["Metric Value"] != "n/a":
            counters[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    metrics = sum(1 for row in rows if row["Metric Name"].strip())
    return {"launches": len(launches), "total_ns": total, "counters": counters,
            "metrics": metrics, "names": {row["Kernel Name"] for row in rows}}




@pytest.mark.parametrize("relative", REAL)
def test_real_csv_matches_direct_count(relative, shared_trace, tmp_path):
    path = shared_trace(relative)
    truth = raw_truth(path)
    store = tmp_path / "s.db"
    ingest_into(store, path)
    [(count, total)] = query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels")
    assert (count, total) == (truth["launches"], truth["total_ns"])
    assert {row[0] for row in query(store, "SELECT name FROM kernel_names")} == truth["names"]
    assert query(store, "SELECT COUNT(*) FROM kernel_metrics")[0][0] == truth["metrics"]
    stored = dict(query(store, "SELECT metric, value FROM kernel_metrics "
                        "WHERE metric LIKE 'sm__ops_path_tensor%' AND value IS NOT NULL"))
    assert stored == truth["counters"]
    assert query(store, "SELECT text_value FROM kernel_metrics WHERE metric = "
                 "'sm__ops_path_tensor_src_bf16_dst_bf16.sum'") == [("n/a",)]
    assert query(store, "SELECT arch, compute_major, compute_minor FROM devices") == [
        ("sm120", 12, 0)]


def test_real_folder_is_one_run(shared_trace, tmp_path):
    first = shared_trace("llm-perf-opt/kernel_0003_ncu.metrics.csv")
    second = shared_trace("llm-perf-opt/kernel_0016_ncu.metrics.csv")
    store = tmp_path / "s.db"
    ingest_into(store, first, second)
    truth = [raw_truth(first), raw_truth(second)]
    assert query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels") == [
        (2, truth[0]["total_ns"] + truth[1]["total_ns"])]
    assert query(store, "SELECT DISTINCT launch_index FROM kernel_metrics ORDER BY 1") == [
        (0,), (1,)]
    grid = query(store, "SELECT grid_x, grid_y, grid_z, block_x FROM kernels ORDER BY start_ns")
    assert grid == [(152, 4, 1, 128), (304, 1, 1, 256)]


def test_details_and_metrics_of_the_same_launches_are_one_launch_each(shared_trace, tmp_path):
    """The llm-perf-opt folder: each of 6 launches profiled once, exported twice (the details
    page and the command-line metrics): 6 launches and 0.718 ms, not 12 and 1.44 ms; every
    metric of both files kept once."""
    folder = shared_trace("llm-perf-opt/kernel_0001_ncu.details.csv").parent
    files = sorted(folder.glob("*.csv"))
    truths = [raw_truth(path) for path in files]
    store = tmp_path / "s.db"
    ingest_into(store, folder)
    [(count, total)] = query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels")
    assert count == 6 == len(files) // 2
    details = [t for path, t in zip(files, truths, strict=True) if "details" in path.name]
    assert total == sum(t["total_ns"] for t in details) and round(total / 1e6, 3) == 0.718
    # every row of the details pages, and of the metrics pages those that the details lack
    expected = 0
    for detail in (path for path in files if "details" in path.name):
        metrics_file = detail.with_name(detail.name.replace("details", "metrics"))
        known = metric_cells(detail)
        expected += len(known) + len(set(metric_cells(metrics_file)) - set(known))
    assert query(store, "SELECT COUNT(*) FROM kernel_metrics")[0][0] == expected
    metric_names = {metric for (metric,) in query(store, "SELECT metric FROM kernel_metrics")}
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in metric_names
    [(meta,)] = query(store, "SELECT meta_json FROM runs")
    assert json.loads(meta)["launches_in_several_files"] == 6


def test_bf16_counter_is_evidence_for_the_classifier(shared_trace, tmp_path):
    pytest.importorskip("tracekit.classifier.stage")
    path = shared_trace("llm-perf-opt/kernel_0016_ncu.metrics.csv")
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(tmp_path / "s.db"),
                                      "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    [kernel] = json.loads(result.stdout)["kernels"]
    assert kernel["path"] == "bf16" and kernel["evidence"] == "counters"


# -- synthetic layouts ----------------------------------------------------------------------

HEADER_2022 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time",'
               '"Context","Stream"')
HEADER_2024 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
               '"Block Size","Grid Size","Device","CC"')
GEMM = "sm90_xmma_gemm_e4m3bf16_bf16f32_f32_tn_n_tilesize128x128x64"


def raw_page(identity_header: str, *, units: bool, noise: bool = False) -> str:
    metrics = ["gpu__time_duration.sum", "launch__registers_per_thread",
               "sm__ops_path_tensor_src_fp8.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum"]
    lines = ["==PROF== Connected to process 77 (/usr/bin/python3)"] if noise else []
    lines.append(identity_header + "," + ",".join(f'"{m}"' for m in metrics))
    modern = "Block Size" in identity_header
    ident_blank = 11 if modern else 8
    if units:
        lines.append(",".join(['""'] * ident_blank) + ',"usecond","register/thread","",""')
    for launch, (duration, fp8) in enumerate([("12.5", "1,073,741,824"), ("2.25", "0")]):
        ident = [str(launch), "77", "python3", "localhost", GEMM]
        ident += (["1", "7", "(256, 1, 1)", "(132, 1, 1)", "0", "9.0"] if modern
                  else ["2022-Jan-01 00:00:00", "1", "7"])
        values = [duration, "168", fp8, "n/a"]
        lines.append(",".join(f'"{v}"' for v in ident + values))
        if noise:
            lines.append("==WARNING== No metrics to collect found in sections.")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("header", [HEADER_2022, HEADER_2024], ids=["ncu2022", "ncu2024"])
@pytest.mark.parametrize("units", [True, False], ids=["units", "no-units"])
def test_raw_page_layouts(tmp_path, header, units):
    csv_path = tmp_path / "raw.csv"
    csv_path.write_text(raw_page(header, units=units, noise=True))
    store = tmp_path / "s.db"
    ingest_into(store, csv_path)
    kernels = query(store, "SELECT end_ns - start_ns, registers FROM kernels ORDER BY start_ns")
    if units:
        assert kernels == [(12_500, 168), (2_250, 168)]
    else:
        # without a units row the duration's unit is unknown: counted, not guessed
        assert [row[1] for row in kernels] == [168, 168]
        meta = json.loads(query(store, "SELECT meta_json FROM runs")[0][0])
        assert meta["launches_without_duration"] == 2
    fp8 = query(store, "SELECT launch_index, value FROM kernel_metrics "
                "WHERE metric = 'sm__ops_path_tensor_src_fp8.sum' ORDER BY launch_index")
    assert fp8 == [(0, 1_073_741_824.0), (1, 0.0)]
    assert query(store, "SELECT meta_json FROM runs")[0][0].count('"raw"') == 1


def test_details_page_2022_layout(tmp_path):
    header = HEADER_2022 + ',"Section Name","Metric Name","Metric Unit","Metric Value"'
    rows = [header]
    for launch in range(3):
        ident = f'"{launch}","9","a.out","host","{GEMM}","t","1","7"'
        rows.append(ident + ',"GPU Speed Of Light Throughput","Duration","nsecond","1,500"')
        rows.append(ident + ',"Command line profiler metrics","sm__ops_path_tensor_src_fp8.sum",'
                    '"","2,048"')
        rows.append(ident + ',"SpeedOfLight","","",""')
    path = tmp_path / "details.csv"
    path.write_text("\n".join(rows) + "\n")
    store = tmp_path / "s.db"
    ingest_into(store, path)
    assert query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels") == [(3, 4500)]
    assert query(store, "SELECT COUNT(*) FROM kernel_metrics") == [(6,)]


def test_parse_value():
    assert parse_value("1,275,068,416") == (1275068416.0, None)
    assert parse_value("n/a") == (None, "n/a")
    assert parse_value("") == (None, None)
    assert parse_value("12.5") == (12.5, None)


def test_ncu_rep_without_ncu_is_a_clear_error(tmp_path, monkeypatch):
    report = tmp_path / "profile.ncu-rep"
    report.write_bytes(b"NVIDIA Nsight Compute report\x00\x01")
    monkeypatch.delenv("TRACEKIT_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("tracekit.ingest.convert.NCU_FALLBACKS", ())
    analyze_bad(tmp_path, report, "needs Nsight Compute (ncu)")


def test_ncu_rep_is_imported_with_ncu(tmp_path, monkeypatch):
    """``ncu --import R --csv --page raw`` is run and its stdout read like a raw-page CSV."""
    csv_text = tmp_path / "import.csv"
    csv_text.write_text(raw_page(HEADER_2024, units=True, noise=True))
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\n[ "$1" = "--import" ] && [ "$3" = "--csv" ] && '
                    f'[ "$5" = "raw" ] || exit 3\ncat "{csv_text}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("TRACEKIT_NCU", str(fake))
    report = tmp_path / "gemm.ncu-rep"
    report.write_bytes(b"\x00binary report")
    store = tmp_path / "s.db"
    ingest_into(store, report)
    assert query(store, "SELECT format FROM runs") == [("ncu-rep",)]
    assert query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels") == [(2, 14_750)]


# -- bad input ------------------------------------------------------------------------------


def test_csv_of_another_tool(tmp_path):
    other = tmp_path / "nsys_stats.csv"
    other.write_text('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Name"\n'
                     '"55.0","1000","10","100.0","volta_sgemm_64x64_nt"\n')
    analyze_bad(tmp_path, other, "unrecognized text file")


def test_empty_csv(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.touch()
    analyze_bad(tmp_path, empty, "empty")


def test_header_only_csv(tmp_path):
    header_only = tmp_path / "header.csv"
    header_only.write_text(HEADER_2024 + ',"Section Name","Metric Name","Metric Unit",'
                           '"Metric Value"\n')
    analyze_bad(tmp_path, header_only, "no profiled kernel")
