"""Read Nsight Compute results (CSV, or ``.ncu-rep`` through the installed ncu) into the store.

Counters are the strongest evidence tracekit has: ``sm__ops_path_tensor_src_fp8.sum`` counts
what the tensor pipe multiplied, whatever the kernel name says. So every metric of every
profiled launch is kept, under its ncu name, in ``kernel_metrics`` (long format: one row per
launch × metric), and each launch also becomes a ``kernels`` row so counts and durations flow
through the same reports as nsys and torch runs.

Both CSV pages are read, across ncu versions (``parsers/ncu-csv.toml`` lists the columns):
- details (long): identity columns + Section/Metric Name/Unit/Value (+ rule columns);
- raw (wide): identity columns + one column per metric, optionally a units row.
Several files form one run; ``launch_index`` numbers launches across the run in file order.
The same launch in two files (``ncu … --page details`` and a ``--metrics`` export of one
session write the same identity cells: ID, process, host, kernel, context, stream, grid,
block, device) is one launch: its metrics are united, a metric both files give is kept
once (the first file's value; differing values are counted in the meta), so 6 launches
in 12 files stay 6 launches.

ncu replays launches one at a time, so a result has durations but no timeline: start times
are synthetic (launches back to back in file order), ``end - start`` is the measured
``gpu__time_duration``. The run's meta says so (``synthetic_times``).
"""

from __future__ import annotations

import csv
import json
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tracekit import progress
from tracekit.errors import InputError
from tracekit.ingest.convert import ncu_rep_to_csv
from tracekit.ingest.jobs import HINT, FileIdentity, refusal
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.spec import NcuCsvMapping
from tracekit.ingest.staging import StageTable, write_rows

_TUPLE = re.compile(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?$")

STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "tk_ncu_kernel": tuple((c, "BIGINT") for c in (
        "launch_index", "name_key", "device", "stream", "start_ns", "end_ns", "grid_x",
        "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers", "static_smem",
        "dynamic_smem", "pid")),
    "tk_ncu_metric": (("launch_index", "BIGINT"), ("name_key", "BIGINT"), ("metric", "TEXT"),
                      ("unit", "TEXT"), ("value", "DOUBLE PRECISION"), ("text_value", "TEXT")),
}


def parse_value(raw: str) -> tuple[float | None, str | None]:
    """A metric cell as (number, None), or (None, text) for ``n/a`` and other text."""
    cell = raw.strip()
    if not cell:
        return None, None
    try:
        return float(cell.replace(",", "")), None
    except ValueError:
        return None, cell


