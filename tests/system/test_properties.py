"""Untrusted input: generated, mutated and truncated files thrown at every reader.

The only outcomes allowed for any input are
- a correct result: the run is in the store, whole (every kernel points at a name of its
  run, the reader's own tally matches the rows), and for rule files a usable rule set; or
- a ``TracekitError`` (the CLI prints it as one line and exits 2) with the store unchanged.
Any other exception, or an input that takes longer than ``HANG_S`` seconds, fails.

Readers run in-process on a SQLite store in a temporary folder (a subprocess per input
would cost 100× more). Inputs start from small valid files and are mutated at the level the
format has (SQL rows and tables, JSON values, CSV cells, TOML lines) and then, sometimes, at
the byte level (flips, truncation).

How many inputs: ``HYPOTHESIS_PROFILE`` picks ``dev`` (default, a few hundred per reader),
``ci`` (10,000 per reader; also chosen when ``CI`` is set) or ``fuzz`` (100,000);
``TRACEKIT_PROPERTY_EXAMPLES=N`` overrides the count.
``TRACEKIT_FUZZ_STRICT=1`` also fails on reader exceptions that the pipeline turned into
one-line ``UnexpectedContent`` errors (the contract holds for users, but each is a bug).
"""

from __future__ import annotations

import csv
import faulthandler
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from tests.support import paths
from tracekit.errors import TracekitError
from tracekit.ingest.pipeline import IngestResult, UnexpectedContent, ingest
from tracekit.store.db import Store, open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario
from tracekit.synth.rocprof import (
    AmdProcess,
    AmdScenario,
    Job,
    lay_out,
    write_csv,
    write_json,
    write_rocpd,
)

#: an input still running after this many seconds is a hang (faulthandler ends the run)
HANG_S = 120
#: TRACEKIT_FUZZ_STRICT=1: a reader exception that the pipeline's safety net turned into a
#: one-line error (UnexpectedContent) fails the test, to find the reader bug behind it
STRICT = os.environ.get("TRACEKIT_FUZZ_STRICT") == "1"

_EXAMPLES = {"dev": 300, "ci": 10_000, "fuzz": 100_000}
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
EXAMPLES = int(os.environ.get("TRACEKIT_PROPERTY_EXAMPLES") or _EXAMPLES.get(PROFILE, 300))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None if PROFILE == "ci" else settings.default.database,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example],
)


# --- the harness ----------------------------------------------------------------------------

@dataclass
class Harness:
    """One store and a scratch folder shared by all inputs of one reader."""

    store: Store
    folder: Path
    count: int = 0

    def fingerprint(self) -> tuple[int, ...]:
        """Row count of runs and the highest id of every per-run table (cheap to compare)."""
        tables = ("kernels", "kernel_names", "runtime_calls", "api_names", "nvtx_ranges",
                  "memory_ops", "devices", "processes", "threads", "cpu_ops", "kernel_metrics")
        sql = "SELECT (SELECT COUNT(*) FROM runs), " + ", ".join(
            f"(SELECT COALESCE(MAX(id), 0) FROM {table})" for table in tables)
        with self.store.connect() as connection:
            return tuple(connection.execute(text(sql)).one())

    def ingest(self, data: bytes, suffix: str) -> IngestResult | None:
        """Ingest ``data`` as a file; None when it was refused with a TracekitError."""
        self.count += 1
        path = self.folder / f"input{self.count}{suffix}"
        path.write_bytes(data)
        before = self.fingerprint()
        faulthandler.dump_traceback_later(HANG_S, exit=True)
        try:
            result = ingest(self.store, [path], work_dir=self.folder / "work")
        except TracekitError as error:
            assert error.one_line() and "\n" not in error.one_line()
            assert self.fingerprint() == before, f"store changed by a refused input: {error}"
            if STRICT and isinstance(error, UnexpectedContent):
                raise (error.__cause__ or error) from error  # a reader bug behind the one line
            return None
        finally:
            faulthandler.cancel_dump_traceback_later()
            path.unlink()
            shutil.rmtree(self.folder / "work", ignore_errors=True)
        check_run_is_whole(self.store, result.run_id)
        return result


def check_run_is_whole(store: Store, run_id: int) -> None:
    """Every kernel and metric points at a name of its own run; the tally matches the rows."""
    with store.connect() as connection:
        orphans = connection.execute(text(
            "SELECT COUNT(*) FROM kernels k LEFT JOIN kernel_names n ON n.id = k.name_id "
            "WHERE k.run_id = :r AND (n.id IS NULL OR n.run_id != :r)"), {"r": run_id}).scalar()
        assert orphans == 0
        meta, status = connection.execute(text(
            "SELECT meta_json, status FROM runs WHERE id = :r"), {"r": run_id}).one()
        kernels = connection.execute(text("SELECT COUNT(*) FROM kernels WHERE run_id = :r"),
                                     {"r": run_id}).scalar()
        names = connection.execute(text(
            "SELECT name FROM kernel_names WHERE run_id = :r"), {"r": run_id}).scalars().all()
    assert status == "complete"
    assert all(isinstance(name, str) for name in names)
    counts = json.loads(meta).get("counts", {}) if meta else {}
    if isinstance(counts.get("kernels"), int):
        assert counts["kernels"] == kernels


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """One store for all inputs; in memory-backed /dev/shm when it has room (10^4 inputs
    each write a file and commit a transaction: disk I/O would dominate)."""
    import tempfile

    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
        folder = Path(tempfile.mkdtemp(prefix="tracekit-props-", dir=shm))
    else:
        folder = tmp_path_factory.mktemp("fuzz")
    store = open_store(str(folder / "store.db"))
    try:
        yield Harness(store, folder)
    finally:
        store.dispose()
        if folder.parent == shm:
            shutil.rmtree(folder, ignore_errors=True)


