"""Ingest input files into the store as one run, atomically and at most once.

1. gather the inputs: folders stand for the traces inside them, each file is detected by
   its content (``tracekit.ingest.inputs``);
2. a run made from the same path whose files still have the same device, inode, size and
   modification time is given back at once (``tracekit.ingest.identity``; ``rehash``
   checks the content instead);
3. one file (or Nsight Compute results, which its reader takes several at a time): convert
   containers (.qdstrm, .nsys-rep) with NVIDIA's tools into a work folder, then in ONE
   transaction insert the run row, let the reader copy the records while the input is
   hashed on a thread, then — under the write lock — give back the run that already holds
   the same bytes (nothing is kept), or record the hash and commit;
4. several files (the ranks of one job): each is read by the same single-file ingest into
   a scratch store, in parallel (``tracekit.ingest.parts``); they must be one job
   (``tracekit.ingest.jobs``, unless ``one_run``) and are taken into the store in ONE
   transaction (``tracekit.ingest.merge``), or appended to the run of ``job``.

Any failure rolls everything back; a killed process leaves an uncommitted transaction that
the database discards.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib
import json
import tempfile
import uuid
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from tracekit.errors import InputError
from tracekit.ingest.bulk import BulkCopier
from tracekit.ingest.convert import nsys_rep_to_sqlite, qdstrm_to_nsys_rep
from tracekit.ingest.detect import detect_file
from tracekit.ingest.identity import (
    BackgroundHash,
    find_run,
    find_run_by_stat,
    sha256_of,
    stat_signature,
)
from tracekit.ingest.inputs import InputSet, gather_inputs
from tracekit.ingest.reader import IngestContext, SourceInfo, StepAttribution
from tracekit.ingest.side import SideWork
from tracekit.ingest.spec import FormatSpec
from tracekit.store.counts import record_counts
from tracekit.store.db import Store
from tracekit.store.failures import first_line, is_driver_error
from tracekit.store.schema import RunFileRow, RunRow
from tracekit.store.sqlite_files import read_only_uri
from tracekit.version import __version__

#: readers that take the SQLite source attached as ``src`` through a BulkCopier
SQLITE_SOURCE_READERS = {"nsys_sqlite", "rocpd_sqlite"}


class UnexpectedContent(InputError):
    """A reader tripped over content it did not expect (a ValueError deep in a parser …).

    The user gets one line naming the file instead of a traceback, and the store is
    unchanged; the original exception stays attached (``__cause__``) for a bug report.
    """


#: what a reader raises when a file's content is not what its code assumed
READER_SLIPS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
    UnicodeError, RecursionError, EOFError, zlib.error, csv.Error,
)


#: readers whose files are read one per part (in parallel) when a run has several: one file
#: per rank or process. The others take their files together: Nsight Compute CSVs (launches
#: of one session, split by page), rocprofv3 CSV and JSON outputs (the files of one capture)
PART_READERS = {"nsys_sqlite", "rocpd_sqlite", "kineto_json", "cupti_jsonl", "qdstrm",
                "nsys_rep"}


@dataclass(frozen=True)
class IngestResult:
    """The run an ingest produced or found."""

    run_id: int
    existing: bool
    format: str
    #: input files taken into the run by this ingest (0 when it was found stored)
    files: int = 1
    #: what the user should know (files already in a job's run …)
    notes: tuple[str, ...] = ()


def expand_inputs(inputs: Sequence[Path]) -> list[Path]:
    """The trace files ``inputs`` stand for (``tracekit.ingest.inputs.gather_inputs``)."""
    return gather_inputs(inputs).files


def detect_inputs(files: Sequence[Path]) -> FormatSpec:
    """One spec for all files of a run; mixed formats are refused."""
    return gather_inputs(files).spec


def _convert(spec: FormatSpec, files: list[Path], work_dir: Path) -> tuple[FormatSpec, list[Path]]:
    """Follow conversions until a reader can read the files directly."""
    while spec.reader in ("qdstrm", "nsys_rep"):
        if len(files) != 1:
            raise InputError(f"{files[0]}: pass one Nsight Systems report at a time")
        if spec.reader == "qdstrm":
            files = [qdstrm_to_nsys_rep(files[0], work_dir)]
        else:
            files = [nsys_rep_to_sqlite(files[0], work_dir)]
        spec = detect_file(files[0])
    return spec, files


@contextmanager
def _ingest_transaction(
    store: Store, source: Path | None
) -> Iterator[tuple[Connection, BulkCopier | None]]:
    """The ingest's write transaction, with a SQLite source attached as ``src``.

    On SQLite, foreign keys are not enforced while a run is ingested. Every id a reader
    writes comes from a row the same transaction has just inserted (the run, its kernel
    names), so the per-row parent lookups prove nothing, and they cost a fifth of the kernel
    copy (measured: tests/benchmarks/README.md); the tests check ``PRAGMA foreign_key_check``
    after an ingest.
    """
    attach = {"src": read_only_uri(source)} if source is not None else None
    with store.begin(enforce_foreign_keys=False, attach=attach) as connection:
        copier = BulkCopier(connection, source) if source is not None else None
        try:
            yield connection, copier
        finally:
            if copier is not None:
                copier.close()


def ingest(store: Store, inputs: Sequence[Path], *, work_dir: Path | None = None,
           allow_no_kernels: bool = False, label: str | None = None,
           step_attribution: StepAttribution | None = None,
           side_reads: bool = False, rehash: bool = False, jobs: int | None = None,
           one_run: bool = False, job: str | None = None,
           gathered: InputSet | None = None) -> IngestResult:
    """Ingest ``inputs`` as one run, or return the run that already holds them.

    ``step_attribution`` lets a reader attribute kernels to engine steps as it copies them
    (the result says whether it did). ``side_reads``: a reader of a SQLite source may read
    it on a second connection and core while it copies (``tracekit.ingest.side``).
    ``rehash``: recognize a stored run by the inputs' content hash only, never by their
    path and file signature. Several files: ``jobs`` worker processes read them (default
    the machine's cores); one big file: a reader may parse it with as many (the Kineto
    reader, ``tracekit.ingest.readers.kineto_split``). ``one_run`` keeps several files as
    one run even when they are not one job; ``job`` adds them to the run of that job
    (made by the first ingest that names it). ``gathered``: the inputs as
    ``gather_inputs`` already found them.
    """
    gathered = gathered or gather_inputs(inputs)
    files, spec = gathered.files, gathered.spec
    origin = Origin(str(Path(inputs[0]).absolute()), stat_signature(files))
    if job is not None or (len(files) > 1 and spec.reader in PART_READERS):
        return _ingest_parts(store, files, spec, origin, label=label, jobs=jobs,
                             one_run=one_run, job=job, rehash=rehash, work_dir=work_dir,
                             allow_no_kernels=allow_no_kernels)
    if rehash:
        origin.digest = sha256_of(files)
        with store.connect() as connection:
            existing = find_run(connection, origin.digest)
    else:
        with store.connect() as connection:
            existing = find_run_by_stat(connection, origin.path, origin.signature)
    if existing is not None:
        _remember_signature(store, existing, origin)
        return IngestResult(existing, True, spec.id)
    display = str(inputs[0]) if len(inputs) == 1 else f"{inputs[0]} (+{len(inputs) - 1})"
    hashing = BackgroundHash(files) if origin.digest is None else None
    try:
        with tempfile.TemporaryDirectory(prefix="tracekit-") as scratch:
            spec_read, readable = _convert(spec, files, work_dir or Path(scratch))
            source = readable[0] if spec_read.reader in SQLITE_SOURCE_READERS else None
            side = SideWork(source) if side_reads and source is not None else None
            try:
                result = _ingest_run(store, spec, spec_read, readable, source, side, origin,
                                     hashing, display, label, allow_no_kernels,
                                     step_attribution, files, one_run, jobs)
            finally:
                if side is not None:  # before the converted file's folder goes
                    side.close(interrupt=True)
    finally:
        if hashing is not None:
            hashing.cancel()
    if result.existing:
        _remember_signature(store, result.run_id, origin)
    return result


def ingest_file(store: Store, path: Path, *, allow_no_kernels: bool = False,
                work_dir: Path | None = None) -> IngestResult:
    """One file as one run: what a worker of ``tracekit.ingest.parts`` does in its scratch."""
    gathered = InputSet([path], [detect_file(path)])
    return ingest(store, [path], gathered=gathered, allow_no_kernels=allow_no_kernels,
                  work_dir=work_dir, side_reads=True, jobs=1)


def _ingest_parts(store: Store, files: list[Path], spec: FormatSpec, origin: Origin, *,
                  label: str | None, jobs: int | None, one_run: bool, job: str | None,
                  rehash: bool, work_dir: Path | None, allow_no_kernels: bool
                  ) -> IngestResult:
    """Several files: read in parallel into scratch stores, then one transaction."""
    from tracekit.ingest.merge import MergeRequest, merge_parts
    from tracekit.ingest.parts import read_parts

    if job is None and not rehash:
        with store.connect() as connection:
            existing = find_run_by_stat(connection, origin.path, origin.signature)
        if existing is not None:
            return IngestResult(existing, True, spec.id, files=0)
    with read_parts(files, ingest_file, jobs=jobs, allow_no_kernels=allow_no_kernels,
                    work_dir=work_dir) as parts:
        request = MergeRequest(origin.path, origin.signature, spec.id, label=label, job=job,
                               one_run=one_run)
        merged = merge_parts(store, parts, request)
    notes = tuple(f"{name}: already in run {merged.run_id} of job {job}; not added again"
                  for name in merged.skipped)
    if merged.existing and job is None:
        origin.digest = None  # found by content: its signature is noted below
        with store.begin() as connection:
            connection.execute(update(RunRow).where(
                RunRow.id == merged.run_id, RunRow.source_path == origin.path).values(
                source_stat=origin.signature))
    return IngestResult(merged.run_id, merged.existing, spec.id, files=merged.added,
                        notes=notes)


def _remember_signature(store: Store, run_id: int, origin: Origin) -> None:
    """A run found by its content at its own path: note the files' signature as they are
    now, so that the next analysis of the unchanged file does not hash it again."""
    if origin.digest is None:
        return
    stale = (RunRow.id == run_id, RunRow.source_path == origin.path, RunRow.sha256 == origin.digest,
             (RunRow.source_stat != origin.signature) | RunRow.source_stat.is_(None))
    with store.connect() as connection:
        if connection.execute(select(RunRow.id).where(*stale)).first() is None:
            return
    with store.begin() as connection:
        connection.execute(update(RunRow).where(*stale).values(source_stat=origin.signature))


@dataclass
class Origin:
    """Where a run comes from: the input path, its files' signature, their content hash."""

    path: str
    signature: str
    digest: str | None = None


