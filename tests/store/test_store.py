"""The store on SQLite and on a real PostgreSQL: schema, atomicity, dedup, deletes, errors.

Every test taking ``store_url`` runs twice: on a SQLite file and on a fresh schema of the
PostgreSQL server in ``TRACEKIT_TEST_POSTGRES_URL`` (skipped when unset; ``.ci/run`` sets it).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import inspect, text

from tests.support.helpers import make_old_store, store_row_counts
from tests.support.stores import (
    FilesystemUnavailable,
    mountable_folder,
    read_only,
)
from tracekit.cli import cli
from tracekit.errors import InputError, StoreError, StoreSchemaMismatch
from tracekit.ingest.pipeline import ingest
from tracekit.store import db as store_db
from tracekit.store.db import open_store
from tracekit.store.runs import delete_runs, list_runs
from tracekit.store.schema import POSTGRES_ONLY_INDEXES, Base
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

RUN_TABLES = [t.name for t in Base.metadata.sorted_tables if "run_id" in t.c]


def trace(path: Path, names: list[str], *, pid: int = 100, count: int = 3) -> Path:
    """A small nsys export: one step per name set, ``count`` launches of each name."""
    kernels = [KernelSpec(name, 1_000 + 10 * i, count=count) for i, name in enumerate(names)]
    return write_scenario(Scenario(ranks=[RankSpec(pid=pid, steps=[
        StepSpec("execute_context_1(8)_generation_0(0)", kernels),
        StepSpec("execute_context_0(0)_generation_2(2)", kernels, graph=True),
    ])]), path)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess: what a user sees on stderr, and the exit code."""
    return subprocess.run([sys.executable, "-m", "tracekit", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def assert_one_line_error(completed: subprocess.CompletedProcess[str], *words: str) -> None:
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracekit: error:"), completed.stderr
    assert "Traceback" not in completed.stderr
    for word in words:
        assert word in lines[0], lines[0]


# --- schema -------------------------------------------------------------------------------------

def test_migrations_reproduce_the_models(store_url: str) -> None:
    """Alembic's autogenerate finds nothing to change: migrations == schema.py."""
    store = open_store(store_url)
    try:
        with store.connect() as connection:
            context = MigrationContext.configure(connection, opts={
                "compare_type": True,
                "include_object": lambda _obj, name, kind, _reflected, _compare_to:
                    not (kind == "index" and name in POSTGRES_ONLY_INDEXES)})
            assert compare_metadata(context, Base.metadata) == []
            indexes = {index["name"] for table in {t for t, _c in POSTGRES_ONLY_INDEXES.values()}
                       for index in inspect(connection).get_indexes(table)}
        expected = set(POSTGRES_ONLY_INDEXES) if store.is_postgres else set()
        assert indexes & set(POSTGRES_ONLY_INDEXES) == expected
        assert store.revision() == store_db.head_revision()
    finally:
        store.dispose()


def test_kernel_ids_go_past_32_bits_after_the_upgrade(store_url: str) -> None:
    """A store made at revision 0002 (PostgreSQL ids were ``serial``) takes kernel ids past
    2^31 once a writer has migrated it, explicit or drawn from the sequence."""
    make_old_store(store_db.normalize_url(store_url), "0002")
    store = open_store(store_url)
    try:
        assert store.revision() == store_db.head_revision()
        with store.begin() as connection:
            connection.execute(text(
                "INSERT INTO runs (id, source_path, sha256, format, tracekit_version, "
                "created_at, status) VALUES (1, 'x', 'abc', 'nsys-sqlite', '0', "
                "'2026-11-30 00:00:00', 'complete')"))
            connection.execute(text(
                "INSERT INTO kernel_names (id, run_id, source_key, name) VALUES (1, 1, 1, 'k')"))
            insert = ("INSERT INTO kernels (run_id, name_id, start_ns, end_ns{id}) "
                      "VALUES (1, 1, 0, 1{value})")
            connection.execute(text(insert.format(id=", id", value=f", {2**40}")))
            if store.is_postgres:
                connection.execute(text(f"SELECT setval('kernels_id_seq', {2**31 + 5})"))
            connection.execute(text(insert.format(id="", value="")))
            ids = connection.execute(text("SELECT id FROM kernels ORDER BY id")).scalars().all()
    finally:
        store.dispose()
    assert max(ids) > 2**31
    assert len(ids) == 2


def test_newer_schema_is_refused_for_readers_and_writers(store_url: str) -> None:
    open_store(store_url).dispose()
    store = open_store(store_url)
    with store.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = 'ffff_future'"))
    store.dispose()
    for write in (True, False):
        with pytest.raises(StoreSchemaMismatch, match="newer than this tracekit") as info:
            open_store(store_url, write=write)
        assert "upgrade tracekit" in info.value.one_line()
    completed = run_cli("runs", "--store", store_url)
    assert_one_line_error(completed, "newer than this tracekit", "pip install -U")


def test_older_schema_readers_are_told_to_upgrade_writers_upgrade(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store one revision behind: readers name the command, writers migrate it."""
    open_store(store_url).dispose()
    real_head = store_db.head_revision()
    monkeypatch.setattr(store_db, "head_revision", lambda: "9999_next")
    monkeypatch.setattr(store_db, "known_revisions", lambda: {real_head, "9999_next"})
    with pytest.raises(StoreSchemaMismatch, match="is at schema revision") as info:
        open_store(store_url, write=False)
    assert real_head in info.value.message
    assert "run `tracekit db upgrade --store" in info.value.one_line()
    monkeypatch.undo()
    completed = run_cli("runs", "--store", store_url)
    assert completed.returncode == 0, completed.stderr


def test_empty_store_readers_refuse_writers_create(store_url: str) -> None:
    with pytest.raises(StoreError, match="no store|holds no tracekit data"):
        open_store(store_url, write=False)
    store = open_store(store_url)  # a writer creates the schema
    assert store.revision() == store_db.head_revision()
    store.dispose()
    open_store(store_url, write=False).dispose()


def test_db_upgrade_and_info(store_url: str) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "upgrade", "--store", store_url])
    assert result.exit_code == 0, result.output
    assert store_db.head_revision() in result.output
    result = runner.invoke(cli, ["db", "info", "--json", "--store", store_url])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["revision"] == store_db.head_revision()
    assert set(info["rows"]) == {t.name for t in Base.metadata.sorted_tables}
    assert "tracekit:" not in info["store"] or "***" in info["store"]


# --- ingest -------------------------------------------------------------------------------------

def test_ingest_twice_gives_the_existing_run(store_url: str, tmp_path: Path) -> None:
    source = trace(tmp_path / "a.sqlite", ["gemm_a", "gemm_b"])
    store = open_store(store_url)
    try:
        first = ingest(store, [source])
        second = ingest(store, [source])
    finally:
        store.dispose()
    assert not first.existing and second.existing and first.run_id == second.run_id
    counts = store_row_counts(store_url)
    assert counts["runs"] == 1 and counts["kernels"] == 12 and counts["kernel_names"] == 2


def test_kernel_select_searches_its_lookups(store_url: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel finds its name, launch and step by an index search, never a scan: on
    PostgreSQL the SELECT runs on a side SQLite connection over mirrored lookup tables, and
    mirrors without declared types or unique keys once made it scan per kernel (10^5
    kernels: 40 s instead of 4 s)."""
    from tracekit.ingest import bulk
    from tracekit.phases.ingest_time import IngestTimeSteps

    plans: list[str] = []
    copy = bulk.BulkCopier.copy

    def planned_copy(self, table, columns, select_sql, params=None):  # type: ignore[no-untyped-def]
        if table == "kernels":
            run = self._side.execute if self._side is not None else (
                lambda sql, p: self.connection.exec_driver_sql(sql, p))
            plans.extend(str(row[-1]) for row in run("EXPLAIN QUERY PLAN " + select_sql,
                                                     params or {}))
        return copy(self, table, columns, select_sql, params)

    monkeypatch.setattr(bulk.BulkCopier, "copy", planned_copy)
    scenario = Scenario(ranks=[RankSpec(pid=100, steps=[StepSpec(
        "execute_context_1(8)_generation_0(0)", [KernelSpec("gemm_a", 1_000, count=3)])])])
    store = open_store(store_url)
    try:
        ingest(store, [write_scenario(scenario, tmp_path / "a.sqlite")],
               step_attribution=IngestTimeSteps())
    finally:
        store.dispose()
    scans = [line for line in plans if line.startswith("SCAN")]
    assert plans and scans == ["SCAN k"], plans


def test_failed_ingest_leaves_no_partial_run(store_url: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader fails after kernels were copied: nothing of the run stays."""
    from tracekit.ingest.readers import nsys_sqlite

    source = trace(tmp_path / "a.sqlite", ["gemm_a"])
    store = open_store(store_url)

    def explode(*_args: object, **_kwargs: object) -> int:
        raise InputError("boom after the kernels were copied")

    monkeypatch.setattr(nsys_sqlite, "_copy_nvtx", explode)
    try:
        with pytest.raises(InputError, match="boom"):
            ingest(store, [source])
        assert all(count == 0 for count in store_row_counts(store_url).values())
        monkeypatch.undo()
        result = ingest(store, [source])  # the store is fine: the next ingest works
    finally:
        store.dispose()
    assert not result.existing
    assert store_row_counts(store_url)["kernels"] == 6


def test_delete_removes_every_row_of_the_run_only(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url)
    try:
        keep = ingest(store, [trace(tmp_path / "a.sqlite", ["gemm_a", "gemm_b"])]).run_id
        drop = ingest(store, [trace(tmp_path / "b.sqlite", ["gemm_c"], pid=7)]).run_id
        with store.begin() as connection:  # derived rows, as the analysis stages write them
            for run_id in (keep, drop):
                connection.execute(text(
                    "INSERT INTO findings (run_id, rule, severity, message) "
                    "VALUES (:r, 'x', 'info', 'm')"), {"r": run_id})
        before = store_row_counts(store_url)
        assert delete_runs(store, [drop]) == [drop]
        with pytest.raises(StoreError, match="no run 12345"):
            delete_runs(store, [keep, 12345])  # unknown id: nothing is deleted
        with store.connect() as connection:
            assert [run.id for run in list_runs(connection)] == [keep]
            for table in RUN_TABLES:
                left = connection.execute(
                    text(f"SELECT COUNT(*) FROM {table} WHERE run_id = :r"), {"r": drop})
                assert left.scalar_one() == 0, table
    finally:
        store.dispose()
    after = store_row_counts(store_url)
    assert after["kernels"] == 12 and before["kernels"] == 18
    assert after["findings"] == 1


def test_runs_command_lists_and_deletes(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url)
    try:
        run_id = ingest(store, [trace(tmp_path / "a.sqlite", ["gemm_a"])], label="base").run_id
        with store.begin() as connection:
            connection.execute(text(
                "UPDATE runs SET gpu = 'NVIDIA H100 (sm90)', engine = 'vllm', "
                "model_label = 'Llama-3.1-8B-FP4', verdict = :v WHERE id = :r"),
                {"v": "FP4 checkpoint ran BF16 math.\nSecond sentence.", "r": run_id})
    finally:
        store.dispose()
    runner = CliRunner()
    result = runner.invoke(cli, ["runs", "--json", "--store", store_url])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)["runs"]
    assert run["id"] == run_id and run["kernels"] == 6 and run["engine"] == "vllm"
    assert run["verdict"] == "FP4 checkpoint ran BF16 math." and run["label"] == "base"
    assert run["gpu"] == "NVIDIA H100 (sm90)" and run["model_label"] == "Llama-3.1-8B-FP4"
    table = runner.invoke(cli, ["runs", "--store", store_url])
    assert table.exit_code == 0 and "vllm" in table.output and "Llama-3.1-8B-FP4" in table.output
    deleted = runner.invoke(cli, ["runs", "--delete", str(run_id), "--store", store_url])
    assert deleted.exit_code == 0, deleted.output
    assert store_row_counts(store_url)["runs"] == 0


def test_query_is_read_only(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url)
    try:
        ingest(store, [trace(tmp_path / "a.sqlite", ["gemm 'a' <b>"])])
    finally:
        store.dispose()
    runner = CliRunner()
    result = runner.invoke(cli, ["query", "SELECT name FROM kernel_names", "--format", "json",
                                 "--store", store_url])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"name": "gemm 'a' <b>"}]
    csv_out = runner.invoke(cli, ["query", "SELECT COUNT(*) AS n FROM kernels", "--format",
                                  "csv", "--store", store_url])
    assert csv_out.output.splitlines() == ["n", "6"]
    for sql in ("DELETE FROM runs", "DROP TABLE kernels", "SET TRANSACTION READ WRITE",
                "SELECT 1; DELETE FROM runs", f"ATTACH '{tmp_path / 'x.db'}' AS x",
                "UPDATE runs SET label = 'x'", "CREATE TABLE t (x int)"):
        completed = run_cli("query", sql, "--store", store_url)
        assert_one_line_error(completed)
    assert store_row_counts(store_url)["runs"] == 1
    assert not (tmp_path / "x.db").exists()


WEIRD_NAMES = [
    "k" * 100_000,                                  # a 100k-character name
    "nul\x00inside",                                # NUL byte
    "quotes ' \" `; DROP TABLE runs; --",          # SQL quoting
    "<script>alert(1)</script><b>html</b>",          # HTML
    "ünïcödé ∑ 🚀",
]


def test_odd_strings_pass_through(store_url: str, tmp_path: Path) -> None:
    """Names arrive as written; PostgreSQL text cannot hold NUL, which becomes U+2400 (␀)."""
    source = trace(tmp_path / "a.sqlite", WEIRD_NAMES)
    with sqlite3.connect(source) as connection:  # and one name that is not valid UTF-8
        connection.execute("INSERT INTO StringIds VALUES (99999, CAST(X'6bff6e' AS TEXT))")
        connection.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99999 "
                           "WHERE rowid = (SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    connection.close()
    store = open_store(store_url)
    try:
        ingest(store, [source])
        with store.connect() as connection:
            names = set(connection.execute(text("SELECT name FROM kernel_names")).scalars())
    finally:
        store.dispose()
    expected = set(WEIRD_NAMES) | {"k\ufffdn"}
    if "postgresql" in store_url:
        expected = {name.replace("\x00", "\u2400") for name in expected}
    assert names == expected


# --- store paths (SQLite) -----------------------------------------------------------------------

def test_store_path_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(str(tmp_path))
    assert_one_line_error(run_cli("db", "upgrade", "--store", str(tmp_path)), "directory")


def test_store_folder_missing(tmp_path: Path) -> None:
    completed = run_cli("db", "upgrade", "--store", str(tmp_path / "no" / "such" / "s.db"))
    assert_one_line_error(completed, "does not exist")


def test_store_is_a_sqlite_file_of_another_program(tmp_path: Path) -> None:
    other = tmp_path / "places.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
        connection.execute("INSERT INTO moz_places (url) VALUES ('https://example.org')")
    connection.close()
    before = other.read_bytes()
    for args in (("db", "upgrade"), ("runs",), ("query", "SELECT 1")):
        assert_one_line_error(run_cli(*args, "--store", str(other)), "another program")
    assert other.read_bytes() == before


def test_store_is_not_a_sqlite_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database\n" * 100)
    assert_one_line_error(run_cli("db", "upgrade", "--store", str(junk)), "junk.db")
    assert junk.read_bytes() == b"this is not a database\n" * 100


def test_reader_on_missing_store(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("runs", "--store", str(tmp_path / "none.db")), "no store")
    assert not (tmp_path / "none.db").exists()


def test_unwritable_store(tmp_path: Path) -> None:
    """A store on a read-only folder: writers get one line, readers still read it."""
    try:
        with mountable_folder(tmp_path / "fs") as folder:
            path = Path(folder) / "store.db"
            store = open_store(str(path))
            ingest(store, [trace(tmp_path / "a.sqlite", ["gemm_a"])])
            store.dispose()
            with read_only(folder):
                for args in (("db", "upgrade"),):
                    assert_one_line_error(run_cli(*args, "--store", str(path)), "read-only")
                assert_one_line_error(run_cli("db", "upgrade", "--store",
                                              str(Path(folder) / "new.db")), "read-only")
                listed = run_cli("runs", "--json", "--store", str(path))
                assert listed.returncode == 0, listed.stderr
                assert len(json.loads(listed.stdout)["runs"]) == 1
    except FilesystemUnavailable as exc:
        pytest.skip(str(exc))


def test_postgres_url_without_driver_means_psycopg() -> None:
    assert store_db.normalize_url("postgresql://u:p@h/db").startswith("postgresql+psycopg://")
    assert store_db.normalize_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert store_db.display_url("postgresql+psycopg://u:secret@h/db") == \
        "postgresql+psycopg://u:***@h/db"


def test_unreachable_postgres_is_one_line() -> None:
    completed = run_cli("runs", "--store", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert_one_line_error(completed, "cannot open store")
    assert "secret" not in completed.stderr