# --- shared strategies ------------------------------------------------------------------------

WEIRD_STRINGS = [
    "", " ", "'", "''", '"', "\\", "%s", "{}", "${x}", "\x00", "a\x00b", "\x00" * 5,
    "'; DROP TABLE runs; --", "\" OR 1=1 --", "<script>alert(1)</script>", "<b>bold</b>&amp;",
    "\u202e\u200b\ufeff", "ünïcödé ∑ 🚀", "\udcff".encode("utf-8", "surrogatepass").decode(
        "utf-8", "replace"), "\r\n\t", "…", "void f<(anonymous namespace)::T>()",
]

weird_text = st.one_of(
    st.sampled_from(WEIRD_STRINGS),
    st.text(max_size=40),
    st.integers(1_000, 100_000).map(lambda n: "x" * n),
)
numbers = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.integers(-10, 10),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | weird_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=3),
    max_leaves=6,
)


@dataclass(frozen=True)
class Damage:
    """Byte-level damage, independent of the file's length (so reports stay short)."""

    flips: tuple[tuple[float, int], ...] = ()
    cut: float | None = None

    def apply(self, data: bytes) -> bytes:
        out = bytearray(data)
        for where, value in self.flips:
            if out:
                out[min(int(where * len(out)), len(out) - 1)] = value
        if self.cut is not None:
            out = out[: int(self.cut * len(out))]
        return bytes(out)


_flips = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=8)
damages = st.one_of(
    st.just(Damage()), st.just(Damage()),
    st.builds(Damage, flips=_flips.map(tuple)),
    st.builds(Damage, cut=st.floats(0, 1, exclude_max=True)),
    st.builds(Damage, flips=_flips.map(tuple), cut=st.floats(0, 1, exclude_max=True)),
)


# --- Nsight Systems SQLite --------------------------------------------------------------------

NSYS_TABLES = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
               "StringIds", "TARGET_INFO_GPU", "PROCESSES", "ThreadNames", "EXPORT_META_DATA",
               "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
               "TARGET_INFO_CUDA_DEVICE", "META_DATA_CAPTURE"]


def small_nsys_export(path: Path) -> bytes:
    """A small valid export with only the tables the reader looks at (fast to copy)."""
    scenario = Scenario(ranks=[
        RankSpec(pid=10, steps=[
            StepSpec("execute_context_1(8)_generation_0(0)",
                     [KernelSpec("sm90_xmma_gemm_bf16bf16_bf16f32", 5_000, count=2),
                      KernelSpec("void at::native::elementwise_kernel<128, 4>(int)", 700)]),
            StepSpec("execute_context_0(0)_generation_2(2)",
                     [KernelSpec("nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NNT", 900)], graph=True),
        ], nvtx_domains=["vllm"]),
        RankSpec(pid=11, device=1, steps=[StepSpec(None, [KernelSpec("kernel_b", 300)])]),
    ])
    write_scenario(scenario, path)
    connection = sqlite3.connect(path)
    try:
        keep = set(NSYS_TABLES)
        for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if name not in keep:
                connection.execute(f'DROP TABLE "{name}"')
        connection.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, "
                           "contextId, streamId, correlationId, globalPid, bytes, copyKind, "
                           "srcKind, dstKind) VALUES (1, 2, 0, 1, 7, 5, 167772160, 64, 1, 0, 1)")
        connection.commit()
        connection.execute("VACUUM")
    finally:
        connection.close()
    return path.read_bytes()


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def _short(value: Any) -> str:
    text_value = repr(value)
    return text_value if len(text_value) <= 60 else f"{text_value[:40]}…({len(text_value)} chars)"


