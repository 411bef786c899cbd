"""Test support: a throwaway PostgreSQL schema per test, on a server named by URL.

Tests get ``TRACEKIT_TEST_POSTGRES_URL`` (set by ``.ci/run``); each test that wants a clean
PostgreSQL store gets its own schema on that database, selected through libpq's
``search_path`` option in the URL, and dropped afterwards. Tests never touch the database's
other schemas, and several test runs can share one server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_ENV = "TRACEKIT_TEST_POSTGRES_URL"


def postgres_test_url() -> str | None:
    """The test server's URL from ``TRACEKIT_TEST_POSTGRES_URL``, None when unset."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        return None
    from tracekit.store.db import normalize_url

    return normalize_url(url)


@contextmanager
def scratch_postgres_url(base_url: str) -> Iterator[str]:
    """A URL whose tables live in a fresh schema (dropped on exit)."""
    schema = f"tk_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base_url)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        separator = "&" if "?" in base_url else "?"
        parsed = make_url(base_url)
        yield (parsed.render_as_string(hide_password=False) + separator
               + "options=" + quote(f"-csearch_path={schema}", safe=""))
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


class FilesystemUnavailable(Exception):
    """The machine cannot provide the requested folder (not root, no mount): skip the test."""


def _mount(*args: str) -> None:
    import subprocess

    try:
        completed = subprocess.run(["mount", *args], capture_output=True, text=True,
                                   check=False)
    except OSError as exc:  # no mount command in a slim container
        raise FilesystemUnavailable(f"mount: {exc}") from None
    if completed.returncode != 0:
        raise FilesystemUnavailable(f"mount {' '.join(args)}: {completed.stderr.strip()}")


def _umount(path: str) -> None:
    import subprocess

    try:
        subprocess.run(["umount", "-l", path], capture_output=True, check=False)
    except OSError:
        pass


@contextmanager
def tmpfs(path: os.PathLike[str] | str, size: str = "1m") -> Iterator[str]:
    """A small tmpfs at ``path`` (root only): fill it to test a full disk."""
    if os.geteuid() != 0:
        raise FilesystemUnavailable("mounting a tmpfs needs root")
    folder = os.fspath(path)
    os.makedirs(folder, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", folder)
    try:
        yield folder
    finally:
        _umount(folder)


@contextmanager
def read_only(path: os.PathLike[str] | str, *, file_only: bool = False) -> Iterator[None]:
    """Make ``path`` (a folder) read-only for this process while the context is open.

    For a normal user ``chmod`` does it (``file_only``: only the files inside). Root ignores
    permission bits, so for root ``path`` must be a tmpfs from ``tmpfs()``, which is
    remounted read-only: a read-only file system stops root too.
    """
    import stat

    folder = os.fspath(path)
    if os.geteuid() == 0:
        _mount("-o", "remount,ro", folder)
        try:
            yield
        finally:
            _mount("-o", "remount,rw", folder)
        return
    targets = [os.path.join(folder, name) for name in os.listdir(folder)]
    if not file_only:
        targets.append(folder)
    saved = {target: os.stat(target).st_mode for target in targets}
    for target in targets:
        os.chmod(target, saved[target] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        for target, mode in saved.items():
            os.chmod(target, mode)


@contextmanager
def mountable_folder(path: os.PathLike[str] | str, size: str = "64m") -> Iterator[str]:
    """A folder that ``read_only`` can later lock: a tmpfs for root, a plain folder else."""
    if os.geteuid() == 0:
        with tmpfs(path, size) as folder:
            yield folder
    else:
        os.makedirs(path, exist_ok=True)
        yield os.fspath(path)
