"""The ``roofline`` section of the analysis document, and flat records for the Python API.

Everything here is computed from the families (one row per unique kernel name × op signature
or counters, never per launch) and the GPU's product row; the section is plain JSON.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from tracekit.gpus import GpuModel, ModelMatch, gpu_model
from tracekit.roofline.fallback import MODEL_TEXT, estimate, fallback_claims, layer_shares
from tracekit.roofline.families import Family, gemm_families
from tracekit.roofline.model import PathSummary, Roof, by_phase_and_path, roof_for
from tracekit.run_gpu import stored_run_gpu
from tracekit.vocabulary import PHASES

#: families listed one by one in the document (the sums per phase and path cover them all)
MAX_FAMILIES = 2_000
#: the path order of roofs and legends
ROOF_PATHS = ("fp4", "fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp64")

WORK_MODEL = ("FLOPs = 2·M·N·K per GEMM op from its recorded operand shapes (or Nsight Compute "
              "tensor-pipe operations); bytes = every operand read once at its stored size plus "
              "the output written once (or ncu's measured DRAM bytes); a phase is compute-bound "
              "when its intensity is at or above the ridge point peak/bandwidth of its path")


def run_gpu_model(connection: Connection, run_id: int) -> ModelMatch:
    """The product the run's GPU is, as the analysis decided and stored it
    (``tracekit.run_gpu``), or the reason it could not be told."""
    stored = stored_run_gpu(connection, run_id)
    model = gpu_model(stored.model) if stored.model else None
    if model is not None:
        return ModelMatch(model)
    return ModelMatch(None, stored.model_reason or (
        f"rules/_gpus.toml has no product {stored.model!r}" if stored.model
        else "the run's GPU was not decided: analyze the run again"))


def _rate(value: float | None, scale: float) -> float | None:
    return value / scale if value is not None else None


def _roof_dict(roof: Roof) -> dict[str, Any]:
    return {"path": roof.path, "math": roof.math, "peak_tflops": roof.peak_flops / 1e12,
            "ridge_flop_per_byte": roof.ridge}


def _summary_dict(summary: PathSummary) -> dict[str, Any]:
    point = summary.point
    known = point.time_ns > 0
    return {
        "path": summary.path,
        "time_ns": summary.time_ns,
        "covered_ns": point.time_ns,
        "coverage": summary.coverage,
        "flops": point.flops if known else None,
        "bytes": point.bytes if known else None,
        "tflops": point.flops_per_s / 1e12 if known else None,
        "gbps": point.bytes_per_s / 1e9 if known else None,
        "intensity": point.intensity if known else None,
        "bound": point.bound if known else None,
        "roof_tflops": _rate(point.roof.peak_flops, 1e12) if point.roof else None,
        "roof_math": point.roof.math if point.roof else None,
        "ridge_flop_per_byte": point.roof.ridge if point.roof else None,
        "roof_share": point.roof_share if known else None,
        "bound_ns": point.bound_ns if known else None,
        "unknown": [{"reason": reason, "ns": ns} for reason, ns in summary.unknown_reasons.items()],
    }


def family_record(family: Family, model: GpuModel | None) -> dict[str, Any]:
    """One family as a flat record: its work, time and where it sits against its roof."""
    roof = roof_for(family.path, family.activations, model)
    known = family.known
    flops = family.flops if known else None
    bytes_ = family.bytes if known else None
    intensity = flops / bytes_ if flops is not None and bytes_ else None
    seconds = family.time_ns / 1e9
    record: dict[str, Any] = {
        "phase": family.phase, "name": family.name, "path": family.path,
        "activations": family.activations, "source": family.source,
        "op": family.op_name, "signature": family.signature,
        "launches": family.launches, "ops": family.ops, "op_share": family.op_share,
        "time_ns": family.time_ns,
        "flops": family.flops, "bytes": family.bytes, "intensity": intensity,
        "tflops": flops / seconds / 1e12 if flops is not None and seconds else None,
        "gbps": bytes_ / seconds / 1e9 if bytes_ is not None and seconds else None,
        "bound": roof.bound(intensity) if roof and intensity is not None else None,
        "roof_tflops": roof.peak_flops / 1e12 if roof else None,
        "roof_share": (roof.bound_ns(flops, bytes_) / family.time_ns
                       if roof and flops is not None and bytes_ is not None and family.time_ns
                       else None),
        "reason": family.reason if not known else None,
        "notes": list(family.notes),
    }
    if family.work is not None:
        record.update(m=family.work.m, n=family.work.n, k=family.work.k,
                      batch=family.work.batch)
    return record


def roofline_section(connection: Connection, run_id: int) -> dict[str, Any]:
    """The document's ``roofline`` object (see the module docstring of tracekit.roofline)."""
    families = gemm_families(connection, run_id)
    match = run_gpu_model(connection, run_id)
    model = match.model
    summaries = by_phase_and_path(families, model)
    phases: dict[str, list[dict[str, Any]]] = {}
    for phase in PHASES:
        rows = sorted((s for s in summaries if s.phase == phase), key=lambda s: -s.time_ns)
        if rows:
            phases[phase] = [_summary_dict(s) for s in rows]
    roofs = []
    if model is not None:
        for path in ROOF_PATHS:
            roof = roof_for(path, None, model)
            if roof is not None:
                roofs.append(_roof_dict(roof))
    claims = fallback_claims(connection, run_id)
    shares = layer_shares(connection, run_id) if claims else None
    estimates = [estimate(claim, families, model, match.reason, shares).as_dict()
                 for claim in claims]
    return {
        "gpu": None if model is None else {
            "model": model.key, "name": model.name, "arch": model.arch,
            "memory_gbps": model.memory_gbps, "tflops": dict(model.tflops), "cite": model.cite},
        "gpu_reason": match.reason,
        "model": WORK_MODEL,
        "fallback_model": MODEL_TEXT,
        "roofs": roofs,
        "phases": phases,
        "families": [family_record(f, model) for f in families[:MAX_FAMILIES]],
        "families_left_out": max(0, len(families) - MAX_FAMILIES),
        "fallback": estimates,
    }


def roofline_records(connection: Connection, run_id: int) -> list[dict[str, Any]]:
    """One flat record per GEMM family of the run (the Python API's ``run.roofline()``).

    Keys: phase, name, path, activations, source (shapes/counters/none), op, signature,
    launches, ops, op_share, time_ns, flops, bytes, intensity (FLOP/byte), tflops, gbps, bound
    (compute/bandwidth), roof_tflops, roof_share, reason (why the work is unknown), notes, and
    m, n, k, batch where shapes gave them. Unknown values are None, never guessed.
    """
    model = run_gpu_model(connection, run_id).model
    return [family_record(f, model) for f in gemm_families(connection, run_id)]
