"""The classify stage: classify every unique kernel name of a run and store the answers.

Works per unique name (``kernel_names``), never per kernel record, and writes with one bulk
insert. Evidence other than the name is gathered with set-based queries: the run's GPU
architecture (``runs.arch``, decided once by ``tracekit.run_gpu``), the input types of the
framework op that launched each name (``cpu_ops`` through ``kernels.cpu_op_id``) and Nsight
Compute counters (``kernel_metrics``, summed per metric over launches) and, for GEMMs whose
name carries no types, the activation-quantize kernel launched right before them on the same
stream (one window pass over the run's kernels, only when the run has both). Re-running the stage
replaces the run's classifications, so new rules re-classify an old run without re-ingesting
it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tracekit.classifier import classify_name, classify_names
from tracekit.classifier.model import Classification, NameEvidence, Neighbour, RuleSet
from tracekit.run_gpu import stored_run_gpu
from tracekit.store.counts import run_counts
from tracekit.store.schema import ClassificationRow, KernelMetricRow, KernelNameRow
from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS

#: quantize paths whose kernels say the activation type of the GEMM they feed
QUANTIZED_ACTIVATIONS = frozenset({"fp8", "fp4", "int8"})
#: share of a GEMM's launches that must follow quantize kernels of one path
NEIGHBOUR_SHARE = 0.5

#: Per GEMM name, the kernel launched right before each of its launches on the same device
#: and stream, counted: one window pass over the run's kernels (a sort by stream and time).
_PRECEDED_BY = """
SELECT w.name_id, w.previous, COUNT(*) FROM (
    SELECT k.name_id, LAG(k.name_id) OVER (PARTITION BY k.device, k.stream
                                           ORDER BY k.start_ns, k.id) AS previous
    FROM kernels AS k WHERE k.run_id = :run_id) AS w
