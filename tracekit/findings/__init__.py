"""Findings: expected (checkpoint x GPU) vs observed (classified kernels), per phase, and a verdict.

``model.py`` holds the aggregated values; ``judgement.py`` judges each (phase, layer group,
path) once — ``outcomes.py`` decides one cell, ``wording.py`` writes its words;
``checks.py`` (:func:`evaluate`) turns the judgement and the other aggregates into findings and
``verdict.py`` (:func:`verdict_sentences`) into one sentence per phase — all pure functions.
``stage.py`` (:func:`evaluate_run`) reads the store, writes the ``findings`` table and
``runs.verdict``. Rule ids, severities and wording are data: ``rules/_findings.toml``.
"""

from tracekit.findings.checks import evaluate
from tracekit.findings.model import Finding, FindingContext
from tracekit.findings.rules import SEVERITY_ORDER, at_or_above
from tracekit.findings.stage import evaluate_run
from tracekit.findings.verdict import verdict_sentences

__all__ = [
    "SEVERITY_ORDER",
    "Finding",
    "FindingContext",
    "at_or_above",
    "evaluate",
    "evaluate_run",
    "verdict_sentences",
]
