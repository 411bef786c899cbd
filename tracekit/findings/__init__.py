"""Findings: expected (checkpoint x GPU) vs observed (classified kernels), per phase, and a verdict.

:func:`evaluate` and :func:`verdict_sentences` are pure (``engine.py``); :func:`evaluate_run`
reads the store, writes the ``findings`` table and ``runs.verdict`` (``stage.py``). Rule ids,
severities and wording are data: ``rules/_findings.toml``.
"""

from tracekit.findings.engine import Finding, FindingContext, evaluate, verdict_sentences
from tracekit.findings.rules import SEVERITY_ORDER, at_or_above
from tracekit.findings.stage import evaluate_run

__all__ = [
    "SEVERITY_ORDER",
    "Finding",
    "FindingContext",
    "at_or_above",
    "evaluate",
    "evaluate_run",
    "verdict_sentences",
]
