"""Kineto (torch profiler) JSON ingest: real traces against a direct count, exact times,
per-rank folders, top-level keys anywhere, legacy spellings, and bad input."""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.helpers import analyze_bad, ingest_into, query
from tracekit.cli import cli
from tracekit.ingest.pipeline import ingest
from tracekit.ingest.readers.json_document import TopLevelScanner
from tracekit.ingest.readers.kineto_time import to_ns
from tracekit.ingest.trace_rows import int_id
from tracekit.store import open_store

KINETO_TRACES = [
    "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/nccl_parser_config__nccl_data.json.gz",
    "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/trace_file_list__inference_rank_1.json.gz",
    "hta/triton_example__triton_example.json.gz",
    "tracelens/b200__eager_trace.json.gz",
    "tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.redacted.json.gz",
    "tracelens/h100__gaunernst_bert-small-uncased__1016001.redacted.json.gz",
]
B200 = "tracelens/b200__eager_trace.json.gz"


def raw_truth(path: Path) -> dict[str, Any]:
    """Counts straight from the file with the standard library (the oracle)."""
    with gzip.open(path, "rt") as stream:
        document = json.load(stream, parse_float=Decimal)
    events = document["traceEvents"] if isinstance(document, dict) else document
    complete = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in complete if e.get("cat") in ("kernel", "Kernel")]
    return {
        "kernels": len(kernels),
        "kernel_ns": sum(int(Decimal(e.get("dur", 0)) * 1000) for e in kernels),
        "runtime": sum(e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
                       for e in complete),
        "cpu_ops": sum(e.get("cat") in ("cpu_op", "Operator") for e in complete),
        "annotations": sum(e.get("cat") == "user_annotation" for e in complete),
        "memory": sum(e.get("cat") in ("gpu_memcpy", "gpu_memset", "Memcpy", "Memset")
                      for e in complete),
        "names": len({e["name"] for e in kernels}),
        "document": document,
    }



@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"



@pytest.mark.parametrize("relative", KINETO_TRACES)
def test_real_trace_matches_direct_count(relative, shared_trace, store_path):
    path = shared_trace(relative)
    truth = raw_truth(path)
    run = ingest_into(store_path, path)
    [(count, total, names)] = query(
        store_path, "SELECT COUNT(*), SUM(end_ns - start_ns), COUNT(DISTINCT name_id) "
        "FROM kernels WHERE run_id = ?", run)
    assert count == truth["kernels"]
    assert total == truth["kernel_ns"]
    assert names == truth["names"]
    assert query(store_path, "SELECT COUNT(*) FROM runtime_calls")[0][0] == truth["runtime"]
    assert query(store_path, "SELECT COUNT(*) FROM cpu_ops")[0][0] == truth["cpu_ops"]
    assert query(store_path, "SELECT COUNT(*) FROM memory_ops")[0][0] == truth["memory"]
    assert query(store_path, "SELECT COUNT(*) FROM nvtx_ranges WHERE kind = 'push_pop'"
                 )[0][0] == truth["annotations"]
    document = truth["document"]
    properties = document.get("deviceProperties") if isinstance(document, dict) else None
    devices = query(store_path, "SELECT name, arch, sm_count FROM devices")
    assert len(devices) >= 1
    if properties:
        first = properties[0]
        assert devices[0] == (first["name"], f"sm{first['computeMajor']}{first['computeMinor']}",
                              first["numSms"])


def test_times_are_exact_ns_relative_to_base(shared_trace, store_path):
    path = shared_trace(B200)
    document = raw_truth(path)["document"]
    first = next(e for e in document["traceEvents"] if e.get("cat") == "kernel")
    ingest_into(store_path, path)
    [(start, end)] = query(store_path, "SELECT k.start_ns, k.end_ns FROM kernels k "
                           "WHERE k.correlation_id = ? AND k.start_ns = ?",
                           first["args"]["correlation"], int(first["ts"] * 1000))
    assert end - start == int(first["dur"] * 1000)
    meta = json.loads(query(store_path, "SELECT meta_json FROM runs")[0][0])
    assert meta["time_base_ns"] == document["baseTimeNanoseconds"]


