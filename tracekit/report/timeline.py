"""Timeline data for the HTML report, sized to a budget whatever the trace size.

A browser cannot draw 10^7 kernels, and a report that embeds them all would weigh gigabytes.
So the page gets two views, both computed in SQL:

- a **detail window**: every kernel of one contiguous stretch of the run (at most ``budget``
  kernels, starting at the first prefill step when there is one, so prefill and the decode
  that follows are both in view), with the steps that overlap it;
- an **overview** of the whole run, only when the run holds more kernels than the budget:
  GPU busy time per (device, stream) track × datatype path × time bucket, a ``GROUP BY`` in
  the database, so its size depends on the bucket count, never on the kernel count.

Times are sent relative to the run's first kernel (``t0_ns``) as integers of nanoseconds;
names are sent once in a table and kernels point at them by index, which keeps the page
small (about 25 bytes per kernel in the detail window).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS

#: kernels drawn one by one in the detail window
DEFAULT_KERNEL_BUDGET = 50_000
#: rows (track × group × bucket) the overview may hold at most
OVERVIEW_ROW_BUDGET = 200_000
MAX_BUCKETS = 2_000
MIN_BUCKETS = 100
#: step shading rectangles; beyond this, shading is quantized to time buckets
MAX_PHASE_SPANS = 3_000
#: steps drawn (with hover text) in the detail window's step lane
MAX_STEPS_DRAWN = 5_000
#: the colour group of kernels that are not GEMMs
NON_GEMM = "non-GEMM"

#: the colour group of a kernel: its path for GEMMs, one group for everything else
#: (``:gemm_ops`` bound where it is used)
GROUP_SQL = f"CASE WHEN c.op IN :gemm_ops THEN COALESCE(c.path, 'unknown') ELSE '{NON_GEMM}' END"


@dataclass(frozen=True)
class TimelineOptions:
    """How much of the run the page may carry."""

    kernel_budget: int = DEFAULT_KERNEL_BUDGET
    overview_row_budget: int = OVERVIEW_ROW_BUDGET


def _scalar_row(connection: Connection, sql: str, **params: Any) -> Any:
    return connection.execute(text(sql), params).one()


def timeline_data(connection: Connection, run_id: int,
                  options: TimelineOptions | None = None) -> dict[str, Any]:
    """Everything the page's timeline needs, as plain JSON-able data."""
    options = options or TimelineOptions()
    total, t0, t_end = _scalar_row(
        connection, "SELECT COUNT(*), MIN(start_ns), MAX(end_ns) FROM kernels "
        "WHERE run_id = :r", r=run_id)
    if not total:
        return {"total": 0, "tracks": [], "names": [], "kernels": None, "overview": None,
                "phases": [], "steps": None, "window": None, "t0_ns": 0, "span_ns": 0}
    t0, t_end = int(t0), int(t_end)
    overview = None
    if total > options.kernel_budget:
        # One scan gives both the overview and the tracks (a separate GROUP BY device,
        # stream would read 10^7 records a second time).
        overview, tracks = _overview(connection, run_id, t0, t_end,
                                     options.overview_row_budget)
    else:
        tracks = _tracks(connection, run_id)
    track_index = {(track["device"], track["stream"]): index
                   for index, track in enumerate(tracks)}
    if overview is not None:
        overview["track"] = [track_index[key] for key in overview.pop("keys")]
    window_start = _window_start(connection, run_id, t0)
    detail = _detail_window(connection, run_id, t0, window_start, options.kernel_budget,
                            track_index)
    spans = _phase_spans(connection, run_id, t0, t_end)
    return {
        "total": int(total),
        "t0_ns": t0,
        "span_ns": t_end - t0,
        "tracks": tracks,
        "names": detail["names"],
        "kernels": detail["kernels"],
        "window": detail["window"],
        "steps": _steps_in(connection, run_id, t0, detail["window"]),
        "overview": overview,
        "phases": spans,
    }


def _track_label(device: Any, stream: Any) -> str:
    return (f"GPU {device if device is not None else '?'} · stream "
            f"{stream if stream is not None else '?'}")


def _sort_key(key: tuple[Any, Any]) -> tuple[int, int]:
    device, stream = key
    return (-1 if device is None else int(device), -1 if stream is None else int(stream))


