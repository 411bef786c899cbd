"""Classify GPU kernels by the arithmetic they really ran (rules in ``rules/*.toml``).

In a notebook, ``tracekit.classify(names, arch=None, rules=())`` (``tracekit.api.classify``)
wraps ``classify_names`` and returns a pandas DataFrame, one row per name.

Public API::

    ruleset = load_ruleset(extra_dirs=())
    results = classify_names(names, ruleset, arch="sm90", evidence={name: NameEvidence(...)})

Work is per unique name: ``classify_names`` classifies each distinct name once and returns one
``Classification`` per input, in input order.

Decisions worth knowing:

- ``path`` describes matrix math. Kernels that are not matrix math (elementwise, norms, copies,
  collectives: op ``other``/``memory``/``comm``) get path ``unknown`` with the reason "not matrix
  math", even when their template names a type. Quantize and dequantize kernels do carry a path:
  the format they produce (``quantize``: fp8/int8/fp4 activations) or the path they serve
  (``dequantize``: ``weight_only``, the dequant + 16-bit GEMM route).
- Names cut by a profiler (``…`` / ``...``) are classified from what is left; a rule that can
  only conclude a 16-bit path from the *absence* of narrower types answers ``unknown`` then.
- Evidence precedence (docs/vocabulary.md#a-classification): counters > explicit types in the
  name > op dtypes (plain ATen matmul/attention ops only) > engine log (when the caller passes
  it) > nothing; then GPU feasibility (``arch``) turns an impossible answer into ``unknown``
  with the conflict recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracekit.classifier.engine import all_matches, classify_by_name
from tracekit.classifier.evidence import combine
from tracekit.classifier.loader import load_ruleset
from tracekit.classifier.model import (
    OPS,
    PATHS,
    Classification,
    NameEvidence,
    Rule,
    RuleSet,
)
from tracekit.classifier.names import KernelName, prepare, prepare_all

__all__ = [
    "OPS",
    "PATHS",
    "Classification",
    "NameEvidence",
    "Rule",
    "RuleSet",
    "all_matches",
    "classify_name",
    "classify_names",
    "load_ruleset",
]


def classify_name(
    name: str,
    ruleset: RuleSet,
    *,
    arch: str | None = None,
    evidence: NameEvidence | None = None,
) -> Classification:
    """Classify one kernel name (see ``classify_names``)."""
    return _classify(prepare(name), ruleset, arch, evidence)


def _classify(
    kname: KernelName, ruleset: RuleSet, arch: str | None, evidence: NameEvidence | None
) -> Classification:
    result, match = classify_by_name(kname, ruleset)
    return combine(result, match, evidence, arch)


def classify_names(
    names: Sequence[str],
    ruleset: RuleSet,
    *,
    arch: str | None = None,
    evidence: Mapping[str, NameEvidence] | None = None,
) -> list[Classification]:
    """Classify each name (once per distinct name); results are in input order.

    The distinct names are prepared together, so the fallback demangler runs once for all of
    them (``tracekit.classifier.names.prepare_all``).
    """
    evidence = evidence or {}
    prepared = prepare_all(names)
    done = {
        name: _classify(kname, ruleset, arch, evidence.get(name))
        for name, kname in prepared.items()
    }
    return [done[name] for name in names]

