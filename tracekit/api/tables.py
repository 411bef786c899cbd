"""A run's small tables as DataFrames: one row per name, phase, path, step, finding, device.

Most come from the analysis document (``tracekit.report.document``), the same dict the
terminal summary, ``--json`` and the HTML report show, so a DataFrame here and the line of
the summary it mirrors can never disagree. The others (``gemm_paths`` by device, ``steps``)
read the store's derived tables with one aggregate query each.

A new per-run table (e.g. a roofline) is a function here taking the document and/or a
connection and the run id, plus a one-line method on ``tracekit.api.run.Run``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Connection

from tracekit.api.columns import VOCABULARY
from tracekit.api.frames import Column, frame_of, read_columns, records_frame
from tracekit.errors import UsageError
from tracekit.store.db import Store
from tracekit.store.runs import RunSummary
from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS, LAYERS, OUTCOMES, PHASES, SEVERITIES


def _category(values: Sequence[Any], vocabulary: Sequence[str]) -> pd.Categorical:
    """A categorical whose categories are ``vocabulary`` plus whatever else occurs."""
    extra = [value for value in dict.fromkeys(values)
             if value is not None and value not in vocabulary]
    return pd.Categorical(list(values), categories=[*vocabulary, *extra])


def names(document: dict[str, Any]) -> pd.DataFrame:
    """One row per unique kernel name, most GPU time first (the summary's top kernels)."""
    gpu_ns = document["summary"]["gpu_time_ns"]
    rows = []
    for entry in document["kernels"]:
        row = {key: entry.get(key) for key in (
            "name", "op", "path", "weights", "activations", "accum", "library", "rule",
            "evidence", "confidence", "reason", "count", "total_ns")}
        row["convolution"] = bool(entry.get("convolution"))
        row["share"] = entry["total_ns"] / gpu_ns if gpu_ns else 0.0
        for phase in PHASES:
            row[f"{phase}_ns"] = entry["phase_ns"].get(phase, 0)
        rows.append(row)
    frame = records_frame(rows, {
        "name": "category", "op": None, "path": None, "weights": "category",
        "activations": "category", "accum": "category", "library": "category",
        "rule": "category", "evidence": None, "confidence": None, "reason": None,
        "count": "int64", "total_ns": "int64", "convolution": "bool", "share": "float64",
        **{f"{phase}_ns": "int64" for phase in PHASES}})
    for column, vocabulary in VOCABULARY.items():
        frame[column] = _category(frame[column].tolist(), vocabulary)
    return frame


def _by_columns(by: str | Sequence[str] | None) -> list[str]:
    words = [] if by is None else [by] if isinstance(by, str) else list(by)
    unknown = [word for word in words if word not in ("phase", "device")]
    if unknown or len(set(words)) != len(words):
        raise UsageError(f"gemm_paths(by={by!r}): group by 'phase', 'device', both, or None "
                         "(the whole run)")
    return words


def gemm_paths(connection: Connection, run_id: int, by: str | Sequence[str] | None
               ) -> pd.DataFrame:
    """GEMM launches and time per datatype path, within each group of ``by``.

    ``share`` is the path's part of its group's GEMM time. Summed from ``kernel_groups``,
    like the document's per-phase and run-wide GEMM tables.
    """
    keys = _by_columns(by)
    expressions = {"phase": "COALESCE(g.phase, 'unattributed')", "device": "g.device"}
    group = [expressions[key] for key in keys]
    rows = connection.execute(text_with_lists(
        "SELECT " + "".join(f"{expression}, " for expression in group)
        + "COALESCE(c.path, 'unknown'), SUM(g.count), SUM(g.total_ns) FROM kernel_groups g "
        "JOIN classifications c ON c.run_id = g.run_id AND c.name_id = g.name_id "
        "WHERE g.run_id = :run_id AND c.op IN :gemm_ops "
        "GROUP BY " + ", ".join([*group, "COALESCE(c.path, 'unknown')"]), gemm_ops=GEMM_OPS),
        {"run_id": run_id}).all()
    records = [dict(zip([*keys, "path", "count", "time_ns"], row, strict=True)) for row in rows]
    totals: dict[tuple[Any, ...], int] = {}
    for record in records:
        record["count"], record["time_ns"] = int(record["count"]), int(record["time_ns"] or 0)
        group_key = tuple(record[key] for key in keys)
        totals[group_key] = totals.get(group_key, 0) + record["time_ns"]
    for record in records:
        total = totals[tuple(record[key] for key in keys)]
        record["share"] = record["time_ns"] / total if total else 0.0

    def order(record: dict[str, Any]) -> tuple[Any, ...]:
        rank = tuple(PHASES.index(record[key]) if key == "phase" and record[key] in PHASES
                     else -1 if record[key] is None else record[key] for key in keys)
        return (*rank, -record["time_ns"], record["path"])

    records.sort(key=order)
    frame = records_frame(records, {
        **{key: None for key in keys}, "path": None, "count": "int64", "time_ns": "int64",
        "share": "float64"})
    if "phase" in keys:
        frame["phase"] = _category(frame["phase"].tolist(), PHASES)
    if "device" in keys:
        frame["device"] = frame["device"].astype("Int32")
    frame["path"] = _category(frame["path"].tolist(), VOCABULARY["path"])
    return frame


def phases(document: dict[str, Any]) -> pd.DataFrame:
    """Per phase with GPU time or steps (the summary's phases table)."""
    rows = []
    for phase in PHASES:
        data = document["phases"][phase]
        if not data["gpu_ns"] and not data["steps"]:
            continue
        rows.append({"phase": phase, **{key: data[key] for key in (
            "source", "steps", "ranks", "prefill_tokens", "decode_tokens", "gpu_ns",
            "gemm_ns")}})
    frame = records_frame(rows, {
        "phase": None, "source": "category", "steps": "int64", "ranks": "int64",
        "prefill_tokens": "int64", "decode_tokens": "int64", "gpu_ns": "int64",
        "gemm_ns": "int64"})
    frame["phase"] = _category(frame["phase"].tolist(), PHASES)
    return frame


def findings(document: dict[str, Any]) -> pd.DataFrame:
    """The findings, most severe first; ``evidence`` holds each finding's evidence list."""
    frame = records_frame(document["findings"], {
        "severity": None, "rule": "category", "phase": None, "share": "float64",
        "message": None, "evidence": None})
    frame["severity"] = _category(frame["severity"].tolist(), SEVERITIES)
    frame["phase"] = _category(frame["phase"].tolist(), PHASES)
    return frame


def layers(document: dict[str, Any]) -> pd.DataFrame:
    """The layer table: one row per (phase, layer group, path that ran) with what the group
    declares, what the engine can best run for it on this GPU, the outcome and its evidence."""
    frame = records_frame(document.get("layers") or [], {
        "phase": None, "layer": None, "declared": None, "declared_status": None,
        "expected": None, "expected_kind": None, "expected_kernels": None, "ran": None,
        "weights": None, "ns": "int64", "share": "float64", "outcome": None, "severity": None,
        "reason": None, "sources": None, "libraries": None, "kernels": None})
    frame["phase"] = _category(frame["phase"].tolist(), PHASES)
    frame["layer"] = _category(frame["layer"].tolist(), LAYERS)
    frame["ran"] = _category(frame["ran"].tolist(), VOCABULARY["path"])
    frame["outcome"] = _category(frame["outcome"].tolist(), OUTCOMES)
    frame["severity"] = _category(frame["severity"].tolist(), SEVERITIES)
    return frame


def devices(document: dict[str, Any]) -> pd.DataFrame:
    """The run's GPUs as the ranks used them (the trace, or ``--gpu``, describes them): one
    row per (rank, device number) that ran kernels, then the devices that ran none."""
    return records_frame(document["devices"], {
        "rank": "Int32", "index": "Int32", "pid": "Int64", "name": None,
        "compute_capability": None, "arch": None, "arch_source": None, "sm_count": "Int32",
        "memory_bytes": "Int64", "uuid": None, "kernels": "int64", "gpu_ns": "int64",
        "gemm_ns": "int64", "gemm_ns_by_path": None})


def ranks(document: dict[str, Any]) -> pd.DataFrame:
    """One row per rank (process that ran kernels): where it ran, what, per phase."""
    rows = []
    for entry in document.get("ranks") or []:
        row = {key: value for key, value in entry.items() if key != "phase_ns"}
        row.update({f"{phase}_ns": entry["phase_ns"].get(phase, 0) for phase in PHASES})
        rows.append(row)
    return records_frame(rows, {
        "rank": "int32", "trace_rank": "Int32", "pid": "Int64", "process": None, "file": None,
        "host": None, "devices": None, "gpus": None, "kernels": "int64", "gpu_ns": "int64",
        "gemm_ns": "int64", "gemm_ns_by_path": None,
        **{f"{phase}_ns": "int64" for phase in PHASES}})


def launchers(document: dict[str, Any]) -> pd.DataFrame:
    """The CPU threads that launched the most GPU time (the summary's launching threads)."""
    return records_frame(document.get("launchers") or [], {
        "global_tid": "Int64", "thread": None, "tid": "Int64", "process": None,
        "pid": "Int64", "rank": "Int32", "devices": None, "kernels": "int64",
        "gpu_ns": "int64"})


def summary(document: dict[str, Any]) -> pd.Series:
    """The run-wide counts and times the summary opens with (kernels, names, GPU time …)."""
    values = {key: value for key, value in document["summary"].items()
              if not isinstance(value, dict)}
    return pd.Series(values, name=document["run"]["id"], dtype=object)


_STEP_COLUMNS: tuple[Column, ...] = (
    Column("id", "s.id"),
    Column("phase", "CASE s.phase " + " ".join(
        f"WHEN '{phase}' THEN {index}" for index, phase in enumerate(PHASES)) + " END",
        "codes", "int8", PHASES),
    Column("source", "s.source", "text"),
    Column("engine", "s.engine", "text"),
    Column("text", "s.text", "text"),
    Column("start_ns", "s.start_ns"),
    Column("end_ns", "s.end_ns"),
    Column("duration_ns", "s.end_ns - s.start_ns"),
    Column("gpu_start_ns", "s.gpu_start_ns", "nullable"),
    Column("gpu_end_ns", "s.gpu_end_ns", "nullable"),
    Column("global_pid", "s.global_pid", "nullable"),
    Column("global_tid", "s.global_tid", "nullable"),
    *(Column(name, f"s.{name}", "nullable") for name in (
        "prefill_tokens", "decode_tokens", "prefill_requests", "decode_requests")),
)


def steps(store: Store, connection: Connection, run_id: int) -> pd.DataFrame:
    """The run's engine steps (from markers or heuristics), in the store's order."""
    return frame_of(read_columns(store, connection, _STEP_COLUMNS,
                                 f"FROM steps s WHERE s.run_id = {int(run_id)}",
                                 order_by="s.id"))


def runs(summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """The runs of a store, oldest first (``tracekit runs``)."""
    frame = records_frame([summary.as_dict() for summary in summaries], {
        "id": "int64", "created_at": None, "label": None, "source": None, "format": "category",
        "gpu": None, "engine": None, "model_label": None, "kernels": "int64", "verdict": None})
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
    return frame.set_index("id")


_DIFF_COLUMNS = {"phase": None, "path": None, "a_ns": "int64", "b_ns": "int64",
                 "a_share": "float64", "b_share": "float64", "share_change": "float64"}


def diff(comparison: dict[str, Any]) -> pd.DataFrame:
    """GEMM time by datatype path on both sides, run-wide (``all``) then per phase."""
    rows = [{"phase": phase, "path": path, **move}
            for phase, paths in [("all", comparison["gemm_paths"])]
            + [(phase, data["paths"]) for phase, data in comparison["phases"].items()]
            for path, move in paths.items()]
    frame = records_frame(rows, _DIFF_COLUMNS)
    frame["phase"] = _category(frame["phase"].tolist(), ("all", *PHASES))
    frame["path"] = _category(frame["path"].tolist(), VOCABULARY["path"])
    return frame


def classifications(results: Sequence[Any]) -> pd.DataFrame:
    """``tracekit.classify(names)``: one row per input name, in input order."""
    frame = records_frame([result.as_dict() for result in results], {
        "name": "category", "op": None, "path": None, "weights": "category",
        "activations": "category", "accum": "category", "library": "category",
        "rule": "category", "evidence": None, "confidence": None, "reason": None})
    for column, vocabulary in VOCABULARY.items():
        frame[column] = _category(frame[column].tolist(), vocabulary)
    return frame


#: the roofline records' columns and dtypes (``tracekit.roofline.roofline_records``)
ROOFLINE_COLUMNS: dict[str, str | None] = {
    "phase": "category", "path": "category", "name": None, "source": "category", "op": None,
    "signature": None, "launches": "int64", "ops": "int64", "op_share": "float64",
    "time_ns": "int64", "m": "Int64", "n": "Int64", "k": "Int64", "batch": "Int64",
    "flops": "float64", "bytes": "float64", "intensity": "float64", "tflops": "float64",
    "gbps": "float64", "bound": "category", "roof_tflops": "float64", "roof_share": "float64",
    "activations": "category", "reason": None, "notes": None}


def roofline(connection: Connection, run_id: int) -> pd.DataFrame:
    """One row per GEMM family (kernel name × op signature, or × ncu counters): launches,
    GPU time, FLOPs and bytes where the trace tells them, achieved TFLOP/s and GB/s,
    intensity, the bound and the share of the roof; NaN (never a guess) and a ``reason``
    where the work is unknown."""
    from tracekit.roofline import roofline_records

    return records_frame(roofline_records(connection, run_id), ROOFLINE_COLUMNS)
