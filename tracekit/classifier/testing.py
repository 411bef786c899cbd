"""Check rule examples: the pytest suite and ``tracekit rules test`` both call this.

Two checks per example, so a rule pack is tested the way users will run it:

- **rule-local**: a ``match`` example must match its own rule and get the labels it lists from
  that rule alone; a ``no-match`` example must not match the rule;
- **whole ruleset**: the full classification of a ``match`` example (all rules, priorities,
  the example's ``arch`` feasibility) must have the labels the example lists. This catches two
  rules claiming one name with different labels: whichever wins disagrees with the other's example.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tracekit.classifier import classify_name
from tracekit.classifier.engine import (
    evaluate,
    guard_truncation,
    name_classification,
    rule_matches,
)
from tracekit.classifier.evidence import combine
from tracekit.classifier.model import Classification, Example, Rule, RuleSet
from tracekit.classifier.names import prepare


@dataclass(frozen=True)
class ExampleFailure:
    """One example that does not behave as its rule file says."""

    rule: str
    index: int
    name: str
    problem: str

    def __str__(self) -> str:
        short = self.name if len(self.name) <= 110 else self.name[:107] + "..."
        return f"{self.rule} example[{self.index}] {short!r}: {self.problem}"


def _label_diff(result: Classification, example: Example) -> list[str]:
    return [
        f"{key} is {getattr(result, key)!r}, expected {want!r}"
        for key, want in example.expect.items()
        if getattr(result, key) != want
    ]


def check_example(
    rule: Rule, index: int, example: Example, ruleset: RuleSet
) -> list[ExampleFailure]:
    """Both checks for one example of ``rule``; an empty list means it behaves as declared."""
    failures: list[ExampleFailure] = []

    def fail(problem: str) -> None:
        failures.append(ExampleFailure(rule.id, index, example.name, problem))

    kname = prepare(example.name)
    found = rule_matches(rule, kname.text)
    if not example.matches:
        if found is not None:
            fail(f"must not match, but pattern {found.re.pattern!r} does")
        return failures
    if found is None:
        fail("must match, but no pattern of the rule matches")
        return failures
    match = guard_truncation(evaluate(rule, found, ruleset), kname)
    local = name_classification(example.name, match, confidence=rule.confidence,
                                reason=match.reason)
    local = combine(local, match, None, example.arch)
    for problem in _label_diff(local, example):
        fail(f"the rule alone gives {problem}")
    whole = classify_name(example.name, ruleset, arch=example.arch)
    for problem in _label_diff(whole, example):
        fail(f"the whole ruleset (winner {whole.rule}) gives {problem}")
    return failures


def iter_examples(
    ruleset: RuleSet, rule_ids: set[str] | None = None
) -> Iterator[tuple[Rule, int, Example]]:
    """Every (rule, index, example), optionally only for the given rule ids."""
    for rule in ruleset.rules:
        if rule_ids is None or rule.id in rule_ids:
            for index, example in enumerate(rule.examples):
                yield rule, index, example


def check_rule_examples(
    ruleset: RuleSet, rule_ids: set[str] | None = None
) -> tuple[int, list[ExampleFailure]]:
    """Run every example; returns (examples checked, failures)."""
    failures: list[ExampleFailure] = []
    count = 0
    for rule, index, example in iter_examples(ruleset, rule_ids):
        count += 1
        failures.extend(check_example(rule, index, example, ruleset))
    return count, failures
