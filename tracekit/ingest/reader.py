"""The contract between the ingest pipeline and a format reader.

A reader is a module in ``tracekit.ingest.readers`` with a function
``ingest(ctx: IngestContext) -> SourceInfo``. It writes rows for ``ctx.run_id`` through
``ctx.connection`` (an open transaction) and never commits: the pipeline does, so a
failure anywhere leaves no partial run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Connection

from tracekit.ingest.bulk import BulkCopier
from tracekit.ingest.side import SideWork
from tracekit.ingest.spec import FormatSpec


class StepAttribution(Protocol):
    """Optional: attribute kernels to engine steps while copying them (one pass, no UPDATE).

    Implemented by ``tracekit.phases.ingest_time.IngestTimeSteps`` and handed over by the
    analysis pipeline, which gives the same object to the phases stage afterwards: it records
    what was done. Readers that copy kernels with one INSERT … SELECT may use it: when
    ``prepare`` returns True they must select ``join``'s columns for every kernel.
    """

    @property
    def lookup_table(self) -> str: ...
    @property
    def lookup_columns(self) -> tuple[str, ...]: ...

    def prefilters(self) -> list[str]: ...
    def prepare(self, connection: Connection, run_id: int,
                candidates: list[str] | None = None) -> bool: ...
    def lookup_rows(self, connection: Connection) -> list[tuple[Any, ...]]: ...
    def join(self, tid: str, start: str, end: str) -> tuple[str, tuple[str, str]]: ...
    def finish(self, connection: Connection) -> None: ...


@dataclass
class IngestContext:
    """Everything a reader needs to copy one input into the store."""

    connection: Connection
    run_id: int
    spec: FormatSpec
    paths: list[Path]
    display_name: str
    allow_no_kernels: bool = False
    copier: BulkCopier = field(default=None)  # type: ignore[assignment]  # SQLite sources only
    step_attribution: StepAttribution | None = None
    #: a second connection on the source, for reads beside the copy (SQLite sources, when
    #: the caller asked for it; ``tracekit.ingest.side``)
    side: SideWork | None = None
    #: keep several files as one run even when they are not one job (``--one-run``)
    one_run: bool = False
    #: processes a reader may parse one big file with (None: the machine's cores; 1: none)
    jobs: int | None = None


@dataclass
class SourceInfo:
    """What a reader learned about the producer, written onto the run row."""

    producer: str | None = None
    producer_version: str | None = None
    schema_version: str | None = None
    meta_json: str | None = None
    #: record counts the reader knows (``tracekit.store.counts``); the rest are counted
    counts: dict[str, int] | None = None
    #: what each input file says about where it was recorded, in ``ctx.paths`` order: its
    #: ``host``, ``job``, distributed ``rank`` and ``world_size``, and ``clock_base_ns``, the
    #: UTC ns of its stored time 0 (any of them None when the file does not say); readers of
    #: several files may add the file's own ``counts`` (``tracekit.ingest.jobs``)
    files: list[dict[str, Any]] | None = None
