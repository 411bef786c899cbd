"""Open a store by SQLAlchemy URL, check its schema revision, migrate it when asked.

SQLite is the default (``./tracekit.db``); any SQLAlchemy URL works. SQLite stores run in
WAL mode with a busy timeout so several ``tracekit analyze`` processes can write at once.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from tracekit.errors import StoreError, StoreSchemaMismatch
from tracekit.store.failures import first_line, store_write_error
from tracekit.store.sqlite_files import lenient_text, read_only_uri

ENV_VAR = "TRACEKIT_STORE"
DEFAULT_FILE = "tracekit.db"
BUSY_TIMEOUT_MS = 60_000
#: SQLite page cache per connection, in KiB: an ingest's index pages and lookups stay in it.
SQLITE_CACHE_KIB = 200_000


def default_store_url() -> str:
    """The store URL from ``TRACEKIT_STORE``, else ``./tracekit.db``."""
    return os.environ.get(ENV_VAR) or DEFAULT_FILE


#: bare PostgreSQL schemes mean psycopg 3 (the driver the bulk COPY path is written for)
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def normalize_url(url_or_path: str) -> str:
    """Accept a SQLAlchemy URL or a plain file path (taken as a SQLite file).

    ``postgresql://`` (and libpq's ``postgres://``) select psycopg 3: SQLAlchemy would pick
    psycopg2, which tracekit does not depend on.
    """
    for scheme in _POSTGRES_SCHEMES:
        if url_or_path.startswith(scheme):
            return "postgresql+psycopg://" + url_or_path[len(scheme):]
    if "://" in url_or_path:
        return url_or_path
    return f"sqlite:///{Path(url_or_path).expanduser().absolute()}"


def _alembic_config(connection: Connection):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    config = Config()
    location = resources.files("tracekit.store") / "migrations"
    config.set_main_option("script_location", str(location))
    config.attributes["connection"] = connection
    return config


#: The newest migration's revision (a test checks it against Alembic's scripts). Every
#: command compares the store with it; reading it here instead of loading the migration
#: scripts keeps Alembic out of commands on a store that is up to date.
HEAD_REVISION = "0008"


def head_revision() -> str:
    """The newest schema revision this tracekit knows."""
    return HEAD_REVISION


def scripts_head_revision() -> str:
    """The head revision as Alembic finds it in the migration scripts."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(resources.files("tracekit.store") / "migrations"))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    """Every revision id shipped with this tracekit."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(resources.files("tracekit.store") / "migrations"))
    return {rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()}


@dataclass
class Store:
    """An open store: an engine plus what kind of database it is."""

    engine: Engine
    url: str
    read_only: bool = False

    @property
    def is_sqlite(self) -> bool:
        """True for SQLite stores (fast ATTACH-based ingest is possible)."""
        return self.engine.dialect.name == "sqlite"

    @property
    def is_postgres(self) -> bool:
        """True for PostgreSQL stores (COPY-based ingest)."""
        return self.engine.dialect.name == "postgresql"

    @property
    def sqlite_path(self) -> Path | None:
        """The database file of a SQLite store, None for in-memory or other databases."""
        if not self.is_sqlite:
            return None
        return sqlite_file(make_url(self.url).database)

    @property
    def shared_by_connections(self) -> bool:
        """False for an in-memory SQLite store: each connection would see its own database."""
        return not self.is_sqlite or self.sqlite_path is not None

    @contextmanager
    def begin(self, *, enforce_foreign_keys: bool = True,
              attach: Mapping[str, str] | None = None) -> Iterator[Connection]:
        """A write transaction: the one way tracekit writes to a store.

        SQLite takes the write lock up front (BEGIN IMMEDIATE): a deferred transaction that
        reads first and writes later can fail at once with "database is locked" when another
        writer got there in between (the busy timeout cannot help a lock upgrade); taking the
        lock first makes writers queue.

        ``enforce_foreign_keys=False`` (SQLite): foreign keys are not checked inside this
        transaction, for writers whose every reference is to a row the same transaction has
        just written or is deleting with it (the ingest, deleting runs): the per-row parent
        lookups would prove nothing and cost a scan per row. The pragma is per connection
        and cannot change inside a transaction, so it is switched off before BEGIN and on
        again after the end, also after a failure: the pooled connection always goes back
        enforcing them. ``attach`` (SQLite): schema name → database URI to ATTACH for the
        transaction (ATTACH cannot run inside one); detached afterwards.

        A failure rolls everything back; a database error that blames the store (disk full,
        read-only, locked too long …) becomes one ``StoreError`` line
        (``tracekit.store.failures``); any other error passes through unchanged.
        """
        sqlite = self.is_sqlite
        keys_off = sqlite and not enforce_foreign_keys
        attached: list[str] = []
        try:
            with self.engine.connect() as connection:
                try:
                    for schema, uri in (attach or {}).items() if sqlite else ():
                        connection.exec_driver_sql(f"ATTACH DATABASE ? AS {schema}", (uri,))
                        attached.append(schema)
                    if keys_off:
                        connection.exec_driver_sql("PRAGMA foreign_keys = OFF")
                    if sqlite:
                        connection.exec_driver_sql("BEGIN IMMEDIATE")
                    else:
                        connection.begin()
                    try:
                        yield connection
                        connection.commit()
                    except BaseException:  # a failed COMMIT (disk full) too
                        connection.rollback()
                        raise
                finally:
                    if keys_off:
                        connection.exec_driver_sql("PRAGMA foreign_keys = ON")
                    for schema in [*attached, *connection.info.pop(ATTACHED_INSIDE, ())]:
                        connection.exec_driver_sql(f"DETACH DATABASE {schema}")
        except Exception as exc:
            error = store_write_error(display_url(self.url), exc, blame_damage=not attached)
            if error is None:
                raise
            raise error from None

    def connect(self) -> Connection:
        """A plain connection for reads."""
        return self.engine.connect()

    def revision(self) -> str | None:
        """The store's schema revision, None when the store is empty."""
        with self.engine.connect() as connection:
            return _revision(connection)

    def upgrade(self) -> None:
        """Apply every pending migration, once, even with several processes at it.

        The revision is read again under the database's write lock (SQLite: BEGIN
        IMMEDIATE; PostgreSQL: a transaction-scoped advisory lock), so of four writers that
        open a fresh store together one migrates and the others find it done.
        """
        from alembic import command

        with self.begin() as connection:
            if self.is_postgres:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": MIGRATION_LOCK_KEY})
            if _revision(connection) != head_revision():
                command.upgrade(_alembic_config(connection), "head")

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()


