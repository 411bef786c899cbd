"""The findings stage: read one run's aggregates from the store, judge, write findings and verdict.

The stage never reads kernel records: it sums the run's ``kernel_groups`` (one row per name,
device, launching thread and phase, made once by ``tracekit.aggregate``) into (name, device,
phase) in SQL, and builds every aggregate the findings need from those few thousand groups —
work per unique kernel name, never per kernel record. Re-running the stage replaces the run's
findings and verdict, so new rules or a new ``--model`` re-judge an old run without re-ingest.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, and_, delete, func, insert, select, update

from tracekit.expect.checkpoint import Declaration
from tracekit.expect.kernel_paths import ENGINES
from tracekit.expect.logs import LogEvidence
from tracekit.findings.checks import evaluate
from tracekit.findings.judgement import judge_run
from tracekit.findings.model import (
    AttentionTime,
    Finding,
    FindingContext,
    GraphGap,
    KernelTime,
    LayerTime,
    LayerVerdict,
    PathTime,
)
from tracekit.findings.rules import load_rules
from tracekit.findings.verdict import verdict_sentences
from tracekit.layers.graphs import graph_trace_gap
from tracekit.run_gpu import stored_run_gpu
from tracekit.store.counts import run_counts
from tracekit.store.schema import (
    ClassificationRow,
    DeviceRow,
    FindingRow,
    KernelGroupRow,
    KernelNameRow,
    LayerTimeRow,
    LayerVerdictRow,
    NvtxRangeRow,
    RunRow,
    StepRow,
)
from tracekit.vocabulary import GEMM_OPS

# Type words that, in an attention kernel's name, mean it reads a quantized KV cache
# (FlashInfer BatchDecode…<__nv_fp8_e4m3, …>, FlashAttention-3 float_e4m3_t, TRT-LLM XQA fp8).
_KV_NAME_WORDS = ("fp8", "e4m3", "e5m2", "fp4", "e2m1", "int8")


def evaluate_run(
    connection: Connection,
    run_id: int,
    *,
    declaration: Declaration | None = None,
    log_evidence: Iterable[LogEvidence] = (),
    unknown_threshold: float = 0.2,
    engine: str | None = None,
    model_error: str | None = None,
) -> list[Finding]:
    """Judge run ``run_id``: replace its ``findings``, ``layer_verdicts`` and ``runs.verdict``;
    return the findings.

    The GPU is the run's as the analysis decided and stored it (``tracekit.run_gpu``); the
    engine is ``engine``, else the run's (``runs.engine``, its step markers). The caller owns
    the transaction (``store.begin()``).
    """
    ctx = build_context(
        connection,
        run_id,
        declaration=declaration,
        log_evidence=tuple(log_evidence),
        unknown_threshold=unknown_threshold,
        engine=engine,
        model_error=model_error,
    )
    judged = judge_run(ctx, load_rules())  # one judgement per phase, for findings and verdict
    findings = evaluate(ctx, judged)
    verdict = "\n".join(verdict_sentences(ctx, judged))
    _write_layer_verdicts(connection, run_id, judged.verdicts)
    connection.execute(delete(FindingRow).where(FindingRow.run_id == run_id))
    if findings:
        connection.execute(
            insert(FindingRow),
            [
                {
                    "run_id": run_id,
                    "rule": f.rule,
                    "severity": f.severity,
                    "message": f.message,
                    "phase": f.phase,
                    "share": f.share,
                    "evidence_json": json.dumps(f.evidence, default=str),
                }
                for f in findings
            ],
        )
    connection.execute(update(RunRow).where(RunRow.id == run_id).values(verdict=verdict))
    return findings


def _write_layer_verdicts(connection: Connection, run_id: int,
                          verdicts: Iterable[LayerVerdict]) -> None:
    connection.execute(delete(LayerVerdictRow).where(LayerVerdictRow.run_id == run_id))
    rows = [
        {
            "run_id": run_id,
            "phase": v.phase,
            "layer": v.layer,
            "declared": v.declared_label,
            "expected": v.expected.path if v.expected else None,
            "expected_kind": v.expected.kind if v.expected else None,
            "ran": v.ran,
            "total_ns": v.ns,
            "share": v.share,
            "outcome": v.outcome,
            "severity": v.severity,
            "evidence_json": json.dumps(v.as_dict(), default=str),
        }
        for v in verdicts
    ]
    if rows:
        connection.execute(insert(LayerVerdictRow), rows)


def build_context(
    connection: Connection,
    run_id: int,
    *,
    declaration: Declaration | None = None,
    log_evidence: tuple[LogEvidence, ...] = (),
    unknown_threshold: float = 0.2,
    engine: str | None = None,
    model_error: str | None = None,
) -> FindingContext:
    """Aggregate what the findings need from the store."""
    gpu = stored_run_gpu(connection, run_id)
    device_archs = _device_archs(connection, run_id)
    marker, heuristic = _step_counts(connection, run_id)
    domains, ranges = _nvtx(connection, run_id)
    groups = _name_groups(connection, run_id)
    links = _ambiguous_links(connection, run_id)
    return FindingContext(
        gemm=_gemm_time(groups),
        layers=_layer_times(connection, run_id),
        attention=_attention_time(groups),
        kernels=_kernel_times(groups, device_archs),
        declaration=declaration,
        gpu_arch=gpu.arch,
        gpu_name=gpu.name,
        marker_steps=marker,
        heuristic_steps=heuristic,
        nvtx_domains=domains,
        nvtx_ranges=ranges,
        log_evidence=log_evidence,
        unknown_threshold=unknown_threshold,
        ambiguous_correlation_ids=links.get("correlation_ids", 0),
        ambiguous_external_ids=links.get("external_ids", 0),
        engine=engine or _run_engine(connection, run_id, log_evidence),
        model_error=model_error,
        graph_gap=_graph_gap(connection, run_id),
    )


def _layer_times(connection: Connection, run_id: int) -> tuple[LayerTime, ...]:
    """The run's ``layer_times`` (tracekit.layers) with each name's classification."""
    query = (
        select(LayerTimeRow.phase, LayerTimeRow.layer, LayerTimeRow.source,
               LayerTimeRow.total_ns, KernelNameRow.name, ClassificationRow.path,
               ClassificationRow.library, ClassificationRow.activations,
               ClassificationRow.weights)
        .select_from(LayerTimeRow)
        .join(KernelNameRow, KernelNameRow.id == LayerTimeRow.name_id)
        .outerjoin(ClassificationRow,
                   and_(ClassificationRow.run_id == run_id,
                        ClassificationRow.name_id == LayerTimeRow.name_id))
        .where(LayerTimeRow.run_id == run_id)
    )
    return tuple(
        LayerTime(phase=row.phase, layer=row.layer, path=row.path or "unknown",
                  ns=int(row.total_ns or 0), library=row.library, activations=row.activations,
                  weights=row.weights, source=row.source, name=row.name)
        for row in connection.execute(query)
        if row.total_ns
    )


def _run_engine(connection: Connection, run_id: int,
                log_evidence: tuple[LogEvidence, ...]) -> str | None:
    """The engine that ran the trace: the run's (``tracekit audit --engine``), its step
    markers' (one engine only), or the engine of its log lines."""
    stored = connection.execute(select(RunRow.engine).where(RunRow.id == run_id)).scalar()
    if stored:
        return _engine_word(str(stored))
    engines = connection.execute(
        select(StepRow.engine).where(StepRow.run_id == run_id, StepRow.engine.is_not(None))
        .group_by(StepRow.engine)).scalars().all()
    if len(engines) == 1:
        return _engine_word(str(engines[0]))
    # a device line ("ggml_cuda_init: found 1 CUDA devices") names the GPU, not the engine that
    # served the checkpoint: only kernel and quantization lines say which engine ran it
    logged = {e.engine for e in log_evidence
              if e.engine and "|" not in e.engine and e.kind != "device"}
    if len(logged) == 1:
        return _engine_word(logged.pop())
    return None


