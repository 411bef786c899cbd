"""The run's GEMM families: launches grouped by (phase, kernel name, what tells their work).

A family is one kernel name in one phase together with one source of work:

- ``shapes``: the torch-profiler CPU op behind the launches (linked by External id) and its
  recorded operand shapes and types — one family per distinct op signature;
- ``counters``: Nsight Compute counters of the profiled launches (tensor-pipe operations,
  DRAM bytes), summed per name. They measure what the hardware did: tensor operations include
  the rows a tile pads (an 8-row decode GEMM run in 128-row tiles counts 16× its useful
  2·M·N·K), and DRAM bytes include re-reads (or miss what caches served);
- ``none``: launches nothing tells the work of (no linked op, no counters), kept so that every
  GEMM nanosecond is accounted for and the reason is said.

All row work happens in SQL: one aggregate over the run's GEMM kernels joined to their CPU op
(``kernels.cpu_op_id``; kernels as the outer loop, a primary-key lookup into ``cpu_ops`` per
kernel: linear, whatever the planner would have preferred), one aggregate over
``kernel_metrics``, and the per-name times already summed in ``kernel_groups``. Python then
sees one row per unique signature.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tracekit.roofline.work import Unknown, Work, op_work
from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS

#: Each GEMM launch follows ``kernels.cpu_op_id`` (the framework op that launched it, resolved
#: once at ingest) to its op: the run's kernels are the outer loop (SQLite keeps a CROSS
#: JOIN's order), the classification is a key search by (run_id, name_id) and the op one by
#: primary key — linear whatever the tables hold.
#:
#: One op can launch several GEMM-classified kernels: its work is shared among its launches by
#: GPU time (``op_share`` sums to one per op), so no op is counted twice and each share runs at
#: the op's throughput.
SHAPES_SQL = """
WITH launches AS (
    SELECT k.cpu_op_id AS op_id, COALESCE(k.phase, 'unattributed') AS phase, k.name_id,
           o.name AS op_name, o.input_types, o.input_dims, k.end_ns - k.start_ns AS ns
    FROM kernels AS k
    CROSS JOIN classifications AS c
    CROSS JOIN cpu_ops AS o
    WHERE k.run_id = :run_id AND k.cpu_op_id IS NOT NULL
      AND c.run_id = k.run_id AND c.name_id = k.name_id AND c.op IN :gemm_ops
      AND o.id = k.cpu_op_id
), per_op AS (
    SELECT op_id, phase, name_id, op_name, input_types, input_dims, COUNT(*) AS launches,
           SUM(ns) AS ns, SUM(SUM(ns)) OVER (PARTITION BY op_id) AS op_ns,
           COUNT(*) OVER (PARTITION BY op_id) AS op_groups
    FROM launches
    GROUP BY op_id, phase, name_id, op_name, input_types, input_dims
)
SELECT phase, name_id, op_name, input_types, input_dims, SUM(launches) AS launches,
       COUNT(*) AS ops, SUM(ns) AS time_ns,
       SUM(CASE WHEN op_ns > 0 THEN CAST(ns AS DOUBLE PRECISION) / op_ns
                ELSE 1.0 / op_groups END) AS op_share
