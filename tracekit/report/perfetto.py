"""Export a run as a Chrome trace-event JSON file that the Perfetto UI opens.

Layout of the trace:
- one process per GPU (``GPU 0 · NVIDIA B200``) and one thread per stream; each kernel is a
  complete event (``ph: X``) with its classification and phase in ``args``;
- kernels that start before the previous kernel of their stream has ended (programmatic
  dependent launch, concurrent graph nodes) go to a second thread of that stream,
  ``stream 7 (overlapping)``: trace viewers drop slices that overlap without nesting;
- one ``engine steps`` process with a thread per launching CPU thread: the steps (prefill /
  decode / mixed) as slices over their CPU time, with tokens and GPU span in ``args``.

The events are formatted by the database itself (``json_object`` in SQLite,
``json_build_object`` in PostgreSQL) and streamed to the file in batches, so a 10^7-kernel run
is exported in bounded memory with no per-event Python work beyond joining strings.
A path ending in ``.gz`` is written gzip-compressed: every event repeats its kernel's full
name, so a 10^7-kernel trace is gigabytes as plain JSON and a tenth of that compressed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import Connection, text

from tracekit.errors import InputError
from tracekit.store.db import Store

BATCH = 20_000
#: thread id offset of a stream's "overlapping" thread
OVERLAP_TID_OFFSET = 100_000
#: the steps' process id, far from GPU process ids (device index + 1)
STEPS_PID = 1_000_000
STEP_CATEGORY = "step"
#: long kernel names repeat in every event: a low gzip level already shrinks them many times
#: over, at a speed that keeps the export fast (tests/benchmarks/README.md)
GZIP_LEVEL = 3

Progress = Callable[[int], None]


@dataclass(frozen=True)
class PerfettoExport:
    """What an export wrote."""

    path: Path
    kernels: int
    steps: int


def _json_function(connection: Connection) -> str:
    return "json_build_object" if connection.dialect.name == "postgresql" else "json_object"


def _as_text(connection: Connection, expression: str) -> str:
    return f"({expression})::text" if connection.dialect.name == "postgresql" else expression


def kernel_events_sql(connection: Connection) -> str:
    """One JSON text per kernel, formatted in SQL; lanes found with a window function."""
    obj = _json_function(connection)
    event = (
        f"{obj}('name', n.name, 'cat', COALESCE(c.op, 'other'), 'ph', 'X', "
        "'ts', (k.start_ns - :t0) / 1000.0, 'dur', (k.end_ns - k.start_ns) / 1000.0, "
        "'pid', COALESCE(k.device, 0) + 1, "
        f"'tid', COALESCE(k.stream, 0) + k.lane * {OVERLAP_TID_OFFSET}, "
        f"'args', {obj}('op', COALESCE(c.op, 'other'), 'path', COALESCE(c.path, 'unknown'), "
        "'phase', COALESCE(k.phase, 'unattributed'), 'rule', c.rule, "
        "'evidence', COALESCE(c.evidence, 'none'), 'confidence', COALESCE(c.confidence, 'low'), "
        "'library', c.library, 'weights', c.weights, 'activations', c.activations, "
        "'accum', c.accum, 'step_id', k.step_id, 'correlation_id', k.correlation_id, "
        "'grid', k.grid_x || 'x' || k.grid_y || 'x' || k.grid_z, "
        "'block', k.block_x || 'x' || k.block_y || 'x' || k.block_z))"
    )
    return (
        f"SELECT {_as_text(connection, event)}, k.device, k.stream, k.lane FROM ("
        "SELECT k.*, CASE WHEN MAX(k.end_ns) OVER (PARTITION BY k.device, k.stream "
        "ORDER BY k.start_ns, k.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
        "> k.start_ns THEN 1 ELSE 0 END AS lane FROM kernels k WHERE k.run_id = :r) k "
        "JOIN kernel_names n ON n.id = k.name_id "
        "LEFT JOIN classifications c ON c.run_id = k.run_id AND c.name_id = k.name_id"
    )


def step_events_sql(connection: Connection) -> str:
    """One JSON text per step, on its launching thread's track in the steps process."""
    obj = _json_function(connection)
    event = (
        f"{obj}('name', s.phase || ' · ' || COALESCE(s.text, s.source), "
        f"'cat', '{STEP_CATEGORY}', 'ph', 'X', "
        "'ts', (s.start_ns - :t0) / 1000.0, 'dur', (s.end_ns - s.start_ns) / 1000.0, "
        f"'pid', {STEPS_PID}, 'tid', s.lane, "
        f"'args', {obj}('phase', s.phase, 'source', s.source, 'engine', s.engine, "
        "'text', s.text, 'prefill_tokens', s.prefill_tokens, 'decode_tokens', s.decode_tokens, "
        "'gpu_start_us', (s.gpu_start_ns - :t0) / 1000.0, "
        "'gpu_dur_us', (s.gpu_end_ns - s.gpu_start_ns) / 1000.0, 'step_id', s.id))"
    )
    # The lane of a step is its thread's rank among the run's step threads: a window over one
    # scan of the steps, not a join (which SQLite ran as a scan of the steps per lane).
    return (
        f"SELECT {_as_text(connection, event)} FROM ("
        "SELECT st.*, DENSE_RANK() OVER (ORDER BY COALESCE(st.global_tid, -1)) AS lane "
        "FROM steps st WHERE st.run_id = :r) s ORDER BY s.start_ns"
    )


