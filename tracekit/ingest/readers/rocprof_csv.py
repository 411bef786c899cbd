"""Read rocprofv3's CSV outputs (``--output-format csv``, ``rocpd convert``) into the store.

rocprofv3 writes one CSV per kind of record and process: ``<pid>_kernel_trace.csv``,
``<pid>_hip_api_trace.csv``, ``<pid>_marker_api_trace.csv``, ``<pid>_agent_info.csv`` …
(``rocpd convert`` names them ``out_…`` and adds a ``Guid`` column that tells processes
apart inside one file). A run is a folder (or a list) of them. The role of a file is its
name's ending (the spec's ``[files]``); files of other roles (statistics, HSA calls, counters)
are counted and skipped. Files sharing a prefix (``908_``) are one process, and so are the
rows of one ``Guid``: correlation ids link a dispatch to its HIP launch within it.

Columns are found by header name (``[columns.*]`` lists every spelling the releases used),
so all four kernel-trace header generations read the same way (docs/formats.md#rocprofv3-csv).
Each file is parsed by pandas' C parser a chunk at a time, columns converted vectorized,
and staged in the temporary tables of ``trace_rows`` like every trace reader's rows.

What CSV cannot say: kernel symbols' short and mangled names, a ROCTx record's operation (a
record whose start equals its end is taken as a mark, every other as a push/pop range), the
size of a memory copy. ``Agent_Id`` is an agent's node id (0.3/0.4), ``Agent N`` (its
absolute or logical node id) or ``GPU N`` (the GPU ordinal); with ``agent_info.csv`` beside
the traces a node id becomes the GPU ordinal, as in the other formats; without it the number
is stored as written.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tracekit.errors import InputError
from tracekit.ingest.bulk import CHUNK_ROWS
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.readers.rocprof_common import DEVICE_COLUMNS, device_row
from tracekit.ingest.spec import RocprofCsvMapping
from tracekit.ingest.staging import write_rows
from tracekit.ingest.trace_rows import FileState, TraceRows

#: read in this order: agents before the records naming them, launches before kernels
ROLES = ("agent_info", "hip_api", "marker_api", "kernel", "memory_copy")
#: ``Agent N`` / ``GPU N`` / ``N``
_AGENT = re.compile(r"^\s*(?:(?P<kind>[A-Za-z]+)\s+)?(?P<number>-?\d+)\s*$")


@dataclass
class Agents:
    """One process's agents from its agent_info.csv: how an Agent_Id becomes a GPU ordinal."""

    by_node: dict[int, int] = field(default_factory=dict)
    by_logical: dict[int, int] = field(default_factory=dict)
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)  # ordinal -> agent


@dataclass
class Group:
    """The files of one prefix: one process (or several, told apart by Guid)."""

    prefix: str
    files: dict[str, list[Path]] = field(default_factory=dict)
    agents: Agents = field(default_factory=Agents)


