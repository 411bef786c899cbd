"""``tracekit.diff``: two runs side by side (``tracekit diff RUN_A RUN_B``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracekit.api.run import Run
from tracekit.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd


def compare(run_a: Run, run_b: Run) -> dict[str, Any]:
    """The comparison document of ``tracekit diff --json``: headline, GEMM paths per phase,
    kernels on one side only, findings that differ."""
    from tracekit.report.diff import diff_documents

    for run in (run_a, run_b):
        if not isinstance(run, Run):
            raise UsageError(f"diff() compares two tracekit Runs, got {run!r}",
                             hint="get them from tracekit.analyze(...) or store.run(...)")
    return diff_documents(run_a.document(), run_b.document())


def diff(run_a: Run, run_b: Run) -> pd.DataFrame:
    """GEMM time by datatype path in ``run_a`` and ``run_b``: run-wide (phase ``all``), then
    per phase: ``a_ns``, ``b_ns``, each side's share of its GEMM time and the change in share
    (the table of ``tracekit diff``)."""
    from tracekit.api import tables

    return tables.diff(compare(run_a, run_b))