def _metadata(connection: Connection, run_id: int, tracks: set[tuple[Any, Any, int]]
              ) -> list[dict[str, Any]]:
    """Process and thread names (``ph: M``) for the GPU tracks used and the steps' tracks."""
    names = {row[0]: (row[1] or "GPU") for row in connection.execute(text(
        "SELECT device_index, name FROM devices WHERE run_id = :r"), {"r": run_id})}
    events: list[dict[str, Any]] = []
    named: set[int] = set()
    for device, stream, lane in sorted(tracks, key=lambda t: (t[0] or 0, t[1] or 0, t[2])):
        pid = (device or 0) + 1
        tid = (stream or 0) + lane * OVERLAP_TID_OFFSET
        if pid not in named:
            named.add(pid)
            label = f"GPU {device if device is not None else '?'} · {names.get(device, 'GPU')}"
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                           "args": {"name": label}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                           "args": {"sort_index": pid}})
        label = f"stream {stream if stream is not None else '?'}"
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": label + (" (overlapping)" if lane else "")}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
    step_threads = connection.execute(text(
        "SELECT u.global_tid, ROW_NUMBER() OVER (ORDER BY u.global_tid), MAX(t.name), "
        "MAX(p.name) FROM (SELECT DISTINCT COALESCE(global_tid, -1) AS global_tid, global_pid "
        "FROM steps WHERE run_id = :r) u LEFT JOIN threads t ON t.run_id = :r AND "
        "t.global_tid = u.global_tid LEFT JOIN processes p ON p.run_id = :r AND "
        "p.global_pid = u.global_pid GROUP BY u.global_tid"), {"r": run_id}).all()
    if step_threads:
        events.append({"ph": "M", "name": "process_name", "pid": STEPS_PID, "tid": 0,
                       "args": {"name": "engine steps (CPU time of each step marker)"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": STEPS_PID, "tid": 0,
                       "args": {"sort_index": 0}})
        for _global_tid, lane, thread, process in step_threads:
            label = " · ".join(part for part in ("steps", process, thread) if part)
            events.append({"ph": "M", "name": "thread_name", "pid": STEPS_PID, "tid": lane,
                           "args": {"name": label}})
    return events


def _stream_rows(connection: Connection, sql: str, params: dict[str, Any], out: TextIO,
                 progress: Progress | None, first: bool,
                 tracks: set[tuple[Any, Any, int]] | None = None) -> tuple[int, bool]:
    """Copy the JSON text in each row's first column into ``out``, in batches.

    Returns (rows, whether nothing was written yet). Rows of kernel queries also carry
    (device, stream, lane), collected into ``tracks`` for the thread-name metadata.
    """
    result = connection.execution_options(stream_results=True).execute(text(sql), params)
    written = 0
    while batch := result.fetchmany(BATCH):
        chunk = ",\n".join([row[0] for row in batch])
        out.write(chunk if first else ",\n" + chunk)
        first = False
        written += len(batch)
        if tracks is not None:
            tracks.update({(row[1], row[2], row[3]) for row in batch})
        if progress is not None:
            progress(len(batch))
    return written, first


def _open_text(path: Path, gzipped: bool) -> TextIO:
    """The output stream; ``.gz`` files are gzip-compressed (the Perfetto UI opens them)."""
    if gzipped:
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=GZIP_LEVEL)
    return path.open("w", encoding="utf-8")


def count_kernels(store: Store, run_id: int) -> int:
    """Kernel records of a run (the size of an export, for progress bars)."""
    with store.connect() as connection:
        return int(connection.execute(text(
            "SELECT COUNT(*) FROM kernels WHERE run_id = :r"), {"r": run_id}).scalar() or 0)


def write_perfetto(store: Store, run_id: int, path: Path, *,
                   progress: Progress | None = None) -> PerfettoExport:
    """Write ``run_id`` as Chrome trace JSON at ``path`` (via a temporary file)."""
    path = Path(path)
    if path.is_dir() or not path.parent.exists():
        raise InputError(f"cannot write {path}: "
                         + ("is a directory" if path.is_dir() else
                            f"folder {path.parent} does not exist"))
    temporary = path.with_name(f".{path.name}.tmp")
    gzipped = path.suffix == ".gz"
    try:
        with store.connect() as connection, _open_text(temporary, gzipped) as out:
            run = connection.execute(text(
                "SELECT id, source_path, format, producer_version, model_label, gpu "
                "FROM runs WHERE id = :r"), {"r": run_id}).mappings().one()
            t0 = connection.execute(text(
                "SELECT MIN(t) FROM (SELECT MIN(start_ns) AS t FROM kernels WHERE run_id = :r "
                "UNION ALL SELECT MIN(start_ns) FROM steps WHERE run_id = :r) x"),
                {"r": run_id}).scalar() or 0
            other = {"tracekit_run": run["id"], "source": run["source_path"],
                     "format": run["format"], "producer_version": run["producer_version"],
                     "model_label": run["model_label"], "gpu": run["gpu"],
                     "time_zero_ns": int(t0),
                     "note": "ts and dur are microseconds since time_zero_ns"}
            out.write('{"displayTimeUnit":"ns","otherData":')
            out.write(json.dumps(other, ensure_ascii=False, default=str))
            out.write(',"traceEvents":[\n')
            params = {"r": run_id, "t0": int(t0)}
            tracks: set[tuple[Any, Any, int]] = set()
            kernels, first = _stream_rows(connection, kernel_events_sql(connection), params, out,
                                          progress, True, tracks)
            steps, first = _stream_rows(connection, step_events_sql(connection), params, out,
                                        None, first)
            # Trace viewers read metadata events wherever they are: write them last, once
            # the kernels have told which (device, stream, lane) tracks exist.
            for event in _metadata(connection, run_id, tracks):
                out.write(("" if first else ",\n") + json.dumps(event, ensure_ascii=False))
                first = False
            out.write("\n]}\n")
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return PerfettoExport(path=path, kernels=kernels, steps=steps)