@dataclass(frozen=True)
class SqlMutation:
    """One change to an export: drop/rename a table or column, NULL or odd values, rows."""

    kind: str
    table: str
    column_index: int
    value: Any
    invalid_text: bool
    modulo: int

    def __repr__(self) -> str:
        return (f"SqlMutation({self.kind} {self.table}[{self.column_index}] "
                f"value={_short(self.value)} invalid_text={self.invalid_text} "
                f"rows%{self.modulo})")

    def apply(self, connection: sqlite3.Connection) -> None:
        table, modulo = self.table, self.modulo
        columns = _columns(connection, table)
        if not columns:
            return
        column = columns[self.column_index % len(columns)]
        bound: Any = self.value
        if isinstance(bound, float) and bound != bound:
            bound = None  # sqlite3 stores NaN as NULL anyway
        if isinstance(bound, int) and not -(2**63) <= bound < 2**63:
            bound = str(bound)
        if self.kind == "drop_table":
            connection.execute(f'DROP TABLE "{table}"')
        elif self.kind == "rename_table":
            connection.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_old"')
        elif self.kind == "drop_column":
            connection.execute(f'ALTER TABLE "{table}" DROP COLUMN "{column}"')
        elif self.kind == "null":
            connection.execute(f'UPDATE "{table}" SET "{column}" = NULL WHERE rowid % {modulo} = 0')
        elif self.kind == "value":
            connection.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid % {modulo} = 0',
                               (bound,))
        elif self.kind == "string":
            # strings of every shape into the string table, sometimes as invalid UTF-8
            if isinstance(bound, bytes) and self.invalid_text:
                connection.execute("UPDATE StringIds SET value = CAST(? AS TEXT) "
                                   f"WHERE id % {modulo} = 0", (bound,))
            else:
                connection.execute(f"UPDATE StringIds SET value = ? WHERE id % {modulo} = 0",
                                   (bound,))
        elif self.kind == "delete_rows":
            connection.execute(f'DELETE FROM "{table}" WHERE rowid % {modulo} = 0')
        elif self.kind == "duplicate_rows":
            connection.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}"')
        elif self.kind == "view":
            # the table replaced by a view of another shape
            connection.execute(f'DROP TABLE "{table}"')
            connection.execute(f'CREATE VIEW "{table}" AS SELECT 1 AS id, \'x\' AS value')


sql_mutation = st.builds(
    SqlMutation,
    kind=st.sampled_from(["drop_table", "rename_table", "drop_column", "null", "value",
                          "string", "delete_rows", "duplicate_rows", "view", "string", "value"]),
    table=st.sampled_from(NSYS_TABLES),
    column_index=st.integers(0, 40),
    value=st.one_of(numbers, weird_text, st.binary(max_size=20), st.none()),
    invalid_text=st.booleans(),
    modulo=st.integers(1, 4),
)


class Blob(bytes):
    """Bytes with a short repr, so a failing example's report stays readable."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes>"


@pytest.fixture(scope="module")
def nsys_base(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return Blob(small_nsys_export(tmp_path_factory.mktemp("nsys") / "base.sqlite"))


@SETTINGS
@given(mutations=st.lists(sql_mutation, max_size=4), damage=damages)
def test_nsys_sqlite_reader(harness: Harness, nsys_base: bytes, mutations: list[SqlMutation],
                            damage: Damage) -> None:
    work = harness.folder / "mutate.sqlite"
    work.write_bytes(nsys_base)
    connection = sqlite3.connect(work)
    try:
        for mutation in mutations:
            try:
                mutation.apply(connection)
            except sqlite3.Error:
                pass  # e.g. dropping a primary-key column: that mutation is not possible
        connection.commit()
    finally:
        connection.close()
    data = damage.apply(work.read_bytes())
    result = harness.ingest(data, ".sqlite")
    if not mutations and data == nsys_base:
        assert result is not None


# --- Kineto JSON ------------------------------------------------------------------------------

def kineto_document() -> dict[str, Any]:
    """A small Kineto trace: an op launching a kernel, a step annotation, a memcpy."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "user_annotation", "name": "execute_context_1(8)_generation_0(0)",
         "pid": 100, "tid": 101, "ts": 1000.0, "dur": 50.5, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 101, "ts": 1001.25,
         "dur": 10.0, "args": {"External id": 7, "Input type": ["c10::BFloat16", "c10::BFloat16"],
                               "Input Dims": [[8, 64], [64, 64]]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101,
         "ts": 1002.001, "dur": 3.0, "args": {"External id": 7, "correlation": 55}},
        {"ph": "s", "cat": "ac2g", "id": 55, "pid": 100, "tid": 101, "ts": 1002.001},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
         "pid": 0, "tid": 7, "ts": 1010.123, "dur": 5.877,
         "args": {"External id": 7, "correlation": 55, "device": 0, "stream": 7,
                  "grid": [4, 2, 1], "block": [128, 1, 1], "registers per thread": 90,
                  "shared memory": 1024}},
        {"ph": "f", "cat": "ac2g", "id": 55, "pid": 0, "tid": 7, "ts": 1010.123, "bp": "e"},
        {"ph": "X", "cat": "kernel", "name": "void at::native::elementwise_kernel<4>(int)",
         "pid": 0, "tid": 7, "ts": 1020.5, "dur": 1.5, "args": {"device": 0, "stream": 7,
                                                               "correlation": 56}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7,
         "ts": 1030.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "bytes": 64,
                                            "correlation": 57}},
        {"ph": "M", "name": "thread_name", "pid": 100, "tid": 101, "args": {"name": "main"}},
    ]
    return {"schemaVersion": 1, "baseTimeNanoseconds": 1_700_000_000_000_000_000,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9,
                                  "computeMinor": 0, "numSms": 132}],
            "traceEvents": events, "traceName": "rank0"}


EVENT_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"]
ARG_KEYS = ["External id", "correlation", "device", "stream", "grid", "block",
            "registers per thread", "shared memory", "Input type", "Input Dims", "bytes", "name"]
TOP_KEYS = ["schemaVersion", "baseTimeNanoseconds", "deviceProperties", "traceEvents",
            "traceName", "distributedInfo"]


