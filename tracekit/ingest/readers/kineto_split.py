"""One big Kineto file read by several processes: its chunks in ranges, one worker each.

The reader cuts a file's events into chunks of whole events (``json_chunks``); parsing a
chunk and making its rows is Python on one core. For a plain (not gzip) file the cuts can
be found without parsing (``json_chunks.chunk_spans`` seeks to each), so the chunks are
split into as many contiguous ranges as there are workers, and each worker — a forked copy
of the reader, on its own core — decodes its chunks, makes their rows and stages them in a
scratch SQLite file of its own (``TraceRows.stage_tables(temporary=False)``). The store's
connection then takes the ranges in file order into its own stage tables with one
``INSERT … SELECT`` per table and range (the scratch attached), and the reader finishes as
if it had read the file itself: the same rows in the same order, the same name keys (each
range's names are given the run's keys in the order the file first names them), the same
counts, the same processes and threads, hence the same store, bit for bit.

What keeps that true: a worker starts from the state a sequential read has at its first
chunk. The chunks are the sequential read's own (its cuts depend on the bytes alone); the
per-file lookups are merged in file order (names, processes, counters in the order first
seen); and the one state carried from chunk to chunk — kernels waiting for the ac2g flow
that gives them a correlation id (legacy traces) — must be empty where a range ends. When
it is not, or a chunk does not parse where it was cut (the sequential read would have cut
elsewhere), or the layout cannot be cut by seeking, the file is read the ordinary way
instead, from its start; nothing of the workers' work is kept. An error in a range (a time
that is no number …) is raised as the sequential read would raise it: the first in file
order.

Only on a SQLite store: a PostgreSQL store's stage tables are on the server, so the rows
would be read back from the scratch files and sent with ``COPY`` by the store's process
alone, which costs what the workers save (measured: ``tests/benchmarks/README.md``).

Memory: each worker holds what the sequential reader holds (a chunk of bytes and records,
a chunk of rows per table); the scratch files hold one copy of the staged rows until the
store's stage tables have taken them, and are removed then. Workers are forked (started at
once, with the reader and its spec as they are); each leaves with ``os._exit`` and never
touches the store's connection it inherited.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy import Connection, create_engine, text

from tracekit.ingest.readers.json_chunks import (
    CLOSE,
    OPEN,
    Unchunkable,
    blanks_only,
    chunk_spans,
    object_rest_ok,
)
from tracekit.ingest.readers.json_document import (
    TAIL_BYTES,
    TopLevelScanner,
    array_after_key,
    first_significant,
    slow_top_level,
)
from tracekit.ingest.readers.kineto_time import floats_are_exact
from tracekit.ingest.staging import ROW_NUMBER
from tracekit.store.db import attach_for_transaction
from tracekit.store.sqlite_files import read_only_uri

if TYPE_CHECKING:
    from tracekit import progress
    from tracekit.ingest.readers.kineto_events import EventTypes
    from tracekit.ingest.staging import StageTable
    from tracekit.ingest.trace_rows import FileState

#: files smaller than this are read by one process (a worker's start and the merge cost
#: more than they save)
SPLIT_MIN_BYTES = 16 << 20
#: at most this many workers per file (each range is one attached scratch file, and a
#: SQLite connection attaches at most ten databases)
MAX_WORKERS = 8
#: stage tables whose ``name_key`` is a per-run name key (kernel names, API names)
NAME_KEYS = {"tk_kernel": "kernel", "tk_runtime": "api"}
#: schema names of attached scratch files: unique in the process
_SCHEMAS = itertools.count()


class KinetoReader(Protocol):
    """What a range worker and the merge use of ``kineto_json.KinetoReader`` (which
    imports this module): its per-file lookups, stage tables and chunk handling."""

    connection: Connection
    stage: dict[str, StageTable]
    types: EventTypes
    kernel_names: dict[str, int]
    api_names: dict[str, int]
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    threads: set[tuple[int, int]]
    categories: Counter[str]
    flows: int
    module_frames: int
    pending: dict[tuple[Any, Any, Any], list[Any]]
    last_thread: tuple[Any, Any]

    def use_types(self, *, exact: bool) -> None: ...

    def stage_tables(self, connection: Connection, *, temporary: bool = True
                     ) -> dict[str, StageTable]: ...

    def kernel_key(self, name: str) -> int: ...

    def api_key(self, name: str) -> int: ...

    def _handle_chunk(self, state: FileState, events: list[Any]) -> None: ...

    def _flush_pending(self) -> None: ...


class Fallback(Exception):
    """The file cannot be split as its sequential read would cut it: read it that way."""


@dataclass
class RangeResult:
    """What one worker found in its range, besides the rows in its scratch file."""

    scratch: str
    kernel_names: list[str]
    api_names: list[str]
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    threads: set[tuple[int, int]]
    categories: Counter[str]
    flows: int
    module_frames: int
    devices_seen: set[int]
    runtime_pids: Counter[int]
    cpu_pids: Counter[int]
    counts: dict[str, int] = field(default_factory=dict)


def split_workers(jobs: int | None, size: int, connection: Connection) -> int:
    """Workers for a file of ``size`` bytes read into the store of ``connection``: ``jobs``
    (default the machine's cores), at most ``MAX_WORKERS``; 1 (no split) for small files,
    other stores than SQLite, or where processes cannot be forked."""
    if (size < SPLIT_MIN_BYTES or connection.dialect.name != "sqlite"
            or "fork" not in multiprocessing.get_all_start_methods()):
        return 1
    wanted = jobs if jobs is not None else (os.cpu_count() or 1)
    return max(1, min(wanted, MAX_WORKERS))


def read_split(reader: KinetoReader, state: FileState, path: Path, workers: int,
               task: progress.Task) -> bool:
    """Read ``path`` (a plain file) in ``workers`` processes into the reader's stage tables;
    False when it must be read the ordinary way (nothing was staged then)."""
    try:
        spans, header = _plan(reader, path)
    except (Unchunkable, Fallback, OSError):
        return False
    ranges = _ranges(spans, workers)
    if len(ranges) < 2:
        return False
    scratch_dir = Path(tempfile.mkdtemp(prefix="tracekit-split-"))
    try:
        try:
            results = _run_workers(reader, state, path, ranges, scratch_dir, task)
        except Fallback:
            return False
        _take_ranges(reader, state, results)
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    if header is not None:
        state.header = header
    return True


def _plan(reader: KinetoReader, path: Path
          ) -> tuple[list[tuple[int, int]], dict[str, Any] | None]:
    """The file's chunks as the sequential read cuts them, and its top-level keys."""
    size = path.stat().st_size
    with path.open("rb") as stream:
        if stream.read(2) == b"\x1f\x8b":
            raise Fallback("gzip: no seeking")
        stream.seek(0)
        first = first_significant(stream)
        reader.use_types(exact=not floats_are_exact(first))
        scanner = TopLevelScanner()
        scanner.feed(first)
        bare_list = first[:1] == b"["
        if bare_list:
            array_at = stream.tell() - len(first)
        else:
            buffer = array_after_key(stream, bytearray(first), scanner)
            array_at = stream.tell() - len(buffer)
        spans = chunk_spans(stream, array_at, size,
                            trailer_ok=blanks_only if bare_list else object_rest_ok)
        if bare_list:
            return spans, None
        stream.seek(max(0, size - TAIL_BYTES))
        scanner.feed_tail(stream.read())
    header = scanner.top_level()
    return spans, header if header is not None else slow_top_level(path)


def _ranges(spans: list[tuple[int, int]], workers: int) -> list[list[tuple[int, int]]]:
    """The chunks in at most ``workers`` contiguous ranges of about equal bytes."""
    total = spans[-1][1] - spans[0][0]
    ranges: list[list[tuple[int, int]]] = [[]]
    for span in spans:
        if ranges[-1] and span[0] - spans[0][0] >= len(ranges) * total / workers:
            ranges.append([])
        ranges[-1].append(span)
    return ranges


def _run_workers(reader: KinetoReader, state: FileState, path: Path,
                 ranges: list[list[tuple[int, int]]], scratch_dir: Path,
                 task: progress.Task) -> list[RangeResult]:
    """Fork one worker per range and collect what each found, in file order."""
    context = multiprocessing.get_context("fork")
    pipes: dict[Any, int] = {}
    processes = []
    outcome: dict[int, tuple[str, Any]] = {}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else each worker would write what was buffered again at its exit
    try:
        for index, spans in enumerate(ranges):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker, daemon=True,
                args=(reader, state, path, spans, index == len(ranges) - 1,
                      str(scratch_dir / f"range-{index}.db"), send))
            process.start()
            send.close()
            pipes[receive] = index
            processes.append(process)
        while pipes:
            for ready in wait(list(pipes)):
                index = pipes[ready]
                message: tuple[str, Any]  # ("read", bytes) … ("done", RangeResult)
                try:
                    message = cast(Pipe, ready).recv()
                except EOFError:
                    message = ("error", RuntimeError(
                        "a worker reading the file stopped without a word (killed, out of "
                        "memory?)"))
                kind, value = message[0], cast(Any, message[1])
                if kind == "read":
                    task.advance(value)
                    continue
                outcome[index] = (kind, value)
                del pipes[ready]
                if kind == "fallback":
                    raise Fallback(value)
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()
        for pipe in pipes:
            pipe.close()
    for index in range(len(ranges)):
        kind, value = outcome[index]
        if kind == "error":
            raise value
    return [outcome[index][1] for index in range(len(ranges))]