FROM per_op
GROUP BY phase, name_id, op_name, input_types, input_dims
"""
_SHAPES = text_with_lists(SHAPES_SQL, gemm_ops=GEMM_OPS)

#: ncu counter names: tensor-pipe operations (each counts one FLOP: a multiply-add is two),
#: with or without a destination type, and the SIMT floating-point instructions.
_TENSOR_OPS = re.compile(r"^sm__ops_path_tensor_src_[a-z0-9]+(?:_dst_[a-z0-9]+)?\.sum$")
_TENSOR_OPS_SPARSITY = re.compile(
    r"^sm__ops_path_tensor_src_[a-z0-9]+(?:_dst_[a-z0-9]+)?_sparsity_(?:on|off)\.sum$")
_SIMT_OPS = re.compile(
    r"^smsp__sass_thread_inst_executed_op_[dfh](?P<kind>fma|add|mul)_pred_on\.sum$")
_DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
_DRAM_TOTAL = "dram__bytes.sum"
#: Nsight Compute prints SI units (1 Kbyte = 1000 bytes)
_BYTE_UNITS = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
               "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}


@dataclass
class Family:
    """One point of the roofline: a kernel name in a phase with one source of work."""

    phase: str
    name_id: int
    name: str
    path: str
    activations: str | None
    source: str  # "shapes", "counters" or "none"
    launches: int
    time_ns: int
    op_name: str | None = None
    signature: str | None = None
    ops: int = 0  # distinct framework ops behind the launches
    op_share: float = 0.0  # how many ops' work the family carries (ops, or less when shared)
    work: Work | None = None  # per op (shapes)
    flops: float | None = None  # the family's total
    bytes: float | None = None
    weight_bytes: float | None = None  # total bytes of the weight operands (shapes only)
    a_bytes: float | None = None
    out_bytes: float | None = None
    reason: str | None = None  # why flops or bytes are unknown
    notes: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        """Whether both FLOPs and bytes are known (the family has a roofline point)."""
        return self.flops is not None and self.bytes is not None and self.time_ns > 0


def gemm_families(connection: Connection, run_id: int) -> list[Family]:
    """Every GEMM family of the run, largest GPU time first."""
    names = _gemm_names(connection, run_id)
    if not names:
        return []
    times = _phase_times(connection, run_id)
    families: list[Family] = []
    covered: dict[tuple[str, int], int] = defaultdict(int)
    counted: dict[tuple[str, int], int] = defaultdict(int)
    with_counters = _counter_families(connection, run_id, names, times)
    counter_names = {family.name_id for family in with_counters}
    families += with_counters
    for family in with_counters:
        covered[(family.phase, family.name_id)] += family.time_ns
        counted[(family.phase, family.name_id)] += family.launches
    has_ops, has_shapes = _op_presence(connection, run_id)
    if has_ops:
        for family in _shape_families(connection, run_id, names):
            if family.name_id in counter_names:
                continue  # counters measure what ran; the model is second best
            families.append(family)
            covered[(family.phase, family.name_id)] += family.time_ns
            counted[(family.phase, family.name_id)] += family.launches
    reason = _unlinked_reason(has_ops, has_shapes)
    for (phase, name_id), (count, total) in times.items():
        if name_id not in names:
            continue
        rest_ns = total - covered[(phase, name_id)]
        rest_count = count - counted[(phase, name_id)]
        if rest_count > 0 and rest_ns >= 0:
            name, path, activations = names[name_id]
            families.append(Family(phase=phase, name_id=name_id, name=name, path=path,
                                   activations=activations, source="none", launches=rest_count,
                                   time_ns=rest_ns, reason=reason))
    families.sort(key=lambda f: (-f.time_ns, f.name, f.phase, f.signature or ""))
    return families


def _gemm_names(connection: Connection, run_id: int) -> dict[int, tuple[str, str, str | None]]:
    """name_id -> (name, path, activations) for the run's GEMM-classified names."""
    rows = connection.execute(text_with_lists(
        "SELECT n.id, n.name, c.path, c.activations FROM classifications c "
        "JOIN kernel_names n ON n.id = c.name_id "
        "WHERE c.run_id = :run_id AND c.op IN :gemm_ops", gemm_ops=GEMM_OPS),
        {"run_id": run_id})
    return {int(i): (name, path or "unknown", activations)
            for i, name, path, activations in rows}


def _phase_times(connection: Connection, run_id: int) -> dict[tuple[str, int], tuple[int, int]]:
    """(phase, name_id) -> (launches, GPU ns), from the per-name groups."""
    rows = connection.execute(text(
        "SELECT COALESCE(phase, 'unattributed'), name_id, SUM(count), SUM(total_ns) "
        "FROM kernel_groups WHERE run_id = :run_id GROUP BY 1, 2"), {"run_id": run_id})
    return {(phase, int(name_id)): (int(count), int(total or 0))
            for phase, name_id, count, total in rows}