@st.composite
def kineto_input(draw: st.DrawFn) -> bytes:
    document = kineto_document()
    events = document["traceEvents"]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["event_key", "event_key", "arg", "drop_key", "drop_event",
                                     "dup_event", "top_key", "event_value"]))
        event = events[draw(st.integers(0, max(len(events) - 1, 0)))] if events else None
        if kind == "event_key" and event is not None:
            event[draw(st.sampled_from(EVENT_KEYS))] = draw(json_values)
        elif kind == "event_value" and event is not None:
            event["name"] = draw(weird_text)
        elif kind == "arg" and event is not None:
            args = event.setdefault("args", {})
            if isinstance(args, dict):
                args[draw(st.sampled_from(ARG_KEYS))] = draw(json_values)
        elif kind == "drop_key" and event is not None:
            event.pop(draw(st.sampled_from(EVENT_KEYS)), None)
        elif kind == "drop_event" and events:
            events.pop(draw(st.integers(0, len(events) - 1)))
        elif kind == "dup_event" and event is not None:
            events.append(json.loads(json.dumps(event)))
        elif kind == "top_key":
            key = draw(st.sampled_from(TOP_KEYS))
            if draw(st.booleans()):
                document.pop(key, None)
            else:
                document[key] = draw(json_values)
    as_list = draw(st.integers(0, 9)) == 0  # the bare event-list spelling
    payload = json.dumps(events if as_list else document, ensure_ascii=draw(st.booleans()))
    data = draw(damages).apply(payload.encode("utf-8", "surrogatepass"))
    return gzip.compress(data, mtime=0) if draw(st.integers(0, 4)) == 0 else data


@SETTINGS
@given(data=kineto_input())
def test_kineto_json_reader(harness: Harness, data: bytes) -> None:
    harness.ingest(data, ".json")


def test_kineto_base_document_is_read(harness: Harness) -> None:
    result = harness.ingest(json.dumps(kineto_document()).encode(), ".json")
    assert result is not None and result.format.startswith("kineto")


# --- Nsight Compute CSV -----------------------------------------------------------------------

NCU_IDENTITY = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                "Stream", "Block Size", "Grid Size", "Device", "CC"]
NCU_METRICS = ["gpu__time_duration.sum", "launch__registers_per_thread",
               "sm__ops_path_tensor_src_fp8.sum", "device__attribute_display_name"]


def ncu_raw_rows() -> list[list[str]]:
    rows = [NCU_IDENTITY + NCU_METRICS,
            [""] * len(NCU_IDENTITY) + ["usecond", "register/thread", "", ""]]
    for launch in range(3):
        rows.append([str(launch), "77", "python3", "localhost",
                     "sm90_xmma_gemm_e4m3bf16_bf16f32_f32_tn_n", "1", "7", "(256, 1, 1)",
                     "(132, 1, 1)", "0", "9.0", f"{launch + 1}2.5", "168", "1,073,741,824",
                     "NVIDIA H100"])
    return rows


def ncu_details_rows() -> list[list[str]]:
    rows = [NCU_IDENTITY + ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]]
    for launch in range(2):
        ident = [str(launch), "9", "a.out", "host", "gemm_kernel", "1", "7", "(128, 1, 1)",
                 "(4, 1, 1)", "0", "8.0"]
        rows.append(ident + ["GPU Speed Of Light Throughput", "Duration", "nsecond", "1,500"])
        rows.append(ident + ["Command line profiler metrics", "sm__ops_path_tensor_src_fp8.sum",
                             "", "2,048"])
        rows.append(ident + ["Launch Statistics", "Registers Per Thread", "register/thread",
                             "n/a"])
    return rows


CSV_CELLS = st.one_of(weird_text, numbers.map(str), st.sampled_from([
    "n/a", "1,2,3", "1e400", "-1", "nan", "inf", "(1, 2)", "(0, 0, 0)", "(-5, 1, 1)", "0x10",
    "99999999999999999999999", "usecond", "msecond", "second", "", '"', '""']))


def _csv_line(cells: list[str]) -> str:
    return ",".join('"' + cell.replace('"', '""') + '"' for cell in cells)


@st.composite
def ncu_input(draw: st.DrawFn) -> bytes:
    rows = draw(st.sampled_from([ncu_raw_rows, ncu_details_rows]))()
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["cell", "cell", "cell", "drop_cell", "add_cell",
                                     "drop_row", "dup_row", "noise"]))
        index = draw(st.integers(0, len(rows) - 1)) if rows else 0
        if kind == "cell" and rows and rows[index]:
            rows[index][draw(st.integers(0, len(rows[index]) - 1))] = draw(CSV_CELLS)
        elif kind == "drop_cell" and rows and rows[index]:
            rows[index].pop(draw(st.integers(0, len(rows[index]) - 1)))
        elif kind == "add_cell" and rows:
            rows[index].append(draw(CSV_CELLS))
        elif kind == "drop_row" and len(rows) > 1:
            rows.pop(max(index, 1) if draw(st.booleans()) else index)
        elif kind == "dup_row" and rows:
            rows.insert(index, list(rows[index]))
        elif kind == "noise":
            rows.insert(index, ["==PROF== " + draw(weird_text)])
    lines = [row[0] if len(row) == 1 and row[0].startswith("==") else _csv_line(row)
             for row in rows]
    text_out = "\n".join(lines) + "\n"
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1"]))
    return draw(damages).apply(text_out.encode(encoding, "replace"))


