"""A store that cannot take an ingest's writes: one ``StoreError`` line, exit 2, nothing
half-written, whichever database and whichever statement met the failure.

The failures are the databases' own: SQLite runs out of pages (``PRAGMA max_page_count``
caps the store file, a real SQLITE_FULL); PostgreSQL runs out of disk in a tablespace on a
2 MB tmpfs (root, a superuser and a server on this machine), and, everywhere a test server
exists, a trigger makes the server raise its disk-full error (SQLSTATE 53100, psycopg's
``DiskFull``) from the COPY of the kernels or from the insert of the run row.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from tests.support.helpers import assert_one_line_error, store_row_counts
from tests.support.stores import FilesystemUnavailable, tmpfs
from tracekit.cli import cli
from tracekit.errors import InputError, StoreError
from tracekit.store.db import open_store
from tracekit.store.failures import first_line, storage_problem, store_write_error
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

#: the message PostgreSQL gives when a relation file cannot grow (md.c, mdextend)
POSTGRES_DISK_FULL = 'could not extend file "base/16384/24576": No space left on device'


def trace(path: Path, *, pid: int, kernels: int = 10, steps: int = 10) -> Path:
    names = [KernelSpec(f"void failing_store_kernel_{k}<float>(int)", 2_000 + k, count=20)
             for k in range(kernels)]
    return write_scenario(Scenario(ranks=[RankSpec(pid=pid, steps=[
        StepSpec(f"execute_context_0(0)_generation_{s}({s})", names) for s in range(steps)])]),
        path)


def analyze(store_url: str, source: Path) -> tuple[int, str]:
    """``tracekit analyze`` in this process (so the test's engine hooks apply)."""
    result = CliRunner().invoke(cli, ["analyze", str(source), "--store", store_url],
                                catch_exceptions=False)
    return result.exit_code, result.stderr


def assert_store_full(code: int, stderr: str, *fragments: str) -> None:
    assert_one_line_error(code, stderr, "cannot write store ", "free disk space", *fragments)


@pytest.fixture
def capped_sqlite_pages() -> Iterator[None]:
    """Every SQLite connection opened meanwhile may grow its main file by 2 pages at most."""

    def cap(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 2}")

    event.listen(Engine, "connect", cap)
    try:
        yield
    finally:
        event.remove(Engine, "connect", cap)


def test_sqlite_full_during_ingest_is_a_store_error(tmp_path: Path,
                                                    request: pytest.FixtureRequest) -> None:
    store = tmp_path / "store.db"
    code, stderr = analyze(str(store), trace(tmp_path / "first.sqlite", pid=1))
    assert code == 0, stderr
    before = store_row_counts(str(store))
    request.getfixturevalue("capped_sqlite_pages")
    code, stderr = analyze(str(store), trace(tmp_path / "second.sqlite", pid=2))
    assert_store_full(code, stderr, str(store), "database or disk is full")
    assert store_row_counts(str(store)) == before
    with sqlite3.connect(store) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    connection.close()


def test_sqlite_full_in_the_ingest_api_leaves_the_pool_enforcing_foreign_keys(
        tmp_path: Path) -> None:
    from tracekit.ingest.pipeline import ingest

    store = open_store(str(tmp_path / "store.db"))
    try:
        ingest(store, [trace(tmp_path / "first.sqlite", pid=1)])
        store.engine.dispose()  # the next connections are capped

        @event.listens_for(store.engine, "connect")
        def cap(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 2}")

        with pytest.raises(StoreError) as raised:
            ingest(store, [trace(tmp_path / "second.sqlite", pid=2)])
        assert raised.value.exit_code == 2
        assert "\n" not in raised.value.one_line()
        with store.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("SELECT COUNT(*) FROM runs").scalar() == 1
    finally:
        store.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("table", ["kernels", "runs"])
def test_postgres_disk_full_during_ingest_is_a_store_error(postgres_url: str, tmp_path: Path,
                                                           table: str) -> None:
    """The server's disk-full error, from a COPY (psycopg's own exception) or from an
    INSERT through SQLAlchemy (wrapped): the store's error either way, not the trace's."""
    code, stderr = analyze(postgres_url, trace(tmp_path / "first.sqlite", pid=1))
    assert code == 0, stderr
    before = store_row_counts(postgres_url)
    engine = create_engine(postgres_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "CREATE FUNCTION tk_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION USING ERRCODE = 'disk_full', MESSAGE = :message, "
                "HINT = 'Check free disk space.'; END $$".replace(
                    ":message", "'" + POSTGRES_DISK_FULL.replace("'", "''") + "'")))
            connection.execute(text(
                f"CREATE TRIGGER tk_disk_full BEFORE INSERT ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION tk_disk_full()"))
    finally:
        engine.dispose()
    code, stderr = analyze(postgres_url, trace(tmp_path / "second.sqlite", pid=2))
    assert_store_full(code, stderr, "No space left on device")
    assert "password" not in stderr and ":tracekit@" not in stderr
    assert store_row_counts(postgres_url) == before


