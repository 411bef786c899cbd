"""Launches per step → layer groups: a GEMM's launch count against ``num_hidden_layers``.

A linear of the transformer blocks runs once per layer in every forward, so a kernel that
serves it is launched a multiple of ``num_hidden_layers`` times in each step (q/k/v and o on
one kernel: twice). One launched once per step is no per-layer linear: the one GEMM a
forward runs once is lm_head. Weak evidence (``launch_count``, confidence low): another
once-per-step GEMM (an MTP head, a pooler) would read the same, and a kernel cuBLAS picks for
some batch sizes only runs in some steps. It is used only where nothing stronger spoke, only
with a config that gives ``num_hidden_layers`` (without one nothing says the workload is a
decoder LLM's forward: a benchmark launching each GEMM once per step is no lm_head), and only
on engine step markers (heuristic steps are inferred from the kernels themselves).

The counts come from one SQL pass over the undecided names' GEMM launches: per (name, phase,
step) the launches, then per (name, phase) how many steps had each count — a histogram of a
few rows per name, never a row per step in Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection

from sqlalchemy import Connection, text

from tracekit.layers.model import Call
from tracekit.store.sql import text_with_lists
from tracekit.vocabulary import GEMM_OPS

#: share of a name's steps that must show the pattern
AGREEMENT = 0.9
#: fewest steps a pattern is read from
MIN_STEPS = 2

_HISTOGRAM = """
SELECT s.name_id, s.phase, s.launches, COUNT(*) AS steps FROM (
    SELECT k.name_id, COALESCE(k.phase, 'unattributed') AS phase, k.step_id,
           COUNT(*) AS launches
    FROM kernels AS k CROSS JOIN classifications AS c
    WHERE k.run_id = :run_id AND k.step_id IS NOT NULL AND k.name_id IN :names
      AND c.run_id = k.run_id AND c.name_id = k.name_id AND c.op IN :gemm_ops
    GROUP BY k.name_id, k.phase, k.step_id) AS s
GROUP BY s.name_id, s.phase, s.launches
"""


def launch_histogram(connection: Connection, run_id: int, names: Collection[int]
                     ) -> dict[tuple[int, str], dict[int, int]]:
    """(name, phase) → {launches in a step: steps} for the GEMM names given; empty when the
    run's steps are not engine step markers."""
    if not names or connection.execute(text(
            "SELECT 1 FROM steps WHERE run_id = :run_id AND source = 'marker' LIMIT 1"),
            {"run_id": run_id}).first() is None:
        return {}
    statement = text_with_lists(_HISTOGRAM, names=sorted(names), gemm_ops=GEMM_OPS)
    out: dict[tuple[int, str], dict[int, int]] = defaultdict(dict)
    for name_id, phase, launches, steps in connection.execute(statement, {"run_id": run_id}):
        out[(int(name_id), str(phase))][int(launches)] = int(steps)
    return dict(out)


def count_call(histogram: dict[int, int], layers: int | None) -> Call | None:
    """What a name's launches per step say, with ``layers`` = num_hidden_layers (None: no
    config gave it, and the counts say nothing)."""
    steps = sum(histogram.values())
    if steps < MIN_STEPS or layers is None or layers < 2:
        return None
    multiples = sum(n for launches, n in histogram.items()
                    if launches >= layers and launches % layers == 0)
    if multiples >= AGREEMENT * steps:
        per_step = sorted({launches // layers for launches in histogram
                           if launches % layers == 0 and launches >= layers})
        times = "/".join(str(p) for p in per_step)
        return Call("decoder_layers", "launch_count",
                    f"launched {times}× num_hidden_layers ({layers}) times per step in "
                    f"{multiples} of its {steps} steps: a linear of the decoder layers")
    once = histogram.get(1, 0)
    if once >= AGREEMENT * steps:
        return Call("lm_head", "launch_count",
                    f"launched once per step in {once} of its {steps} steps (num_hidden_layers "
                    f"{layers}): not a per-layer linear; the GEMM a forward runs once is lm_head")
    return None