class _AlreadyStored(Exception):
    """Raised inside the ingest transaction (to roll it back): these bytes are run ``run_id``."""

    def __init__(self, run_id: int) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def _ingest_run(store: Store, spec: FormatSpec, spec_read: FormatSpec, readable: list[Path],
                source: Path | None, side: SideWork | None, origin: Origin,
                hashing: BackgroundHash | None, display: str, label: str | None,
                allow_no_kernels: bool, step_attribution: StepAttribution | None,
                inputs: list[Path], one_run: bool, jobs: int | None) -> IngestResult:
    """The ingest transaction: the run row, the reader's copy, the hash check, the commit."""
    reader = importlib.import_module(f"tracekit.ingest.readers.{spec_read.reader}")
    try:
        with _ingest_transaction(store, source) as (connection, copier):
            # Until the hash is known the run holds a placeholder (unique, like the hash).
            run_id = connection.execute(insert(RunRow).values(
                source_path=origin.path, sha256=origin.digest or f"pending-{uuid.uuid4().hex}",
                source_stat=origin.signature, format=spec.id, producer=spec.producer,
                tracekit_version=__version__, created_at=dt.datetime.now(dt.timezone.utc),
                label=label, status="complete",
            )).inserted_primary_key[0]  # type: ignore[index]
            ctx = IngestContext(connection=connection, run_id=run_id, spec=spec_read,
                                paths=readable, display_name=display,
                                allow_no_kernels=allow_no_kernels,
                                step_attribution=step_attribution, side=side,
                                one_run=one_run, jobs=jobs)
            if copier is not None:
                ctx.copier = copier
            info = reader.ingest(ctx)
            files = _file_identities(info, inputs)
            connection.execute(update(RunRow).where(RunRow.id == run_id).values(
                producer=info.producer or spec.producer,
                producer_version=info.producer_version,
                schema_version=info.schema_version,
                meta_json=_with_clock(info.meta_json, files)))
            counts = record_counts(connection, run_id, info.counts)
            if hashing is not None:
                origin.digest = hashing.result()
                # The write lock is held: every committed run is visible here.
                existing = find_run(connection, origin.digest)
                if existing is not None:
                    raise _AlreadyStored(existing)
                connection.execute(update(RunRow).where(RunRow.id == run_id).values(
                    sha256=origin.digest))
            _write_run_files(connection, run_id, spec.id, inputs, files, counts,
                             origin.digest)
    except _AlreadyStored as stored:
        return IngestResult(stored.run_id, True, spec.id)
    except IntegrityError as exc:
        # Another process ingested the same bytes between our check and our commit.
        digest = origin.digest or (hashing.result() if hashing is not None else None)
        with store.connect() as connection:
            existing = find_run(connection, digest) if digest else None
        if existing is None:
            # Not a race: the trace itself broke a constraint (a NULL start time, a
            # duplicated id): the file is damaged, and nothing of it was stored.
            raise InputError(f"{display}: trace has records tracekit cannot store "
                             f"({str(exc.orig).splitlines()[0]})",
                             hint="the file is damaged or was edited; export it again"
                             ) from None
        return IngestResult(existing, True, spec.id)
    except READER_SLIPS as exc:
        raise UnexpectedContent(
            f"{display}: cannot read trace: unexpected content "
            f"({type(exc).__name__}: {str(exc)[:200]})",
            hint="the file may be damaged; if it opens in its own tool, please report "
                 "this to tracekit") from exc
    except Exception as exc:
        # The store's own failures (disk full …) left ``store.begin`` as StoreError;
        # a database error still here is about what the trace asked the database to do.
        if not is_driver_error(exc):
            raise
        raise InputError(f"{display}: cannot read trace ({first_line(exc)})") from None
    return IngestResult(int(run_id), False, spec.id)


