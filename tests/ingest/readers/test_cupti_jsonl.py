"""CUPTI JSON-lines ingest (the format of tracekit's cupti backend): records against a direct
count, launch and external-correlation links, several processes, and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.helpers import analyze_bad, ingest_into, query
from tracekit.cli import cli
from tracekit.ingest.readers.cupti_jsonl import header_record

NVJET = "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"
FP8 = "sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x128x128"


def records(pid: int, device: int, *, steps: int = 3) -> list[dict[str, Any]]:
    """What the backend writes for ``steps`` iterations of: an op launching two GEMMs."""
    out: list[dict[str, Any]] = [
        header_record(pid, process_name="python", rank=device, cupti_version=130400),
        {"kind": "device", "id": device, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9,
         "computeMinor": 0, "numSms": 132, "totalGlobalMem": 85018279936, "uuid": "GPU-1"},
        {"kind": "thread", "processId": pid, "threadId": pid + 1, "name": "VLLM::EngineCore"},
    ]
    clock = 1_000_000
    correlation = 10
    for step in range(steps):
        out.append({"kind": "range", "name": f"execute_context_0(0)_generation_4({step})",
                    "start": clock, "end": clock + 900, "processId": pid,
                    "threadId": pid + 1})
        out.append({"kind": "op", "name": "aten::mm", "start": clock + 1, "end": clock + 50,
                    "externalId": 100 + step, "processId": pid, "threadId": pid + 1,
                    "inputTypes": ["c10::BFloat16", "c10::BFloat16"],
                    "inputDims": [[4, 4096], [4096, 4096]]})
        for name in (NVJET, FP8):
            correlation += 1
            out.append({"kind": "runtime" if name == NVJET else "driver",
                        "name": "cudaLaunchKernel" if name == NVJET else "cuLaunchKernelEx",
                        "cbid": 211, "start": clock + 5, "end": clock + 9,
                        "correlationId": correlation, "processId": pid, "threadId": pid + 1})
            out.append({"kind": "external_correlation", "correlationId": correlation,
                        "externalId": 100 + step, "externalKind": 2})
            # kernel records arrive after their launch, in another buffer
            out.append({"kind": "kernel", "name": name, "mangledName": name,
                        "start": clock + 100, "end": clock + 100 + 37 * (step + 1),
                        "deviceId": device, "contextId": 1, "streamId": 7,
                        "correlationId": correlation, "gridX": 132, "gridY": 1, "gridZ": 1,
                        "blockX": 384, "blockY": 1, "blockZ": 1, "registersPerThread": 168,
                        "staticSharedMemory": 0, "dynamicSharedMemory": 213_656})
            clock += 200
        out.append({"kind": "memcpy", "start": clock, "end": clock + 3, "deviceId": device,
                    "streamId": 7, "correlationId": 999 + step, "bytes": 4096})
        out.append({"kind": "future_kind", "whatever": 1})
        clock += 1000
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]], *, compress: bool = False) -> Path:
    payload = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path.write_bytes(gzip.compress(payload) if compress else payload)
    return path


def raw_truth(path: Path) -> dict[str, int]:
    """Counts from the file itself (the oracle)."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as stream:  # type: ignore[operator]
        rows = [json.loads(line) for line in stream if line.strip()]
    kernels = [r for r in rows if r.get("kind") == "kernel"]
    return {"kernels": len(kernels), "kernel_ns": sum(r["end"] - r["start"] for r in kernels),
            "runtime": sum(r.get("kind") in ("runtime", "driver") for r in rows)}