@SETTINGS
@given(data=ncu_input())
def test_ncu_csv_reader(harness: Harness, data: bytes) -> None:
    harness.ingest(data, ".csv")


def test_ncu_base_files_are_read(harness: Harness) -> None:
    for rows in (ncu_raw_rows(), ncu_details_rows()):
        data = ("\n".join(_csv_line(row) for row in rows) + "\n").encode()
        assert harness.ingest(data, ".csv") is not None


# --- CUPTI JSON lines ---------------------------------------------------------------------------

def cupti_records() -> list[dict[str, Any]]:
    return [
        {"kind": "header", "format": "tracekit-cupti", "version": 1, "pid": 4242,
         "process_name": "python"},
        {"kind": "device", "id": 0, "name": "NVIDIA H100", "computeMajor": 9,
         "computeMinor": 0, "numSms": 132},
        {"kind": "runtime", "name": "cudaLaunchKernel", "start": 1200, "end": 1230,
         "correlationId": 12, "processId": 4242, "threadId": 4250},
        {"kind": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "start": 1234,
         "end": 5678, "deviceId": 0, "streamId": 7, "correlationId": 12, "gridX": 1,
         "gridY": 1, "gridZ": 1, "blockX": 128, "blockY": 1, "blockZ": 1},
        {"kind": "range", "name": "execute_context_1(8)_generation_0(0)", "start": 1,
         "end": 9000, "processId": 4242, "threadId": 4250},
        {"kind": "memcpy", "start": 1, "end": 2, "deviceId": 0, "streamId": 7,
         "correlationId": 13, "bytes": 4096},
        {"kind": "thread", "processId": 4242, "threadId": 4250, "name": "VLLM::EngineCore"},
    ]


@st.composite
def cupti_input(draw: st.DrawFn) -> bytes:
    records = cupti_records()
    for _ in range(draw(st.integers(0, 6))):
        record = records[draw(st.integers(0, len(records) - 1))]
        kind = draw(st.sampled_from(["value", "value", "drop", "dup"]))
        keys = sorted(record) + ["kind", "name", "start", "end"]
        if kind == "value":
            record[draw(st.sampled_from(keys))] = draw(json_values)
        elif kind == "drop":
            record.pop(draw(st.sampled_from(keys)), None)
        else:
            records.append(dict(record))
    lines = [json.dumps(record) for record in records]
    if draw(st.integers(0, 5)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(weird_text))
    return draw(damages).apply(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))


@SETTINGS
@given(data=cupti_input())
def test_cupti_jsonl_reader(harness: Harness, data: bytes) -> None:
    harness.ingest(data, ".jsonl")


# --- rocprofv3 (JSON, CSV, rocpd) ---------------------------------------------------------------

def rocprof_small_job() -> Job:
    """A small rocprofv3 job: one process, a prefill step and a graph-replayed decode step."""
    return lay_out(AmdScenario(processes=[AmdProcess(pid=4100, steps=[
        StepSpec("execute_context_1(8)_generation_0(0)",
                 [KernelSpec("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN", 4_000,
                             count=2)]),
        StepSpec("execute_context_0(0)_generation_1(1)",
                 [KernelSpec("void at::native::elementwise_kernel<4>(int)", 1_000)],
                 graph=True)])]))


def rocprof_json_document() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        [path] = write_json(rocprof_small_job(), Path(folder))
        return json.loads(path.read_text())


ROCPROF_SECTIONS = ["kernel_dispatch", "hip_api", "marker_api"]
ROCPROF_KEYS = ["kind", "operation", "thread_id", "correlation_id", "start_timestamp",
                "end_timestamp", "dispatch_info", "stream_id", "args", "size"]


@st.composite
def rocprof_json_input(draw: st.DrawFn) -> bytes:
    document = rocprof_json_document()
    process = document["rocprofiler-sdk-tool"][0]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["record_key", "record_key", "info_key", "drop_key",
                                     "drop_record", "dup_record", "section", "symbol", "agent",
                                     "strings"]))
        section = process["buffer_records"][draw(st.sampled_from(ROCPROF_SECTIONS))]
        if not isinstance(section, list):  # replaced by an earlier mutation
            section = []
        record = section[draw(st.integers(0, len(section) - 1))] if section else None
        if not isinstance(record, dict):
            record = None
        if kind == "record_key" and record is not None:
            record[draw(st.sampled_from(ROCPROF_KEYS))] = draw(json_values)
        elif kind == "info_key" and record is not None and isinstance(
                record.get("dispatch_info"), dict):
            record["dispatch_info"][draw(st.sampled_from(
                ["agent_id", "kernel_id", "grid_size", "workgroup_size", "queue_id"]))] = draw(
                json_values)
        elif kind == "drop_key" and record is not None:
            record.pop(draw(st.sampled_from(ROCPROF_KEYS)), None)
        elif kind == "drop_record" and section:
            section.pop(draw(st.integers(0, len(section) - 1)))
        elif kind == "dup_record" and record is not None:
            section.append(json.loads(json.dumps(record)))
        elif kind == "section":
            process["buffer_records"][draw(st.sampled_from(ROCPROF_SECTIONS))] = draw(json_values)
        elif kind == "symbol" and process["kernel_symbols"]:
            symbol = process["kernel_symbols"][draw(st.integers(
                0, len(process["kernel_symbols"]) - 1))]
            symbol[draw(st.sampled_from(["kernel_id", "formatted_kernel_name",
                                         "truncated_kernel_name"]))] = draw(json_values)
        elif kind == "agent" and process["agents"]:
            process["agents"][-1][draw(st.sampled_from(["id", "type", "name", "product_name",
                                                        "logical_node_type_id"]))] = draw(
                json_values)
        elif kind == "strings":
            process["strings"][draw(st.sampled_from(["buffer_records", "marker_api"]))] = draw(
                json_values)
    indent = draw(st.sampled_from([None, None, 1]))
    payload = json.dumps(document, indent=indent, ensure_ascii=draw(st.booleans()))
    data = draw(damages).apply(payload.encode("utf-8", "surrogatepass"))
    return gzip.compress(data, mtime=0) if draw(st.integers(0, 4)) == 0 else data


