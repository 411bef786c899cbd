"""rocpd SQLite ingest: databases built from rocprofiler-sdk's own table statements (schema
3.0.0 of ROCm 7.0 and 3.0.3), several processes per file (their ids repeat, views show only
the first), tables without suffixes, both store back ends, and the refusals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support.helpers import analyze_bad, ingest_into, query
from tests.support.rocprof_scenario import DECODE, FP8_TENSILE, amd_job
from tracekit.ingest.pipeline import ingest
from tracekit.synth.rocprof import write_rocpd


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def database(tmp_path: Path, **options: object) -> Path:
    return write_rocpd(amd_job(), tmp_path / "results.db", **options)  # type: ignore[arg-type]


def test_rows_are_the_same_on_both_store_back_ends(store, tmp_path):
    path = database(tmp_path, schema="3.0.3")
    job = amd_job()
    run = ingest(store, [path]).run_id
    with store.engine.connect() as connection:
        def one(sql: str) -> tuple[object, ...]:
            return tuple(connection.execute(text(sql), {"r": run}).one())
        kernels = one("SELECT COUNT(*), SUM(end_ns - start_ns), COUNT(launch_start_ns), "
                      "COUNT(graph_id), COUNT(DISTINCT global_pid) FROM kernels WHERE run_id = :r")
        names = one("SELECT COUNT(*), COUNT(short_name) FROM kernel_names WHERE run_id = :r")
        calls = one("SELECT COUNT(*) FROM runtime_calls WHERE run_id = :r")
        ranges = one("SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :r")
        devices = one("SELECT COUNT(*) FROM devices WHERE run_id = :r AND arch = 'gfx942'")
    dispatches = sum(len(p.dispatches) for p in job.processes)
    graph = sum(1 for p in job.processes for d in p.dispatches if d.graph_exec)
    assert kernels == (dispatches, sum(t for _, t in job.kernel_totals().values()), dispatches,
                       graph, 2)
    assert names == (len(job.kernel_totals()), len(job.kernel_totals()))
    assert calls == (sum(len(p.calls) for p in job.processes),)
    assert ranges == (sum(len(p.markers) for p in job.processes),)
    assert devices == (2,)


def test_views_of_a_merged_file_hide_all_but_the_first_process(tmp_path, store_path):
    """rocpd's views are created IF NOT EXISTS per set: over a file of two sets they show one
    process; the reader reads every set's own tables."""
    path = database(tmp_path)
    connection = sqlite3.connect(path)
    [(through_views,)] = connection.execute("SELECT COUNT(*) FROM rocpd_kernel_dispatch")
    connection.close()
    job = amd_job()
    assert through_views == len(job.processes[0].dispatches)
    ingest_into(store_path, path)
    assert query(store_path, "SELECT COUNT(*) FROM kernels") == [
        (sum(len(p.dispatches) for p in job.processes),)]
    # ids repeat across the sets (correlation ids start at 1 in each process): each kernel
    # still gets the launch of its own process
    assert query(store_path, "SELECT COUNT(*) FROM kernels k JOIN runtime_calls r "
                             "ON r.correlation_id = k.correlation_id AND r.start_ns = "
                             "k.launch_start_ns AND r.global_pid = k.global_pid") == [
        (sum(len(p.dispatches) for p in job.processes),)]


def test_tables_without_uuid_suffixes_are_one_set(tmp_path, store_path):
    job = amd_job()
    job.processes = job.processes[:1]
    path = write_rocpd(job, tmp_path / "plain.db", views=False)
    connection = sqlite3.connect(path)
    suffix = "_" + job.processes[0].guid.replace("-", "_")
    for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND name LIKE 'rocpd_%'").fetchall():
        connection.execute(f'ALTER TABLE "{name}" RENAME TO "{name.removesuffix(suffix)}"')
    connection.commit()
    connection.close()
    ingest_into(store_path, path)
    assert query(store_path, "SELECT COUNT(*), COUNT(launch_start_ns) FROM kernels") == [
        (len(job.processes[0].dispatches),) * 2]


def test_graph_launches_and_roctx_ranges(tmp_path, store_path):
    ingest_into(store_path, database(tmp_path, schema="3.0.3"))
    # decode kernels replayed by one hipGraphLaunch share its launch and its graph exec id
    rows = query(store_path, "SELECT k.graph_id, k.graph_node_id, k.launch_start_ns, a.name "
                             "FROM kernels k JOIN kernel_names n ON n.id = k.name_id "
                             "JOIN runtime_calls r ON r.global_pid = k.global_pid "
                             "AND r.correlation_id = k.correlation_id "
                             "JOIN api_names a ON a.id = r.name_id "
                             f"WHERE n.name = '{FP8_TENSILE}' AND k.global_pid = 4100")
    assert {row[3] for row in rows} == {"hipGraphLaunch"}
    assert len({row[0] for row in rows}) == 3 and {row[1] for row in rows} == {1, 2, 3}
    assert query(store_path, "SELECT kind, COUNT(*) FROM nvtx_ranges GROUP BY kind") == [
        ("mark", 2), ("push_pop", 8)]
    assert query(store_path, "SELECT COUNT(*) FROM nvtx_ranges WHERE text = ?", DECODE) == [(5,)]


def test_a_dispatch_without_its_symbol_is_kept(tmp_path, store_path):
    path = database(tmp_path)
    connection = sqlite3.connect(path)
    table = connection.execute("SELECT name FROM sqlite_master WHERE name LIKE "
                               "'rocpd_info_kernel_symbol_%'").fetchone()[0]
    connection.execute(f'DELETE FROM "{table}" WHERE id = 1')
    connection.commit()
    connection.close()
    ingest_into(store_path, path)
    assert query(store_path, "SELECT COUNT(*) FROM kernels") == [
        (sum(len(p.dispatches) for p in amd_job().processes),)]
    assert query(store_path, "SELECT COUNT(*) FROM kernel_names WHERE name = '<kernel id 1>'"
                 ) == [(1,)]


def _edit(path: Path, *statements: str) -> Path:
    connection = sqlite3.connect(path)
    names = [name for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")]
    for statement in statements:
        for name in names:
            base = name.split("_01970000")[0]
            statement_for = statement.replace("{" + base + "}", f'"{name}"')
            if statement_for != statement:
                connection.execute(statement_for)
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize(("statements", "fragment"), [
    (("UPDATE {rocpd_metadata} SET value = '4.1.0' WHERE tag = 'schema_version'",),
     "rocpd schema 4.1.0 is not one tracekit reads"),
    (("DROP TABLE {rocpd_info_kernel_symbol}",), "rocpd database lacks"),
    (("DELETE FROM {rocpd_kernel_dispatch}",), "holds no kernel dispatch"),
])
def test_bad_databases_are_one_line(tmp_path, statements, fragment):
    path = _edit(database(tmp_path, views=False), *statements)
    analyze_bad(tmp_path, path, fragment)
