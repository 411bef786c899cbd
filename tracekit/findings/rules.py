"""Finding rules as data: ids, severities, messages, thresholds (``rules/_findings.toml``).

Loading validates the file once (every rule has an id, a known severity and a message; the
verdict templates exist), so a broken rule pack fails with one line naming the file and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from tracekit.datafiles import load_table, require
from tracekit.errors import RuleFileError
from tracekit.vocabulary import (
    LAYERS,
    OUTCOMES,
    SEVERITY_RANK,
    at_or_above,  # noqa: F401 - re-exported
)

FINDINGS_FILE = "_findings.toml"

#: Severity ranks: a finding is "at or above" ``--fail-on LEVEL`` when its rank is >= LEVEL's.
SEVERITY_ORDER = SEVERITY_RANK

_VERDICT_KEYS = (
    "fallback",
    "logged_fallback",
    "degraded",
    "mismatch",
    "undetermined",
    "unverified",
    "confirmed",
    "hardware_limited",
    "engine_limited",
    "weight_only_declared",
    "native_unused",
    "as_declared",
    "opted_in",
    "no_declaration",
    "unknown",
    "no_gemm",
)


@dataclass(frozen=True)
class FindingRule:
    """One rule's data."""

    id: str
    severity: str
    title: str
    message: str
    hint: str | None
    cite: str | None

    def render(self, **fields: Any) -> str:
        """The one-line message, with ``fields`` filled in."""
        try:
            return " ".join(self.message.format(**fields).split())
        except (KeyError, IndexError, ValueError) as exc:
            raise RuleFileError(f"rules/{FINDINGS_FILE}: rule {self.id} message: {exc}") from exc


@dataclass(frozen=True)
class FindingRules:
    """The whole rule pack: rules by id, verdict templates, thresholds."""

    rules: dict[str, FindingRule]
    verdict: dict[str, str]
    settings: dict[str, float]
    library_names: dict[str, str]
    #: outcome → {severity, words}: how a layer verdict weighs and reads (``[outcomes]``)
    outcomes: dict[str, dict[str, str]] = field(default_factory=dict)
    #: layer group → how it reads in a sentence ("the MoE experts")
    layer_words: dict[str, str] = field(default_factory=dict)
    #: how a phase opens a sentence, when not by its word (``whole_run``: a run without steps)
    phase_words: dict[str, str] = field(default_factory=dict)

    def library(self, slug: str) -> str:
        """How a classification's library slug reads in a message ("marlin" → "Marlin")."""
        return self.library_names.get(slug, slug)

    def rule(self, rule_id: str) -> FindingRule:
        """The rule ``rule_id``; RuleFileError when the pack lacks it."""
        try:
            return self.rules[rule_id]
        except KeyError as exc:
            raise RuleFileError(f"rules/{FINDINGS_FILE}: no rule with id '{rule_id}'") from exc

    def outcome_severity(self, outcome: str, share: float = 1.0) -> str | None:
        """The severity of a layer verdict with ``outcome`` over ``share`` of its phase's GEMM
        time (``undetermined`` is a warning from ``undetermined_warning_share`` on)."""
        severity = self.outcomes.get(outcome, {}).get("severity") or None
        if outcome == "undetermined" and share >= self.setting("undetermined_warning_share",
                                                                0.3):
            return "warning"
        return severity

    def outcome_word(self, outcome: str) -> str:
        """How an outcome reads after "ran bf16" ("as excluded", "— silent fallback")."""
        return self.outcomes.get(outcome, {}).get("words", outcome.replace("_", " "))

    def layer_word(self, layer: str) -> str:
        """How a layer group reads in a sentence."""
        return self.layer_words.get(layer, layer)

    def setting(self, key: str, default: float) -> float:
        """A numeric threshold from ``[settings]``."""
        return float(self.settings.get(key, default))


@cache
def load_rules() -> FindingRules:
    """Read and validate ``rules/_findings.toml``."""
    data = load_table(FINDINGS_FILE)
    rules: dict[str, FindingRule] = {}
    for row in data.get("rule", []):
        rule_id = require(row, "id", FINDINGS_FILE, "[[rule]]")
        where = f"[[rule]] {rule_id}"
        severity = require(row, "severity", FINDINGS_FILE, where)
        if severity not in SEVERITY_ORDER:
            raise RuleFileError(
                f"rules/{FINDINGS_FILE}: {where} severity '{severity}' is not one of "
                + ", ".join(SEVERITY_ORDER)
            )
        if rule_id in rules:
            raise RuleFileError(f"rules/{FINDINGS_FILE}: duplicate rule id '{rule_id}'")
        rules[rule_id] = FindingRule(
            id=rule_id,
            severity=severity,
            title=row.get("title", rule_id),
            message=require(row, "message", FINDINGS_FILE, where),
            hint=row.get("hint"),
            cite=row.get("cite"),
        )
    verdict = dict(data.get("verdict", {}))
    for key in _VERDICT_KEYS:
        require(verdict, key, FINDINGS_FILE, "[verdict]")
    outcomes = {str(k): {str(f): str(v) for f, v in row.items()}
                for k, row in data.get("outcomes", {}).items()}
    for word in OUTCOMES:
        row = require(outcomes, word, FINDINGS_FILE, "[outcomes]")
        severity = row.get("severity", "")
        if severity and severity not in SEVERITY_ORDER:
            raise RuleFileError(f"rules/{FINDINGS_FILE}: [outcomes.{word}] severity "
                                f"'{severity}' is not one of " + ", ".join(SEVERITY_ORDER))
    layer_words = {str(k): str(v) for k, v in data.get("layer_words", {}).items()}
    for word in LAYERS:
        require(layer_words, word, FINDINGS_FILE, "[layer_words]")
    return FindingRules(
        rules=rules,
        verdict=verdict,
        settings=dict(data.get("settings", {})),
        library_names={str(k): str(v) for k, v in data.get("library_names", {}).items()},
        outcomes=outcomes,
        layer_words=layer_words,
        phase_words={str(k): str(v) for k, v in data.get("phase_words", {}).items()},
    )
