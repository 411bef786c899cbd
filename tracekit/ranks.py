"""Each rank seen: the processes of a run that ran kernels, their devices, their steps lined up.

A **rank** is a process of the run that launched kernels (``kernels.global_pid``): the
ranks of one job are its processes, whether one file holds them all (nsys following
``torchrun``) or each has its own (torch profiler ``rank-N`` files). Ranks are numbered by
the distributed rank their files record when every rank has a distinct one, else in file
order and then by process. A **device** of a rank is a GPU its kernels ran on: the same
device number in two ranks is two devices (each rank may see only its own GPU as 0).

Everything here reads the per-(name, device, thread, process, phase) sums the groups stage
made (``kernel_groups``) and the steps the phases stage made — a few thousand rows, never
the kernel records:

- ``rank_table``/``device_table``: per rank and per device, the GPU, kernels, GPU time,
  GEMM time by datatype path and per phase (the document's ``ranks`` and ``devices``);
- ``iterations``: the steps of the same engine iteration across ranks lined up (the k-th
  step of every rank, in SQL window functions), with the slowest rank and the spread; the
  ``straggler-rank`` finding when one rank is consistently slower (thresholds in
  ``rules/_findings.toml``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from tracekit.findings.model import Finding
from tracekit.findings.rules import FindingRules, load_rules
from tracekit.vocabulary import GEMM_OPS, PHASES

STRAGGLER_RULE = "straggler-rank"
#: iterations listed in the document, the widest spread first
WORST_ITERATIONS = 10


@dataclass(frozen=True)
class Rank:
    """One process that ran kernels."""

    rank: int
    global_pid: int | None
    pid: int | None
    process: str | None
    file: str | None
    host: str | None
    trace_rank: int | None


def ranks(connection: Connection, run_id: int) -> dict[int | None, Rank]:
    """The run's ranks by ``global_pid`` (None: kernels without a known process)."""
    rows = connection.execute(text("""
        SELECT g.global_pid, MIN(p.pid), MIN(p.name), MIN(p.file_index), MIN(f.name),
               MIN(f.host), MIN(f.trace_rank)
        FROM (SELECT DISTINCT global_pid FROM kernel_groups WHERE run_id = :r) AS g
        LEFT JOIN processes p ON p.run_id = :r AND p.global_pid = g.global_pid
        LEFT JOIN run_files f ON f.run_id = :r AND f.file_index = p.file_index
        GROUP BY g.global_pid"""), {"r": run_id}).all()
    per_file: dict[Any, int] = defaultdict(int)
    for row in rows:
        per_file[row[3]] += 1
    trace_ranks = [row[6] for row in rows]
    use_trace = (None not in trace_ranks and len(set(trace_ranks)) == len(rows)
                 and all(per_file[row[3]] == 1 for row in rows))

    def order(row: Any) -> tuple[Any, ...]:
        unknown = row[0] is None
        return (unknown, row[6] if use_trace else 0, row[3] if row[3] is not None else -1,
                row[0] or 0)

    found: dict[int | None, Rank] = {}
    for number, row in enumerate(sorted(rows, key=order)):
        gpid, pid, process, _index, file, host, trace_rank = row
        found[gpid] = Rank(rank=int(trace_rank) if use_trace else number, global_pid=gpid,
                           pid=pid, process=process, file=file, host=host,
                           trace_rank=trace_rank)
    return found


def _group_sums(connection: Connection, run_id: int) -> Sequence[Any]:
    """Kernel time per (process, device, phase, op, path): the groups with their names'
    classification."""
    return connection.execute(text("""
        SELECT g.global_pid, g.device, g.phase, COALESCE(c.op, 'other'),
               COALESCE(c.path, 'unknown'), SUM(g.count), SUM(g.total_ns)
        FROM kernel_groups g
        LEFT JOIN classifications c ON c.run_id = g.run_id AND c.name_id = g.name_id
        WHERE g.run_id = :r
        GROUP BY g.global_pid, g.device, g.phase, c.op, c.path"""), {"r": run_id}).all()


def _usage() -> dict[str, Any]:
    return {"kernels": 0, "gpu_ns": 0, "gemm_ns": 0, "gemm_ns_by_path": {},
            "phase_ns": dict.fromkeys(PHASES, 0)}


def _add(usage: dict[str, Any], phase: str | None, op: str, path: str, count: int,
         total: int) -> None:
    usage["kernels"] += count
    usage["gpu_ns"] += total
    usage["phase_ns"][phase or "unattributed"] = usage["phase_ns"].get(
        phase or "unattributed", 0) + total
    if op in GEMM_OPS:
        usage["gemm_ns"] += total
        by_path = usage["gemm_ns_by_path"]
        by_path[path] = by_path.get(path, 0) + total


