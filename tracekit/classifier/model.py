"""Value types of the classifier: what a rule is, what evidence a name comes with, what we answer.

All frozen dataclasses: a loaded rule set is shared by every call and must not change under it,
and a ``Classification`` is stored and compared (tests, re-classification diffs) as a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.vocabulary import CONFIDENCE, EVIDENCE, OPS, PATHS  # noqa: F401 - re-exported

#: label keys a rule or a table entry may set
LABEL_KEYS: tuple[str, ...] = ("op", "path", "weights", "activations", "accum", "library")


@dataclass(frozen=True)
class Classification:
    """What one kernel name computes and which evidence said so.

    ``reason`` is always filled when ``path`` is ``unknown`` (why the evidence does not decide)
    and otherwise says what in the evidence decided it.
    """

    name: str
    op: str
    path: str
    weights: str | None
    activations: str | None
    accum: str | None
    library: str | None
    rule: str | None
    evidence: str
    confidence: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of ``tracekit classify --format jsonl`` (key order is stable)."""
        return {
            "name": self.name,
            "op": self.op,
            "path": self.path,
            "weights": self.weights,
            "activations": self.activations,
            "accum": self.accum,
            "library": self.library,
            "rule": self.rule,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Neighbour:
    """The activation-quantize kernel launched right before most of a name's launches on the
    same stream: ``share`` of its ``launches`` follow ``name``, which writes ``path``
    activations (``activations``: e4m3, e2m1, int8)."""

    name: str
    path: str
    activations: str | None
    share: float
    launches: int


@dataclass(frozen=True)
class NameEvidence:
    """Evidence about one kernel name from sources other than the name itself.

    - ``op_name`` / ``op_dtypes``: the framework op that launched the kernel (torch trace
      ``cpu_op``) and its input types as the trace prints them (``c10::BFloat16``, ``float``…).
    - ``counters``: Nsight Compute metric name -> value for one launch of the kernel.
    - ``op_shared``: the op also launched kernels of other names (cuBLAS's ``scal_kernel``
      beside its GEMM, a bias add beside a Triton matmul): its input types then do not say
      which of them is the matrix product.
    - ``neighbour``: the activation-quantize kernel launched right before most launches
      of a GEMM whose name carries no types (vLLM/SGLang's Triton ``fused_moe_kernel`` after
      ``per_token_group_quant_fp8``): evidence of its activation type.
    - ``log_path`` / ``log_line``: a datatype path an engine log line states for this kernel
      (for example ``Using MarlinNvFp4 for NVFP4 GEMM`` -> ``weight_only``) and the line.
    """

    op_name: str | None = None
    op_dtypes: tuple[str, ...] = ()
    op_shared: bool = False
    counters: Mapping[str, float] = field(default_factory=dict)
    neighbour: Neighbour | None = None
    log_path: str | None = None
    log_line: str | None = None


@dataclass(frozen=True)
class Example:
    """A rule example: a real name that must match (with expected labels) or must not match."""

    name: str
    matches: bool
    expect: Mapping[str, str | None]
    note: str | None
    arch: str | None = None


@dataclass(frozen=True)
class Table:
    """A lookup table (``rules/_<name>.toml``): captured token -> labels."""

    name: str
    source: str
    entries: Mapping[str, Mapping[str, str]]
    case_insensitive: bool = False

    def lookup(self, key: str) -> Mapping[str, str] | None:
        if self.case_insensitive:
            key = key.lower()
        return self.entries.get(key)


@dataclass(frozen=True)
class ExcludeSet:
    """A named exclude set (``[set.<name>]`` of ``rules/_excludes.toml``): veto regexes that
    several rules share for one reason, with that reason's evidence.

    A rule lists it in ``exclude_sets``; the loader appends ``patterns`` to the rule's own
    ``exclude``, so the engine sees one flat list. ``examples`` are names the set must veto
    (in every rule that lists it), ``not_examples`` names it must let through.
    """

    name: str
    source: str
    description: str
    references: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    """One classification rule, loaded from ``rules/<id>.toml``.

    A rule matches when any ``patterns`` regex is found in the name (``re.search``), none of
    ``exclude`` is, and (when ``keywords`` are given) one keyword occurs in the name — the cheap
    prefilter that keeps 10^4 names well under a second. Labels come from the rule's fixed
    fields, then from ``decode``: named capture groups looked up in tables, in order.
    """

    id: str
    source: str
    description: str
    priority: int
    confidence: str
    references: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    keywords: tuple[str, ...]
    labels: Mapping[str, str]
    decode: tuple[tuple[str, str, str | None], ...]
    requires_arch: tuple[str, ...]
    reason: str | None
    examples: tuple[Example, ...]
    ignore_case: bool = False
    #: paths this rule concludes from what the name does *not* contain (a 16-bit operand and no
    #: 8/4-bit one, an FP4 operand and no FP8 one): a truncated name cannot be decided with them
    needs_full_name: tuple[str, ...] = ()
    #: named groups whose token decides the answer: on a cut name where the matching pattern
    #: has such a group that took no part, the token may lie beyond the cut (answer unknown)
    decisive: tuple[str, ...] = ()
    #: a fallback rule (``fallback_over`` in its file) stands outside the priority order: it
    #: answers only when no other rule matched, or when the rule that won is one of these ids
    #: (the op-only generic rules); ``None`` for an ordinary rule
    fallback_over: tuple[str, ...] | None = None
    #: names of the shared exclude sets whose patterns ``exclude`` includes (after the rule's own)
    exclude_sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleSet:
    """Every loaded rule (highest priority first) plus the tables and vocabulary they use."""

    rules: tuple[Rule, ...]
    tables: Mapping[str, Table]
    operand_types: Mapping[str, str]
    sources: tuple[Path, ...] = ()
    #: the named exclude sets of ``_excludes.toml`` (built-in, then rule packs), by name
    exclude_sets: Mapping[str, ExcludeSet] = field(default_factory=dict)
    #: keyword prefilter (tracekit.classifier.prefilter.KeywordIndex), built by load_ruleset
    index: Any = field(default=None, compare=False, repr=False)
    #: ids some fallback rule may answer over (``Rule.fallback_over``): only a name whose best
    #: ordinary match is one of these, or has none, needs its other candidates looked at
    fallback_targets: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        targets = {t for rule in self.rules for t in rule.fallback_over or ()}
        object.__setattr__(self, "fallback_targets", frozenset(targets))

    def get(self, rule_id: str) -> Rule | None:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None