WHERE w.name_id IN :names
GROUP BY w.name_id, w.previous
"""


def _op_dtypes(connection: Connection, run_id: int
               ) -> dict[int, tuple[str, tuple[str, ...], bool]]:
    """name_id -> (op name, input types, op shared) when all launches of a name share one op
    signature; "shared" when one of those ops also launched kernels of other names.

    Follows ``kernels.cpu_op_id`` (resolved at ingest). ``CROSS JOIN`` keeps the run's kernels
    the outer loop on SQLite, each op and its name count one key search: linear whatever the
    tables hold. A run without CPU ops (every nsys export) skips the pass over its kernels.
    """
    if run_counts(connection, run_id)["cpu_ops"] == 0:
        return {}
    params = {"run_id": run_id}
    connection.execute(sa.text("DROP TABLE IF EXISTS tk_op_names"))
    connection.execute(sa.text(
        "CREATE TEMPORARY TABLE tk_op_names (op_id BIGINT PRIMARY KEY, names BIGINT)"))
    connection.execute(sa.text("""
        INSERT INTO tk_op_names
        SELECT cpu_op_id, COUNT(DISTINCT name_id) FROM kernels
        WHERE run_id = :run_id AND cpu_op_id IS NOT NULL GROUP BY cpu_op_id"""), params)
    rows = connection.execute(sa.text("""
        SELECT k.name_id, o.name, o.input_types, MAX(n.names)
        FROM kernels k CROSS JOIN cpu_ops o CROSS JOIN tk_op_names n
        WHERE k.run_id = :run_id AND k.cpu_op_id IS NOT NULL AND o.id = k.cpu_op_id
          AND n.op_id = k.cpu_op_id AND o.input_types IS NOT NULL
        GROUP BY k.name_id, o.name, o.input_types"""), params).all()
    connection.execute(sa.text("DROP TABLE tk_op_names"))
    seen: dict[int, dict[tuple[str, str], bool]] = defaultdict(dict)
    for name_id, op_name, input_types, names in rows:
        seen[name_id][(op_name, input_types or "")] = int(names) > 1
    out: dict[int, tuple[str, tuple[str, ...], bool]] = {}
    for name_id, signatures in seen.items():
        if len(signatures) == 1:
            ((op_name, raw), shared), = signatures.items()
            out[name_id] = (op_name, _parse_types(raw), shared)
    return out


def _parse_types(raw: str) -> tuple[str, ...]:
    """``['c10::BFloat16', '']`` (JSON or Python repr) -> the non-empty type names."""
    import json

    text = raw.strip()
    try:
        values = json.loads(text)
    except ValueError:
        values = [part.strip().strip("'\"") for part in text.strip("[]").split(",")]
    if isinstance(values, str):
        values = [values]
    return tuple(str(v) for v in values if v)


def _counters(connection: Connection, run_id: int) -> dict[int, dict[str, float]]:
    """name_id -> {metric: summed value} from Nsight Compute rows."""
    query = (
        sa.select(KernelMetricRow.name_id, KernelMetricRow.metric,
                  sa.func.sum(KernelMetricRow.value))
        .where(KernelMetricRow.run_id == run_id, KernelMetricRow.value.is_not(None))
        .group_by(KernelMetricRow.name_id, KernelMetricRow.metric)
    )
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for name_id, metric, value in connection.execute(query):
        if value is not None:
            out[name_id][metric] = float(value)
    return out


def _neighbours(connection: Connection, run_id: int,
                named: list[tuple[int, str, Classification]]) -> dict[int, Neighbour]:
    """name_id -> the activation-quantize kernel most of its launches follow on their stream,
    for GEMMs whose name left the path unknown (``fused_moe_kernel``: no types in the name).

    Only when the run has such GEMMs and quantize kernels of a quantized path: then one
    window pass over the run's kernels. The classifier runs before the phases, so "right
    before" is on the stream, not within a step.
    """
    candidates = {name_id for name_id, _, r in named
                  if r.op in GEMM_OPS and r.path == "unknown" and r.evidence in ("name", "none")}
    quantizers = {name_id: (text, r) for name_id, text, r in named
                  if r.op == "quantize" and r.path in QUANTIZED_ACTIVATIONS}
    if not candidates or not quantizers:
        return {}
    totals: dict[int, int] = defaultdict(int)
    after: dict[int, dict[str, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
    for name_id, previous, count in connection.execute(
            text_with_lists(_PRECEDED_BY, names=sorted(candidates)), {"run_id": run_id}):
        totals[int(name_id)] += int(count)
        if previous is not None and int(previous) in quantizers:
            path = str(quantizers[int(previous)][1].path)
            after[int(name_id)][path][int(previous)] = int(count)
    out: dict[int, Neighbour] = {}
    for name_id, by_path in after.items():
        path, kernels = max(by_path.items(), key=lambda item: sum(item[1].values()))
        share = sum(kernels.values()) / totals[name_id]
        if share <= NEIGHBOUR_SHARE:
            continue
        quantizer = max(kernels, key=lambda key: kernels[key])
        name, result = quantizers[quantizer]
        out[name_id] = Neighbour(name=name, path=path, activations=result.activations,
                                 share=share, launches=totals[name_id])
    return out


def classify_run(
    connection: Connection, run_id: int, ruleset: RuleSet, *, arch: str | None = None
) -> int:
    """Classify the run's unique kernel names and replace its classifications; returns the count.

    The GPU feasibility check uses the run's architecture as the analysis decided and stored
    it (``runs.arch``, ``tracekit.run_gpu``); ``arch`` replaces it (tests, tools).
    """
    names = connection.execute(
        sa.select(KernelNameRow.id, KernelNameRow.name, KernelNameRow.mangled_name).where(
            KernelNameRow.run_id == run_id
        )
    ).all()
    arch = arch or stored_run_gpu(connection, run_id).arch
    dtypes = _op_dtypes(connection, run_id)
    counters = _counters(connection, run_id)

    # Names without extra evidence are classified together (once per distinct text); the few
    # with op dtypes or counters one by one, since their evidence is per name row.
    texts = [name or mangled or "" for _, name, mangled in names]
    results = classify_names(texts, ruleset, arch=arch)
    neighbours = _neighbours(connection, run_id, [(name_id, texts[index], results[index])
                                                  for index, (name_id, _, _) in enumerate(names)])
    for index, (name_id, _, _) in enumerate(names):
        op = dtypes.get(name_id)
        metrics = counters.get(name_id)
        near = neighbours.get(name_id)
        if op or metrics or near:
            evidence = NameEvidence(
                op_name=op[0] if op else None,
                op_dtypes=op[1] if op else (),
                op_shared=op[2] if op else False,
                counters=metrics or {},
                neighbour=near,
            )
            results[index] = classify_name(texts[index], ruleset, arch=arch, evidence=evidence)
    rows = [
        {
            "run_id": run_id,
            "name_id": name_id,
            "op": r.op,
            "path": r.path,
            "weights": r.weights,
            "activations": r.activations,
            "accum": r.accum,
            "library": r.library,
            "rule": r.rule,
            "evidence": r.evidence,
            "confidence": r.confidence,
            "reason": r.reason,
        }
        for (name_id, _, _), r in zip(names, results, strict=True)
    ]
    table = cast(sa.Table, ClassificationRow.__table__)
    connection.execute(sa.delete(table).where(table.c.run_id == run_id))
    if rows:
        connection.execute(sa.insert(table), rows)  # Core insert of a list: one executemany
    return len(rows)
