"""The files of a run read in parallel: one worker process per core, each into its own scratch.

A folder of rank files is a job's worth of parsing (eight 250 MB Kineto files), and parsing
is Python on one core per process. So each file is read by a worker process into a private
SQLite scratch store (``tracekit.store.db.scratch_store``) with the very reader and pipeline
that reads a single file into the real store — the same rows, the same counts, the same
bounded memory (a reader holds a chunk, never the file). A worker keeps one scratch for all
the files it reads, so a run has at most ``MAX_WORKERS`` scratch files; the store's own
connection then takes every file into the run in ONE transaction
(``tracekit.ingest.merge``), so the run still lands whole or not at all.

What a worker hands back is a ``Part``: where its rows are, what the file held (counts, its
hash), and what it says about the job it was recorded in (``jobs.FileIdentity``: the GPUs
its kernels ran on, its host, rank and wall-clock window), read from the scratch with a few
small queries.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tracekit.errors import InputError
from tracekit.ingest.jobs import EPOCH_FLOOR_NS, FileIdentity
from tracekit.store.db import Store, scratch_store

#: the most scratch stores a run is read into: a SQLite connection can attach at most ten
#: databases, and the store's transaction attaches every scratch at once
MAX_WORKERS = 8


@dataclass(frozen=True)
class PartTask:
    """One file for a worker to read."""

    index: int
    path: str
    allow_no_kernels: bool = False
    work_dir: str | None = None


@dataclass(frozen=True)
class Usage:
    """Kernels of one (process, thread, device) of a part: how many, when."""

    global_pid: int | None
    global_tid: int | None
    device: int | None
    kernels: int
    first_ns: int
    last_ns: int


@dataclass
class Part:
    """One input file read into a scratch store: where, what it held, what it says."""

    index: int
    path: Path
    scratch: Path
    run_id: int
    sha256: str
    size_bytes: int
    format: str
    producer: str | None
    producer_version: str | None
    schema_version: str | None
    meta: dict[str, Any]
    counts: dict[str, int]
    identity: FileIdentity
    #: UTC ns of the part's stored time 0, None when its clock is not a wall clock
    clock_base_ns: int | None
    usage: list[Usage] = field(default_factory=list)
    #: every process and thread id the part uses (kernels, processes, threads)
    ids: frozenset[int] = frozenset()


def worker_count(jobs: int | None, files: int) -> int:
    """Workers for ``files`` files: ``jobs`` (default the machine's cores), at most one per
    file and ``MAX_WORKERS``."""
    wanted = jobs if jobs is not None else (os.cpu_count() or 1)
    return max(1, min(wanted, files, MAX_WORKERS))


#: how a worker reads one file into its scratch store: the single-file ingest
#: (``tracekit.ingest.pipeline.ingest_file``, handed in: the pipeline imports this module)
ReadOne = Callable[..., Any]


@contextmanager
def read_parts(paths: Sequence[Path], read_one: ReadOne, *, jobs: int | None = None,
               allow_no_kernels: bool = False, work_dir: Path | None = None
               ) -> Iterator[list[Part]]:
    """Read ``paths`` in parallel into scratch stores with ``read_one(store, path,
    allow_no_kernels=…, work_dir=…)`` (its result's ``run_id`` is the part's run); yields
    the parts in input order and removes the scratch files when the block ends (after the
    store's transaction took them).

    An error reading any file (one ``InputError`` line naming it) stops the others.
    """
    scratch_dir = Path(tempfile.mkdtemp(prefix="tracekit-parts-", dir=work_dir))
    tasks = [PartTask(index, str(path), allow_no_kernels,
                      str(work_dir) if work_dir is not None else None)
             for index, path in enumerate(paths)]
    workers = worker_count(jobs, len(tasks))
    try:
        if workers == 1:
            _start_worker(str(scratch_dir), read_one)
            try:
                parts = [read_part(task) for task in tasks]
            finally:
                _stop_worker()
        else:
            parts = _in_workers(tasks, workers, scratch_dir, read_one)
        yield parts
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)


def _in_workers(tasks: list[PartTask], workers: int, scratch_dir: Path, read_one: ReadOne
                ) -> list[Part]:
    """The tasks on a pool of worker processes, results in task order.

    Workers are forked: a forked worker starts at once with tracekit imported, and never
    runs the caller's ``__main__`` again (``spawn`` and ``forkserver`` import it in every
    worker: a script without an ``if __name__ == "__main__"`` guard, or code read from
    stdin, would run again or break the pool). A worker reads its files only; the
    connections the parent holds are never used in it, and it leaves with ``os._exit``.
    """
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context,
                             initializer=_start_worker,
                             initargs=(str(scratch_dir), read_one)) as pool:
        futures = [pool.submit(read_part, task) for task in tasks]
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool:
            raise InputError(
                "a worker process reading the files stopped without a word (killed, out of "
                "memory?)", hint="try again with fewer --jobs") from None
        finally:
            for future in futures:
                future.cancel()


#: the scratch store of this worker process (one per process, several files each)
_WORKER: dict[str, Any] = {}


def _start_worker(scratch_dir: str, read_one: ReadOne) -> None:
    path = Path(scratch_dir) / f"part-{os.getpid()}.db"
    _WORKER["path"] = path
    _WORKER["store"] = None
    _WORKER["read_one"] = read_one


def _stop_worker() -> None:
    store = _WORKER.pop("store", None)
    if store is not None:
        store.dispose()
    _WORKER.pop("path", None)
    _WORKER.pop("read_one", None)


def _worker_store() -> Store:
    store = _WORKER.get("store")
    if store is None:
        store = _WORKER["store"] = scratch_store(_WORKER["path"])
    return store  # type: ignore[no-any-return]


def read_part(task: PartTask) -> Part:
    """Read one file into this worker's scratch store (the single-file pipeline) and
    describe it."""
    store = _worker_store()
    path = Path(task.path)
    result = _WORKER["read_one"](store, path, allow_no_kernels=task.allow_no_kernels,
                                 work_dir=Path(task.work_dir) if task.work_dir else None)
    part = describe_part(store, result.run_id, task.index, path)
    store.dispose()  # the file is complete on disk for the store's connection to attach
    return part


def describe_part(store: Store, run_id: int, index: int, path: Path) -> Part:
    """A part from its run in a scratch store: a few small queries (one pass over its
    kernels, grouped by process, thread and device) and what the reader said of the file
    (its ``run_files`` row, the run's ``clock_base_ns``)."""
    import json

    params = {"run_id": run_id}
    with store.connect() as connection:
        run = connection.execute(text(
            "SELECT sha256, format, producer, producer_version, schema_version, meta_json "
            "FROM runs WHERE id = :run_id"), params).mappings().one()
        counts = {str(name): int(count) for name, count in connection.execute(text(
            "SELECT name, count FROM run_counts WHERE run_id = :run_id"), params)}
        usage = [Usage(*row) for row in connection.execute(text(
            "SELECT global_pid, global_tid, device, COUNT(*), MIN(start_ns), MAX(end_ns) "
            "FROM kernels WHERE run_id = :run_id GROUP BY global_pid, global_tid, device"),
            params)]
        devices = connection.execute(text(
            "SELECT device_index, global_pid, name FROM devices WHERE run_id = :run_id"),
            params).all()
        said = dict(connection.execute(text(
            "SELECT host, job, trace_rank AS rank, world_size FROM run_files "
            "WHERE run_id = :run_id ORDER BY file_index LIMIT 1"), params).mappings().first()
            or {})
        ids: set[int] = set()
        for sql in ("SELECT global_pid FROM processes WHERE run_id = :run_id",
                    "SELECT global_tid FROM threads WHERE run_id = :run_id",
                    "SELECT global_pid FROM threads WHERE run_id = :run_id"):
            ids.update(value for (value,) in connection.execute(text(sql), params)
                       if value is not None)
    ids.update(value for use in usage for value in (use.global_pid, use.global_tid)
               if value is not None)
    meta = json.loads(run["meta_json"]) if run["meta_json"] else {}
    clock = meta.get("clock_base_ns")
    first = min((use.first_ns for use in usage), default=None)
    last = max((use.last_ns for use in usage), default=None)
    wall = clock is not None and first is not None and clock + first >= EPOCH_FLOOR_NS
    identity = FileIdentity(
        name=path.name, gpus=frozenset(_gpus_used(usage, devices)), host=said.get("host"),
        job=said.get("job"), rank=said.get("rank"), world_size=said.get("world_size"),
        start_ns=clock + first if wall and first is not None and clock is not None else None,
        end_ns=clock + last if wall and last is not None and clock is not None else None)
    return Part(
        index=index, path=path, scratch=Path(str(store.sqlite_path)), run_id=run_id,
        sha256=str(run["sha256"]), size_bytes=path.stat().st_size, format=str(run["format"]),
        producer=run["producer"], producer_version=run["producer_version"],
        schema_version=run["schema_version"],
        meta=meta, counts=counts,
        identity=identity, clock_base_ns=clock if wall else None, usage=usage,
        ids=frozenset(ids))


def _gpus_used(usage: list[Usage], devices: Sequence[Any]) -> set[str]:
    """Product names of the devices the part's kernels ran on (a device row of the process,
    else the row of that index without a process)."""
    named = {(index, pid): name for index, pid, name in devices if name}
    used = set()
    for use in usage:
        name = named.get((use.device, use.global_pid)) or named.get((use.device, None))
        if name:
            used.add(str(name))
    return used
