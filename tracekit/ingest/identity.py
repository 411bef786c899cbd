"""Which stored run holds these inputs: by file signature first, by content hash otherwise.

A run is identified by the SHA-256 of its input bytes (the same bytes ingested twice give
back the existing run, whatever the path). Hashing a 10^7-kernel export reads 1.1 GB, which
made analyzing a file already in the store take seconds. Now:

- the same path with the same signature (device, inode, size and modification time of every
  input file, as when the run was made) is that run, without reading the file
  (``--rehash`` turns this off and checks the content);
- otherwise the hash is taken on a thread while the ingest reads the file (``hashlib``
  releases the GIL), and compared under the store's write lock before the run is committed.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

from sqlalchemy import Connection, select

from tracekit.store.schema import RunRow

HASH_CHUNK = 4 * 1024 * 1024


def sha256_of(paths: Sequence[Path], stop: threading.Event | None = None) -> str:
    """Content hash of the inputs (streamed; a folder hashes its files in name order).

    ``stop`` set by another thread ends the reading early (the result is then meaningless).
    """
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK):
                digest.update(chunk)
                if stop is not None and stop.is_set():
                    return ""
        if len(paths) > 1:
            digest.update(path.name.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class BackgroundHash:
    """``sha256_of(paths)`` on a thread of its own, started at once.

    ``result`` waits for the hex digest; ``cancel`` stops the reading when the digest is no
    longer wanted (a failed ingest should not wait for a 5 GB file to be read).
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self._stop = threading.Event()
        self._future: Future[str] = Future()
        self._thread = threading.Thread(target=self._run, args=(list(paths),),
                                        name="tracekit-hash", daemon=True)
        self._thread.start()

    def _run(self, paths: list[Path]) -> None:
        try:
            self._future.set_result(sha256_of(paths, self._stop))
        except BaseException as exc:  # reported to whoever asks for the result
            self._future.set_exception(exc)

    def result(self) -> str:
        """The hex digest (raises what reading the files raised)."""
        return self._future.result()

    def cancel(self) -> None:
        """Stop reading and wait for the thread."""
        self._stop.set()
        self._thread.join()


def stat_signature(paths: Sequence[Path]) -> str:
    """``device:inode:size:mtime_ns`` of each input file, joined by ``;``."""
    parts = []
    for path in paths:
        info = path.stat()
        parts.append(f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}")
    return ";".join(parts)


def find_run(connection: Connection, sha256: str) -> int | None:
    """The id of the run already ingested from these exact bytes."""
    return connection.execute(select(RunRow.id).where(RunRow.sha256 == sha256)).scalar()


def find_run_by_stat(connection: Connection, source_path: str, signature: str) -> int | None:
    """The run made from ``source_path`` when its files had exactly ``signature``."""
    return connection.execute(
        select(RunRow.id).where(RunRow.source_path == source_path, RunRow.source_stat == signature)
        .order_by(RunRow.id.desc()).limit(1)).scalar()