@SETTINGS
@given(data=rocprof_json_input())
def test_rocprof_json_reader(harness: Harness, data: bytes) -> None:
    harness.ingest(data, "_results.json")


def test_rocprof_json_base_document_is_read(harness: Harness) -> None:
    result = harness.ingest(json.dumps(rocprof_json_document()).encode(), "_results.json")
    assert result is not None and result.format == "rocprof-json"


def rocprof_kernel_csv_rows() -> list[list[str]]:
    """The kernel trace of the small job, rocprofv3 1.0's header, as text cells."""
    with tempfile.TemporaryDirectory() as folder:
        write_csv(rocprof_small_job(), Path(folder))
        with (Path(folder) / "4100_kernel_trace.csv").open(newline="") as stream:
            return [list(row) for row in csv.reader(stream)]


@st.composite
def rocprof_csv_input(draw: st.DrawFn) -> bytes:
    rows = rocprof_kernel_csv_rows()
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["cell", "cell", "cell", "drop_cell", "add_cell",
                                     "drop_row", "dup_row", "header"]))
        index = draw(st.integers(0, len(rows) - 1)) if rows else 0
        if kind == "cell" and rows and rows[index]:
            rows[index][draw(st.integers(0, len(rows[index]) - 1))] = draw(CSV_CELLS)
        elif kind == "drop_cell" and rows and rows[index]:
            rows[index].pop(draw(st.integers(0, len(rows[index]) - 1)))
        elif kind == "add_cell" and rows:
            rows[index].append(draw(CSV_CELLS))
        elif kind == "drop_row" and len(rows) > 1:
            rows.pop(max(index, 1) if draw(st.booleans()) else index)
        elif kind == "dup_row" and rows:
            rows.insert(index, list(rows[index]))
        elif kind == "header" and rows and rows[0]:
            rows[0][draw(st.integers(0, len(rows[0]) - 1))] = draw(st.sampled_from(
                ["Kernel_Name", "Start_Timestamp", "Agent_Id", "Grid_Size_X", "x", ""]))
    text_out = "\n".join(_csv_line(row) for row in rows) + "\n"
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1"]))
    return draw(damages).apply(text_out.encode(encoding, "replace"))


@SETTINGS
@given(data=rocprof_csv_input())
def test_rocprof_csv_reader(harness: Harness, data: bytes) -> None:
    harness.ingest(data, "_kernel_trace.csv")


def test_rocprof_csv_base_file_is_read(harness: Harness) -> None:
    data = ("\n".join(_csv_line(row) for row in rocprof_kernel_csv_rows()) + "\n").encode()
    result = harness.ingest(data, "_kernel_trace.csv")
    assert result is not None and result.format == "rocprof-csv"


def small_rocpd(path: Path) -> bytes:
    write_rocpd(rocprof_small_job(), path, schema="3.0.3")
    return path.read_bytes()