def _int(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        return int(raw.strip().replace(",", ""))
    except ValueError:
        return None


def _triple(raw: str | None) -> tuple[int | None, int | None, int | None]:
    found = _TUPLE.match(raw.strip()) if raw else None
    if not found:
        return None, None, None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


@dataclass
class Launch:
    """One profiled kernel launch: its identity cells and its metrics."""

    identity: dict[str, str]
    metrics: list[tuple[str, str | None, float | None, str | None]] = field(default_factory=list)

    def first(self, names: Sequence[str]) -> tuple[str | None, float | None, str | None] | None:
        """(unit, value, text) of the first metric in ``names`` that has a value."""
        for wanted in names:
            for metric, unit, value, text_value in self.metrics:
                if metric == wanted and (value is not None or text_value is not None):
                    return unit, value, text_value
        return None


class NcuReader:
    """Reads ncu CSV files of one run and stages their rows."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.spec: NcuCsvMapping = ctx.spec.mapping
        columns = self.spec.columns
        self.identity = set(columns.identity)
        self.nvtx_prefixes = columns.nvtx_prefixes
        self.stage = {name: StageTable(ctx.connection, name, cols)
                      for name, cols in STAGES.items()}
        self.names: dict[str, int] = {}
        self.processes: dict[int, str] = {}
        self.devices: dict[tuple[int, int | None], tuple[Any, ...]] = {}
        self.launches = 0
        self.clock_ns = 0
        self.layouts: set[str] = set()
        self.missing_duration = 0
        #: launch identity (its identity cells) → (launch index, name key, its metrics)
        self.seen: dict[tuple[tuple[str, str], ...],
                        tuple[int, int, dict[str, tuple[float | None, str | None]]]] = {}
        self.repeated_launches = 0
        self.conflicting_metrics = 0
        #: per file read: its name, the launches it added, the GPUs they ran on
        self.file_counts: list[dict[str, Any]] = []
        self._file_gpus: set[str] = set()

    # -- parsing ------------------------------------------------------------------------

    def read(self, display: Path, path: Path) -> None:
        """Stage every launch of one CSV file."""
        before, repeated_before = self.launches, self.repeated_launches
        self._file_gpus = set()
        self._read(display, path)
        self.file_counts.append({
            "name": display.name, "gpus": "; ".join(sorted(self._file_gpus)) or None,
            "counts": {"kernels": self.launches - before,
                       "repeated_launches": self.repeated_launches - repeated_before}})

    def _read(self, display: Path, path: Path) -> None:
        try:
            with path.open(encoding="utf-8-sig", errors="replace", newline="") as stream:
                rows = csv.reader(line for line in stream if not line.startswith("=="))
                header = next(rows, None)
                if not header or header[:2] != ["ID", "Process ID"] or "Kernel Name" not in header:
                    raise InputError(f"{display}: not an Nsight Compute CSV (header "
                                     f"{','.join(header or [])[:80]!r})",
                                     hint="export with `ncu --csv --page details` or "
                                          "`--page raw`")
                columns = self.spec.columns
                if columns.metric in header and columns.value in header:
                    self.layouts.add("details")
                    launches = self._details(header, rows)
                else:
                    self.layouts.add("raw")
                    launches = self._raw(header, rows)
                with progress.task(f"reading {path.name}", total=path.stat().st_size,
                                   unit="bytes") as task:
                    for launch in launches:  # a launch is hundreds of metric rows
                        self._stage(launch)
                        task.update(progress.file_position(stream))
        except csv.Error as exc:
            raise InputError(f"{display}: malformed CSV ({exc})") from None
        except UnicodeDecodeError:
            raise InputError(f"{display}: not a text CSV file") from None

    def _details(self, header: list[str], rows: Iterator[list[str]]) -> Iterator[Launch]:
        columns = self.spec.columns
        index = {name: position for position, name in enumerate(header)}
        ident = [(name, index[name]) for name in header if name in self.identity]
        missing = [name for name in (columns.metric, columns.value) if name not in index]
        if missing:
            raise InputError(f"ncu details CSV has no {' or '.join(map(repr, missing))} column",
                             hint="export with `ncu --import FILE --csv --page details`")
        metric_at, value_at = index[columns.metric], index[columns.value]
        # Some exports drop the unit column; values are then stored without a unit.
        unit_at = index.get(columns.unit)
        current: Launch | None = None
        current_key: tuple[str, ...] | None = None
        for row in rows:
            if len(row) <= value_at:
                continue
            key = tuple(row[position] for _, position in ident)
            if current is None or key != current_key:
                if current is not None:
                    yield current
                current = Launch({name: row[position] for name, position in ident})
                current_key = key
            metric = row[metric_at].strip()
            if not metric:
                continue  # rule rows and section markers
            value, text_value = parse_value(row[value_at])
            if value is None and text_value is None:
                continue
            unit = row[unit_at].strip() or None if unit_at is not None else None
            current.metrics.append((metric, unit, value, text_value))
        if current is not None:
            yield current

    def _raw(self, header: list[str], rows: Iterator[list[str]]) -> Iterator[Launch]:
        ident = [(name, position) for position, name in enumerate(header)
                 if name in self.identity]
        metric_columns = [(name, position) for position, name in enumerate(header)
                          if name not in self.identity and not name.startswith(self.nvtx_prefixes)]
        nvtx_columns = [(name, position) for position, name in enumerate(header)
                        if name.startswith(self.nvtx_prefixes)]
        units: dict[str, str] = {}
        id_at = header.index("ID")
        for row in rows:
            if not row or len(row) < len(header):
                continue
            if not row[id_at].strip():  # the units row (ncu --print-units / default raw page)
                units = {name: row[position].strip() for name, position in metric_columns}
                continue
            launch = Launch({name: row[position] for name, position in ident})
            for name, position in metric_columns:
                value, text_value = parse_value(row[position])
                if value is not None or text_value is not None:
                    launch.metrics.append((name, units.get(name) or None, value, text_value))
            for name, position in nvtx_columns:
                if row[position].strip():
                    launch.metrics.append((name, None, None, row[position].strip()))
            yield launch

    # -- staging ------------------------------------------------------------------------

    def _stage(self, launch: Launch) -> None:
        identity = launch.identity
        launch_key = tuple(sorted((column, cell.strip()) for column, cell in identity.items()))
        if launch_key in self.seen:
            self._unite(launch, *self.seen[launch_key])
            return
        name = identity.get("Kernel Name") or "<unnamed kernel>"
        key = self.names.get(name)
        if key is None:
            key = self.names[name] = len(self.names)
        index = self.launches
        self.seen[launch_key] = (index, key, {metric: (value, text_value) for metric, _, value,
                                              text_value in launch.metrics})
        self.launches += 1
        wanted = self.spec.launch
        duration = self._duration(launch)
        start = self.clock_ns
        end = start + (duration or 0)
        self.clock_ns = end
        pid = _int(identity.get("Process ID"))
        device = _int(identity.get("Device"))
        if pid is not None:
            self.processes.setdefault(pid, identity.get("Process Name") or "")
        self._device(launch, device, pid)
        grid, block = _triple(identity.get("Grid Size")), _triple(identity.get("Block Size"))
        self.stage["tk_ncu_kernel"].add((
            index, key, device, _int(identity.get("Stream")), start, end, *grid, *block,
            self._integer(launch, wanted.registers),
            self._bytes(launch, wanted.static_smem),
            self._bytes(launch, wanted.dynamic_smem), pid))
        metric_stage = self.stage["tk_ncu_metric"]
        for metric, unit, value, text_value in launch.metrics:
            metric_stage.add((index, key, metric, unit, value, text_value))

    def _unite(self, launch: Launch, index: int, key: int,
               known: dict[str, tuple[float | None, str | None]]) -> None:
        """A launch already staged from another file: add the metrics it did not have."""
        self.repeated_launches += 1
        metric_stage = self.stage["tk_ncu_metric"]
        for metric, unit, value, text_value in launch.metrics:
            before = known.get(metric)
            if before is None:
                known[metric] = (value, text_value)
                metric_stage.add((index, key, metric, unit, value, text_value))
            elif before != (value, text_value):
                self.conflicting_metrics += 1

    def _duration(self, launch: Launch) -> int | None:
        found = launch.first(self.spec.launch.duration)
        factors = self.spec.time_units
        # Without a unit (a raw page without its units row) the scale is unknown: ncu
        # auto-scales to ns/us/ms per value. Counted in the meta, never guessed.
        if found is None or found[1] is None or found[0] not in factors:
            self.missing_duration += 1
            return None
        unit, value, _ = found
        return round(value * factors[unit])  # type: ignore[operator,index]

    def _integer(self, launch: Launch, names: Sequence[str]) -> int | None:
        found = launch.first(names)
        return int(found[1]) if found and found[1] is not None else None

    def _bytes(self, launch: Launch, names: Sequence[str]) -> int | None:
        found = launch.first(names)
        if not found or found[1] is None:
            return None
        factor = self.spec.byte_units.get(found[0] or "byte")
        return round(found[1] * factor) if factor is not None else None

    def _device(self, launch: Launch, device: int | None, pid: int | None) -> None:
        wanted = self.spec.launch
        named = launch.first(wanted.device_name)
        if named is not None and named[2]:
            self._file_gpus.add(named[2])
        if device is None or (device, pid) in self.devices:
            return
        capability = (launch.identity.get("CC") or "").strip()
        major = minor = None
        if re.fullmatch(r"\d+\.\d+", capability):
            major, minor = (int(part) for part in capability.split("."))
        name = launch.first(wanted.device_name)
        arch = f"sm{major}{minor}" if major is not None else None
        self.devices[(device, pid)] = (
            self.ctx.run_id, device, pid, name[2] if name else None, major, minor,
            self._integer(launch, wanted.sm_count), None, None, arch,
            "trace" if arch else None)

    # -- finishing ----------------------------------------------------------------------

    def finish(self) -> dict[str, Any]:
        """Move staged rows into the store; returns counts for the run's meta."""
        for table in self.stage.values():
            table.flush()
        run_id = self.ctx.run_id
        connection = self.ctx.connection
        write_rows(connection, "kernel_names", ("run_id", "source_key", "name"),
                   [(run_id, key, name) for name, key in self.names.items()])
        params = {"run_id": run_id}
        connection.execute(text(
            """INSERT INTO kernels (run_id, name_id, device, stream, start_ns, end_ns, grid_x,
                                    grid_y, grid_z, block_x, block_y, block_z, registers,
                                    static_smem, dynamic_smem, global_pid)
               SELECT :run_id, n.id, k.device, k.stream, k.start_ns, k.end_ns, k.grid_x,
                      k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers,
                      k.static_smem, k.dynamic_smem, k.pid
               FROM tk_ncu_kernel k
               JOIN kernel_names n ON n.run_id = :run_id AND n.source_key = k.name_key
               ORDER BY k.launch_index"""), params)
        connection.execute(text(
            """INSERT INTO kernel_metrics (run_id, name_id, launch_index, metric, unit, value,
                                           text_value)
               SELECT :run_id, n.id, m.launch_index, m.metric, m.unit, m.value, m.text_value
               FROM tk_ncu_metric m
               JOIN kernel_names n ON n.run_id = :run_id AND n.source_key = m.name_key"""),
            params)
        write_rows(connection, "processes", ("run_id", "global_pid", "pid", "name"),
                   [(run_id, pid, pid, name or None) for pid, name in self.processes.items()])
        write_rows(connection, "devices",
                   ("run_id", "device_index", "global_pid", "name", "compute_major",
                    "compute_minor", "sm_count", "memory_bytes", "uuid", "arch", "arch_source"),
                   list(self.devices.values()))
        counts = {"launches": self.launches, "metrics": self.stage["tk_ncu_metric"].count,
                  "kernel_names": len(self.names)}
        for table in self.stage.values():
            table.drop()
        return counts


def ingest(ctx: IngestContext) -> SourceInfo:
    """Read the run's ncu CSV files (converting .ncu-rep first) into the store."""
    reader = NcuReader(ctx)
    with tempfile.TemporaryDirectory(prefix="tracekit-ncu-") as scratch:
        for path in ctx.paths:
            readable = path
            if path.name.endswith(".ncu-rep"):
                readable = ncu_rep_to_csv(path, Path(scratch))
            reader.read(path, readable)
    if reader.launches == 0 and not ctx.allow_no_kernels:
        raise InputError(f"{ctx.display_name}: Nsight Compute CSV holds no profiled kernel",
                         hint="check the ncu filters (-k, --launch-skip, --launch-count)")
    if not ctx.one_run:
        reason = refusal([FileIdentity(name=str(entry["name"]),
                                       gpus=frozenset((entry["gpus"] or "").split("; ")) - {""})
                          for entry in reader.file_counts])
        if reason is not None:
            raise InputError(reason, hint=HINT)
    counts = reader.finish()
    meta = {
        "counts": counts,
        "layouts": sorted(reader.layouts),
        "synthetic_times": True,
        "launches_without_duration": reader.missing_duration,
        "launches_in_several_files": reader.repeated_launches,
        "conflicting_metrics": reader.conflicting_metrics,
    }
    return SourceInfo(files=reader.file_counts, producer="ncu", producer_version=None,
                      schema_version="+".join(sorted(reader.layouts)) or None,
                      meta_json=json.dumps(meta, sort_keys=True))