def _sorted_paths(usage: dict[str, Any]) -> dict[str, Any]:
    usage["gemm_ns_by_path"] = dict(sorted(usage["gemm_ns_by_path"].items(),
                                           key=lambda kv: (-kv[1], kv[0])))
    return usage


def _device_rows(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    return [dict(row) for row in connection.execute(text(
        "SELECT device_index, global_pid, name, compute_major, compute_minor, sm_count, "
        "memory_bytes, uuid, arch, arch_source FROM devices WHERE run_id = :r "
        "ORDER BY device_index, id"), {"r": run_id}).mappings()]


def tables(connection: Connection, run_id: int) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]]]:
    """The document's ``ranks`` and ``devices``: per rank, and per device as the ranks used
    them (devices that ran nothing are listed too, with zeros)."""
    found = ranks(connection, run_id)
    devices = _device_rows(connection, run_id)
    by_key = {(d["device_index"], d["global_pid"]): d for d in devices}
    per_rank: dict[int | None, dict[str, Any]] = {}
    per_device: dict[tuple[int | None, int | None], dict[str, Any]] = {}
    for gpid, device, phase, op, path, count, total in _group_sums(connection, run_id):
        _add(per_rank.setdefault(gpid, _usage()), phase, op, path, int(count), int(total or 0))
        _add(per_device.setdefault((gpid, device), _usage()), phase, op, path, int(count),
             int(total or 0))
    used_rows: set[int] = set()
    device_entries = []
    for (gpid, index), usage in sorted(per_device.items(), key=lambda kv: (
            found[kv[0][0]].rank if kv[0][0] in found else 1 << 30, kv[0][1] or 0)):
        row = by_key.get((index, gpid)) or by_key.get((index, None))
        if row is not None:
            used_rows.add(id(row))
        rank = found.get(gpid)
        device_entries.append(_device_entry(index, row, rank, _sorted_paths(usage)))
    for row in devices:
        if id(row) not in used_rows:
            owner = found.get(row["global_pid"]) if row["global_pid"] is not None else None
            device_entries.append(_device_entry(row["device_index"], row, owner, _usage()))
    rank_entries = []
    for gpid, rank in sorted(found.items(), key=lambda kv: kv[1].rank):
        usage = _sorted_paths(per_rank.get(gpid, _usage()))
        mine = [d for d in device_entries if d["rank"] == rank.rank and d["kernels"]]
        rank_entries.append({
            "rank": rank.rank, "trace_rank": rank.trace_rank, "pid": rank.pid,
            "process": rank.process, "file": rank.file, "host": rank.host,
            "devices": [d["index"] for d in mine],
            "gpus": sorted({d["name"] for d in mine if d["name"]}), **usage})
    return rank_entries, device_entries


def _device_entry(index: int | None, row: dict[str, Any] | None, rank: Rank | None,
                  usage: dict[str, Any]) -> dict[str, Any]:
    row = row or {}
    major, minor = row.get("compute_major"), row.get("compute_minor")
    return {
        "index": index, "rank": rank.rank if rank else None,
        "pid": rank.pid if rank else None, "name": row.get("name"),
        "compute_capability": f"{major}.{minor}" if major is not None else None,
        "arch": row.get("arch"), "arch_source": row.get("arch_source"),
        "sm_count": row.get("sm_count"), "memory_bytes": row.get("memory_bytes"),
        "uuid": row.get("uuid"), "kernels": usage["kernels"], "gpu_ns": usage["gpu_ns"],
        "gemm_ns": usage["gemm_ns"], "gemm_ns_by_path": usage["gemm_ns_by_path"],
    }


#: the k-th step of every rank, its duration (GPU span, else CPU span), and per iteration
#: the slowest rank, the fastest and slowest durations and the mean of the other ranks
_ALIGNED = """
WITH s AS (
    SELECT global_pid, phase,
           ROW_NUMBER() OVER (PARTITION BY global_pid ORDER BY start_ns, id) AS k,
           COALESCE(gpu_end_ns - gpu_start_ns, end_ns - start_ns) AS d
    FROM steps WHERE run_id = :r AND global_pid IS NOT NULL
), w AS (
    SELECT k, global_pid, phase, d,
           MAX(d) OVER (PARTITION BY k) AS slowest, MIN(d) OVER (PARTITION BY k) AS fastest,
           SUM(d) OVER (PARTITION BY k) AS total, COUNT(*) OVER (PARTITION BY k) AS n,
           ROW_NUMBER() OVER (PARTITION BY k ORDER BY d DESC, global_pid) AS place
    FROM s
)
SELECT k, global_pid, phase, slowest, fastest, (total - d) * 1.0 / (n - 1) AS others
FROM w WHERE place = 1 AND n = :ranks ORDER BY k"""