@pytest.fixture(scope="module")
def rocpd_base(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[str]]:
    path = tmp_path_factory.mktemp("rocpd") / "base.db"
    data = small_rocpd(path)
    connection = sqlite3.connect(path)
    tables = [name for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")]
    connection.close()
    return Blob(data), tables


ROCPD_BASES = ["kernel_dispatch", "info_kernel_symbol", "string", "event", "region",
               "info_agent", "info_process", "info_thread", "metadata", "sample", "track"]

rocpd_mutation = st.builds(
    lambda base, **fields: (base, fields),
    base=st.sampled_from(ROCPD_BASES),
    kind=st.sampled_from(["drop_table", "rename_table", "drop_column", "null", "value",
                          "delete_rows", "duplicate_rows", "view", "value", "null"]),
    column_index=st.integers(0, 40),
    value=st.one_of(numbers, weird_text, st.binary(max_size=20), st.none()),
    invalid_text=st.booleans(),
    modulo=st.integers(1, 4),
)


@SETTINGS
@given(mutations=st.lists(rocpd_mutation, max_size=4), damage=damages)
def test_rocpd_sqlite_reader(harness: Harness, rocpd_base: tuple[bytes, list[str]],
                             mutations: list[tuple[str, dict[str, Any]]],
                             damage: Damage) -> None:
    base, tables = rocpd_base
    work = harness.folder / "mutate.db"
    work.write_bytes(base)
    connection = sqlite3.connect(work)
    try:
        for name, fields in mutations:
            table = next((t for t in tables if t.startswith(f"rocpd_{name}_")), None)
            if table is None:
                continue
            try:
                SqlMutation(table=table, **fields).apply(connection)
            except sqlite3.Error:
                pass
        connection.commit()
    finally:
        connection.close()
    data = damage.apply(work.read_bytes())
    result = harness.ingest(data, ".db")
    if not mutations and data == base:
        assert result is not None


# --- rule TOML ----------------------------------------------------------------------------------

RULES_DIR = paths.RULES
TOML_VALUES = st.one_of(
    st.sampled_from(['"("', '"[a-"', '"(?P<x>a)(?P<x>b)"', '"(a+)+$"', '""', "[]", "{}",
                     '["fp4"]', '"fp5"', "1e400", "nan", "-1", "true", '"""', "'''", "[[x]]",
                     '"\\u0000"', '"\\uD800"', "0x7fffffffffffffffff", '"' + "a" * 5000 + '"']),
    weird_text.map(json.dumps),
)


def rule_texts() -> list[tuple[str, str]]:
    """(file stem, text) of a few real rule files: the id must equal the file name."""
    if not RULES_DIR.is_dir():
        return []
    return [(path.stem, path.read_text(encoding="utf-8"))
            for path in sorted(RULES_DIR.glob("[!_]*.toml"))[:8]]


@st.composite
def rule_file(draw: st.DrawFn, bases: list[tuple[str, str]]) -> tuple[str, bytes]:
    stem, base = draw(st.sampled_from(bases))
    lines = base.splitlines()
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["value", "value", "drop", "dup", "insert"]))
        index = draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            lines.append("")
        if kind == "value" and "=" in lines[index]:
            key = lines[index].split("=", 1)[0]
            lines[index] = f"{key}= {draw(TOML_VALUES)}"
        elif kind == "drop":
            lines.pop(index)
        elif kind == "dup":
            lines.insert(index, lines[index])
        else:
            lines.insert(index, draw(st.sampled_from(
                ["[", "[rule]", "[[example]]", "x = ", 'id = "dup"', "= 1", "\x00", "\ufeff"])))
    return stem, draw(damages).apply("\n".join(lines).encode("utf-8", "surrogatepass"))


@pytest.fixture(scope="module")
def rule_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder for the fuzzed rule file, with the built-in rules reduced to their tables.

    Loading all built-in rules costs ~25 ms per input; the shared tables and vocabulary
    (``_*.toml``) that rule files refer to cost ~1 ms, so 10^4 inputs fit in CI.
    """
    from tracekit.classifier import loader

    tables = tmp_path_factory.mktemp("rule-tables")
    for path in RULES_DIR.glob("_*.toml"):
        shutil.copy(path, tables / path.name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loader, "builtin_dir", lambda: tables)
        yield tmp_path_factory.mktemp("rules")


RULE_BASES = rule_texts()


@pytest.mark.skipif(not RULE_BASES, reason="rules/ folder not found")
@SETTINGS
@given(rule=rule_file(RULE_BASES))
def test_rule_loader(rule_folder: Path, rule: tuple[str, bytes]) -> None:
    from tracekit.classifier import classify_names, load_ruleset

    stem, content = rule
    for old in rule_folder.glob("*.toml"):
        old.unlink()
    (rule_folder / f"{stem}.toml").write_bytes(content)
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        try:
            ruleset = load_ruleset([rule_folder], use_env=False)
        except TracekitError as error:
            assert "\n" not in error.one_line()
            return
        results = classify_names(["sm90_xmma_gemm_e4m3bf16_bf16f32_f32_tn_n", "a" * 300,
                                  "void f<__nv_fp8_e4m3>()", stem], ruleset, arch="sm90")
        assert len(results) == 4
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_rule_bases_load_unchanged(rule_folder: Path) -> None:
    """The unmutated rule files load through the same path (so the fuzz reaches past ids)."""
    from tracekit.classifier import load_ruleset

    for stem, content in RULE_BASES:
        for old in rule_folder.glob("*.toml"):
            old.unlink()
        (rule_folder / f"{stem}.toml").write_text(content, encoding="utf-8")
        assert any(rule.id == stem for rule in load_ruleset([rule_folder], use_env=False).rules)


if __name__ == "__main__":  # pragma: no cover - e.g. HYPOTHESIS_PROFILE=ci python this.py
    sys.exit(pytest.main([__file__, "-q"]))


# --- regressions: inputs the fuzzer found, kept as plain tests ---------------------------------

def test_regression_runtime_rows_without_start(harness: Harness, nsys_base: bytes) -> None:
    """A runtime table without ``start`` (NULL for a NOT NULL store column): the
    pipeline took the IntegrityError for a dedup race and re-raised it as a traceback."""
    work = harness.folder / "regression1.sqlite"
    work.write_bytes(nsys_base)
    with sqlite3.connect(work) as connection:
        connection.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME COLUMN start TO begin")
    connection.close()
    before = harness.fingerprint()
    with pytest.raises(TracekitError, match="cannot store"):
        ingest(harness.store, [work])
    assert harness.fingerprint() == before


def test_regression_reader_exception_is_one_line(harness: Harness, nsys_base: bytes,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader's ValueError/TypeError on odd content (first seen: Kineto
    ``baseTimeNanoseconds`` of "" or a list) is one InputError line, store unchanged."""
    from tracekit.ingest.readers import nsys_sqlite

    def slip(*_args: object) -> int:
        raise ValueError("invalid literal for int() with base 10: ''")

    monkeypatch.setattr(nsys_sqlite, "_copy_nvtx", slip)
    work = harness.folder / "regression2.sqlite"
    work.write_bytes(nsys_base + b"")  # a fresh file name; same bytes are deduplicated
    with sqlite3.connect(work) as connection:
        connection.execute("INSERT INTO EXPORT_META_DATA VALUES ('regression', '2')")
    connection.close()
    before = harness.fingerprint()
    with pytest.raises(UnexpectedContent, match="unexpected content") as info:
        ingest(harness.store, [work])
    assert "\n" not in info.value.one_line()
    assert isinstance(info.value.__cause__, ValueError)
    assert harness.fingerprint() == before


