"""Every statement `analyze`, `report`, `diff` and `runs --delete` run on SQLite has a linear plan.

SQLite plans without statistics, so a join written without care is a guess that can put a big
table inside the loop (tests/support/query_plans.py says how plans are read). Here every
statement of the commands a user runs is planned as it runs, on every input kind, and none may
scan a big table inside a loop. The inputs are real traces replicated so that every per-record table
holds thousands of rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.benchmarks.replicate import kineto_ranks, replicate
from tests.support.paths import H200_FIXTURES as FIXTURES
from tests.support.paths import shared_traces_dir
from tests.support.query_plans import Plan, watch_plans
from tracekit.cli import cli

SHARED = ["tracelens/b200__eager_trace.json.gz", "nsys-ai/h100_2gpu_1s.sqlite",
          "nsys-ai/mfu_2gpu_before.sqlite"]


def run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


def every_command(inputs: list[Path], store: Path, out: Path) -> None:
    """analyze each input, report each run every way, diff, delete."""
    for path in inputs:
        run("analyze", str(path), "--store", str(store), "--json", "--jobs", "1")
    for run_id in range(1, len(inputs) + 1):
        run("report", str(run_id), "--store", str(store))
        run("report", str(run_id), "--store", str(store), "--json")
        run("report", str(run_id), "--store", str(store), "--html", str(out / "r.html"))
        run("report", str(run_id), "--store", str(store), "--perfetto", str(out / "r.json"))
    run("diff", "1", "2", "--store", str(store))
    run("diff", "1", "2", "--store", str(store), "--html", str(out / "d.html"))
    run("runs", "--store", str(store), "--delete", "1")


@pytest.mark.slow
def test_every_statement_of_every_command_is_linear(tmp_path: Path) -> None:
    inputs = []
    for source in (FIXTURES / "torch-trace.pt.trace.json.gz", FIXTURES / "cupti.jsonl.gz",
                   FIXTURES / "ncu.csv"):
        target = tmp_path / source.name.removesuffix(".gz")
        replicate(source, target, 2)
        inputs.append(target)
    shared = shared_traces_dir()
    for relative in SHARED:
        if shared is not None and (shared / relative).exists():
            target = tmp_path / Path(relative).name.removesuffix(".gz")
            replicate(shared / relative, target, 2)
            inputs.append(target)
    # a run of several rank files: the parts read in-process (--jobs 1), then merged
    ranks = tmp_path / "ranks"
    kineto_ranks(FIXTURES / "torch-trace.pt.trace.json.gz", ranks, 2, copies=2)
    inputs.append(ranks)
    with watch_plans() as watch:
        every_command(inputs, tmp_path / "store.db", tmp_path)
    assert len(watch.plans) > 300  # the watch saw the commands' statements
    assert watch.quadratic() == []


def test_the_plan_reader_flags_a_scan_inside_a_loop() -> None:
    """The shapes the classifier's old join and the NVTX domain lookup had."""
    per_op_scan = Plan("SELECT …", [
        (6, 0, "SEARCH cpu_ops USING INDEX ix_cpu_ops_run_ext (run_id=? AND external_id>?)"),
        (16, 0, "SEARCH kernels USING INDEX ix_kernels_run_id (run_id=?)")])
    assert per_op_scan.inner_scans() == ["SEARCH kernels USING INDEX ix_kernels_run_id "
                                         "(run_id=?)"]
    per_row_subquery = Plan("INSERT …", [(3, 0, "SCAN e"), (83, 0, "CORRELATED SCALAR SUBQUERY 2"),
                                         (88, 83, "SEARCH d")])
    assert per_row_subquery.inner_scans() == ["SEARCH d"]
    keyed = Plan("SELECT …", [(2, 0, "SCAN k"),
                              (4, 0, "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"),
                              (9, 0, "CORRELATED SCALAR SUBQUERY 1"),
                              (11, 9, "SEARCH r USING INDEX tk_runtime_link "
                                      "(file_index=? AND correlation_id=?)")])
    assert keyed.inner_scans() == []