def iterations(connection: Connection, run_id: int, rules: FindingRules | None = None
               ) -> dict[str, Any] | None:
    """The steps of the same iteration across ranks lined up (None with fewer than two
    ranks that recorded steps): how many, the spread, which rank was slowest how often and
    by how much, the iterations of widest spread, and the straggler when there is one."""
    found = ranks(connection, run_id)
    counts = {gpid: int(n) for gpid, n in connection.execute(text(
        "SELECT global_pid, COUNT(*) FROM steps WHERE run_id = :r AND global_pid IS NOT NULL "
        "GROUP BY global_pid"), {"r": run_id}) if gpid in found}
    if len(counts) < 2:
        return None
    rows = [(int(k), gpid, phase, int(top), int(bottom), float(others or 0.0))
            for k, gpid, phase, top, bottom, others in connection.execute(
                text(_ALIGNED), {"r": run_id, "ranks": len(counts)})]
    slowest: dict[int, list[float]] = defaultdict(list)
    spreads = []
    for _k, gpid, _phase, top, bottom, others in rows:
        spreads.append(int(top - bottom))
        if gpid in found and others:
            slowest[found[gpid].rank].append(top / others - 1.0)
    aligned = len(rows)
    worst = sorted(rows, key=lambda row: (-(row[3] - row[4]), row[0]))[:WORST_ITERATIONS]
    summary: dict[str, Any] = {
        "ranks": len(counts), "aligned": aligned,
        "steps_per_rank": {str(found[gpid].rank): n for gpid, n in
                           sorted(counts.items(), key=lambda kv: found[kv[0]].rank)},
        "mean_spread_ns": round(sum(spreads) / aligned) if aligned else 0,
        "max_spread_ns": max(spreads, default=0),
        "slowest": [{"rank": rank, "iterations": len(excess),
                     "share": len(excess) / aligned,
                     "mean_excess": sum(excess) / len(excess)}
                    for rank, excess in sorted(slowest.items(),
                                               key=lambda kv: (-len(kv[1]), kv[0]))],
        "worst": [{"index": int(k), "phase": phase, "slowest_rank":
                   found[gpid].rank if gpid in found else None,
                   "slowest_ns": int(top), "fastest_ns": int(bottom),
                   "spread_ns": int(top - bottom)}
                  for k, gpid, phase, top, bottom, _others in worst],
        "straggler": None,
    }
    straggler = _straggler(summary, rules or load_rules())
    if straggler is not None:
        summary["straggler"] = straggler
    return summary


def _straggler(summary: dict[str, Any], rules: FindingRules) -> int | None:
    """The rank slowest in at least ``straggler_min_share`` of at least
    ``straggler_min_iterations`` lined-up iterations, by at least ``straggler_min_excess``
    over the mean of the other ranks."""
    if summary["aligned"] < rules.setting("straggler_min_iterations", 5):
        return None
    for entry in summary["slowest"][:1]:
        if (entry["share"] >= rules.setting("straggler_min_share", 0.6)
                and entry["mean_excess"] >= rules.setting("straggler_min_excess", 0.1)):
            return int(entry["rank"])
    return None


def rank_findings(connection: Connection, run_id: int,
                  rules: FindingRules | None = None) -> list[Finding]:
    """The findings about ranks (a straggler), written to ``findings`` beside the others."""
    rules = rules or load_rules()
    summary = iterations(connection, run_id, rules)
    if summary is None or summary["straggler"] is None:
        return []
    rank = summary["straggler"]
    entry = next(e for e in summary["slowest"] if e["rank"] == rank)
    rule = rules.rule(STRAGGLER_RULE)
    finding = Finding(
        rule=rule.id, severity=rule.severity,
        message=rule.render(rank=rank, share=entry["share"], aligned=summary["aligned"],
                            ranks=summary["ranks"], excess=entry["mean_excess"]),
        share=entry["share"],
        evidence=[{"source": "steps", "rank": rank, "iterations": entry["iterations"],
                   "aligned": summary["aligned"], "mean_excess": entry["mean_excess"]},
                  *([{"source": "hint", "text": rule.hint}] if rule.hint else [])],
        hint=rule.hint)
    connection.execute(text(
        "INSERT INTO findings (run_id, rule, severity, message, phase, share, evidence_json) "
        "VALUES (:r, :rule, :severity, :message, NULL, :share, :evidence)"),
        {"r": run_id, "rule": finding.rule, "severity": finding.severity,
         "message": finding.message, "share": finding.share,
         "evidence": json.dumps(finding.evidence, default=str)})
    return [finding]