def test_b200_moe_gemms_keep_their_op_types_and_name(shared_trace, store_path):
    """The op says bf16; the stored evidence keeps that, and the kernel name stays intact."""
    path = shared_trace(B200)
    ingest_into(store_path, path)
    rows = query(store_path, """
        SELECT n.name, c.name, c.input_types, c.input_dims FROM kernels k
        JOIN kernel_names n ON n.id = k.name_id
        LEFT JOIN cpu_ops c ON c.run_id = k.run_id AND c.external_id = k.external_id
        WHERE n.name LIKE 'bmm_MxE4m3_MxE2m1MxE4m3%'""")
    assert len(rows) == 36
    kernel_name, op_name, input_types, input_dims = rows[0]
    assert kernel_name.startswith("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_")
    assert op_name is not None and json.loads(input_types)[0] == "c10::BFloat16"
    assert isinstance(json.loads(input_dims), list)
    launched = query(store_path, "SELECT COUNT(*) FROM kernels WHERE global_tid IS NULL")
    assert launched == [(0,)]


def test_b200_moe_gemms_classified_as_fp8_not_bf16(shared_trace, tmp_path):
    pytest.importorskip("tracekit.classifier.stage")
    path = shared_trace(B200)
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(tmp_path / "s.db"),
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    kernels = {k["name"]: k for k in json.loads(result.stdout)["kernels"]}
    moe = [k for name, k in kernels.items() if name.startswith("bmm_MxE4m3_MxE2m1MxE4m3")]
    assert moe and all(k["path"] == "fp8" for k in moe)
    assert all(k.get("weights") in ("mxfp4", "fp4") for k in moe)


# -- synthetic traces -------------------------------------------------------------------

def kineto_document(rank: int, *, base: int | None = 1_700_000_000_000_000_000,
                    base_last: bool = False, pid: Any = 100) -> dict[str, Any]:
    """A small Kineto trace: one op launching one kernel, a step annotation, a memcpy (the
    CPU thread is 101 + rank: the ranks of one job are threads of different processes)."""
    tid = 101 + rank
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "user_annotation", "name": "execute_context_1(8)_generation_0(0)",
         "pid": pid, "tid": tid, "ts": 1000.0, "dur": 50.5, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": tid, "ts": 1001.25,
         "dur": 10.0, "args": {"External id": 7, "Input type": ["c10::BFloat16", "c10::BFloat16"],
                               "Input Dims": [[8, 64], [64, 64]]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
         "ts": 1002.001, "dur": 3.0, "args": {"External id": 7, "correlation": 55}},
        {"ph": "s", "cat": "ac2g", "id": 55, "pid": pid, "tid": tid, "ts": 1002.001},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
         "pid": rank, "tid": 7, "ts": 1010.123, "dur": 5.877,
         "args": {"External id": 7, "correlation": 55, "device": rank, "stream": 7,
                  "grid": [4, 2, 1], "block": [128, 1, 1], "registers per thread": 90,
                  "shared memory": 1024}},
        {"ph": "f", "cat": "ac2g", "id": 55, "pid": rank, "tid": 7, "ts": 1010.123, "bp": "e"},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": rank, "tid": 7,
         "ts": 1020.0, "dur": 1.0, "args": {"device": rank, "stream": 7, "bytes": 64,
                                            "correlation": 56}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "main"}},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "pid": "Spans", "tid": "x",
         "ts": 900, "dur": 500},
    ]
    head: dict[str, Any] = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": rank, "name": "NVIDIA H100", "computeMajor": 9,
                              "computeMinor": 0, "numSms": 132, "totalGlobalMem": 80}],
        "distributedInfo": {"rank": rank, "world_size": 2},
    }
    tail: dict[str, Any] = {"traceName": f"rank{rank}"}
    if base is not None:
        (tail if base_last else head)["baseTimeNanoseconds"] = base
    return {**head, "traceEvents": events, **tail}