def _file_identities(info: SourceInfo, inputs: list[Path]) -> list[dict[str, Any]]:
    """What the reader said about each input file (an empty description for each when it
    said nothing, or when a conversion changed the number of files)."""
    said = info.files or []
    if len(said) != len(inputs):
        said = [{} for _ in inputs]
    return [dict(entry) for entry in said]


def _with_clock(meta_json: str | None, files: list[dict[str, Any]]) -> str | None:
    """The run's meta with ``clock_base_ns`` (UTC ns of its stored time 0) when the single
    input file told it."""
    clock = files[0].get("clock_base_ns") if len(files) == 1 else None
    if clock is None:
        return meta_json
    meta = json.loads(meta_json) if meta_json else {}
    meta["clock_base_ns"] = clock
    return json.dumps(meta, sort_keys=True, default=str)


def _write_run_files(connection: Connection, run_id: int, format_id: str,
                     inputs: list[Path], files: list[dict[str, Any]], counts: dict[str, int],
                     digest: str | None) -> None:
    """One ``run_files`` row per input file, as the reader described it."""
    rows = []
    for index, (path, said) in enumerate(zip(inputs, files, strict=True)):
        own = said.get("counts") or (counts if len(inputs) == 1 else None)
        rows.append({
            "run_id": run_id, "file_index": index, "name": path.name,
            "path": str(path.absolute()), "sha256": digest if len(inputs) == 1 else None,
            "size_bytes": path.stat().st_size, "format": format_id,
            "host": said.get("host"), "job": said.get("job"), "trace_rank": said.get("rank"),
            "world_size": said.get("world_size"), "gpus": said.get("gpus"),
            "time_offset_ns": 0, "id_shift": 0,
            "counts_json": json.dumps(own, sort_keys=True) if own is not None else None})
    connection.execute(insert(RunFileRow), rows)
