"""The parts of a run (its files, read into scratch stores) taken into the store as one run.

One transaction takes every part (``tracekit.ingest.parts``): the run row, every record of
every file, the per-file rows of ``run_files``, the summed ``run_counts``; a failure leaves
nothing. Each file is placed in the run on the way in, in SQL:

- **names**: a kernel or API name is one row per run whatever the number of files that
  launched it (classification works once per name); a part's name ids are mapped to the
  run's through a small rowid-keyed table, one search per record;
- **time**: each file's stored times move onto the run's clock, ``time_offset_ns`` (its
  UTC base minus the run's; files without a wall clock keep theirs);
- **ids**: process and thread ids of different files must not meet (the phases stage
  attributes a kernel to the steps of its launching thread), so a file whose ids collide
  with those already in the run has all of them shifted by ``id_shift`` (a multiple of
  2^52: nsys packs the pid into bits 24–47 and a machine id above, Kineto ids are OS ids);
  External ids move by ``file · 2^40`` as the Kineto reader does for files of one run;
- **ops**: a part's CPU op ids move by the store's highest id, and its kernels'
  ``cpu_op_id`` with them (PostgreSQL: under a table lock, with the id sequence moved past
  them); devices recorded without a process become one row per process of that file that
  used them, so every (process, device) of the run names its GPU.

On a SQLite store each scratch is attached to the store connection and every copy is one
``INSERT … SELECT``; on PostgreSQL the same SELECT runs on a side SQLite connection and
streams into ``COPY`` (``tracekit.ingest.bulk``).

``--job NAME`` runs gather files over several ingests: the run of that job is found (or
made) under a lock (PostgreSQL: an advisory lock on the job's name; SQLite: the write lock),
the files it already holds are skipped, and the new ones are appended after them, so several
``analyze`` processes (hosts) adding their ranks at once end as one run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from tracekit.errors import InputError
from tracekit.ingest.bulk import BulkCopier, insert_rows
from tracekit.ingest.jobs import HINT, FileIdentity, refusal
from tracekit.ingest.parts import Part
from tracekit.ingest.trace_rows import EXTERNAL_STRIDE
from tracekit.store.counts import NAMES, run_counts
from tracekit.store.db import Store
from tracekit.store.sqlite_files import read_only_uri
from tracekit.version import __version__

#: process/thread ids of a colliding file move by a multiple of this
ID_SHIFT_UNIT = 1 << 52
#: the largest id a shifted id may reach (64-bit signed columns)
ID_LIMIT = (1 << 63) - 1
#: namespace of tracekit's advisory locks on a job's name (PostgreSQL)
JOB_LOCK_SPACE = 0x7472_6B6A  # "trkj"

KERNEL_COLUMNS = ("device", "stream", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
                  "block_z", "registers", "static_smem", "dynamic_smem", "correlation_id",
                  "graph_node_id", "graph_id")


@dataclass(frozen=True)
class MergeRequest:
    """What the run is: where it comes from and how the user asked for it."""

    source_path: str
    signature: str
    format: str
    label: str | None = None
    job: str | None = None
    one_run: bool = False


@dataclass(frozen=True)
class MergeResult:
    """The run the parts went into; ``existing`` when it already held all of them."""

    run_id: int
    existing: bool
    added: int = 0
    skipped: tuple[str, ...] = ()


def run_digest(parts: Sequence[Part]) -> str:
    """The content hash of a run of several files: the hash of its files' hashes and names
    (each worker hashed its own file, in parallel)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(f"{part.sha256}\t{part.path.name}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def job_digest(job: str) -> str:
    """``runs.sha256`` of a job's run (unique like a content hash; no file's hash)."""
    return "job-" + hashlib.sha256(job.encode("utf-8")).hexdigest()[:60]


class _AlreadyStored(Exception):
    def __init__(self, run_id: int) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def merge_parts(store: Store, parts: Sequence[Part], request: MergeRequest) -> MergeResult:
    """Take ``parts`` into the store as one run (or into the run of ``request.job``), in one
    transaction. Refuses parts that are not one job (unless ``one_run``), before writing."""
    if not request.one_run:
        reason = refusal([part.identity for part in parts], job=request.job)
        if reason is not None:
            raise InputError(reason, hint=HINT)
    digest = job_digest(request.job) if request.job else run_digest(parts)
    scratches = sorted({part.scratch for part in parts})
    aliases = {path: f"part{number}" for number, path in enumerate(scratches)}
    attach = ({alias: read_only_uri(path) for path, alias in aliases.items()}
              if store.is_sqlite else None)
    try:
        with store.begin(enforce_foreign_keys=False, attach=attach) as connection:
            if request.job:
                return _into_job(connection, store, parts, request, digest, aliases)
            existing = connection.execute(text("SELECT id FROM runs WHERE sha256 = :d"),
                                          {"d": digest}).scalar()
            if existing is not None:
                raise _AlreadyStored(int(existing))
            run_id = _insert_run(connection, request, digest, parts)
            placed = _Placement.fresh(parts)
            _merge_all(connection, store, run_id, parts, placed, aliases)
            return MergeResult(run_id, False, added=len(parts))
    except _AlreadyStored as stored:
        return MergeResult(stored.run_id, True)


def _into_job(connection: Connection, store: Store, parts: Sequence[Part],
              request: MergeRequest, digest: str, aliases: dict[Path, str]) -> MergeResult:
    """Append the parts that are new to the run of ``request.job`` (made when absent)."""
    job = str(request.job)
    if store.is_postgres:
        connection.execute(text("SELECT pg_advisory_xact_lock(:space, :key)"),
                           {"space": JOB_LOCK_SPACE,
                            "key": zlib.crc32(job.encode("utf-8")) - (1 << 31)})
    run_id = connection.execute(text("SELECT id FROM runs WHERE job = :job"),
                                {"job": job}).scalar()
    stored = _stored_files(connection, run_id) if run_id is not None else []
    known = {(row["sha256"], row["name"]) for row in stored}
    new = [part for part in parts if (part.sha256, part.path.name) not in known]
    skipped = tuple(part.path.name for part in parts if part not in new)
    if not new:
        if run_id is None:  # pragma: no cover - parts is never empty
            raise InputError(f"--job {job}: no files to add")
        return MergeResult(int(run_id), True, skipped=skipped)
    if not request.one_run:
        everyone = [_stored_identity(row) for row in stored] + [part.identity for part in new]
        reason = refusal(everyone, job=job)
        if reason is not None:
            raise InputError(f"--job {job}: {reason}", hint=HINT)
    if run_id is None:
        run_id = _insert_run(connection, request, digest, new)
        placed = _Placement.fresh(new)
    else:
        placed = _Placement.appended(connection, int(run_id), new, stored)
    _merge_all(connection, store, int(run_id), new, placed, aliases)
    return MergeResult(int(run_id), False, added=len(new), skipped=skipped)


@dataclass
class _Placement:
    """Where each part goes in the run: its file index, clock offset and id shift."""

    first_index: int
    clock_base_ns: int | None
    used_ids: set[int] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fresh(cls, parts: Sequence[Part]) -> _Placement:
        bases = [part.clock_base_ns for part in parts if part.clock_base_ns is not None]
        return cls(0, min(bases) if bases else None)

    @classmethod
    def appended(cls, connection: Connection, run_id: int, parts: Sequence[Part],
                 stored: list[dict[str, Any]]) -> _Placement:
        meta_json = connection.execute(text("SELECT meta_json FROM runs WHERE id = :r"),
                                       {"r": run_id}).scalar()
        meta = json.loads(meta_json) if meta_json else {}
        base = meta.get("clock_base_ns")
        if base is None:
            bases = [part.clock_base_ns for part in parts if part.clock_base_ns is not None]
            base = min(bases) if bases else None
        used: set[int] = set()
        for sql in ("SELECT global_pid FROM processes WHERE run_id = :r",
                    "SELECT global_tid FROM threads WHERE run_id = :r",
                    "SELECT DISTINCT global_pid FROM kernel_groups WHERE run_id = :r",
                    "SELECT DISTINCT global_tid FROM kernel_groups WHERE run_id = :r"):
            used.update(v for (v,) in connection.execute(text(sql), {"r": run_id})
                        if v is not None)
        first = max((int(row["file_index"]) for row in stored), default=-1) + 1
        return cls(first, base, used, dict(run_counts(connection, run_id)), meta)

    def offset(self, part: Part) -> int:
        if part.clock_base_ns is None or self.clock_base_ns is None:
            return 0
        return part.clock_base_ns - self.clock_base_ns

    def shift(self, part: Part) -> int:
        """The smallest id shift that keeps the part's ids apart from those placed before."""
        ids = part.ids
        shift, step = 0, 0
        while ids and {i + shift for i in ids} & self.used_ids:
            step += 1
            shift = step * ID_SHIFT_UNIT
            if max(ids) + shift > ID_LIMIT:
                raise InputError(f"{part.path}: too many files whose process ids collide",
                                 hint="analyze the files in smaller groups")
        self.used_ids.update(i + shift for i in ids)
        return shift


def _insert_run(connection: Connection, request: MergeRequest, digest: str,
                parts: Sequence[Part]) -> int:
    first = parts[0]
    versions = {part.producer_version for part in parts}
    schemas = {part.schema_version for part in parts}
    row = connection.execute(text(
        "INSERT INTO runs (source_path, sha256, source_stat, format, producer, "
        "producer_version, schema_version, tracekit_version, created_at, label, status, job) "
        "VALUES (:path, :sha, :stat, :format, :producer, :version, :schema, :tk, :at, :label, "
        "'complete', :job) RETURNING id"),
        {"path": request.source_path, "sha": digest,
         "stat": None if request.job else request.signature, "format": request.format,
         "producer": first.producer,
         "version": versions.pop() if len(versions) == 1 else None,
         "schema": schemas.pop() if len(schemas) == 1 else None, "tk": __version__,
         "at": dt.datetime.now(dt.timezone.utc), "label": request.label,
         "job": request.job})
    return int(row.scalar_one())


def _merge_all(connection: Connection, store: Store, run_id: int, parts: Sequence[Part],
               placed: _Placement, aliases: dict[Path, str]) -> None:
    names = _RunNames(connection, run_id, "kernel_names")
    apis = _RunNames(connection, run_id, "api_names")
    counts = {name: placed.counts.get(name, 0) for name in NAMES}
    metas: list[dict[str, Any]] = []
    for part in parts:
        index = placed.first_index + part.index
        offset, shift = placed.offset(part), placed.shift(part)
        copier = BulkCopier(connection, part.scratch)
        try:
            source = aliases[part.scratch] if copier.native else "src"
            _PartCopy(connection, copier, source, run_id, part, index, offset, shift,
                      names, apis).run()
        finally:
            copier.close()
        for name in NAMES:
            counts[name] += part.counts.get(name, 0)
        metas.append({"name": part.path.name, "format": part.format, **part.meta})
        _write_file_row(connection, run_id, part, index, offset, shift)
    counts["kernel_names"] = names.count
    connection.execute(text("DELETE FROM run_counts WHERE run_id = :r"), {"r": run_id})
    connection.execute(text("INSERT INTO run_counts (run_id, name, count) VALUES (:r, :n, :c)"),
                       [{"r": run_id, "n": name, "c": count}
                        for name, count in sorted(counts.items())])
    meta = merged_meta([*placed.meta.get("files", []), *metas])
    if placed.clock_base_ns is not None:
        meta["clock_base_ns"] = meta["time_base_ns"] = placed.clock_base_ns
    keep = {key: placed.meta[key] for key in ("judgement",) if key in placed.meta}
    connection.execute(text("UPDATE runs SET meta_json = :m WHERE id = :r"),
                       {"m": json.dumps({**meta, **keep}, sort_keys=True, default=str),
                        "r": run_id})


#: meta keys of a file whose values add up over the files of a run
_SUMMED = ("counts", "categories", "ambiguous_links", "kinds", "flows",
           "launches_without_duration")


def merged_meta(files: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's meta from its files': per-file metas under ``files``, the counters summed."""
    merged: dict[str, Any] = {"files": files}
    for key in _SUMMED:
        values = [meta[key] for meta in files if key in meta]
        if values and all(isinstance(v, dict) for v in values):
            total: dict[str, Any] = {}
            for value in values:
                for name, number in value.items():
                    if isinstance(number, (int, float)) and not isinstance(number, bool):
                        total[name] = total.get(name, 0) + number
            merged[key] = total
        elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            merged[key] = sum(values)
    return merged


class _RunNames:
    """The run's names of one table (kernel or API), found or added by text."""

    def __init__(self, connection: Connection, run_id: int, table: str) -> None:
        self.connection, self.run_id, self.table = connection, run_id, table
        self.ids: dict[str, int] = {}
        self.next_key = 0
        for name_id, name, key in connection.execute(text(
                f"SELECT id, name, source_key FROM {table} WHERE run_id = :r"), {"r": run_id}):
            self.ids.setdefault(str(name), int(name_id))
            self.next_key = max(self.next_key, int(key) + 1)

    @property
    def count(self) -> int:
        return len(self.ids)

    def mapping(self, rows: Sequence[Sequence[Any]]) -> list[tuple[int, int]]:
        """(part name id, run name id) for a part's rows ``(id, name, *extra columns)``;
        names new to the run are inserted first."""
        extra = ("short_name", "mangled_name") if self.table == "kernel_names" else ()
        fresh: dict[str, tuple[Any, ...]] = {}
        for row in rows:
            name = str(row[1])
            if name not in self.ids and name not in fresh:
                fresh[name] = tuple(row[2:2 + len(extra)])
        if fresh:
            first = self.next_key
            insert_rows(self.connection, self.table, ("run_id", "source_key", "name", *extra),
                        [(self.run_id, first + number, name, *values)
                         for number, (name, values) in enumerate(fresh.items())])
            self.next_key = first + len(fresh)
            for name_id, name in self.connection.execute(text(
                    f"SELECT id, name FROM {self.table} WHERE run_id = :r AND source_key >= :k"),
                    {"r": self.run_id, "k": first}):
                self.ids.setdefault(str(name), int(name_id))
        return [(int(row[0]), self.ids[str(row[1])]) for row in rows]


@dataclass
class _PartCopy:
    """The statements that copy one part's records into the run."""

    connection: Connection
    copier: BulkCopier
    src: str
    run_id: int
    part: Part
    index: int
    offset: int
    shift: int
    names: _RunNames
    apis: _RunNames

    def params(self, **extra: Any) -> dict[str, Any]:
        return {"run_id": self.run_id, "sid": self.part.run_id, "dt": self.offset,
                "shift": self.shift, "ext": self.index * EXTERNAL_STRIDE, **extra}

    def run(self) -> None:
        src = self.src
        self._map("kernel_names", "tk_part_names", self.names,
                  f"SELECT id, name, short_name, mangled_name FROM {src}.kernel_names "
                  "WHERE run_id = :sid")
        self._map("api_names", "tk_part_apis", self.apis,
                  f"SELECT id, name FROM {src}.api_names WHERE run_id = :sid")
        cpu_base = self._cpu_op_base()
        p = self.params(cpu_base=cpu_base)
        copy = self.copier.copy
        copy("cpu_ops", ("id", "run_id", "name", "start_ns", "end_ns", "external_id",
                         "global_tid", "global_pid", "input_types", "input_dims"),
             f"""SELECT o.id + :cpu_base, :run_id, o.name, o.start_ns + :dt, o.end_ns + :dt,
                        o.external_id + :ext, o.global_tid + :shift, o.global_pid + :shift,
                        o.input_types, o.input_dims
                 FROM {src}.cpu_ops AS o WHERE o.run_id = :sid""", p)
        self._end_cpu_ops(cpu_base)
        copy("kernels", ("run_id", "name_id", *KERNEL_COLUMNS, "start_ns", "end_ns",
                         "external_id", "global_pid", "global_tid", "launch_start_ns",
                         "launch_end_ns", "cpu_op_id"),
             f"""SELECT :run_id, m.run_name_id, {', '.join(f'k.{c}' for c in KERNEL_COLUMNS)},
                        k.start_ns + :dt, k.end_ns + :dt, k.external_id + :ext,
                        k.global_pid + :shift, k.global_tid + :shift,
                        k.launch_start_ns + :dt, k.launch_end_ns + :dt, k.cpu_op_id + :cpu_base
                 FROM {src}.kernels AS k CROSS JOIN temp.tk_part_names AS m
                 WHERE k.run_id = :sid AND m.part_id = k.name_id""", p)
        copy("runtime_calls", ("run_id", "name_id", "kind", "start_ns", "end_ns",
                               "correlation_id", "global_tid", "global_pid"),
             f"""SELECT :run_id, m.run_name_id, r.kind, r.start_ns + :dt, r.end_ns + :dt,
                        r.correlation_id, r.global_tid + :shift, r.global_pid + :shift
                 FROM {src}.runtime_calls AS r LEFT JOIN temp.tk_part_apis AS m
                   ON m.part_id = r.name_id
                 WHERE r.run_id = :sid""", p)
        copy("memory_ops", ("run_id", "kind", "device", "stream", "start_ns", "end_ns",
                            "bytes", "correlation_id", "global_pid"),
             f"""SELECT :run_id, m.kind, m.device, m.stream, m.start_ns + :dt, m.end_ns + :dt,
                        m.bytes, m.correlation_id, m.global_pid + :shift
                 FROM {src}.memory_ops AS m WHERE m.run_id = :sid""", p)
        copy("nvtx_ranges", ("run_id", "kind", "start_ns", "end_ns", "text", "domain",
                             "global_tid", "global_pid"),
             f"""SELECT :run_id, e.kind, e.start_ns + :dt, e.end_ns + :dt, e.text, e.domain,
                        e.global_tid + :shift, e.global_pid + :shift
                 FROM {src}.nvtx_ranges AS e WHERE e.run_id = :sid""", p)
        launch_base = self._launch_base()
        copy("kernel_metrics", ("run_id", "name_id", "launch_index", "metric", "unit",
                                "value", "text_value"),
             f"""SELECT :run_id, m.run_name_id, x.launch_index + :launch_base, x.metric, x.unit,
                        x.value, x.text_value
                 FROM {src}.kernel_metrics AS x CROSS JOIN temp.tk_part_names AS m
                 WHERE x.run_id = :sid AND m.part_id = x.name_id""",
             self.params(launch_base=launch_base))
        self._small_tables()

    def _map(self, table: str, temp: str, names: _RunNames, sql: str) -> None:
        rows = self.copier.query(sql, {"sid": self.part.run_id})
        self.copier.temp_rows(temp, ("part_id", "run_name_id"), names.mapping(rows),
                              declared=("INTEGER PRIMARY KEY", "INTEGER"))

    def _cpu_op_base(self) -> int:
        """The number added to the part's CPU op ids: the store's highest id (PostgreSQL:
        under a lock that keeps other writers out of ``cpu_ops`` until the commit)."""
        connection = self.connection
        if connection.dialect.name == "postgresql":
            connection.execute(text("LOCK TABLE cpu_ops IN SHARE ROW EXCLUSIVE MODE"))
            return int(connection.execute(text(
                "SELECT GREATEST((SELECT COALESCE(MAX(id), 0) FROM cpu_ops), "
                "(SELECT last_value FROM cpu_ops_id_seq))")).scalar_one())
        return int(connection.execute(text("SELECT COALESCE(MAX(id), 0) FROM cpu_ops"))
                   .scalar_one())

    def _end_cpu_ops(self, cpu_base: int) -> None:
        """PostgreSQL: move the id sequence past the ids the part took."""
        if self.connection.dialect.name != "postgresql":
            return
        (top,) = self.copier.query(
            f"SELECT COALESCE(MAX(id), 0) FROM {self.src}.cpu_ops WHERE run_id = :sid",
            {"sid": self.part.run_id})[0]
        if top:
            self.connection.execute(text("SELECT setval('cpu_ops_id_seq', :v)"),
                                    {"v": cpu_base + int(top)})

    def _launch_base(self) -> int:
        return int(self.connection.execute(text(
            "SELECT COALESCE(MAX(launch_index) + 1, 0) FROM kernel_metrics "
            "WHERE run_id = :r"), {"r": self.run_id}).scalar_one())

    def _small_tables(self) -> None:
        """Processes, threads and devices: a few rows each, placed in Python."""
        src, sid, shift = self.src, {"sid": self.part.run_id}, self.shift
        moved = _shifted(shift)
        processes = self.copier.query(
            f"SELECT global_pid, pid, name FROM {src}.processes WHERE run_id = :sid", sid)
        insert_rows(self.connection, "processes",
                    ("run_id", "global_pid", "pid", "name", "file_index"),
                    [(self.run_id, moved(g), pid, name, self.index)
                     for g, pid, name in processes])
        threads = self.copier.query(
            f"SELECT global_tid, global_pid, tid, name FROM {src}.threads WHERE run_id = :sid",
            sid)
        insert_rows(self.connection, "threads",
                    ("run_id", "global_tid", "global_pid", "tid", "name"),
                    [(self.run_id, moved(t), moved(g), tid, name) for t, g, tid, name in threads])
        columns = ("device_index", "global_pid", "name", "compute_major", "compute_minor",
                   "sm_count", "memory_bytes", "uuid", "arch", "arch_source")
        devices = self.copier.query(
            f"SELECT {', '.join(columns)} FROM {src}.devices WHERE run_id = :sid ORDER BY id",
            sid)
        users: dict[int | None, list[int]] = {}
        for use in self.part.usage:
            if use.global_pid is not None and use.global_pid not in users.get(use.device, []):
                users.setdefault(use.device, []).append(use.global_pid)
        rows = []
        for device in devices:
            index, pid, rest = device[0], device[1], tuple(device[2:])
            if pid is not None:
                rows.append((self.run_id, index, moved(pid), *rest))
                continue
            for user in users.get(index, []) or [None]:  # type: ignore[list-item]
                rows.append((self.run_id, index, moved(user), *rest))
        insert_rows(self.connection, "devices", ("run_id", *columns), rows)


def _shifted(shift: int) -> Any:
    def move(value: int | None) -> int | None:
        return value + shift if value is not None else None
    return move


def _write_file_row(connection: Connection, run_id: int, part: Part, index: int,
                    offset: int, shift: int) -> None:
    identity = part.identity
    connection.execute(text(
        "INSERT INTO run_files (run_id, file_index, name, path, sha256, size_bytes, format, "
        "host, job, trace_rank, world_size, gpus, start_ns, end_ns, time_offset_ns, id_shift, "
        "counts_json) VALUES (:r, :i, :name, :path, :sha, :size, :format, :host, :job, :rank, "
        ":world, :gpus, :start, :end, :offset, :shift, :counts)"),
        {"r": run_id, "i": index, "name": part.path.name, "path": str(part.path.absolute()),
         "sha": part.sha256, "size": part.size_bytes, "format": part.format,
         "host": identity.host, "job": identity.job, "rank": identity.rank,
         "world": identity.world_size, "gpus": "; ".join(sorted(identity.gpus)) or None,
         "start": identity.start_ns, "end": identity.end_ns, "offset": offset,
         "shift": shift, "counts": json.dumps(part.counts, sort_keys=True)})


def _stored_files(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    return [dict(row) for row in connection.execute(text(
        "SELECT file_index, name, sha256, host, job, trace_rank, world_size, gpus, start_ns, "
        "end_ns FROM run_files WHERE run_id = :r ORDER BY file_index"), {"r": run_id}
    ).mappings()]


def _stored_identity(row: dict[str, Any]) -> FileIdentity:
    gpus = frozenset(g for g in (row["gpus"] or "").split("; ") if g)
    return FileIdentity(name=str(row["name"]), gpus=gpus, host=row["host"], job=row["job"],
                        rank=row["trace_rank"], world_size=row["world_size"],
                        start_ns=row["start_ns"], end_ns=row["end_ns"])