#: arbitrary constant naming tracekit's migration lock among PostgreSQL advisory locks
MIGRATION_LOCK_KEY = 0x7472_6163_656B  # "tracek"


def _revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
    return row[0] if row else None


def sqlite_file(database: str | None) -> Path | None:
    """The file behind a SQLite URL's database part (plain path or ``file:`` URI)."""
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    if database.startswith("file:"):
        database = database[len("file:"):].split("?", 1)[0]
    return Path(database)


def _sqlite_pragmas(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # The stdlib driver's implicit transactions fight BEGIN IMMEDIATE; take control of them.
    dbapi_connection.isolation_level = None
    # Traces may hold invalid UTF-8 (copied verbatim by INSERT … SELECT): U+FFFD instead of
    # failing every later read of the run.
    dbapi_connection.text_factory = lenient_text
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA temp_store = FILE")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.close()


def _check_sqlite_path(path: Path, *, write: bool) -> None:
    """Refuse store paths SQLite would fail on with a cryptic message, before opening."""
    if path.is_dir():
        raise StoreError(f"store {str(path)!r} is a directory, not a SQLite file",
                         hint="pass a file path, e.g. --store runs.db")
    if not write:
        if not path.exists():
            raise StoreError(f"no store at {str(path)!r}",
                             hint="run `tracekit analyze TRACE` first, or pass --store")
        return
    if not path.parent.is_dir():
        raise StoreError(f"cannot create store {str(path)!r}: folder "
                         f"{str(path.parent)!r} does not exist")
    # WAL needs the -wal and -shm files beside the store: the folder must be writable too.
    blocked = path.parent if not os.access(path.parent, os.W_OK) else (
        path if path.exists() and not os.access(path, os.W_OK) else None)
    if blocked is not None:
        what = "folder" if blocked == path.parent else "file"
        raise StoreError(f"store {str(path)!r} cannot be written ({what} {str(blocked)!r} is "
                         "read-only)", hint="pass a writable --store path or set TRACEKIT_STORE")


def _sqlite_engine(url: str, path: Path | None, *, write: bool) -> Engine:
    """A SQLite engine; readers open the file with ``mode=ro`` so they can never write it."""
    connect_args: dict[str, object] = {"timeout": BUSY_TIMEOUT_MS / 1000}
    if path is not None and not write:
        # A WAL store needs its -shm file, which a reader cannot create in a read-only
        # folder; nobody can be writing there, so read the file as immutable.
        immutable = not os.access(path.parent, os.W_OK)
        url = f"sqlite:///{read_only_uri(path, immutable=immutable)}&uri=true"
    engine = create_engine(url, connect_args=connect_args)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _postgres_engine(url: str, *, write: bool) -> Engine:
    """A PostgreSQL engine; readers' sessions are read-only on the server side."""
    connect_args: dict[str, object] = {}
    if not write:
        # Keep libpq options given in the URL (e.g. ``?options=-csearch_path%3Dteam``).
        given = make_url(url).query.get("options")
        given = given if isinstance(given, str) else " ".join(given or ())
        connect_args["options"] = f"{given} -c default_transaction_read_only=on".strip()
    engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    if not write:
        # `options` may be ignored by a pooler (pgbouncer): say it again per connection.
        @event.listens_for(engine, "connect")
        def _read_only(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            dbapi_connection.commit()
    return engine


def _make_engine(url: str, *, write: bool = True) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"store URL {url!r} is not a database URL: {exc}") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            path = sqlite_file(parsed.database)
            if path is not None:
                _check_sqlite_path(path, write=write)
            return _sqlite_engine(url, path, write=write)
        if parsed.get_backend_name() == "postgresql":
            return _postgres_engine(url, write=write)
        return create_engine(url, pool_pre_ping=True)
    except StoreError:
        raise
    except Exception as exc:  # a missing DB driver raises ModuleNotFoundError etc.
        raise StoreError(f"cannot open store {parsed.render_as_string()}: {exc}",
                         hint="install the driver, e.g. pip install 'tracekit-gpu[postgres]'"
                         ) from None


def open_store(url_or_path: str | None = None, *, write: bool = True) -> Store:
    """Open (and for writers, create or migrate) the store.

    Readers never modify the store: an old schema raises with the command to run.
    A schema newer than this tracekit always raises.
    """
    url = normalize_url(url_or_path or default_store_url())
    engine = _make_engine(url, write=write)
    store = Store(engine=engine, url=url, read_only=not write)
    try:
        if store.is_sqlite and store.sqlite_path is not None and store.sqlite_path.exists():
            _check_is_store(store)
        if store.is_sqlite and store.sqlite_path is not None and write:
            with engine.connect() as connection:
                mode = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
                if mode != "wal":
                    connection.exec_driver_sql("PRAGMA journal_mode = WAL")
        _check_revision(store, write=write)
    except (OperationalError, DBAPIError) as exc:
        engine.dispose()
        raise StoreError(f"cannot open store {display_url(url)}: {first_line(exc)}") from None
    except BaseException:
        engine.dispose()
        raise
    return store


#: ``Connection.info`` key: schemas attached inside a ``Store.begin`` transaction, detached
#: when it has ended (SQLite refuses DETACH while a transaction holds the database)
ATTACHED_INSIDE = "tracekit_attached_inside"


def attach_for_transaction(connection: Connection, schema: str, uri: str) -> None:
    """ATTACH ``uri`` as ``schema`` inside the running ``Store.begin`` transaction (SQLite);
    it is detached after the transaction ends."""
    connection.exec_driver_sql(f"ATTACH DATABASE ? AS {schema}", (uri,))
    connection.info.setdefault(ATTACHED_INSIDE, []).append(schema)


def scratch_store(path: Path) -> Store:
    """A private SQLite store at ``path`` (made with the schema on first use, no migrations)
    for work that a real store's transaction takes over afterwards: the rank files read in
    parallel (``tracekit.ingest.parts``). Nothing here has to survive a crash, so it is
    written without a journal or syncs."""
    url = f"sqlite:///{path}"
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_pragmas)

    @event.listens_for(engine, "connect")
    def _scratch(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        dbapi_connection.execute("PRAGMA journal_mode = OFF")
        dbapi_connection.execute("PRAGMA synchronous = OFF")

    from tracekit.store.schema import Base

    Base.metadata.create_all(engine)
    return Store(engine=engine, url=url)


def _check_revision(store: Store, *, write: bool) -> None:
    """Migrate (writers) or explain (readers) a store that is not at this tracekit's head."""
    url = store.url
    current = store.revision()
    head = head_revision()
    if current == head:
        return
    if current is not None and current not in known_revisions():
        raise StoreSchemaMismatch(
            f"store {display_url(url)} has schema revision {current}, newer than this "
            f"tracekit knows (head {head})",
            hint="upgrade tracekit: pip install -U tracekit-gpu",
        )
    if write:
        store.upgrade()
    elif current is None:
        raise StoreError(f"store {display_url(url)} holds no tracekit data yet",
                         hint="run `tracekit analyze TRACE` first")
    else:
        raise StoreSchemaMismatch(
            f"store {display_url(url)} is at schema revision {current}, "
            f"this tracekit needs {head}",
            hint=f"run `tracekit db upgrade --store {display_url(url)}`",
        )


def _check_is_store(store: Store) -> None:
    """Refuse to write our tables into a SQLite file that belongs to something else."""
    with store.engine.connect() as connection:
        try:
            tables = set(inspect(connection).get_table_names())
        except DBAPIError as exc:
            raise StoreError(f"store {display_url(store.url)} is not a SQLite database "
                             f"({first_line(exc)})") from None
    if tables and "alembic_version" not in tables and "runs" not in tables:
        raise StoreError(
            f"store {display_url(store.url)} is a SQLite file of another program "
            f"(tables: {', '.join(sorted(tables)[:3])}…)",
            hint="pass a new file with --store",
        )


def display_url(url: str) -> str:
    """A URL for messages: a SQLite path as a path, passwords hidden."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        path = sqlite_file(parsed.database)
        return str(path) if path is not None else parsed.database
    return parsed.render_as_string(hide_password=True)