def write_trace(path: Path, document: Any, *, compress: bool = False) -> Path:
    payload = json.dumps(document, indent=1).encode()
    path.write_bytes(gzip.compress(payload) if compress else payload)
    return path


@pytest.mark.parametrize("base_last", [False, True])
def test_base_time_before_or_after_events(tmp_path, store_path, base_last):
    trace = write_trace(tmp_path / "t.json", kineto_document(0, base_last=base_last))
    ingest_into(store_path, trace)
    [(start, end, tid, launch, ext)] = query(
        store_path, "SELECT start_ns, end_ns, global_tid, launch_start_ns, external_id "
        "FROM kernels")
    assert (start, end, tid, launch, ext) == (1_010_123, 1_016_000, 101, 1_002_001, 7)
    meta = json.loads(query(store_path, "SELECT meta_json FROM runs")[0][0])
    assert meta["time_base_ns"] == 1_700_000_000_000_000_000
    assert meta["files"][0]["rank"] == 0
    assert query(store_path, "SELECT name FROM threads") == [("main",)]


def test_folder_of_ranks_is_one_run_with_several_devices(tmp_path, store_path):
    folder = tmp_path / "ranks"
    folder.mkdir()
    write_trace(folder / "rank0.pt.trace.json.gz", kineto_document(0, pid=100), compress=True)
    # rank 1 has a base 1 µs later: its times are shifted onto the run's base
    write_trace(folder / "rank1.pt.trace.json.gz",
                kineto_document(1, pid=200, base=1_700_000_000_000_001_000, base_last=True),
                compress=True)
    ingest_into(store_path, folder)
    assert query(store_path, "SELECT COUNT(*) FROM runs") == [(1,)]
    devices = query(store_path, "SELECT device_index, global_pid, arch FROM devices "
                    "ORDER BY device_index")
    assert devices == [(0, 100, "sm90"), (1, 200, "sm90")]
    starts = query(store_path, "SELECT device, start_ns, global_pid FROM kernels ORDER BY device")
    assert starts == [(0, 1_010_123, 100), (1, 1_011_123, 200)]
    # both ranks call their op External id 7: each kernel still joins only its own rank's op
    joined = query(store_path, """SELECT k.device, c.global_pid FROM kernels k
                                  JOIN cpu_ops c ON c.external_id = k.external_id""")
    assert sorted(joined) == [(0, 100), (1, 200)]


def test_bare_event_list_and_legacy_spellings(tmp_path, store_path):
    events = [
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 10,
         "dur": 2, "args": {"correlation": 9, "external id": 3}},
        {"ph": "X", "cat": "Runtime", "name": "cuLaunchKernel", "pid": 5, "tid": 5, "ts": 13,
         "dur": 1, "args": {"correlation": 10, "external id": 0}},
        {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_64x64_nt", "pid": 0, "tid": 7,
         "ts": 20, "dur": 4, "args": {"correlation": 9, "external id": 3, "device": 0,
                                      "stream": 7}},
        # no correlation arg: linked by the flow that ends on it
        {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_64x64_nt", "pid": 0, "tid": 7,
         "ts": 30, "dur": 4, "args": {"device": 0, "stream": 7}},
        {"ph": "f", "cat": "async_gpu", "id": 10, "pid": 0, "tid": 7, "ts": 30, "bp": "e"},
    ]
    trace = write_trace(tmp_path / "legacy.json", events)
    ingest_into(store_path, trace)
    kernels = query(store_path, "SELECT start_ns, correlation_id, external_id, global_tid "
                    "FROM kernels ORDER BY start_ns")
    assert kernels == [(20_000, 9, 3, 5), (30_000, 10, None, 5)]
    kinds = query(store_path, "SELECT a.name, r.kind FROM runtime_calls r "
                  "JOIN api_names a ON a.id = r.name_id ORDER BY r.start_ns")
    assert kinds == [("cudaLaunchKernel", "runtime"), ("cuLaunchKernel", "driver")]