def _worker(reader: KinetoReader, state: FileState, path: Path,
            spans: Sequence[tuple[int, int]], last: bool, scratch: str, pipe: Pipe) -> None:
    """A forked worker: its chunks decoded and staged into ``scratch``; what it found sent."""
    gc.disable()  # a short-lived copy of the reader: nothing here makes cycles
    try:
        engine = create_engine(f"sqlite:///{scratch}")
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA journal_mode = OFF")
            connection.exec_driver_sql("PRAGMA synchronous = OFF")
            _start_range(reader, state, connection)
            with open(path, "rb", buffering=0) as stream:
                for start, end in spans:
                    chunk = bytearray(end - start + 1)
                    stream.seek(start)
                    if stream.readinto(chunk) != len(chunk):
                        raise OSError(f"{path}: the file got shorter while it was read")
                    chunk[0], chunk[-1] = OPEN, CLOSE
                    decoded = reader.types.decode(chunk)
                    if decoded is None:
                        pipe.send(("fallback", f"no chunk boundary at {end}"))
                        return
                    reader._handle_chunk(state, decoded[0])
                    del decoded
                    pipe.send(("read", len(chunk)))
            if reader.pending:
                if not last:
                    pipe.send(("fallback", "kernels wait for a flow beyond the range"))
                    return
                reader._flush_pending()
            for table in reader.stage.values():
                table.flush()
            connection.commit()
        pipe.send(("done", _result(reader, state, scratch)))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        pipe.send(("error", _picklable(exc)))
    finally:
        pipe.close()


