"""The contract between the ingest pipeline and a format reader.

A reader is a module in ``tracekit.ingest.readers`` with a function
``ingest(ctx: IngestContext) -> SourceInfo``. It writes rows for ``ctx.run_id`` through
``ctx.connection`` (an open transaction) and never commits: the pipeline does, so a
failure anywhere leaves no partial run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection

from tracekit.ingest.bulk import BulkCopier
from tracekit.ingest.spec import FormatSpec


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


@dataclass
class SourceInfo:
    """What a reader learned about the producer, written onto the run row."""

    producer: str | None = None
    producer_version: str | None = None
    schema_version: str | None = None
    meta_json: str | None = None