def test_string_pids_map_to_stable_ints():
    assert int_id("1234") == 1234
    assert int_id("Spans") == int_id("Spans") < 0
    assert int_id("Spans") != int_id("Traces")
    assert int_id(None) is None


def test_to_ns_is_exact():
    assert to_ns(Decimal("1365627871738.485")) == 1_365_627_871_738_485
    assert to_ns(Decimal("1712195495505583.123")) == 1_712_195_495_505_583_123
    assert to_ns(7) == 7000
    assert to_ns(0.1) == 100


def test_scanner_finds_keys_after_the_events_array():
    document = json.dumps(kineto_document(0, base_last=True)).encode()
    scanner = TopLevelScanner()
    for start in range(0, len(document), 97):
        scanner.feed(document[start:start + 97])
    found = scanner.top_level()
    assert found is not None
    assert found["baseTimeNanoseconds"] == 1_700_000_000_000_000_000
    assert found["deviceProperties"][0]["numSms"] == 132
    assert "traceEvents" not in found


# -- bad input: one line on stderr, exit 2, no run written --------------------------------


def test_truncated_gzip(tmp_path):
    whole = gzip.compress(json.dumps(kineto_document(0)).encode() * 1)
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    analyze_bad(tmp_path, cut, "truncated")


def test_truncated_json(tmp_path):
    text = json.dumps(kineto_document(0))
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    analyze_bad(tmp_path, cut, "truncated")


def test_json_without_trace_events(tmp_path):
    plain = tmp_path / "meta.json"
    plain.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": []}))
    analyze_bad(tmp_path, plain, "traceEvents")


def test_unrelated_json(tmp_path):
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    analyze_bad(tmp_path, other, "traceEvents")


def test_empty_file(tmp_path):
    empty = tmp_path / "empty.pt.trace.json"
    empty.touch()
    analyze_bad(tmp_path, empty, "empty")


def test_trace_without_kernels(tmp_path):
    document = kineto_document(0)
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") != "kernel"]
    trace = write_trace(tmp_path / "cpu_only.json", document)
    analyze_bad(tmp_path, trace, "no GPU kernel")


@pytest.mark.postgres
def test_same_rows_in_postgres(shared_trace, postgres_url):
    """Staging and the final SQL are portable: PostgreSQL gets the same rows as SQLite."""
    from sqlalchemy import text

    path = shared_trace(B200)
    truth = raw_truth(path)
    store = open_store(postgres_url)
    try:
        run = ingest(store, [path]).run_id
        with store.engine.connect() as connection:
            count, total, linked = connection.execute(text(
                "SELECT COUNT(*), SUM(end_ns - start_ns), COUNT(global_tid) FROM kernels "
                "WHERE run_id = :r"), {"r": run}).one()
    finally:
        store.dispose()
    assert (count, int(total), linked) == (truth["kernels"], truth["kernel_ns"],
                                           truth["kernels"])


def test_epoch_microseconds_stay_exact(tmp_path, store_path):
    """Old traces carry epoch µs (~1.7e15): beyond float ns precision, parsed exactly."""
    document = kineto_document(0, base=None)
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), float):
            epoch = Decimal("1712195495505583") + Decimal(str(event["ts"]))
            event["ts"] = f"@@{epoch}@@"
    text = re.sub(r'"@@([0-9.]+)@@"', r"\1", json.dumps(document))
    trace = tmp_path / "epoch.json"
    trace.write_text(text)
    ingest_into(store_path, trace)
    [(start, end)] = query(store_path, "SELECT start_ns, end_ns FROM kernels")
    assert (start, end) == (1_712_195_495_506_593_123, 1_712_195_495_506_599_000)