@pytest.fixture
def postgres_tiny_tablespace(postgres_url: str) -> Iterator[str]:
    """A store URL whose tables live in a tablespace on a 2 MB tmpfs: a real full disk.

    Needs root (tmpfs), a superuser (CREATE TABLESPACE) and a server on this machine that
    sees the folder; skips otherwise.
    """
    engine = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            schema = connection.execute(text("SELECT current_schema()")).scalar()
            superuser = connection.execute(text(
                "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar()
            data_dir = connection.execute(text("SHOW data_directory")).scalar()
        if not superuser:
            pytest.skip("CREATE TABLESPACE needs a superuser on the test server")
        if make_url(postgres_url).host not in ("127.0.0.1", "localhost", "::1", None) or \
                not os.path.isdir(str(data_dir)):
            pytest.skip("the test server does not run on this machine")
        owner = os.stat(str(data_dir))
        name = f"tk_tiny_{uuid.uuid4().hex[:8]}"
        # Not under tmp_path: the server's user must be able to reach the folder.
        mount_point = Path(tempfile.mkdtemp(prefix="tk-tiny-"))
        mount_point.chmod(0o755)
        try:
            with tmpfs(mount_point, "2m") as folder:
                location = Path(folder) / "pg"
                location.mkdir()
                os.chown(location, owner.st_uid, owner.st_gid)
                with engine.connect() as connection:
                    try:
                        connection.execute(
                            text(f"CREATE TABLESPACE {name} LOCATION '{location}'"))
                    except DBAPIError as exc:
                        pytest.skip(f"no tablespace on a tmpfs: {first_line(exc)}")
                try:
                    yield (postgres_url + "%20" + quote(f"-cdefault_tablespace={name}", safe=""))
                finally:
                    with engine.connect() as connection:  # empty it: then it can go
                        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                        connection.execute(text(f"DROP TABLESPACE IF EXISTS {name}"))
        except FilesystemUnavailable as exc:
            pytest.skip(str(exc))
        finally:
            mount_point.rmdir()
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_real_full_disk_during_ingest(postgres_tiny_tablespace: str,
                                                tmp_path: Path) -> None:
    url = postgres_tiny_tablespace
    code, stderr = analyze(url, trace(tmp_path / "first.sqlite", pid=1, kernels=2, steps=2))
    assert code == 0, stderr
    before = store_row_counts(url)
    # 100 names × 20 launches × 100 steps: 200,000 kernels, far more than 2 MB of rows
    code, stderr = analyze(url, trace(tmp_path / "second.sqlite", pid=2, kernels=100,
                                      steps=100))
    assert_store_full(code, stderr, "No space left on device")
    assert store_row_counts(url) == before


def test_the_mapper_blames_the_store_only_for_the_store() -> None:
    """Which database errors are the store's (codes first, words for code-less errors)."""
    full = OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full"))
    assert storage_problem(full) == "full"
    error = store_write_error("runs.db", full)
    assert error is not None and error.exit_code == 2
    assert error.one_line() == ("cannot write store runs.db: database or disk is full "
                                "(free disk space or pass another --store)")
    # A bare sqlite3 error comes from a connection reading a trace file, not from the store.
    assert storage_problem(sqlite3.DatabaseError("database disk image is malformed")) is None
    # A statement that also read an ATTACHed trace: damage may be the trace's.
    malformed = OperationalError("INSERT", {}, sqlite3.DatabaseError(
        "database disk image is malformed"))
    assert storage_problem(malformed) == "damaged"
    assert storage_problem(malformed, blame_damage=False) is None
    constraint = OperationalError("INSERT", {}, sqlite3.OperationalError(
        "NOT NULL constraint failed: kernels.start_ns"))
    assert storage_problem(constraint) is None
    assert storage_problem(InputError("no space in this message")) is None
    assert first_line(full) == "database or disk is full"


@pytest.mark.postgres
def test_the_mapper_reads_postgres_sqlstates(postgres_url: str) -> None:
    """Real server errors: disk full (53100) is the store's, a bad value (22003) is not."""
    engine = create_engine(postgres_url)
    try:
        with engine.connect() as connection:
            with pytest.raises(OperationalError) as full:
                connection.execute(text(
                    "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'disk_full', "
                    "MESSAGE = 'No space left on device'; END $$"))
            connection.rollback()
            with pytest.raises(Exception) as overflow:
                connection.execute(text("SELECT 9223372036854775807::bigint + 1"))
    finally:
        engine.dispose()
    assert type(full.value.orig).__name__ == "DiskFull"
    assert storage_problem(full.value) == "full"
    assert storage_problem(full.value.orig) == "full"  # unwrapped, as COPY raises it
    assert storage_problem(overflow.value) is None