def _op_presence(connection: Connection, run_id: int) -> tuple[bool, bool]:
    """Whether the run has framework ops at all, and ops with recorded shapes."""
    has_ops = connection.execute(text(
        "SELECT 1 FROM cpu_ops WHERE run_id = :run_id LIMIT 1"), {"run_id": run_id}).first()
    if not has_ops:
        return False, False
    has_shapes = connection.execute(text(
        "SELECT 1 FROM cpu_ops WHERE run_id = :run_id AND input_dims IS NOT NULL LIMIT 1"),
        {"run_id": run_id}).first()
    return True, bool(has_shapes)


#: how to record a torch profiler trace whose ops carry their operand shapes
RECORD_SHAPES = ("torch.profiler.profile(record_shapes=True), vLLM's "
                 "--profiler-config.torch_profiler_record_shapes true, or "
                 "tracekit audit --backend torch (which sets it)")


def _unlinked_reason(has_ops: bool, has_shapes: bool) -> str:
    """Why launches without a linked op with shapes (and without counters) have no work."""
    if not has_ops:
        return ("the trace records no framework ops or counters: only the kernel name and "
                "grid are known (a torch profiler trace with record_shapes=True, or ncu "
                "counters, gives the work)")
    if not has_shapes:
        # Whether a launch is linked to its op or not, an op without shapes tells no work:
        # say what is missing, not that the link is (older Kineto traces link kernels to
        # their launch call only, while the kernels do sit inside aten::linear & co.).
        return ("the trace was recorded without operand shapes (record_shapes off), so no "
                f"framework op tells a GEMM's work: record with {RECORD_SHAPES}, or add ncu "
                "counters")
    return ("these launches are not linked to a framework op (CUDA graph replays, or launches "
            "outside a recorded op)")


def _shape_families(connection: Connection, run_id: int,
                    names: dict[int, tuple[str, str, str | None]]) -> list[Family]:
    families = []
    works: dict[tuple[str, str | None, str | None], Work | Unknown] = {}
    for row in connection.execute(_SHAPES, {"run_id": run_id}).mappings():
        name_id = int(row["name_id"])
        if name_id not in names:
            continue
        key = (row["op_name"], row["input_types"], row["input_dims"])
        if key not in works:
            works[key] = op_work(*key)
        work = works[key]
        name, path, activations = names[name_id]
        ops = int(row["ops"])
        share = float(row["op_share"])  # = ops unless an op launched several GEMM kernels
        family = Family(phase=row["phase"], name_id=name_id, name=name, path=path,
                        activations=activations, source="shapes",
                        launches=int(row["launches"]), time_ns=int(row["time_ns"] or 0),
                        op_name=row["op_name"], ops=ops,
                        signature=_signature(row["op_name"], row["input_dims"], work))
        if isinstance(work, Work):
            family.work = work
            family.op_share = share
            family.flops = float(work.flops) * share
            family.bytes = float(work.bytes) * share
            family.a_bytes = float(work.a_bytes) * share
            family.out_bytes = float(work.out_bytes) * share
            if work.weight_bytes is not None:
                family.weight_bytes = float(work.weight_bytes) * share
            if work.note:
                family.notes.append(work.note)
            if abs(share - ops) > 1e-9:
                family.notes.append("its ops also launched other GEMM kernels: their work is "
                                    "shared among the kernels by GPU time")
        else:
            family.reason = work.reason
        families.append(family)
    return families


def _signature(op_name: str, dims: str | None, work: Work | Unknown) -> str:
    if isinstance(work, Work):
        batch = f"{work.batch}×" if work.batch != 1 else ""
        return f"{op_name} {batch}M={work.m} N={work.n} K={work.k}"
    return f"{op_name} {dims}" if dims else op_name


