"""Kernel → launch → CPU op links of the trace readers (Kineto, CUPTI), ids unique or repeated.

Every kernel gets its launching call (thread, launch time) by correlation id and its framework
op (``kernels.cpu_op_id``) by External id, once, at ingest. When a trace repeats ids (a
profiler restarted in the same process, ranks merged into one file, here: copies of a real
trace with the ids kept), each kernel must still meet the launch and the op of its own copy,
and the run says how many ids were ambiguous.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.benchmarks.replicate import replicate
from tests.support import paths
from tests.support.helpers import make_old_store, query
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.store import open_store

FIXTURES = paths.H200_FIXTURES
TORCH = FIXTURES / "torch-trace.pt.trace.json.gz"
CUPTI = FIXTURES / "cupti.jsonl.gz"


def analyzed(trace: Path, store_path: Path) -> dict:
    store = open_store(str(store_path))
    try:
        return analyze(store, [trace], AnalysisOptions()).document
    finally:
        store.dispose()


def kineto_ids(path: Path) -> tuple[int, int, int]:
    """(kernels with an External id, distinct launch correlation ids, distinct op External ids)."""
    with gzip.open(path, "rt") as stream:
        events = json.load(stream)["traceEvents"]
    kernels = sum(1 for e in events if e.get("cat") == "kernel"
                  and (e.get("args") or {}).get("External id") is not None)
    correlations = {e["args"]["correlation"] for e in events
                    if e.get("cat") in ("cuda_runtime", "cuda_driver")
                    and "correlation" in (e.get("args") or {})}
    externals = {e["args"]["External id"] for e in events if e.get("cat") == "cpu_op"
                 and "External id" in (e.get("args") or {})}
    return kernels, len(correlations), len(externals)


def assert_links_hold(store_path: Path, copies: int = 1) -> None:
    """Each kernel's launch precedes it and its op runs at the launch, in the kernel's copy."""
    span = query(store_path, "SELECT (MAX(end_ns) - MIN(start_ns)) / :c FROM kernels",
                 copies)[0][0] if copies > 1 else None
    bad_launch = query(store_path, "SELECT COUNT(*) FROM kernels WHERE launch_start_ns IS NULL "
                                   "OR launch_start_ns > start_ns")[0][0]
    bad_op = query(store_path, """
        SELECT COUNT(*) FROM kernels k JOIN cpu_ops o ON o.id = k.cpu_op_id
        WHERE NOT (k.launch_start_ns BETWEEN o.start_ns AND o.end_ns)
           OR o.external_id <> k.external_id""")[0][0]
    assert (bad_launch, bad_op) == (0, 0)
    if span:  # launches and ops of another copy lie a whole span away
        far = query(store_path, """
            SELECT COUNT(*) FROM kernels k JOIN cpu_ops o ON o.id = k.cpu_op_id
            WHERE ABS(k.start_ns - o.start_ns) > ? OR k.start_ns - k.launch_start_ns > ?""",
                    span / 2, span / 2)[0][0]
        assert far == 0


def test_every_torch_kernel_meets_its_launch_and_its_op(tmp_path: Path) -> None:
    document = analyzed(TORCH, tmp_path / "s.db")
    with_external, _, _ = kineto_ids(TORCH)
    linked = query(tmp_path / "s.db", "SELECT COUNT(cpu_op_id) FROM kernels")[0][0]
    assert linked == with_external == 236
    assert_links_hold(tmp_path / "s.db")
    assert "ambiguous-links" not in {f["rule"] for f in document["findings"]}


def test_repeated_ids_link_within_their_copy_and_are_reported(tmp_path: Path) -> None:
    trace = tmp_path / "restarted.json"
    replicate(TORCH, trace, 3, keep_ids=True)
    document = analyzed(trace, tmp_path / "s.db")
    assert_links_hold(tmp_path / "s.db", copies=3)
    with_external, correlations, externals = kineto_ids(TORCH)
    assert query(tmp_path / "s.db", "SELECT COUNT(cpu_op_id) FROM kernels")[0][0] == \
        3 * with_external
    finding = next(f for f in document["findings"] if f["rule"] == "ambiguous-links")
    assert finding["severity"] == "warning"
    assert f"{correlations} correlation id(s) and {externals} External id(s)" in \
        finding["message"]


def test_cupti_records_with_repeated_ids_link_within_their_copy(tmp_path: Path) -> None:
    records = tmp_path / "restarted.jsonl"
    replicate(CUPTI, records, 2, keep_ids=True)
    document = analyzed(records, tmp_path / "s.db")
    launched = query(tmp_path / "s.db",
                     "SELECT COUNT(*), COUNT(launch_start_ns) FROM kernels")[0]
    assert launched == (2 * 236, 2 * 236)
    assert query(tmp_path / "s.db", "SELECT COUNT(*) FROM kernels "
                                    "WHERE launch_start_ns > start_ns")[0][0] == 0
    assert any(f["rule"] == "ambiguous-links" for f in document["findings"])


@pytest.mark.postgres
def test_links_are_the_same_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    trace = tmp_path / "restarted.json"
    replicate(TORCH, trace, 2, keep_ids=True)
    analyzed(trace, tmp_path / "s.db")
    expected = query(tmp_path / "s.db", "SELECT k.start_ns, k.launch_start_ns, o.start_ns "
                                        "FROM kernels k LEFT JOIN cpu_ops o ON o.id = k.cpu_op_id "
                                        "ORDER BY k.start_ns, k.launch_start_ns")
    store = open_store(postgres_url)
    try:
        analyze(store, [trace], AnalysisOptions())
        with store.connect() as connection:
            got = connection.execute(text(
                "SELECT k.start_ns, k.launch_start_ns, o.start_ns FROM kernels k "
                "LEFT JOIN cpu_ops o ON o.id = k.cpu_op_id "
                "ORDER BY k.start_ns, k.launch_start_ns")).all()
    finally:
        store.dispose()
    assert [tuple(row) for row in got] == expected


def test_upgrade_links_the_kernels_of_stored_runs(tmp_path: Path) -> None:
    """Migration 0004 resolves cpu_op_id for runs ingested before it existed."""
    path = tmp_path / "old.db"
    make_old_store(
        f"sqlite:///{path}", "0003",
        "INSERT INTO runs (id, source_path, sha256, format, tracekit_version, created_at, "
        "status) VALUES (1, '/t.json', 'abc', 'kineto-json', '0.1.0', '2026-11-01', 'complete')",
        "INSERT INTO kernel_names (id, run_id, source_key, name) VALUES (1, 1, 0, 'k')",
        # External id 5 twice (a restarted profiler): the op running at each launch wins.
        "INSERT INTO cpu_ops (id, run_id, name, start_ns, end_ns, external_id) VALUES "
        "(10, 1, 'aten::mm', 100, 200, 5), (11, 1, 'aten::mm', 1100, 1200, 5), "
        "(12, 1, 'aten::addmm', 300, 400, 6)",
        "INSERT INTO kernels (run_id, name_id, start_ns, end_ns, external_id, launch_start_ns) "
        "VALUES (1, 1, 250, 260, 5, 150), (1, 1, 1250, 1260, 5, 1150), "
        "(1, 1, 450, 460, 6, NULL), (1, 1, 500, 510, NULL, 490)")
    open_store(str(path)).dispose()
    assert query(path, "SELECT external_id, cpu_op_id FROM kernels ORDER BY start_ns") == [
        (5, 10), (6, 12), (None, None), (5, 11)]
