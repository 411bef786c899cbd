"""What the user passed, as the trace files to read: folders as users have them.

A folder stands for the trace files inside it (the ranks of one job, typically). Folders
hold other things too — a ``config.json`` beside the traces, a README, an engine log — so
a file in a folder that is no trace tracekit knows is skipped, and one warning names the
skipped files; a file passed by name must be a trace (a typo should not pass silently).

Two kinds of folder are read specially:

- a ``tracekit audit`` run folder (it holds ``run.json`` with ``tracekit_run``): its
  traces are the ones the record lists (or, when it lists none, the traces in the folder),
  its ``engine.log`` is the run's engine log (as ``--log``), and the record's engine and
  requested GPU are the analysis' engine and ``--gpu`` unless the user gave them;
- a report next to its own export (``NAME.nsys-rep`` and ``NAME.sqlite``, ``NAME.qdstrm``
  and ``NAME.nsys-rep``): the same capture twice; the export is read, the report skipped.

Every file is detected by its content once, here; files of different formats are refused
(a trace and its own Nsight Compute details are two analyses).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.errors import InputError, UnknownFormat
from tracekit.ingest.detect import detect_file
from tracekit.ingest.spec import FormatSpec

#: the files a ``tracekit audit`` run folder holds besides its traces
#: (``tracekit.capture.lifecycle``: RECORD_NAME, LOG_NAME)
AUDIT_RECORD = "run.json"
AUDIT_LOG = "engine.log"
#: a report and the file made from it, by spec id: (container, its conversion)
CONVERSIONS = (("nsys-rep", "nsys-sqlite"), ("qdstrm", "nsys-rep"))
#: how many skipped names a warning lists before "and N more"
LISTED = 5


@dataclass
class InputSet:
    """The trace files of one analysis, detected, and what else the inputs told."""

    files: list[Path]
    specs: list[FormatSpec]
    #: warnings for the user: skipped files, reports read through their export
    notes: list[str] = field(default_factory=list)
    #: engine logs found beside the traces (an audit run folder's engine.log)
    logs: list[Path] = field(default_factory=list)
    #: an audit run folder's run.json
    record: dict[str, Any] | None = None

    @property
    def spec(self) -> FormatSpec:
        """The one format of every file (``gather_inputs`` refused mixed formats)."""
        return self.specs[0]


def gather_inputs(inputs: Sequence[Path]) -> InputSet:
    """The trace files ``inputs`` stand for, each detected; InputError when there are none,
    when a file passed by name is not a trace, or when formats are mixed."""
    if not inputs:
        raise InputError("no input files", hint="pass a trace file or a folder of traces")
    files: list[Path] = []
    specs: list[FormatSpec] = []
    gathered = InputSet(files, specs)
    for path in inputs:
        if not path.exists() and not path.is_symlink():
            raise InputError(f"{path}: no such file")
        if path.is_dir():
            _folder(path, gathered)
        else:
            files.append(path)
            specs.append(detect_file(path))
    _refuse_mixed(gathered)
    return gathered


def _folder(folder: Path, gathered: InputSet) -> None:
    record = _audit_record(folder)
    if record is not None:
        _audit_folder(folder, record, gathered)
        return
    inside = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    found: list[tuple[Path, FormatSpec]] = []
    skipped: list[Path] = []
    for path in inside:
        try:
            found.append((path, detect_file(path)))
        except UnknownFormat:
            skipped.append(path)
    found = _without_converted_twins(found, gathered.notes)
    if not found:
        what = f" (it holds {_names(skipped)})" if skipped else ""
        raise InputError(f"{folder}: directory holds no trace files{what}",
                         hint="pass the folder of the trace files, or the files themselves")
    if skipped:
        gathered.notes.append(
            f"{folder}: skipped {len(skipped)} file(s) that are not traces: {_names(skipped)}")
    for path, spec in found:
        gathered.files.append(path)
        gathered.specs.append(spec)


def _audit_record(folder: Path) -> dict[str, Any] | None:
    """The folder's run.json when it is a ``tracekit audit`` run folder."""
    path = folder / AUDIT_RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "tracekit_run" in record else None


def _audit_folder(folder: Path, record: dict[str, Any], gathered: InputSet) -> None:
    """The traces an audit recorded (found by name when the folder has moved since)."""
    gathered.record = record
    listed = [Path(str(trace)) for trace in record.get("traces") or []]
    traces = [trace if trace.exists() else folder / trace.name for trace in listed]
    traces = [trace for trace in traces if trace.is_file()]
    if not traces:
        candidates = sorted(p for p in folder.iterdir() if p.is_file()
                            and p.name not in (AUDIT_RECORD, AUDIT_LOG)
                            and not p.name.startswith(".") and not p.name.endswith(".partial"))
        for path in candidates:
            try:
                gathered.specs.append(detect_file(path))
            except UnknownFormat:
                continue
            gathered.files.append(path)
        if not gathered.files:
            raise InputError(f"{folder}: this tracekit audit run captured no trace "
                             f"(status {record.get('status', 'unknown')})",
                             hint=f"see {folder / AUDIT_LOG}")
    else:
        # One report per capture window (repeat): the first, as `tracekit audit` analyzes it.
        if len(traces) > 1:
            gathered.notes.append(
                f"{folder}: {len(traces)} capture windows; analyzing {traces[0].name} "
                f"(pass the others by name: {_names(traces[1:])})")
        gathered.files.append(traces[0])
        gathered.specs.append(detect_file(traces[0]))
    log = folder / AUDIT_LOG
    if log.is_file():
        gathered.logs.append(log)


def _without_converted_twins(found: list[tuple[Path, FormatSpec]], notes: list[str]
                             ) -> list[tuple[Path, FormatSpec]]:
    """Drop a report whose export (same name stem) is in the same folder: one capture."""
    by_stem = {(path.name.rsplit(".", 1)[0], spec.id): path for path, spec in found}
    dropped: set[Path] = set()
    for container, converted in CONVERSIONS:
        for (stem, spec_id), path in by_stem.items():
            twin = by_stem.get((stem, converted))
            if spec_id == container and twin is not None:
                dropped.add(path)
                notes.append(f"{path}: read through its export {twin.name} (the same capture)")
    return [(path, spec) for path, spec in found if path not in dropped]


def _refuse_mixed(gathered: InputSet) -> None:
    ids = sorted({spec.id for spec in gathered.specs})
    if len(ids) > 1:
        by_format = {spec_id: [f for f, s in zip(gathered.files, gathered.specs, strict=True)
                               if s.id == spec_id] for spec_id in ids}
        listing = "; ".join(f"{spec_id}: {_names(paths)}" for spec_id, paths in by_format.items())
        raise InputError(
            f"files of different formats cannot form one run ({listing})",
            hint="analyze each format with its own `tracekit analyze`")


def _names(paths: Sequence[Path]) -> str:
    names = [path.name for path in paths[:LISTED]]
    more = f" and {len(paths) - LISTED} more" if len(paths) > LISTED else ""
    return ", ".join(names) + more