class RocprofCsvReader(TraceRows):
    """Stages the rows of every rocprofv3 CSV of a run."""

    kernel_threads = True

    def __init__(self, ctx: IngestContext) -> None:
        super().__init__(ctx)
        self.mapping: RocprofCsvMapping = ctx.spec.mapping
        self.skipped: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.states: dict[tuple[str, str], FileState] = {}
        self.groups: dict[str, Group] = {}

    # -- files -----------------------------------------------------------------------------

    def role(self, path: Path) -> tuple[str | None, str]:
        """(role, prefix) of a file from its name; role None for files of other kinds."""
        name = path.name
        for role in ROLES:
            for ending in getattr(self.mapping.files, role):
                if name.endswith(ending):
                    return role, name[:-len(ending)].rstrip("_")
        return None, name

    def read_all(self, paths: list[Path]) -> None:
        for path in paths:
            role, prefix = self.role(path)
            if role is None:
                self.skipped[path.name] += 1
                continue
            group = self.groups.setdefault(prefix, Group(prefix))
            group.files.setdefault(role, []).append(path)
        for group in self.groups.values():
            for role in ROLES:
                for path in group.files.get(role, []):
                    getattr(self, f"_{role}")(group, path)

    def state(self, group: Group, guid: str) -> FileState:
        """The FileState of one process: a file prefix, or one Guid within it."""
        key = (group.prefix, guid)
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = FileState(len(self.files), Path(group.prefix or "."))
            state.header = {"prefix": group.prefix, "guid": guid or None}
            if group.prefix.isdigit():  # rocprofv3 names the files after the process id
                state.cpu_pids[int(group.prefix)] += 1
            self.files.append(state)
        return state

    def chunks(self, path: Path, role: str) -> Iterator[dict[str, pd.Series]]:
        """The file's rows a chunk at a time, as one Series per store field of ``role``."""
        candidates = self.mapping.columns.get(role, {})
        try:
            reader = pd.read_csv(path, chunksize=CHUNK_ROWS, dtype=str, keep_default_na=False,
                                 na_filter=False, skipinitialspace=True, engine="c")
            for frame in reader:
                found = {str(column).strip().lower(): column for column in frame.columns}
                columns: dict[str, pd.Series] = {}
                for target, names in candidates.items():
                    spelled = next((found[name.lower()] for name in names
                                    if name.lower() in found), None)
                    if spelled is not None:
                        columns[target] = frame[spelled]
                columns["_rows"] = pd.Series(np.arange(len(frame)))
                yield columns
        except pd.errors.EmptyDataError:
            return
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"{path}: CSV cannot be read ({str(exc).splitlines()[0][:160]})",
                             hint="the file is damaged or was cut off; record it again"
                             ) from None

    def _require(self, path: Path, chunk: dict[str, pd.Series], *fields: str) -> None:
        missing = [name for name in fields if name not in chunk]
        if missing:
            role, _ = self.role(path)
            spelled = [self.mapping.columns[role or ""][name][0] for name in missing]
            raise InputError(f"{path}: CSV has no {', '.join(spelled)} column",
                             hint="is it a rocprofv3 trace file? its header is not one "
                                  "rocprofv3 writes")

    # -- roles ------------------------------------------------------------------------------

    def _agent_info(self, group: Group, path: Path) -> None:
        for chunk in self.chunks(path, "agent_info"):
            self._require(path, chunk, "node", "type")
            gpus = chunk["type"].str.upper() == "GPU"
            nodes = _ints(path, chunk["node"])
            logical = _ints(path, chunk["logical"]) if "logical" in chunk else nodes
            for position in np.flatnonzero(gpus.to_numpy()):
                ordinal = len(group.agents.rows)
                node, log = nodes[position], logical[position]
                if node is not None:
                    group.agents.by_node[node] = ordinal
                if log is not None:
                    group.agents.by_logical[log] = ordinal
                group.agents.rows[ordinal] = {
                    target: chunk[target].iloc[position] for target in chunk if target != "_rows"}

    def _devices(self, path: Path, group: Group, agents: pd.Series) -> list[int | None]:
        """Agent_Id values → GPU ordinals (see the module docstring)."""
        mapping: dict[str, int | None] = {}
        for value in agents.unique():
            found = _AGENT.match(str(value))
            if found is None:
                raise InputError(f"{path}: Agent_Id {str(value)[:40]!r} is not an agent",
                                 hint="the file is damaged or was edited")
            kind, number = (found.group("kind") or "").upper(), int(found.group("number"))
            known = group.agents
            if kind == "GPU" or not (known.by_node or known.by_logical):
                mapping[value] = number
            elif kind == "AGENT":  # the default --agent-index is relative (logical node id)
                mapping[value] = known.by_logical.get(number, known.by_node.get(number, number))
            else:  # 0.3/0.4 printed the node id
                mapping[value] = known.by_node.get(number, known.by_logical.get(number, number))
        return [mapping[value] for value in agents]

    def _guid_states(self, group: Group, chunk: dict[str, pd.Series]) -> list[FileState]:
        guids = chunk["guid"] if "guid" in chunk else pd.Series([""] * len(chunk["_rows"]))
        states = {guid: self.state(group, guid) for guid in guids.unique()}
        return [states[guid] for guid in guids]

    def _kernel(self, group: Group, path: Path) -> None:
        for chunk in self.chunks(path, "kernel"):
            self._require(path, chunk, "name", "start", "end", "agent")
            count = len(chunk["_rows"])
            self.counts["kernel_trace"] += count
            states = self._guid_states(group, chunk)
            keys = {name: self.kernel_key(name or "<unnamed kernel>")
                    for name in chunk["name"].unique()}
            names = chunk["name"].map(keys).tolist()
            devices = self._devices(path, group, chunk["agent"])
            column: dict[str, list[int | None]] = {
                name: _ints(path, chunk[name]) if name in chunk else [None] * count
                for name in ("stream", "queue", "thread", "correlation", "start", "end",
                             "lds", "vgprs", "workgroup_x", "workgroup_y", "workgroup_z",
                             "grid_x", "grid_y", "grid_z")}
            _no_gaps(path, column["start"], "Start_Timestamp")
            _no_gaps(path, column["end"], "End_Timestamp")
            streams = [s if s is not None else q for s, q in
                       zip(column["stream"], column["queue"], strict=True)]
            grids = [_blocks(column[f"grid_{axis}"], column[f"workgroup_{axis}"])
                     for axis in "xyz"]
            indexes = [state.index for state in states]
            for index, device in set(zip(indexes, devices, strict=True)):
                if device is not None:
                    self.files[index].devices_seen.add(device)
            for index, tid in set(zip(indexes, column["thread"], strict=True)):
                self.thread(self.files[index].main_pid, tid)
            self.stage["tk_kernel"].extend(list(zip(
                indexes, names, devices, streams, column["start"],
                column["end"], *grids, column["workgroup_x"], column["workgroup_y"],
                column["workgroup_z"], column["vgprs"], [None] * count, column["lds"],
                column["correlation"], [None] * count, [None] * count, [None] * count,
                column["thread"], strict=True)))

    def _api_rows(self, group: Group, path: Path, kinds: set[str], counter: str
                  ) -> Iterator[tuple[list[FileState], dict[str, Any], np.ndarray]]:
        """Chunks of an API-shaped file: states, converted columns, the rows to keep."""
        for chunk in self.chunks(path, "api"):
            self._require(path, chunk, "domain", "function", "start", "end")
            self.counts[counter] += len(chunk["_rows"])
            keep = chunk["domain"].isin(kinds).to_numpy()
            self.counts[f"{counter}_other"] += int((~keep).sum())
            states = self._guid_states(group, chunk)
            columns: dict[str, Any] = {
                name: _ints(path, chunk[name]) if name in chunk else [None] * len(keep)
                for name in ("pid", "thread", "correlation", "start", "end")}
            _no_gaps(path, columns["start"], "Start_Timestamp")
            _no_gaps(path, columns["end"], "End_Timestamp")
            columns["function"] = chunk["function"].tolist()
            yield states, columns, keep

    def _hip_api(self, group: Group, path: Path) -> None:
        for states, c, keep in self._api_rows(group, path, set(self.mapping.hip_kinds),
                                              "hip_api_trace"):
            rows = []
            for i in np.flatnonzero(keep):
                state, pid, tid = states[i], c["pid"][i], c["thread"][i]
                if pid is not None:
                    state.runtime_pids[pid] += 1
                rows.append((state.index, self.api_key(c["function"][i]), "runtime",
                             c["start"][i], c["end"][i], c["correlation"][i], tid, pid))
            for _, _, _, _, _, _, tid, pid in set(rows):
                self.thread(pid, tid)
            self.stage["tk_runtime"].extend(rows)

    def _marker_api(self, group: Group, path: Path) -> None:
        for states, c, keep in self._api_rows(group, path, set(self.mapping.marker_kinds),
                                              "marker_api_trace"):
            rows = []
            for i in np.flatnonzero(keep):
                start, end = c["start"][i], c["end"][i]
                rows.append((states[i].index, "mark" if start == end else "push_pop", start, end,
                             c["function"][i], None, c["thread"][i], c["pid"][i]))
            for row in rows:
                self.thread(row[7], row[6])
            self.stage["tk_range"].extend(rows)

    def _memory_copy(self, group: Group, path: Path) -> None:
        for chunk in self.chunks(path, "memory_copy"):
            self._require(path, chunk, "start", "end")
            count = len(chunk["_rows"])
            self.counts["memory_copy_trace"] += count
            states = self._guid_states(group, chunk)
            devices = (self._devices(path, group, chunk["destination"])
                       if "destination" in chunk else [None] * count)
            column = {name: _ints(path, chunk[name]) if name in chunk else [None] * count
                      for name in ("stream", "correlation", "start", "end")}
            self.stage["tk_memory"].extend(list(zip(
                [state.index for state in states], ["memcpy"] * count, devices,
                column["stream"], column["start"], column["end"], [None] * count,
                column["correlation"], strict=True)))

    # -- finishing ----------------------------------------------------------------------------

    def _write_devices(self) -> None:
        rows: dict[tuple[int, int | None], tuple[Any, ...]] = {}
        for (prefix, _guid), state in self.states.items():
            agents = self.groups[prefix].agents.rows
            for index in sorted(state.devices_seen):
                agent = agents.get(index, {})
                rows.setdefault((index, state.main_pid), device_row(
                    self.ctx.run_id, index, state.main_pid, name=agent.get("name"),
                    product=agent.get("product"),
                    target_version=_int(agent.get("target_version")),
                    cu_count=_int(agent.get("cu_count")), memory_bytes=None, uuid=None))
        write_rows(self.connection, "devices", DEVICE_COLUMNS, list(rows.values()))