def test_regression_rule_file_not_utf8(rule_folder: Path) -> None:
    """A rule file with invalid UTF-8 raised UnicodeDecodeError instead of RuleFileError."""
    from tracekit.classifier import load_ruleset
    from tracekit.errors import RuleFileError

    (rule_folder / "fuzzed.toml").write_bytes(b'\x80d = "("\n')
    with pytest.raises(RuleFileError, match="not UTF-8"):
        load_ruleset([rule_folder], use_env=False)
    (rule_folder / "fuzzed.toml").unlink()


def test_regression_table_name_not_utf8(harness: Harness, nsys_base: bytes) -> None:
    """A table name with invalid UTF-8 in sqlite_master (atheris, nsys reader) raised
    UnicodeDecodeError from format detection, before any reader ran."""
    work = harness.folder / "regression3.sqlite"
    work.write_bytes(nsys_base)
    connection = sqlite3.connect(work)
    connection.execute("PRAGMA writable_schema = ON")
    connection.execute("UPDATE sqlite_master SET name = CAST(X'6bb26e' AS TEXT), "
                       "tbl_name = CAST(X'6bb26e' AS TEXT) WHERE name = 'PROCESSES'")
    connection.commit()
    connection.close()
    harness.ingest(work.read_bytes(), ".sqlite")  # read, or refused with one line
    with pytest.raises(TracekitError, match="corrupt"):
        from tracekit.ingest.detect import detect_file

        detect_file(work)


def test_regression_blob_strings_are_text(harness: Harness, nsys_base: bytes) -> None:
    """A BLOB in StringIds became a ``bytes`` kernel name in the store (every consumer
    expects str): names are read as TEXT."""
    work = harness.folder / "regression4.sqlite"
    work.write_bytes(nsys_base)
    with sqlite3.connect(work) as connection:
        connection.execute("UPDATE StringIds SET value = CAST(value AS BLOB)")
        connection.execute("UPDATE NVTX_EVENTS SET text = CAST(text AS BLOB)")
    connection.close()
    result = harness.ingest(work.read_bytes(), ".sqlite")
    assert result is not None
    with harness.store.connect() as connection:
        kinds = set(connection.execute(text(
            "SELECT typeof(name) FROM kernel_names WHERE run_id = :r UNION "
            "SELECT typeof(text) FROM nvtx_ranges WHERE run_id = :r AND text IS NOT NULL"),
            {"r": result.run_id}).scalars())
    assert kinds == {"text"}


def test_regression_empty_keyword(rule_folder: Path) -> None:
    """``keywords = ""`` crashed the keyword prefilter with IndexError; now a RuleFileError."""
    import re

    from tracekit.classifier import load_ruleset
    from tracekit.errors import RuleFileError

    stem, content = RULE_BASES[0]
    for old in rule_folder.glob("*.toml"):
        old.unlink()
    content = re.sub(r"^keywords = .*$", 'keywords = ""', content, flags=re.MULTILINE)
    if "keywords" not in content:
        content = 'keywords = [""]\n' + content
    (rule_folder / f"{stem}.toml").write_text(content, encoding="utf-8")
    with pytest.raises(RuleFileError, match="keywords"):
        load_ruleset([rule_folder], use_env=False)


def test_regression_rule_values_of_unforeseen_types(rule_folder: Path) -> None:
    """``patterns = 1e400`` (TypeError) and a 5,000-character keyword (RecursionError in the
    keyword index) escaped the rule loader; both are RuleFileErrors now."""
    import re

    from tracekit.classifier import load_ruleset
    from tracekit.errors import RuleFileError

    stem, content = RULE_BASES[0]
    for replacement in ("patterns = 1e400", 'keywords = ["' + "a" * 5000 + '"]'):
        key = replacement.split(" ", 1)[0]
        changed = re.sub(rf"^{key} = .*$", replacement, content, flags=re.MULTILINE)
        for old in rule_folder.glob("*.toml"):
            old.unlink()
        (rule_folder / f"{stem}.toml").write_text(changed, encoding="utf-8")
        with pytest.raises(RuleFileError):
            load_ruleset([rule_folder], use_env=False)