def _counter_families(connection: Connection, run_id: int,
                      names: dict[int, tuple[str, str, str | None]],
                      times: dict[tuple[str, int], tuple[int, int]]) -> list[Family]:
    """One family per (phase, name) whose launches carry Nsight Compute counters."""
    sums: dict[int, dict[str, Any]] = defaultdict(dict)
    for name_id, metric, unit, total, launches in connection.execute(text(
            "SELECT name_id, metric, unit, SUM(value), COUNT(*) FROM kernel_metrics "
            "WHERE run_id = :run_id AND value IS NOT NULL GROUP BY name_id, metric, unit"),
            {"run_id": run_id}):
        if int(name_id) in names:
            sums[int(name_id)][metric] = (float(total), unit, int(launches))
    families = []
    for name_id, metrics in sums.items():
        flops, flops_reason = _counter_flops(metrics)
        bytes_, bytes_reason = _counter_bytes(metrics)
        name, path, activations = names[name_id]
        phases = [(phase, count, ns) for (phase, nid), (count, ns) in times.items()
                  if nid == name_id]
        launches_with = max((entry[2] for entry in metrics.values()), default=0)
        launches_all = sum(count for _, count, _ in phases)
        total_ns = sum(ns for _, _, ns in phases)
        reason = flops_reason or bytes_reason
        if launches_with != launches_all:
            reason = (f"counters cover {launches_with} of {launches_all} launches")
        for phase, count, ns in phases:
            share = ns / total_ns if total_ns else 0.0
            family = Family(phase=phase, name_id=name_id, name=name, path=path,
                            activations=activations, source="counters", launches=count,
                            time_ns=ns, signature="ncu counters", reason=reason)
            if reason is None and flops is not None and bytes_ is not None:
                family.flops, family.bytes = flops * share, bytes_ * share
                if len(phases) > 1:
                    family.notes.append("counters split across phases by GPU time")
            families.append(family)
    return families


def _counter_flops(metrics: dict[str, Any]) -> tuple[float | None, str | None]:
    """FLOPs from tensor-pipe operation and SIMT instruction counters, or why not."""
    tensor = [v[0] for m, v in metrics.items() if _TENSOR_OPS.match(m)]
    if not tensor:
        tensor = [v[0] for m, v in metrics.items() if _TENSOR_OPS_SPARSITY.match(m)]
    simt = 0.0
    simt_seen = False
    for metric, (value, _, _) in metrics.items():
        found = _SIMT_OPS.match(metric)
        if found:
            simt_seen = True
            simt += value * (2 if found.group("kind") == "fma" else 1)
    total = sum(tensor) + simt
    if total > 0:
        return total, None
    if tensor and not simt_seen:
        return None, ("ncu counted no tensor-pipe operations and no SIMT FLOP counters were "
                      "collected (add smsp__sass_thread_inst_executed_op_ffma_pred_on.sum)")
    if not tensor and not simt_seen:
        return None, "ncu collected no tensor-pipe or FLOP counters for these launches"
    return None, "ncu counted no floating-point operations"


def _counter_bytes(metrics: dict[str, Any]) -> tuple[float | None, str | None]:
    """DRAM bytes read plus written, in bytes, or why not."""
    parts = [metrics[m] for m in _DRAM_BYTES if m in metrics]
    if len(parts) < len(_DRAM_BYTES):
        parts = [metrics[_DRAM_TOTAL]] if _DRAM_TOTAL in metrics else []
    if not parts:
        return None, "ncu collected no DRAM byte counters (dram__bytes_read.sum, …_write.sum)"
    total = 0.0
    for value, unit, _ in parts:
        scale = _BYTE_UNITS.get((unit or "byte").strip().lower())
        if scale is None:
            return None, f"DRAM byte counter in unit {unit!r} tracekit cannot convert"
        total += value * scale
    return total, None
