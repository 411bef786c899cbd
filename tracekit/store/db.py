"""Open a store by SQLAlchemy URL, check its schema revision, migrate it when asked.

SQLite is the default (``./tracekit.db``); any SQLAlchemy URL works. SQLite stores run in
WAL mode with a busy timeout so several ``tracekit analyze`` processes can write at once.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from tracekit.errors import StoreError, StoreSchemaMismatch

ENV_VAR = "TRACEKIT_STORE"
DEFAULT_FILE = "tracekit.db"
BUSY_TIMEOUT_MS = 60_000


def default_store_url() -> str:
    """The store URL from ``TRACEKIT_STORE``, else ``./tracekit.db``."""
    return os.environ.get(ENV_VAR) or DEFAULT_FILE


def normalize_url(url_or_path: str) -> str:
    """Accept a SQLAlchemy URL or a plain file path (taken as a SQLite file)."""
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


def head_revision() -> str:
    """The newest schema revision this tracekit knows."""
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

    @property
    def is_sqlite(self) -> bool:
        """True for SQLite stores (fast ATTACH-based ingest is possible)."""
        return self.engine.dialect.name == "sqlite"

    @property
    def sqlite_path(self) -> Path | None:
        """The database file of a SQLite store, None for in-memory or other databases."""
        if not self.is_sqlite:
            return None
        database = make_url(self.url).database
        return Path(database) if database and database != ":memory:" else None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction; SQLite takes the write lock up front (BEGIN IMMEDIATE)."""
        with self.engine.connect() as connection:
            if self.is_sqlite:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                connection.begin()
            try:
                yield connection
            except BaseException:
                connection.rollback()
                raise
            else:
                connection.commit()

    def connect(self) -> Connection:
        """A plain connection for reads."""
        return self.engine.connect()

    def revision(self) -> str | None:
        """The store's schema revision, None when the store is empty."""
        with self.engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
            return row[0] if row else None

    def upgrade(self) -> None:
        """Apply every pending migration."""
        from alembic import command

        with self.engine.begin() as connection:
            command.upgrade(_alembic_config(connection), "head")

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # The stdlib driver's implicit transactions fight BEGIN IMMEDIATE; take control of them.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA temp_store = FILE")
    cursor.execute("PRAGMA cache_size = -200000")
    cursor.close()


def _make_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"store URL {url!r} is not a database URL: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            path = Path(database)
            if path.is_dir():
                raise StoreError(f"store {str(path)!r} is a directory, not a SQLite file",
                                 hint="pass a file path, e.g. --store runs.db")
            if not path.parent.exists():
                raise StoreError(f"cannot create store {str(path)!r}: folder "
                                 f"{str(path.parent)!r} does not exist")
            if path.exists() and not os.access(path, os.W_OK) or (
                not path.exists() and not os.access(path.parent, os.W_OK)
            ):
                raise StoreError(f"store {str(path)!r} cannot be written (permission denied)",
                                 hint="pass a writable --store path or set TRACEKIT_STORE")
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    try:
        return create_engine(url, pool_pre_ping=True)
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
    engine = _make_engine(url)
    store = Store(engine=engine, url=url)
    try:
        if store.is_sqlite and store.sqlite_path is not None and write:
            with engine.connect() as connection:
                mode = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
                if mode != "wal":
                    connection.exec_driver_sql("PRAGMA journal_mode = WAL")
        if store.is_sqlite and store.sqlite_path is not None and store.sqlite_path.exists():
            _check_is_store(store)
        current = store.revision()
        head = head_revision()
        if current is not None and current not in known_revisions():
            raise StoreSchemaMismatch(
                f"store {display_url(url)} has schema revision {current}, newer than this "
                f"tracekit knows (head {head})",
                hint="upgrade tracekit: pip install -U tracekit-gpu",
            )
        if current != head:
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
    except (OperationalError, DBAPIError) as exc:
        engine.dispose()
        raise StoreError(f"cannot open store {display_url(url)}: "
                         f"{str(exc.orig).splitlines()[0] if exc.orig else exc}") from None
    except BaseException:
        engine.dispose()
        raise
    return store


def _check_is_store(store: Store) -> None:
    """Refuse to write our tables into a SQLite file that belongs to something else."""
    with store.engine.connect() as connection:
        try:
            tables = set(inspect(connection).get_table_names())
        except DBAPIError as exc:
            raise StoreError(f"store {display_url(store.url)} is not a SQLite database "
                             f"({exc.orig})") from None
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
        return parsed.database
    return parsed.render_as_string(hide_password=True)