def _tracks(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    """One track per (device, stream), in device then stream order."""
    rows = sorted(connection.execute(text(
        "SELECT device, stream, COUNT(*), SUM(end_ns - start_ns) FROM kernels "
        "WHERE run_id = :r GROUP BY device, stream"), {"r": run_id}).all(),
        key=lambda row: _sort_key((row[0], row[1])))
    return [{"device": device, "stream": stream, "label": _track_label(device, stream),
             "kernels": int(count), "busy_ns": int(busy or 0)}
            for device, stream, count, busy in rows]


def _window_start(connection: Connection, run_id: int, t0: int) -> int:
    """Where the detail window opens: the first prefill (or mixed) step, else the run start."""
    row = connection.execute(text(
        "SELECT MIN(COALESCE(gpu_start_ns, start_ns)) FROM steps "
        "WHERE run_id = :r AND phase IN ('prefill', 'mixed')"), {"r": run_id}).scalar()
    return max(t0, int(row)) if row is not None else t0


def _detail_window(connection: Connection, run_id: int, t0: int, start: int, budget: int,
                   track_index: dict[tuple[Any, Any], int]) -> dict[str, Any]:
    """Every kernel of the first ``budget`` kernels from ``start`` on (a bounded top-N sort)."""
    rows = connection.execute(text(
        "SELECT device, stream, start_ns, end_ns, name_id FROM kernels "
        "WHERE run_id = :r AND start_ns >= :start ORDER BY start_ns LIMIT :budget"),
        {"r": run_id, "start": start, "budget": budget}).all()
    if len(rows) < budget and start > t0:
        # Too few kernels after the first prefill: widen the window back to the run start.
        return _detail_window(connection, run_id, t0, t0, budget, track_index)
    name_ids: dict[int, int] = {}
    track, begin, duration, name = [], [], [], []
    for device, stream, start_ns, end_ns, name_id in rows:
        track.append(track_index[(device, stream)])
        begin.append(start_ns - t0)
        duration.append(end_ns - start_ns)
        name.append(name_ids.setdefault(name_id, len(name_ids)))
    window_end = max((b + d for b, d in zip(begin, duration, strict=True)), default=0) + t0
    return {
        "names": _name_table(connection, run_id, name_ids),
        "kernels": {"track": track, "start": begin, "dur": duration, "name": name},
        "window": {"start_ns": (rows[0][2] - t0) if rows else 0, "end_ns": window_end - t0,
                   "kernels": len(rows)},
    }


def _name_table(connection: Connection, run_id: int, name_ids: dict[int, int]
                ) -> list[dict[str, Any]]:
    """The kernel names the detail window uses, with their classification, in index order."""
    table: list[dict[str, Any]] = [{} for _ in name_ids]
    if not name_ids:
        return table
    for row in connection.execute(text(
            "SELECT n.id, n.name, c.op, c.path, c.evidence, c.confidence, c.rule, c.reason, "
            "c.library FROM kernel_names n LEFT JOIN classifications c "
            "ON c.run_id = n.run_id AND c.name_id = n.id WHERE n.run_id = :r"),
            {"r": run_id}).mappings():
        index = name_ids.get(row["id"])
        if index is None:
            continue
        op = row["op"] or "other"
        path = row["path"] or "unknown"
        table[index] = {
            "name": row["name"], "op": op, "path": path,
            "group": (path if op in GEMM_OPS else NON_GEMM),
            "evidence": row["evidence"] or "none", "confidence": row["confidence"] or "low",
            "rule": row["rule"], "reason": row["reason"] or ("not classified"
                                                             if row["op"] is None else None),
            "library": row["library"],
        }
    return table


def bucket_count(track_count: int, row_budget: int) -> int:
    """Time buckets for the overview so that tracks × ~4 groups × buckets fits the budget."""
    return max(MIN_BUCKETS, min(MAX_BUCKETS, row_budget // max(1, 4 * track_count)))


def _overview(connection: Connection, run_id: int, t0: int, t_end: int, row_budget: int
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Busy nanoseconds per track × group × time bucket, aggregated in the database.

    The database groups into ``MAX_BUCKETS`` buckets; when many tracks would make that too
    many rows for the page, buckets are merged here (over the few aggregated rows, never the
    records). Returns the overview (rows keyed by (device, stream) in ``keys``) and the tracks.
    """
    width = max(1, -(-(t_end - t0) // MAX_BUCKETS))
    rows = connection.execute(text_with_lists(
        f"SELECT k.device, k.stream, {GROUP_SQL} AS grp, (k.start_ns - :t0) / :width AS bucket, "
        "COUNT(*), SUM(k.end_ns - k.start_ns) FROM kernels k LEFT JOIN classifications c "
        "ON c.run_id = k.run_id AND c.name_id = k.name_id WHERE k.run_id = :r "
        "GROUP BY k.device, k.stream, grp, bucket", gemm_ops=GEMM_OPS),
        {"r": run_id, "t0": t0, "width": width}).all()
    per_track: dict[tuple[Any, Any], list[int]] = defaultdict(lambda: [0, 0])
    for device, stream, _group, _bucket, count, busy in rows:
        totals = per_track[(device, stream)]
        totals[0] += int(count)
        totals[1] += int(busy or 0)
    tracks = [{"device": key[0], "stream": key[1], "label": _track_label(*key),
               "kernels": totals[0], "busy_ns": totals[1]}
              for key, totals in sorted(per_track.items(), key=lambda kv: _sort_key(kv[0]))]
    factor = -(-MAX_BUCKETS // bucket_count(len(tracks), row_budget))
    merged: dict[tuple[Any, Any, str, int], list[int]] = defaultdict(lambda: [0, 0])
    for device, stream, group, bucket, count, busy in rows:
        cell = merged[(device, stream, group, int(bucket) // factor)]
        cell[0] += int(count)
        cell[1] += int(busy or 0)
    groups: dict[str, int] = {}
    columns: dict[str, list[Any]] = {"keys": [], "group": [], "bucket": [], "count": [],
                                     "busy_ns": []}
    for (device, stream, group, bucket), (count, busy) in merged.items():
        columns["keys"].append((device, stream))
        columns["group"].append(groups.setdefault(group, len(groups)))
        columns["bucket"].append(bucket)
        columns["count"].append(count)
        columns["busy_ns"].append(busy)
    overview = {"bucket_ns": width * factor, "buckets": -(-MAX_BUCKETS // factor),
                "groups": list(groups), **columns}
    return overview, tracks


def _phase_spans(connection: Connection, run_id: int, t0: int, t_end: int
                 ) -> list[list[Any]]:
    """Step shading: consecutive steps of one phase merged into ``[start, end, phase]`` spans.

    Steps are few next to kernels (one per engine iteration), so merging them is a sorted
    sweep in Python. When even the merged spans are too many to draw (prefill and decode
    alternating for hours), shading falls back to the phase holding most time per bucket.
    """
    spans: list[list[Any]] = []
    for start, end, phase in connection.execute(text(
            "SELECT COALESCE(gpu_start_ns, start_ns), COALESCE(gpu_end_ns, end_ns), phase "
            "FROM steps WHERE run_id = :r AND phase IN ('prefill', 'decode', 'mixed') "
            "ORDER BY 1"), {"r": run_id}):
        start, end = int(start) - t0, int(end) - t0
        if spans and spans[-1][2] == phase and start <= spans[-1][1] + max(
                1, (end - start)):
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end, phase])
    if len(spans) <= MAX_PHASE_SPANS:
        return spans
    width = max(1, -(-(t_end - t0) // MAX_PHASE_SPANS))
    time_in: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for start, end, phase in spans:
        first, last = start // width, end // width
        for bucket in range(first, min(last, first + MAX_PHASE_SPANS) + 1):
            overlap = min(end, (bucket + 1) * width) - max(start, bucket * width)
            if overlap > 0:
                time_in[bucket][phase] += overlap
    quantized: list[list[Any]] = []
    for bucket in sorted(time_in):
        phase = max(time_in[bucket].items(), key=lambda kv: kv[1])[0]
        if quantized and quantized[-1][2] == phase and quantized[-1][1] == bucket * width:
            quantized[-1][1] = (bucket + 1) * width
        else:
            quantized.append([bucket * width, (bucket + 1) * width, phase])
    return quantized


def _steps_in(connection: Connection, run_id: int, t0: int, window: dict[str, Any] | None
              ) -> dict[str, list[Any]] | None:
    """The steps overlapping the detail window, with their marker text, for the step lane."""
    if window is None:
        return None
    rows = connection.execute(text(
        "SELECT COALESCE(gpu_start_ns, start_ns), COALESCE(gpu_end_ns, end_ns), phase, text, "
        "source FROM steps WHERE run_id = :r AND COALESCE(gpu_end_ns, end_ns) >= :a "
        "AND COALESCE(gpu_start_ns, start_ns) <= :b ORDER BY 1 LIMIT :limit"),
        {"r": run_id, "a": window["start_ns"] + t0, "b": window["end_ns"] + t0,
         "limit": MAX_STEPS_DRAWN}).all()
    return {
        "start": [int(row[0]) - t0 for row in rows],
        "end": [int(row[1]) - t0 for row in rows],
        "phase": [row[2] for row in rows],
        "text": [row[3] or "" for row in rows],
        "source": [row[4] for row in rows],
    }