def test_real_events_written_as_a_bare_list_are_claimed_and_read_alike(
    shared_trace, tmp_path, store_path
):
    """HTA's legacy trace with its top-level object dropped (the form parsers/
    kineto-json-list.toml exists for): the list spec claims it and the kernels are the same."""
    from tracekit.ingest.detect import detect_file

    original = shared_trace("hta/trace_file_list__inference_rank_1.json.gz")
    truth = raw_truth(original)
    with gzip.open(original, "rt") as stream:
        events = json.load(stream)["traceEvents"]  # integer µs timestamps: exact as floats too
    bare = tmp_path / "inference_rank_1_events.json.gz"
    with gzip.open(bare, "wt") as stream:
        json.dump(events, stream, indent=2)
    assert detect_file(original).id == "kineto-json"
    assert detect_file(bare).id == "kineto-json-list"
    run = ingest_into(store_path, bare)
    [(count, total)] = query(store_path, "SELECT COUNT(*), SUM(end_ns - start_ns) FROM kernels "
                             "WHERE run_id = ?", run)
    assert (count, total) == (truth["kernels"], truth["kernel_ns"])


def test_module_frames_are_kept_and_other_python_frames_counted(tmp_path, store_path):
    """``nn.Module: <Class>_<n>`` Python frames become nvtx_ranges kind 'module' on their
    thread, verbatim; the other Python frames (and odd names) are only counted."""
    frame = {"ph": "X", "cat": "python_function", "pid": 5, "tid": 6}
    events = [
        {**frame, "name": "nn.Module: LlamaAttention_0", "ts": 10, "dur": 30},
        {**frame, "name": "nn.Module: Linear_3", "ts": 12.5, "dur": 5},
        {**frame, "name": "torch/nn/modules/module.py(1762): _call_impl", "ts": 12, "dur": 6},
        {**frame, "name": 17, "ts": 13, "dur": 1},  # a name that is no string
        {**frame, "name": "nn.Module: Broken_0", "ts": None, "dur": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 6,
         "ts": 13, "dur": 1, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
         "pid": 0, "tid": 7, "ts": 20, "dur": 4, "args": {"correlation": 1, "device": 0,
                                                          "stream": 7}},
    ]
    trace = write_trace(tmp_path / "modules.json", events)
    run = ingest_into(store_path, trace)
    frames = query(store_path, "SELECT text, start_ns, end_ns, global_tid, global_pid "
                   "FROM nvtx_ranges WHERE kind = 'module' ORDER BY start_ns")
    assert frames == [("nn.Module: LlamaAttention_0", 10_000, 40_000, 6, 5),
                      ("nn.Module: Linear_3", 12_500, 17_500, 6, 5)]
    counts = dict(query(store_path, "SELECT name, count FROM run_counts WHERE run_id = ?",
                        run))
    assert counts["module_frames"] == 2 and counts["nvtx_ranges"] == 0
    meta = json.loads(query(store_path, "SELECT meta_json FROM runs")[0][0])
    assert meta["categories"]["python_function"] == 5


def test_module_frames_of_the_event_by_event_path(tmp_path, store_path):
    """A chunk with metadata events is handled one event at a time: module frames are kept
    the same way there."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 5, "args": {"name": "python3"}},
        {"ph": "X", "cat": "python_function", "name": "nn.Module: Qwen2MLP_0", "pid": 5,
         "tid": 5, "ts": 1, "dur": 9},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 4,
         "args": {"correlation": 1, "device": 0, "stream": 7}},
    ]
    trace = write_trace(tmp_path / "modules.json", events)
    ingest_into(store_path, trace)
    assert query(store_path, "SELECT text FROM nvtx_ranges WHERE kind = 'module'") == [
        ("nn.Module: Qwen2MLP_0",)]


def test_b200_module_frames_match_a_direct_count(shared_trace, store_path):
    path = shared_trace(B200)
    events = raw_truth(path)["document"]["traceEvents"]
    truth = sorted(e["name"] for e in events if e.get("cat") == "python_function"
                   and e["name"].startswith("nn.Module: "))
    ingest_into(store_path, path)
    stored = [name for (name,) in query(store_path, "SELECT text FROM nvtx_ranges "
                                        "WHERE kind = 'module' ORDER BY text")]
    assert stored == truth and len(truth) == 436
