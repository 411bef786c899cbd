"""Real traces, made longer: replicate a recorded trace N times with fresh ids and shifted times.

A benchmark on a synthetic mix hides what real traces have: CPU ops nested twelve deep, a
hundred Python frames per kernel, flows, annotations, several streams and ranks. So the speed
and scaling checks also run on real traces recorded by others (``$TRACEKIT_SHARED_TRACES``) made
longer, the shape a longer profile of the same program has: copy *i* of every event is shifted
by *i* times the trace's span, and every id that links events (correlation ids, External ids,
Python ids, flow ids, event indexes) is offset by *i* times (the largest id + 1), so copies
never link to each other. ``keep_ids=True`` keeps the ids as they are instead, the shape of a
restarted profiler or of ranks merged into one file: the same External id and correlation id
then stand for several events, which readers must resolve (and report) without slowing down.

Used by ``bench_kineto.py``, ``bench_analyze.py`` and the suite's scaling tests. Also a
command::

    python tests/benchmarks/replicate.py SRC.json.gz DST.json --copies 37
    python tests/benchmarks/replicate.py SRC.sqlite DST.sqlite --copies 300
    python tests/benchmarks/replicate.py fixtures/h200/cupti.jsonl.gz DST.jsonl --copies 16
    python tests/benchmarks/replicate.py fixtures/h200/ncu.csv DST.csv --copies 64
    python tests/benchmarks/replicate.py 908_results.json.gz DST_results.json --copies 8

A rocprofv3 JSON is replicated per process: its dispatches, HIP calls and ROCTx records
(shifted by the process's span, correlation and dispatch ids offset per copy), its symbols,
agents and string tables once; the ROCTx messages follow their ranges' correlation ids.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sqlite3
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import IO, Any

#: Kineto ``args`` that hold ids linking events: offset per copy
KINETO_ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Ev Idx",
                  "Python module id")
#: nsys columns that link rows across tables: offset per copy (others stay as recorded)
NSYS_ID_COLUMNS = ("correlationId", "gridId", "rangeId", "eventId", "eventSyncId",
                   "callchainId")
#: microseconds between the end of one copy and the start of the next (Kineto)
GAP_US = 100.0
GAP_NS = 100_000


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def _span_and_strides(events: list[dict[str, Any]]) -> tuple[float, float, dict[str, int]]:
    """The first ts, the span (µs, with a gap) and the id stride of each id-carrying field."""
    times = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + (e.get("dur") or 0) for e in events
            if isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur") or 0,
                                                                     (int, float))]
    first, last = min(times), max(ends)
    strides: dict[str, int] = {}
    for event in events:
        args = event.get("args")
        if isinstance(args, dict):
            for key in KINETO_ID_ARGS:
                value = args.get(key)
                if type(value) is int:
                    strides[key] = max(strides.get(key, 0), value + 1)
        flow_id = event.get("id")
        if type(flow_id) is int:
            strides["id"] = max(strides.get("id", 0), flow_id + 1)
    # Flow ids of ac2g equal correlation ids: one stride keeps them equal in every copy.
    shared = max(strides.get("id", 0), strides.get("correlation", 0))
    strides["id"] = strides["correlation"] = shared
    return first, (last - first) + GAP_US, strides


def _copies(events: list[dict[str, Any]], copies: int, keep_ids: bool
            ) -> Iterator[dict[str, Any]]:
    _, span, strides = _span_and_strides(events)
    for copy in range(copies):
        shift = copy * span
        for event in events:
            if copy == 0:
                yield event
                continue
            out = dict(event)
            if isinstance(out.get("ts"), (int, float)) and out.get("ph") != "M":
                out["ts"] = round(out["ts"] + shift, 3)
            if not keep_ids:
                if type(out.get("id")) is int:
                    out["id"] = out["id"] + copy * strides["id"]
                args = out.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in KINETO_ID_ARGS:
                        if type(args.get(key)) is int:
                            args[key] = args[key] + copy * strides[key]
                    out["args"] = args
            yield out


def replicate_kineto(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """Write ``copies`` copies of a Kineto trace's events into ``target``; returns the kernels.

    Metadata events (``ph: M``) are written once. Top-level keys keep their place around
    ``traceEvents``. Written one event at a time, so the output may be far larger than memory.
    """
    with _open_text(source) as stream:
        document = json.load(stream)
    bare = isinstance(document, list)
    events = document if bare else document["traceEvents"]
    metadata = [e for e in events if isinstance(e, dict) and e.get("ph") == "M"]
    timed = [e for e in events if isinstance(e, dict) and e.get("ph") != "M"]
    kernels = sum(1 for e in timed if e.get("cat") in ("kernel", "Kernel"))
    with target.open("w", encoding="utf-8") as out:
        if not bare:
            out.write("{")
            keys = list(document)
            before = keys[:keys.index("traceEvents")]
            after = keys[keys.index("traceEvents") + 1:]
            for key in before:
                out.write(f"{json.dumps(key)}: {json.dumps(document[key])},\n")
            out.write('"traceEvents": ')
        out.write("[\n")
        first = True
        for event in chain(metadata, _copies(timed, copies, keep_ids)):
            if not first:
                out.write(",\n")
            out.write(json.dumps(event))
            first = False
        out.write("\n]")
        if not bare:
            for key in after:
                out.write(f",\n{json.dumps(key)}: {json.dumps(document[key])}")
            out.write("}\n")
    return kernels * copies


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def replicate_nsys(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """Copy an nsys SQLite export with its timed rows repeated ``copies`` times; returns kernels.

    Every table with ``start`` and ``end`` columns is repeated, shifted by the span of the
    trace; the columns of ``NSYS_ID_COLUMNS`` are offset per copy (unless ``keep_ids``). String
    ids, processes, threads and devices stay as they are: the copies are the same program
    running on.
    """
    shutil.copyfile(source, target)
    connection = sqlite3.connect(target)
    try:
        tables = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        timed = [t for t in tables if {"start", "end"} <= set(_columns(connection, t))]
        first, last = connection.execute(
            "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        for table in timed:
            row = connection.execute(f'SELECT MIN(start), MAX("end") FROM "{table}"').fetchone()
            if row[0] is not None:
                first, last = min(first, row[0]), max(last, row[1] or row[0])
        span = (last - first) + GAP_NS
        for table in timed:
            columns = _columns(connection, table)
            strides = {c: (connection.execute(f'SELECT MAX("{c}") FROM "{table}"').fetchone()[0]
                           or 0) + 1 for c in columns if c in NSYS_ID_COLUMNS}
            if "correlationId" in strides:
                # One stride for every table, so kernels still meet their runtime calls.
                strides["correlationId"] = _max_correlation(connection, timed) + 1
            original = connection.execute(f'SELECT MAX(rowid) FROM "{table}"').fetchone()[0]
            if original is None:
                continue
            for copy in range(1, copies):
                values = []
                for column in columns:
                    if column in ("start", "end", "timestamp"):
                        values.append(f'"{column}" + {copy * span}')
                    elif column in strides and not keep_ids:
                        values.append(f'"{column}" + {copy * strides[column]}')
                    else:
                        values.append(f'"{column}"')
                column_list = ", ".join(f'"{c}"' for c in columns)
                connection.execute(
                    f'INSERT INTO "{table}" ({column_list}) SELECT {", ".join(values)} '
                    f'FROM "{table}" WHERE rowid <= {original}')
        connection.commit()
        kernels = connection.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    finally:
        connection.close()
    return int(kernels[0])


def _max_correlation(connection: sqlite3.Connection, tables: list[str]) -> int:
    top = 0
    for table in tables:
        if "correlationId" in _columns(connection, table):
            value = connection.execute(f'SELECT MAX(correlationId) FROM "{table}"').fetchone()[0]
            top = max(top, value or 0)
    return top


#: CUPTI JSON-lines fields holding ids that link records: offset per copy
CUPTI_ID_FIELDS = ("correlationId", "externalId")


def replicate_cupti(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """tracekit's CUPTI JSON lines, the timed records repeated; returns the kernels written.

    The header and device records are written once; ``start``/``end`` shift by the span,
    correlation and External ids are offset per copy (unless ``keep_ids``).
    """
    with _open_text(source) as stream:
        records = [json.loads(line) for line in stream if line.strip()]
    once = [r for r in records if "start" not in r]
    timed = [r for r in records if "start" in r]
    first = min(r["start"] for r in timed)
    span = max(r.get("end") or r["start"] for r in timed) - first + GAP_NS
    strides = {key: max((r[key] for r in records if type(r.get(key)) is int), default=0) + 1
               for key in CUPTI_ID_FIELDS}
    kernels = 0
    with target.open("w", encoding="utf-8") as out:
        for record in once:
            out.write(json.dumps(record) + "\n")
        for copy in range(copies):
            for record in timed:
                record = dict(record)
                record["start"] += copy * span
                if type(record.get("end")) is int:
                    record["end"] += copy * span
                if not keep_ids:
                    for key, stride in strides.items():
                        if type(record.get(key)) is int:
                            record[key] += copy * stride
                kernels += record.get("kind") == "kernel"
                out.write(json.dumps(record) + "\n")
    return kernels


def replicate_ncu(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """An Nsight Compute raw-page CSV with its launch rows repeated; returns the launches.

    The header (and units row, when there is one) is kept once; each copy renumbers ``ID``
    after the last one (``keep_ids`` repeats them).
    """
    import csv

    with _open_text(source) as stream:
        rows = list(csv.reader(stream))
    header = rows[0]
    units = [rows[1]] if len(rows) > 1 and not rows[1][header.index("ID")] else []
    launches = rows[1 + len(units):]
    index = header.index("ID")
    stride = max(int(row[index]) for row in launches) + 1
    with target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, quoting=csv.QUOTE_ALL)
        writer.writerows([header, *units])
        for copy in range(copies):
            for row in launches:
                row = list(row)
                if not keep_ids:
                    row[index] = str(int(row[index]) + copy * stride)
                writer.writerow(row)
    return len(launches) * copies


#: rocprofv3 JSON record arrays that are replicated (``buffer_records.<name>``)
ROCPROF_RECORDS = ("kernel_dispatch", "hip_api", "marker_api", "memory_copy")


def replicate_rocprof_json(source: Path, target: Path, copies: int, *,
                           keep_ids: bool = False) -> int:
    """Replicate a rocprofv3 JSON document; returns the dispatches written.

    The document is read whole (a benchmark helper: the reader under test streams), and
    written with the record arrays streamed copy by copy.
    """
    with _open_text(source) as stream:
        document = json.load(stream)
    dispatches = 0
    placeholders: list[tuple[str, list[dict[str, Any]], int, int]] = []
    for number, process in enumerate(document["rocprofiler-sdk-tool"]):
        records = process.get("buffer_records", {})
        arrays = {name: records.get(name) or [] for name in ROCPROF_RECORDS}
        every = [r for array in arrays.values() for r in array]
        if not every:
            continue
        first = min(r["start_timestamp"] for r in every)
        span = max(r["end_timestamp"] for r in every) - first + GAP_NS
        stride = max(r["correlation_id"]["internal"] for r in every) + 1
        for name, array in arrays.items():
            marker = f"@@{number}:{name}@@"
            records[name] = marker
            placeholders.append((marker, array, span, stride))
        messages = process.get("strings", {}).get("marker_api") or []
        marker = f"@@{number}:messages@@"
        process.setdefault("strings", {})["marker_api"] = marker
        placeholders.append((marker, messages, 0, stride))
        dispatches += len(arrays["kernel_dispatch"]) * copies
    text = json.dumps(document, separators=(",", ":"))
    placeholders.sort(key=lambda entry: text.index(f'"{entry[0]}"'))  # document order
    with target.open("w", encoding="utf-8") as out:
        for marker, array, span, stride in placeholders:
            head, text = text.split(f'"{marker}"', 1)
            out.write(head)
            out.write("[")
            comma = ""
            for copy in range(copies):
                for record in array:
                    out.write(comma)
                    comma = ","
                    out.write(json.dumps(_shifted(record, copy * span,
                                                  0 if keep_ids else copy * stride),
                                         separators=(",", ":")))
            out.write("]")
        out.write(text)
    return dispatches


def _shifted(record: dict[str, Any], shift: int, offset: int) -> dict[str, Any]:
    """A record of copy *i*: times shifted, correlation and dispatch ids offset."""
    if "key" in record:  # strings.marker_api: {key: correlation id, value: message}
        return {**record, "key": record["key"] + offset}
    copy = dict(record)
    copy["start_timestamp"] = record["start_timestamp"] + shift
    copy["end_timestamp"] = record["end_timestamp"] + shift
    correlation = dict(record["correlation_id"])
    correlation["internal"] = correlation["internal"] + offset
    copy["correlation_id"] = correlation
    info = record.get("dispatch_info")
    if isinstance(info, dict):
        copy["dispatch_info"] = {**info, "dispatch_id": info.get("dispatch_id", 0) + offset}
    return copy


#: rocpd tables whose rows are replicated, and how each column of a copy moves
ROCPD_RECORDS = ("event", "kernel_dispatch", "region", "sample", "memory_copy", "graph_launch")


def replicate_rocpd(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """Replicate every table set of a rocpd database in SQL; returns the dispatches written.

    Per set, copy *i* of each record row has its times shifted by *i* spans, its own id and
    its ``event_id`` offset by *i* times the table's largest id, its correlation ids
    (``rocpd_event.stack_id``, the region ids that equal them) by *i* strides.
    """
    shutil.copyfile(source, target)
    connection = sqlite3.connect(target)
    names = [name for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")]
    suffixes = [name.removeprefix("rocpd_kernel_dispatch") for name in names
                if name.startswith("rocpd_kernel_dispatch")]
    dispatches = 0
    with connection:
        for suffix in suffixes:
            tables = {base: f'"rocpd_{base}{suffix}"' for base in ROCPD_RECORDS
                      if f"rocpd_{base}{suffix}" in names}
            first, last = connection.execute(
                f'SELECT MIN(start), MAX("end") FROM {tables["kernel_dispatch"]}').fetchone()
            if "region" in tables:
                low, high = connection.execute(
                    f'SELECT MIN(start), MAX("end") FROM {tables["region"]}').fetchone()
                first, last = min(first, low or first), max(last, high or last)
            span = last - first + GAP_NS
            (stack,) = connection.execute(
                f"SELECT COALESCE(MAX(stack_id), 0) + 1 FROM {tables['event']}").fetchone()
            largest = {base: connection.execute(
                f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
                for base, table in tables.items()}
            for copy in range(1, copies):
                for base, table in tables.items():
                    moved = []
                    for column in _columns(connection, table.strip('"')):
                        shift = {"start": f"+ {copy * span}", "end": f"+ {copy * span}",
                                 "timestamp": f"+ {copy * span}",
                                 "event_id": f"+ {copy * largest['event']}",
                                 "id": f"+ {copy * largest[base]}"}.get(column, "")
                        if not keep_ids and column in ("stack_id", "parent_stack_id"):
                            shift = f"+ {copy * stack}"
                        if not keep_ids and column == "dispatch_id":
                            shift = f"+ {copy * largest['kernel_dispatch']}"
                        if not keep_ids and base == "region" and column == "id":
                            shift = f"+ {copy * stack}"  # region ids are correlation ids
                        moved.append(f'"{column}" {shift}')
                    columns = ", ".join(f'"{c}"' for c in _columns(connection, table.strip('"')))
                    connection.execute(
                        f"INSERT INTO {table} ({columns}) SELECT {', '.join(moved)} FROM {table} "
                        f"WHERE id <= {largest[base]}")
            (count,) = connection.execute(
                f"SELECT COUNT(*) FROM {tables['kernel_dispatch']}").fetchone()
            dispatches += count
    connection.close()
    return dispatches


def replicate(source: Path, target: Path, copies: int, *, keep_ids: bool = False) -> int:
    """Replicate an nsys SQLite export, a rocpd database, a Kineto JSON, tracekit CUPTI JSON
    lines, an ncu CSV or a rocprofv3 JSON (plain or gzip); returns the kernels written."""
    with _open_text(source) if not _is_sqlite(source) else open(source, "rb") as probe:
        head = probe.read(256)
    if isinstance(head, bytes):
        if _is_rocpd(source):
            return replicate_rocpd(source, target, copies, keep_ids=keep_ids)
        return replicate_nsys(source, target, copies, keep_ids=keep_ids)
    if head.startswith('"ID"'):
        return replicate_ncu(source, target, copies, keep_ids=keep_ids)
    if '"kind"' in head.split("\n", 1)[0] and '"header"' in head.split("\n", 1)[0]:
        return replicate_cupti(source, target, copies, keep_ids=keep_ids)
    if '"rocprofiler-sdk-tool"' in head:
        return replicate_rocprof_json(source, target, copies, keep_ids=keep_ids)
    return replicate_kineto(source, target, copies, keep_ids=keep_ids)


#: Kineto pids below this are devices (GPU events carry the device as their pid); CPU
#: events carry OS pids above it
DEVICE_PIDS = 64
#: how far apart the OS pids and tids of two ranks are put
RANK_PID_STRIDE = 1000


def _as_rank(event: dict[str, Any], rank: int, world: int, kernel_scale: float
             ) -> dict[str, Any]:
    """A Kineto event as rank ``rank`` of ``world`` recorded it: its process and threads
    moved by ``rank * RANK_PID_STRIDE``, its GPU events on device ``rank``, its kernels
    ``kernel_scale`` times as long."""
    out = dict(event)
    pid = out.get("pid")
    if type(pid) is int and pid >= DEVICE_PIDS:
        out["pid"] = pid + rank * RANK_PID_STRIDE
        if type(out.get("tid")) is int and out["tid"] >= DEVICE_PIDS:
            out["tid"] = out["tid"] + rank * RANK_PID_STRIDE
    elif type(pid) is int and 0 <= pid < DEVICE_PIDS:
        out["pid"] = rank
        args = out.get("args")
        if isinstance(args, dict) and "device" in args:
            out["args"] = {**args, "device": rank}
        if kernel_scale != 1.0 and out.get("cat") in ("kernel", "Kernel") and \
                isinstance(out.get("dur"), (int, float)):
            out["dur"] = round(out["dur"] * kernel_scale, 3)
    return out


def kineto_ranks(source: Path, folder: Path, ranks: int, copies: int = 1, *,
                 kernel_scale: dict[int, float] | None = None, gzip_files: bool = False
                 ) -> list[Path]:
    """``ranks`` files ``rank-<i>.pt.trace.json`` in ``folder``: the trace replicated
    ``copies`` times, as the ranks of one job record it (``distributedInfo`` rank and world
    size, each rank's own pids and tids and device; ``kernel_scale`` makes a rank's kernels
    longer, a straggler). Returns the files; each holds the kernels of ``replicate``."""
    folder.mkdir(parents=True, exist_ok=True)
    with _open_text(source) as stream:
        document = json.load(stream)
    events = document["traceEvents"]
    metadata = [e for e in events if isinstance(e, dict) and e.get("ph") == "M"]
    timed = [e for e in events if isinstance(e, dict) and e.get("ph") != "M"]
    keys = list(document)
    before = keys[:keys.index("traceEvents")]
    after = keys[keys.index("traceEvents") + 1:]
    paths = []
    for rank in range(ranks):
        scale = (kernel_scale or {}).get(rank, 1.0)
        header = dict(document)
        distributed = dict(header.get("distributedInfo") or {})
        distributed.update(rank=rank, world_size=ranks)
        header["distributedInfo"] = distributed
        path = folder / f"rank-{rank}.pt.trace.json{'.gz' if gzip_files else ''}"
        opener = gzip.open(path, "wt", encoding="utf-8") if gzip_files else \
            path.open("w", encoding="utf-8")
        with opener as out:
            out.write("{")
            for key in before:
                out.write(f"{json.dumps(key)}: {json.dumps(header[key])},\n")
            out.write('"traceEvents": [\n')
            first = True
            for event in chain(metadata, _copies(timed, copies, keep_ids=False)):
                if not first:
                    out.write(",\n")
                out.write(json.dumps(_as_rank(event, rank, ranks, scale)))
                first = False
            out.write("\n]")
            for key in after:
                out.write(f",\n{json.dumps(key)}: {json.dumps(header[key])}")
            out.write("}\n")
        paths.append(path)
    return paths


def cupti_ranks(source: Path, folder: Path, ranks: int) -> list[Path]:
    """``ranks`` CUPTI JSON-lines files, one per process of one job (header rank and world
    size, each its own pid, threads and device)."""
    folder.mkdir(parents=True, exist_ok=True)
    with _open_text(source) as stream:
        records = [json.loads(line) for line in stream if line.strip()]
    paths = []
    for rank in range(ranks):
        moved = rank * RANK_PID_STRIDE
        path = folder / f"rank{rank}.cupti.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for record in records:
                record = dict(record)
                if record.get("kind") == "header":
                    record.update(rank=rank, world_size=ranks, pid=record["pid"] + moved)
                for key in ("processId", "threadId"):
                    if type(record.get(key)) is int:
                        record[key] += moved
                for key in ("deviceId",):
                    if type(record.get(key)) is int:
                        record[key] = rank
                if record.get("kind") == "device":
                    record["id"] = rank
                out.write(json.dumps(record) + "\n")
        paths.append(path)
    return paths


def _is_rocpd(path: Path) -> bool:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                                  "AND name LIKE 'rocpd_kernel_dispatch%'").fetchone()[0] > 0
    finally:
        connection.close()


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as probe:
        return probe.read(16).startswith(b"SQLite format 3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--keep-ids", action="store_true",
                        help="repeat ids as they are (a restarted profiler, merged ranks)")
    options = parser.parse_args()
    kernels = replicate(options.source, options.target, options.copies,
                        keep_ids=options.keep_ids)
    size = options.target.stat().st_size / 2**20
    print(f"{options.target}: {options.copies} copies, {kernels:,} kernels, {size:,.1f} MiB")


if __name__ == "__main__":
    main()