def _engine_word(engine: str) -> str | None:
    word = engine.strip().lower().replace("tensorrt-llm", "trtllm").replace("tensorrt_llm",
                                                                            "trtllm")
    word = {"llama-cpp": "llama.cpp", "llamacpp": "llama.cpp"}.get(word, word)
    return word if word in ENGINES else None


def _graph_gap(connection: Connection, run_id: int) -> GraphGap | None:
    """CUDA graph launches without their nodes' kernels (``tracekit.layers.graphs``)."""
    gap = graph_trace_gap(connection, run_id)
    if gap is None:
        return None
    return GraphGap(graph_launches=gap.launches_without_kernels,
                    steps_without_kernels=gap.steps_without_kernels)


def _ambiguous_links(connection: Connection, run_id: int) -> dict[str, int]:
    """What the ingest counted of ids naming several launches or ops (run meta)."""
    meta = connection.execute(select(RunRow.meta_json).where(RunRow.id == run_id)).scalar()
    try:
        links = json.loads(meta or "{}").get("ambiguous_links") or {}
    except (ValueError, AttributeError):
        return {}
    return {key: int(value) for key, value in links.items() if isinstance(value, int)}


@dataclass(frozen=True)
class _NameGroup:
    """Kernel time of one unique name on one device in one phase, with its classification."""

    name: str
    device: int | None
    phase: str
    ns: int
    op: str | None
    path: str | None
    library: str | None
    weights: str | None
    activations: str | None