def _start_range(reader: KinetoReader, state: FileState, connection: Connection) -> None:
    """The forked reader as a sequential read is at the first chunk of a file, its stage
    tables in the scratch file."""
    reader.stage = reader.stage_tables(connection, temporary=False)
    reader.kernel_names, reader.api_names = {}, {}
    reader.process_names, reader.thread_names, reader.threads = {}, {}, set()
    reader.categories = Counter()
    reader.flows = reader.module_frames = 0
    reader.pending = {}
    reader.last_thread = (None, None)
    state.devices_seen, state.runtime_pids, state.cpu_pids = set(), Counter(), Counter()


def _result(reader: KinetoReader, state: FileState, scratch: str) -> RangeResult:
    return RangeResult(
        scratch=scratch, kernel_names=list(reader.kernel_names),
        api_names=list(reader.api_names), process_names=reader.process_names,
        thread_names=reader.thread_names, threads=reader.threads,
        categories=reader.categories, flows=reader.flows, module_frames=reader.module_frames,
        devices_seen=state.devices_seen, runtime_pids=state.runtime_pids,
        cpu_pids=state.cpu_pids,
        counts={name: table.count for name, table in reader.stage.items()})


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError that says what it was."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any pickling failure
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _take_ranges(reader: KinetoReader, state: FileState, results: list[RangeResult]) -> None:
    """The ranges' lookups and rows into the reader, in file order."""
    for table in reader.stage.values():
        table.flush()  # rows of earlier files come first
    for result in results:
        keys = {"kernel": [reader.kernel_key(name) for name in result.kernel_names],
                "api": [reader.api_key(name) for name in result.api_names]}
        reader.process_names.update(result.process_names)
        reader.thread_names.update(result.thread_names)
        reader.threads |= result.threads
        reader.categories.update(result.categories)
        reader.flows += result.flows
        reader.module_frames += result.module_frames
        state.devices_seen |= result.devices_seen
        state.runtime_pids.update(result.runtime_pids)
        state.cpu_pids.update(result.cpu_pids)
        _copy_rows(reader, result, keys)


def _copy_rows(reader: KinetoReader, result: RangeResult, keys: dict[str, list[int]]
               ) -> None:
    """One range's staged rows appended to the reader's stage tables: one ``INSERT …
    SELECT`` per table, the scratch attached for the rest of the store's transaction."""
    schema = f"tk_split_{next(_SCHEMAS)}"
    connection = reader.connection
    attach_for_transaction(connection, schema, read_only_uri(Path(result.scratch)))
    for name, table in reader.stage.items():
        rows = result.counts.get(name, 0)
        if not rows:
            continue
        kind = NAME_KEYS.get(name)
        mapped = kind is not None and keys[kind] != list(range(len(keys[kind])))
        if mapped:
            _key_table(connection, keys[kind])  # type: ignore[index]
        columns = table.columns
        values = ", ".join(
            f"s.{ROW_NUMBER} + {table.count}" if column == ROW_NUMBER
            else "m.run_key" if column == "name_key" and mapped else f"s.{column}"
            for column in columns)
        join = (" CROSS JOIN temp.tk_split_keys AS m ON m.range_key = s.name_key"
                if mapped else "")
        connection.execute(text(
            f"INSERT INTO temp.{name} ({', '.join(columns)}) "
            f"SELECT {values} FROM {schema}.{name} AS s{join} ORDER BY s.rowid"))
        table.count += rows


def _key_table(connection: Connection, run_keys: list[int]) -> None:
    """``temp.tk_split_keys``: a range's name keys → the run's (a rowid search each)."""
    connection.exec_driver_sql("DROP TABLE IF EXISTS temp.tk_split_keys")
    connection.exec_driver_sql("CREATE TEMP TABLE tk_split_keys (range_key INTEGER PRIMARY "
                               "KEY, run_key INTEGER NOT NULL)")
    connection.exec_driver_sql("INSERT INTO temp.tk_split_keys VALUES (?, ?)",
                               list(enumerate(run_keys)))  # type: ignore[arg-type]