def _int(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _ints(path: Path, series: pd.Series) -> list[int | None]:
    """A column of integers (empty cells None); text that is no integer is refused."""
    text = series.str.strip()
    empty = text == ""
    numbers = pd.to_numeric(text.where(~empty, "0"), errors="coerce")
    if numbers.isna().any():
        bad = text[numbers.isna()].iloc[0]
        raise InputError(f"{path}: {series.name} holds {str(bad)[:40]!r}, not a number",
                         hint="the file is damaged or was edited")
    if numbers.dtype.kind != "i":  # floats or uint64 beyond int64: exact text, checked
        values = []
        for value in text:
            try:
                number = int(value) if value else None
            except ValueError:
                raise InputError(f"{path}: {series.name} holds {value[:40]!r}, not an integer",
                                 hint="the file is damaged or was edited") from None
            values.append(number)
        return values
    values = numbers.tolist()
    if empty.any():
        return [None if gap else value for value, gap in zip(values, empty, strict=True)]
    return values


def _no_gaps(path: Path, values: list[int | None], column: str) -> None:
    if None in values:
        raise InputError(f"{path}: a row has no {column}",
                         hint="the file is damaged or was cut off; record it again")


def _blocks(grid: list[int | None], workgroup: list[int | None]) -> list[int | None]:
    """Work-items → workgroups per axis (rocprof_common.workgroups, for a column)."""
    return [g if g is None or not w else -(-g // w) for g, w in zip(grid, workgroup, strict=True)]


def ingest(ctx: IngestContext) -> SourceInfo:
    """Read every rocprofv3 CSV of the run into the store under ``ctx.run_id``."""
    reader = RocprofCsvReader(ctx)
    reader.read_all(ctx.paths)
    if not reader.counts["kernel_trace"] and not ctx.allow_no_kernels:
        raise InputError(f"{ctx.display_name}: no kernel_trace.csv with dispatches among the "
                         "rocprofv3 CSV files",
                         hint="record with `rocprofv3 --kernel-trace --output-format csv`")
    if not reader.files:
        reader.state(Group(""), "")
    meta = reader.finish()
    meta.update(records=dict(reader.counts), skipped_files=dict(reader.skipped),
                processes=[state.header for state in reader.files])
    return SourceInfo(producer="rocprofv3", schema_version="csv",
                      meta_json=json.dumps(meta, sort_keys=True, default=str))
