"""Record counts are taken once at ingest (``run_counts``) and equal counting the rows.

Every reader's counts, handed over or counted, must say what the tables hold; the document
reads them instead of counting a run's NVTX events again; the migration counts the runs of a
store made before.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.conftest import BF16_GEMM, ELEMENTWISE
from tests.support import paths
from tests.support.helpers import make_old_store
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.ingest.pipeline import ingest
from tracekit.phases.ingest_time import IngestTimeSteps
from tracekit.store import open_store
from tracekit.store.counts import NAMES, count_records, run_counts
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec

FIXTURES = paths.H200_FIXTURES


def by_sql(connection, run_id: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The counts taken from the rows themselves."""
    return count_records(connection, run_id)


def domains_and_marks() -> Scenario:
    return Scenario(ranks=[RankSpec(pid=7, nvtx_domains=["vllm", "user"], steps=[
        StepSpec("execute_context_1(8)_generation_0(0)", [KernelSpec(BF16_GEMM, 1000)],
                 domain="vllm"),
        StepSpec("plain range", [KernelSpec(ELEMENTWISE, 500, count=3)]),
    ])])


@pytest.mark.parametrize("side", [False, True])
def test_nsys_counts_equal_the_rows(store, make_trace, simple_scenario, side):
    for scenario in (simple_scenario, domains_and_marks()):
        run_id = ingest(store, [make_trace(scenario)], side_reads=side,
                        step_attribution=IngestTimeSteps()).run_id
        with store.connect() as connection:
            stored = run_counts(connection, run_id)
            assert set(stored) == set(NAMES)
            assert stored == by_sql(connection, run_id)
            assert connection.execute(text("SELECT COUNT(*) FROM run_counts WHERE run_id = :r"),
                                      {"r": run_id}).scalar_one() == len(NAMES)
    assert stored["nvtx_domains"] == 2 and stored["nvtx_ranges"] == 2


def test_real_nsys_counts_equal_the_rows(store, shared_trace):
    run_id = ingest(store, [shared_trace("nsys-ai/h100_2gpu_1s.sqlite")], side_reads=True,
                    step_attribution=IngestTimeSteps()).run_id
    with store.connect() as connection:
        stored = run_counts(connection, run_id)
        assert stored == by_sql(connection, run_id)
    assert stored["nvtx_ranges"] == 16782 and stored["kernels"] == 3442


@pytest.mark.parametrize("fixture", ["torch-trace.pt.trace.json.gz", "cupti.jsonl.gz",
                                     "ncu.csv"])
def test_other_readers_counts_equal_the_rows(store, fixture):
    run_id = ingest(store, [FIXTURES / fixture]).run_id
    with store.connect() as connection:
        assert run_counts(connection, run_id) == by_sql(connection, run_id)


def test_the_document_reports_the_stored_counts(store, make_trace):
    result = analyze(store, [make_trace(domains_and_marks())], AnalysisOptions())
    summary = result.document["summary"]
    with store.connect() as connection:
        truth = by_sql(connection, result.run_id)
    for name in ("nvtx_ranges", "nvtx_domains", "processes", "threads", "runtime_calls",
                 "memory_ops"):
        assert summary[name] == truth[name], name


def test_the_migration_counts_stored_runs(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_old_store(
        url, "0004",
        "INSERT INTO runs (id, source_path, sha256, format, tracekit_version, created_at, "
        "status) VALUES (3, '/t/a.sqlite', 'abc', 'nsys-sqlite', '0.1.0', "
        "'2026-11-01 00:00:00', 'complete')",
        "INSERT INTO kernel_names (id, run_id, source_key, name) VALUES (1, 3, 1, 'k')",
        *[f"INSERT INTO kernels (run_id, name_id, start_ns, end_ns) VALUES (3, 1, {i}, {i + 1})"
          for i in range(5)],
        *[f"INSERT INTO nvtx_ranges (run_id, kind, start_ns, text) VALUES (3, '{kind}', 0, 't')"
          for kind in ("push_pop", "push_pop", "start_end", "mark", "domain_create")])
    store = open_store(str(tmp_path / "old.db"))
    try:
        with store.connect() as connection:
            stored = {name: count for name, count in connection.execute(text(
                "SELECT name, count FROM run_counts WHERE run_id = 3"))}
        assert stored == {**dict.fromkeys(NAMES, 0), "kernels": 5, "kernel_names": 1,
                          "nvtx_ranges": 3, "nvtx_marks": 1, "nvtx_domains": 1}
    finally:
        store.dispose()