def _name_groups(connection: Connection, run_id: int) -> list[_NameGroup]:
    """The run's kernel groups (tracekit.aggregate) summed by (name, device, phase) in SQL.

    Every later aggregate (GEMM time per phase and path, attention time, arch tokens per name)
    is computed from these few thousand groups, so the millions of records are read once.
    """
    per_name = (
        select(
            KernelGroupRow.name_id,
            KernelGroupRow.device,
            KernelGroupRow.phase,
            func.sum(KernelGroupRow.total_ns).label("ns"),
        )
        .where(KernelGroupRow.run_id == run_id)
        .group_by(KernelGroupRow.name_id, KernelGroupRow.device, KernelGroupRow.phase)
        .subquery()
    )
    query = (
        select(
            KernelNameRow.name,
            per_name.c.device,
            per_name.c.phase,
            per_name.c.ns,
            ClassificationRow.op,
            ClassificationRow.path,
            ClassificationRow.library,
            ClassificationRow.weights,
            ClassificationRow.activations,
        )
        .select_from(per_name)
        .join(KernelNameRow, KernelNameRow.id == per_name.c.name_id)
        .outerjoin(
            ClassificationRow,
            and_(ClassificationRow.run_id == run_id,
                 ClassificationRow.name_id == per_name.c.name_id),
        )
    )
    return [
        _NameGroup(
            name=row.name,
            device=row.device,
            phase=row.phase,
            ns=int(row.ns or 0),
            op=row.op,
            path=row.path,
            library=row.library,
            weights=row.weights,
            activations=row.activations,
        )
        for row in connection.execute(query)
    ]


def _gemm_time(groups: Iterable[_NameGroup]) -> tuple[PathTime, ...]:
    """GEMM time per (phase, path, library, activations)."""
    totals: dict[tuple[str, str, str | None, str | None], int] = defaultdict(int)
    for g in groups:
        if g.op in GEMM_OPS and g.path:
            totals[(g.phase, g.path, g.library, g.activations)] += g.ns
    return tuple(
        PathTime(phase=phase, path=path, ns=ns, library=library, activations=activations)
        for (phase, path, library, activations), ns in totals.items()
    )


def _attention_time(groups: Iterable[_NameGroup]) -> tuple[AttentionTime, ...]:
    """Attention time per (path, operand types, whether the name carries an 8/4-bit KV type)."""
    totals: dict[tuple[str, str | None, str | None, bool], int] = defaultdict(int)
    examples: dict[tuple[str, str | None, str | None, bool], tuple[int, str]] = {}
    for g in groups:
        if g.op != "attention" or not g.path:
            continue
        lowered = g.name.lower()
        key = (g.path, g.weights, g.activations, any(w in lowered for w in _KV_NAME_WORDS))
        totals[key] += g.ns
        if key not in examples or g.ns > examples[key][0]:
            examples[key] = (g.ns, g.name)
    return tuple(
        AttentionTime(
            path=path,
            ns=ns,
            weights=weights,
            activations=activations,
            example=examples[(path, weights, activations, quantized)][1],
            quantized_name=quantized,
        )
        for (path, weights, activations, quantized), ns in totals.items()
    )


def _kernel_times(
    groups: Iterable[_NameGroup], device_archs: dict[int, str]
) -> tuple[KernelTime, ...]:
    """Per unique (name, device, phase): time, GEMM or not, path (for arch tokens and examples)."""
    return tuple(
        KernelTime(
            name=g.name,
            ns=g.ns,
            device_arch=device_archs.get(g.device) if g.device is not None else None,
            is_gemm=g.op in GEMM_OPS,
            phase=g.phase,
            path=g.path,
        )
        for g in groups
    )


def _device_archs(connection: Connection, run_id: int) -> dict[int, str]:
    """Device index → its architecture, as the analysis settled it (``tracekit.run_gpu``)."""
    rows = connection.execute(
        select(DeviceRow.device_index, DeviceRow.arch)
        .where(DeviceRow.run_id == run_id, DeviceRow.arch.is_not(None))
    ).all()
    return {int(index): str(arch) for index, arch in rows}


def _step_counts(connection: Connection, run_id: int) -> tuple[int, int]:
    rows = connection.execute(
        select(StepRow.source, func.count()).where(StepRow.run_id == run_id)
        .group_by(StepRow.source)
    ).all()
    counts = {source: int(count) for source, count in rows}
    return counts.get("marker", 0), sum(c for s, c in counts.items() if s != "marker")


def _nvtx(connection: Connection, run_id: int) -> tuple[tuple[str, ...], int]:
    """The run's NVTX domain names and its count of ranges and marks (marks count: any NVTX
    event proves the markers reached nsys, see nvtx-ranges-lost).

    Counts come from ``run_counts``; the domains' rows are found through the partial index
    on domain creations, without reading the run's other events.
    """
    counts = run_counts(connection, run_id)
    domains: list[str] = []
    if counts["nvtx_domains"]:
        domain_name = func.coalesce(NvtxRangeRow.domain, NvtxRangeRow.text)
        domains = list(connection.execute(
            select(domain_name)
            .where(NvtxRangeRow.run_id == run_id, NvtxRangeRow.kind == "domain_create")
            .group_by(domain_name)).scalars().all())
    return (tuple(str(d) for d in domains if d is not None),
            counts["nvtx_ranges"] + counts["nvtx_marks"])