"""The layer stage: a run's GEMM time per (kernel name, phase, layer group) → ``layer_times``.

Runs after the groups stage (it needs each kernel's phase) and before the findings, which
judge each layer group against what the checkpoint declares for it. Rewritten on every
analysis, so a new ``--model`` (new dimensions to match shapes against) re-attributes a
stored run.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS

_GEMM_TIME = text_with_lists("""
SELECT g.name_id, g.phase, SUM(g.count) AS launches, SUM(g.total_ns) AS ns
FROM kernel_groups AS g
JOIN classifications AS c ON c.run_id = g.run_id AND c.name_id = g.name_id
WHERE g.run_id = :run_id AND c.op IN :gemm_ops
GROUP BY g.name_id, g.phase
""", gemm_ops=GEMM_OPS)


def attribute_layers(connection: Connection, run_id: int, shape: ModelShape | None) -> int:
    """Rewrite the run's ``layer_times``; returns the number of rows written.

    First version: every GEMM name's time in each phase is ``unknown`` (source ``none``).
    """
    connection.execute(text("DELETE FROM layer_times WHERE run_id = :run_id"),
                       {"run_id": run_id})
    rows = [
        {"run_id": run_id, "name_id": name_id, "phase": phase, "layer": "unknown",
         "source": "none", "launches": int(launches), "total_ns": int(ns),
         "detail": "no evidence of the layer (no shapes, module frames or layer markers)"}
        for name_id, phase, launches, ns in connection.execute(_GEMM_TIME, {"run_id": run_id})
    ]
    if rows:
        connection.execute(text(
            "INSERT INTO layer_times (run_id, name_id, phase, layer, source, launches, "
            "total_ns, detail) VALUES (:run_id, :name_id, :phase, :layer, :source, :launches, "
            ":total_ns, :detail)"), rows)
    return len(rows)
