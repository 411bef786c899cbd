"""The analysis document: one dict per run, the source of ``--json``, the terminal summary
and the HTML report.

Everything is read from ``kernel_groups`` (records already summed per name, device, thread
and phase by ``tracekit.aggregate``); Python only sees one row per unique name and phase.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, text

from tracekit.classifier.convolutions import convolution_names
from tracekit.store.counts import run_counts
from tracekit.vocabulary import GEMM_OPS, LAYERS, PHASES, SEVERITIES

DOCUMENT_VERSION = 1



def run_header(connection: Connection, run_id: int) -> dict[str, Any]:
    """The ``run`` object: where the data came from."""
    row = connection.execute(text(
        "SELECT id, source_path, sha256, format, producer, producer_version, schema_version, "
        "tracekit_version, created_at, label, engine, model_label, gpu, verdict, meta_json "
        "FROM runs WHERE id = :run_id"), {"run_id": run_id}).mappings().one()
    meta = json.loads(row["meta_json"]) if row["meta_json"] else {}
    return {
        "id": row["id"],
        "source": row["source_path"],
        "sha256": row["sha256"],
        "format": row["format"],
        "producer": row["producer"],
        "producer_version": row["producer_version"],
        "schema_version": row["schema_version"],
        "tracekit_version": row["tracekit_version"],
        "created_at": str(row["created_at"]),
        "label": row["label"],
        "engine": row["engine"],
        "model_label": row["model_label"],
        "gpu": row["gpu"],
        "meta": meta,
    }


CLASSIFICATION_FIELDS = ("op", "path", "weights", "activations", "accum", "library", "rule",
                         "evidence", "confidence", "reason")


def kernels(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    """One entry per unique kernel name with counts, time, classification and phase time."""
    per_name: dict[int, dict[str, Any]] = {}
    for row in connection.execute(text(
        "SELECT n.id, n.name, n.short_name, n.mangled_name, "
        + ", ".join(f"c.{field}" for field in CLASSIFICATION_FIELDS)
        + " FROM kernel_names n LEFT JOIN classifications c "
        "ON c.run_id = n.run_id AND c.name_id = n.id WHERE n.run_id = :run_id"),
        {"run_id": run_id}).mappings():
        entry: dict[str, Any] = {"name": row["name"], "short_name": row["short_name"],
                                 "mangled_name": row["mangled_name"], "count": 0, "total_ns": 0}
        for field in CLASSIFICATION_FIELDS:
            entry[field] = row[field]
        if entry["op"] is None:
            entry.update(op="other", path="unknown", evidence="none", confidence="low",
                         reason="not classified")
        entry["phase_ns"] = dict.fromkeys(PHASES, 0)
        per_name[row["id"]] = entry
    for name_id, phase, count, total in connection.execute(text(
        "SELECT name_id, phase, SUM(count), SUM(total_ns) FROM kernel_groups "
        "WHERE run_id = :run_id GROUP BY name_id, phase"), {"run_id": run_id}):
        summed = per_name.get(name_id)
        if summed is None:
            continue
        summed["count"] += int(count)
        summed["total_ns"] += int(total or 0)
        summed["phase_ns"][phase or "unattributed"] += int(total or 0)
    ordered = sorted(per_name.values(), key=lambda e: (-e["total_ns"], e["name"]))
    shown = [entry for entry in ordered if entry["count"] > 0]
    # a convolution computed as a GEMM (rules/_convolutions.toml); mangled names demangled once
    convolutions = convolution_names(e["name"] for e in shown if e["op"] in GEMM_OPS)
    for entry in shown:
        entry["convolution"] = entry["op"] in GEMM_OPS and entry["name"] in convolutions
    return shown


def phases(connection: Connection, run_id: int, kernel_entries: list[dict[str, Any]]
           ) -> dict[str, Any]:
    """Per phase: steps, ranks, tokens, GPU time and GEMM time by datatype path.

    Steps and tokens are summed over every process that recorded steps: with tensor
    parallelism each rank records its own copy of every step, so ``ranks`` says how many
    processes the sums cover. How the phases were found is ``phase_attribution``.
    """
    result: dict[str, Any] = {
        phase: {"steps": 0, "ranks": 0, "source": None, "prefill_tokens": 0, "decode_tokens": 0,
                "gpu_ns": 0, "gemm_ns": 0, "gemm_ns_by_path": {}}
        for phase in PHASES
    }
    for phase, source, steps, ranks, prefill_tokens, decode_tokens in connection.execute(text(
        "SELECT phase, MIN(source), COUNT(*), COUNT(DISTINCT global_pid), SUM(prefill_tokens), "
        "SUM(decode_tokens) FROM steps WHERE run_id = :run_id GROUP BY phase"),
        {"run_id": run_id}):
        if phase not in result:
            continue
        result[phase].update(steps=int(steps), ranks=int(ranks), source=source,
                             prefill_tokens=int(prefill_tokens or 0),
                             decode_tokens=int(decode_tokens or 0))
    for entry in kernel_entries:
        for phase, ns in entry["phase_ns"].items():
            result[phase]["gpu_ns"] += ns
            if entry["op"] in GEMM_OPS and ns:
                by_path = result[phase]["gemm_ns_by_path"]
                by_path[entry["path"]] = by_path.get(entry["path"], 0) + ns
                result[phase]["gemm_ns"] += ns
    return result


def phase_attribution(connection: Connection, run_id: int, per_phase: dict[str, Any]
                      ) -> dict[str, Any]:
    """How the run's phases were found: ``method`` is ``marker`` (engine step markers),
    ``heuristic`` (kernel families, no markers) or ``none`` (nothing attributed), and
    ``message`` says it in one plain sentence."""
    sources = [source for (source,) in connection.execute(text(
        "SELECT DISTINCT source FROM steps WHERE run_id = :run_id"), {"run_id": run_id})]
    engines = sorted(engine for (engine,) in connection.execute(text(
        "SELECT DISTINCT engine FROM steps WHERE run_id = :run_id AND engine IS NOT NULL"),
        {"run_id": run_id}))
    attributed = sum(per_phase[p]["gpu_ns"] for p in PHASES if p != "unattributed")
    total = attributed + per_phase["unattributed"]["gpu_ns"]
    share = attributed / total if total else 0.0
    if "marker" in sources:
        method = "marker"
        message = (f"phases from {', '.join(engines) or 'engine'} step markers; "
                   f"{100 * share:.1f}% of GPU time attributed")
    elif "heuristic" in sources:
        method = "heuristic"
        message = (f"no step markers: phases inferred from kernel families (heuristic); "
                   f"{100 * share:.1f}% of GPU time attributed")
    else:
        method = "none"
        ranges = run_counts(connection, run_id)["nvtx_ranges"]
        message = (f"nothing could be attributed to a phase: no step markers (among "
                   f"{int(ranges or 0):,} ranges) and no kernel family that tells prefill "
                   "from decode")
    return {"method": method, "engines": engines, "attributed_share": share, "message": message}


def findings(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    """The ``findings`` list, most severe first."""
    order = {word: rank for rank, word in enumerate(SEVERITIES)}
    rows = connection.execute(text(
        "SELECT rule, severity, message, phase, share, evidence_json FROM findings "
        "WHERE run_id = :run_id ORDER BY id"), {"run_id": run_id}).mappings()
    items = [{
        "rule": row["rule"], "severity": row["severity"], "message": row["message"],
        "phase": row["phase"], "share": row["share"],
        "evidence": json.loads(row["evidence_json"]) if row["evidence_json"] else [],
    } for row in rows]
    return sorted(items, key=lambda item: order.get(item["severity"], 3))


def summary(connection: Connection, run_id: int, kernel_entries: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """Run-wide totals the terminal summary opens with."""
    gemm_by_path: dict[str, int] = defaultdict(int)
    convolutions = 0
    for entry in kernel_entries:
        if entry["op"] in GEMM_OPS:
            gemm_by_path[entry["path"]] += entry["total_ns"]
            convolutions += entry["total_ns"] if entry.get("convolution") else 0
    gemm_total = sum(gemm_by_path.values())
    stored = run_counts(connection, run_id)
    counts = {name: stored[name] for name in ("nvtx_ranges", "nvtx_domains", "processes",
                                              "threads", "runtime_calls", "memory_ops")}
    return {
        "kernel_count": sum(e["count"] for e in kernel_entries),
        "unique_kernel_names": len(kernel_entries),
        "gpu_time_ns": sum(e["total_ns"] for e in kernel_entries),
        "gemm_time_ns": gemm_total,
        "gemm_ns_by_path": dict(sorted(gemm_by_path.items(), key=lambda kv: -kv[1])),
        "convolution_gemm_ns": convolutions,
        "unknown_gemm_share": (gemm_by_path.get("unknown", 0) / gemm_total) if gemm_total else 0.0,
        **{key: int(value) for key, value in counts.items()},
    }


def process_names(connection: Connection, run_id: int,
                  rank_of: dict[int | None, int] | None = None) -> list[dict[str, Any]]:
    """The threads that launched kernels (at most 20, most GPU time first): process and
    thread by name and id, the rank, the devices their kernels ran on, kernels, GPU time."""
    rows = connection.execute(text(
        "SELECT g.global_pid, g.global_tid, g.device, MIN(t.name), MIN(t.tid), MIN(p.name), "
        "MIN(p.pid), SUM(g.count), SUM(g.total_ns) "
        "FROM kernel_groups g "
        "LEFT JOIN threads t ON t.run_id = g.run_id AND t.global_tid = g.global_tid "
        "LEFT JOIN processes p ON p.run_id = g.run_id AND p.global_pid = g.global_pid "
        "WHERE g.run_id = :run_id GROUP BY g.global_pid, g.global_tid, g.device"),
        {"run_id": run_id}).all()
    threads: dict[tuple[Any, Any], dict[str, Any]] = {}
    for gpid, gtid, device, thread, tid, process, pid, count, total in rows:
        entry = threads.setdefault((gpid, gtid), {
            "global_tid": gtid, "thread": thread, "tid": tid, "process": process, "pid": pid,
            "rank": (rank_of or {}).get(gpid), "devices": [], "kernels": 0, "gpu_ns": 0})
        entry["kernels"] += int(count)
        entry["gpu_ns"] += int(total or 0)
        if device is not None and device not in entry["devices"]:
            entry["devices"].append(int(device))
    ordered = sorted(threads.values(), key=lambda e: (-e["gpu_ns"], -e["kernels"],
                                                      str(e["global_tid"])))[:20]
    for entry in ordered:
        entry["devices"].sort()
    return ordered


#: the order the layer table lists its groups in
_LAYER_ORDER = {word: i for i, word in enumerate(LAYERS)}
_PHASE_ORDER = {word: i for i, word in enumerate(PHASES)}


def layers(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    """The ``layers`` table: each (phase, layer group, path that ran) judged against what
    that group declares, on this GPU, in this engine (``layer_verdicts``)."""
    rows = []
    for (evidence_json,) in connection.execute(text(
            "SELECT evidence_json FROM layer_verdicts WHERE run_id = :run_id"),
            {"run_id": run_id}):
        try:
            row = json.loads(evidence_json or "{}")
        except ValueError:
            continue
        if isinstance(row, dict) and row:
            rows.append(row)
    rows.sort(key=lambda r: (_PHASE_ORDER.get(str(r.get("phase")), 99),
                             _LAYER_ORDER.get(str(r.get("layer")), 99), -int(r.get("ns") or 0)))
    return rows


def build_document(connection: Connection, run_id: int) -> dict[str, Any]:
    """The whole analysis document for one run (``--json``: docs/json-document.md)."""
    kernel_entries = kernels(connection, run_id)
    header = run_header(connection, run_id)
    phase_table = phases(connection, run_id, kernel_entries)
    verdict_row = connection.execute(text("SELECT verdict FROM runs WHERE id = :r"),
                                     {"r": run_id}).scalar()
    from tracekit.ranks import iterations, ranks, tables
    from tracekit.roofline.section import roofline_section

    rank_entries, device_entries = tables(connection, run_id)
    rank_of = {gpid: rank.rank for gpid, rank in ranks(connection, run_id).items()}
    return {
        "tracekit_document": DOCUMENT_VERSION,
        "run": header,
        "devices": device_entries,
        "ranks": rank_entries,
        "iterations": iterations(connection, run_id),
        "summary": summary(connection, run_id, kernel_entries),
        "verdict": [line for line in (verdict_row or "").splitlines() if line],
        "phases": phase_table,
        "phase_attribution": phase_attribution(connection, run_id, phase_table),
        "layers": layers(connection, run_id),
        "findings": findings(connection, run_id),
        "launchers": process_names(connection, run_id, rank_of),
        "roofline": roofline_section(connection, run_id),
        "kernels": kernel_entries,
    }