@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_records_match_direct_count(tmp_path, compress):
    path = write_jsonl(tmp_path / "cupti.jsonl" if not compress else tmp_path / "cupti.jsonl.gz",
                       records(4242, 0), compress=compress)
    truth = raw_truth(path)
    store = tmp_path / "s.db"
    ingest_into(store, path)
    assert query(store, "SELECT format FROM runs") == [("cupti-jsonl",)]
    assert query(store, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels") == [
        (truth["kernels"], truth["kernel_ns"])]
    assert query(store, "SELECT COUNT(*) FROM runtime_calls")[0][0] == truth["runtime"]
    unlinked = query(store, "SELECT COUNT(*) FROM kernels WHERE global_tid IS NULL "
                     "OR launch_start_ns IS NULL OR external_id IS NULL")
    assert unlinked == [(0,)]
    ops = query(store, """SELECT DISTINCT c.input_types FROM kernels k JOIN cpu_ops c
                          ON c.run_id = k.run_id AND c.external_id = k.external_id""")
    assert ops == [('["c10::BFloat16", "c10::BFloat16"]',)]
    assert query(store, "SELECT arch, sm_count, uuid FROM devices") == [("sm90", 132, "GPU-1")]
    assert query(store, "SELECT static_smem, dynamic_smem FROM kernels LIMIT 1") == [(0, 213_656)]
    assert query(store, "SELECT name FROM threads") == [("VLLM::EngineCore",)]
    assert query(store, "SELECT COUNT(*) FROM nvtx_ranges WHERE kind = 'push_pop'") == [(3,)]
    kinds = query(store, "SELECT DISTINCT kind FROM runtime_calls ORDER BY 1")
    assert kinds == [("driver",), ("runtime",)]
    meta = json.loads(query(store, "SELECT meta_json FROM runs")[0][0])
    assert meta["kinds"]["future_kind"] == 3


def test_one_file_per_process_is_one_run(tmp_path):
    folder = tmp_path / "capture"
    folder.mkdir()
    write_jsonl(folder / "rank0.cupti.jsonl", records(100, 0))
    write_jsonl(folder / "rank1.cupti.jsonl", records(200, 1))
    store = tmp_path / "s.db"
    ingest_into(store, folder)
    assert query(store, "SELECT device_index, global_pid FROM devices ORDER BY 1") == [
        (0, 100), (1, 200)]
    # correlation ids repeat across processes; each kernel finds the launch of its own file
    pids = query(store, "SELECT device, global_pid, COUNT(*) FROM kernels GROUP BY 1, 2")
    assert pids == [(0, 100, 6), (1, 200, 6)]


def test_analysis_runs_on_cupti_records(tmp_path):
    pytest.importorskip("tracekit.classifier.stage")
    path = write_jsonl(tmp_path / "cupti.jsonl", records(4242, 0))
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(tmp_path / "s.db"),
                                      "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    kernels = {k["name"]: k for k in json.loads(result.stdout)["kernels"]}
    assert kernels[FP8]["count"] == 3 and kernels[FP8]["path"] == "fp8"


# -- bad input ------------------------------------------------------------------------------


def test_truncated_gzip(tmp_path):
    whole = gzip.compress("".join(json.dumps(r) + "\n" for r in records(1, 0, steps=50)).encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    analyze_bad(tmp_path, cut, "truncated")


def test_cut_last_line(tmp_path):
    text = "".join(json.dumps(r) + "\n" for r in records(1, 0))
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[:-25])
    analyze_bad(tmp_path, cut, "is not JSON")


def test_newer_version_refused(tmp_path):
    rows = records(1, 0)
    rows[0]["version"] = 99
    analyze_bad(tmp_path, write_jsonl(tmp_path / "new.jsonl", rows), "version 99")


def test_header_not_first(tmp_path):
    rows = records(1, 0)
    rows.insert(0, rows.pop(3))
    analyze_bad(tmp_path, write_jsonl(tmp_path / "late.jsonl", rows), "header")


def test_bad_record(tmp_path):
    rows = records(1, 0)
    del rows[7]["start"]
    analyze_bad(tmp_path, write_jsonl(tmp_path / "bad.jsonl", rows), "bad record")


def test_empty_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    analyze_bad(tmp_path, empty, "empty")


def test_no_kernels(tmp_path):
    rows = [r for r in records(1, 0) if r["kind"] != "kernel"]
    analyze_bad(tmp_path, write_jsonl(tmp_path / "cpu.jsonl", rows), "no kernel")
