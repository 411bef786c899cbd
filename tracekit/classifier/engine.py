"""Match one kernel name against the rules and turn the winning match into labels.

The engine is small on purpose: find every rule whose regex occurs in the name, take the
highest priority, merge its fixed labels with the labels its capture groups decode to through
tables, and derive ``path`` from the operand types when the rule does not state it. Anything
that does not resolve — a token missing from a table, operands that do not combine — becomes
``unknown`` with the reason, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from tracekit.classifier.model import Classification, Rule, RuleSet
from tracekit.classifier.names import KernelName
from tracekit.vocabulary import HALF_TYPES, MATH_OPS, QUANTIZED_PATHS

#: the reason prefix of every answer that is unknown because the name was cut
TRUNCATED = "truncated"


@dataclass(frozen=True)
class Match:
    """One rule that matched a name, with what it decoded (``rules explain`` prints these)."""

    rule: Rule
    pattern: str
    groups: Mapping[str, str]
    labels: Mapping[str, str]
    path: str
    reason: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: where the pattern's match ends in the name (a cut name: did it reach the cut?)
    end: int = 0
    #: named groups of the matching pattern that took no part in the match
    absent: tuple[str, ...] = ()


def rule_matches(rule: Rule, text: str, lower: str | None = None) -> re.Match[str] | None:
    """The first pattern match of ``rule`` in ``text``, honouring keywords and excludes.

    Keywords are a cheap substring prefilter: a rule whose patterns ignore case
    (``(?i)``) compares its keywords with the lower-cased name (``lower``).
    """
    if rule.keywords:
        haystack = text
        if rule.ignore_case:
            haystack = lower if lower is not None else text.lower()
        if not any(k in haystack for k in rule.keywords):
            return None
    return _match_patterns(rule, text)


def _match_patterns(rule: Rule, text: str) -> re.Match[str] | None:
    for pattern in rule.patterns:
        found = pattern.search(text)
        if found is not None:
            if any(ex.search(text) for ex in rule.exclude):
                return None
            return found
    return None


def _candidates(text: str, ruleset: RuleSet) -> Iterator[tuple[Rule, re.Match[str]]]:
    """Matching rules in priority order; the keyword index skips rules that cannot match."""
    lower = text.lower()
    if ruleset.index is None:
        for rule in ruleset.rules:
            found = rule_matches(rule, text, lower)
            if found is not None:
                yield rule, found
        return
    rules = ruleset.rules
    for position in ruleset.index.candidates(text, lower):
        rule = rules[position]
        found = _match_patterns(rule, text)
        if found is not None:
            yield rule, found


def derive_path(
    weights: str | None, activations: str | None, operand_types: Mapping[str, str]
) -> str | None:
    """The math path implied by the operand types, or None when they do not decide it.

    Activations decide the MMA input type: FP8 activations run FP8 MMA whatever the weights
    (W4A8-FP8), int8 activations run IMMA (W4A8-int, llama.cpp MMQ), 16-bit activations with
    lower-bit weights are weight-only (the weights are dequantized in the mainloop).
    """
    ca = operand_types.get(activations) if activations else None
    cw = operand_types.get(weights) if weights else None
    # Some names list A and B without saying which is the weight: a sub-8-bit integer or a
    # low-bit operand next to a 16-bit one is the weight, so order them before deciding.
    if ca == "weight_only" or (ca in QUANTIZED_PATHS and cw in HALF_TYPES):
        ca, cw = cw, ca
    if ca is None:
        return None
    if ca in HALF_TYPES:
        if cw is None or cw == ca:
            return ca
        if cw in ("fp4", "fp8", "int8", "weight_only"):
            return "weight_only"
        return None
    if ca == "fp4":
        return {None: "fp4", "fp4": "fp4", "fp8": "fp8"}.get(cw)
    if ca == "fp8":
        return "fp8" if cw in (None, "fp4", "fp8", "weight_only") else None
    if ca == "int8":
        # int8 activations: INT8 MMA / dp4a (llama.cpp converts MXFP4 weights to int8 too)
        return "int8" if cw in (None, "int8", "weight_only", "fp4") else None
    if ca in ("tf32", "fp32", "fp64"):
        return ca if cw in (None, ca) else None
    return None


def evaluate(rule: Rule, found: re.Match[str], ruleset: RuleSet) -> Match:
    """Labels of one matching rule: fixed labels, then decoded capture groups, then derivation."""
    labels = dict(rule.labels)
    groups = {k: v for k, v in found.groupdict().items() if v is not None}
    notes: list[str] = []
    missing: list[str] = []
    for group, table_name, target in rule.decode:
        value = groups.get(group)
        if value is None:
            continue
        entry = ruleset.tables[table_name].lookup(value)
        if entry is None or (target is not None and "type" not in entry):
            missing.append(f"{group} token '{value}' is not in table _{table_name}.toml")
            continue
        if target == "operands":
            labels.update({k: v for k, v in entry.items() if k != "type"})
            labels["weights"] = labels["activations"] = entry["type"]
        elif target is not None:
            labels[target] = entry["type"]
        else:
            labels.update({k: v for k, v in entry.items() if k != "type"})
        notes.append(f"{group}={value}")
    if missing:
        path = "unknown"
        reason = "; ".join(missing) + " (extend the table once the type is known)"
    elif "path" in labels:
        path = labels["path"]
        reason = rule.reason or ""
    else:
        derived = derive_path(
            labels.get("weights"), labels.get("activations"), ruleset.operand_types
        )
        if derived is None:
            path = "unknown"
            reason = rule.reason or (
                f"operand types weights={labels.get('weights')} "
                f"activations={labels.get('activations')} do not determine the math path"
            )
        else:
            path = derived
            reason = rule.reason or ""
    if path == "unknown" and not reason:
        reason = f"{rule.description} (the name does not state the types)"
    if path != "unknown":
        operands = ", ".join(
            f"{k} {labels[k]}" for k in ("weights", "activations", "accum") if labels.get(k)
        )
        decoded = f" [{'; '.join(notes)}]" if notes else ""
        detail = f": {operands}" if operands else ""
        reason = (reason + " " if reason else "") + f"name matches {rule.id}{decoded}{detail}"
    labels.pop("path", None)
    return Match(
        rule=rule,
        pattern=found.re.pattern,
        groups=groups,
        labels=labels,
        path=path,
        reason=reason,
        notes=tuple(notes),
        end=found.end(),
        absent=tuple(g for g in found.re.groupindex if g not in groups),
    )


def _stands_over(fallback: Rule, top: Rule | None) -> bool:
    """Whether a fallback rule answers instead of ``top``, the best ordinary match (or none)."""
    return fallback.fallback_over is not None and (top is None or top.id in fallback.fallback_over)


def _winner(hits: list[tuple[Rule, re.Match[str]]]) -> int | None:
    """Position of the winning hit among ``hits`` (priority order), or None without hits.

    The best ordinary rule wins, unless it is one that a matching fallback rule names in its
    ``fallback_over`` (or no ordinary rule matched): then the best such fallback wins. So a
    fallback reading never overrides a family rule's answer, abstentions included.
    """
    top = next((i for i, (rule, _) in enumerate(hits) if rule.fallback_over is None), None)
    top_rule = hits[top][0] if top is not None else None
    fallback = next((i for i, (rule, _) in enumerate(hits) if _stands_over(rule, top_rule)), None)
    return fallback if fallback is not None else top


def all_matches(text: str, ruleset: RuleSet) -> list[Match]:
    """Every rule that matches ``text``, the winner first, then by priority (``rules explain``)."""
    hits = list(_candidates(text, ruleset))
    won = _winner(hits)
    if won:
        hits.insert(0, hits.pop(won))
    return [evaluate(rule, found, ruleset) for rule, found in hits]


@dataclass(frozen=True)
class Veto:
    """A rule whose pattern occurs in a name but one of whose excludes vetoed it
    (``rules explain``): the exclude's regex and the shared exclude set it came from, if any."""

    rule: Rule
    exclude: str
    exclude_set: str | None


def vetoes(text: str, ruleset: RuleSet) -> list[Veto]:
    """Rules (keywords present, a pattern found) that an exclude vetoed, in priority order."""
    lower = text.lower()
    out = []
    for rule in ruleset.rules:
        if not rule.exclude or (rule.keywords and not any(
                k in (lower if rule.ignore_case else text) for k in rule.keywords)):
            continue
        if not any(pattern.search(text) for pattern in rule.patterns):
            continue
        hit = next((ex for ex in rule.exclude if ex.search(text)), None)
        if hit is None:
            continue
        origin = next((name for name in rule.exclude_sets
                       if hit in ruleset.exclude_sets[name].patterns), None)
        out.append(Veto(rule, hit.pattern, origin))
    return out


def best_match(text: str, ruleset: RuleSet) -> Match | None:
    """The winning match: the first hit in priority order, unless a fallback stands over it.

    Only when the first ordinary hit is a rule some fallback names (or there is none) are the
    remaining candidates looked at, so most names stop at their first hit as before.
    """
    candidates = _candidates(text, ruleset)
    hits: list[tuple[Rule, re.Match[str]]] = []
    for rule, found in candidates:
        hits.append((rule, found))
        if rule.fallback_over is None:
            if rule.id not in ruleset.fallback_targets:
                return evaluate(rule, found, ruleset)
            break
    hits.extend(candidates)
    won = _winner(hits)
    return None if won is None else evaluate(hits[won][0], hits[won][1], ruleset)


def guard_truncation(match: Match, kname: KernelName) -> Match:
    """On a cut name, a rule keeps its answer only if nothing beyond the cut could change it.

    Three ways the part that is gone could decide (each answers ``unknown``, ``truncated:``):

    - the pattern's match runs up to the cut: its last token may go on (``…_s8`` of ``_s8_bf16``,
      ``(ggml_type)1`` of ``(ggml_type)10``);
    - a group the rule lists as ``decisive`` did not take part: the token it would have read
      may lie beyond the cut (a cuBLAS GEMV's tensor type after its compute type);
    - the path is one the rule concludes from what the name does *not* contain
      (``needs_full_name``: a 16-bit operand and no narrower one).
    """
    if not kname.truncated or match.path == "unknown":
        return match
    rule = match.rule
    why = None
    if match.end >= len(kname.text):
        why = "its pattern reaches the cut, so its last token may go on in the part that is gone"
    elif missing := [group for group in rule.decisive if group in match.absent]:
        why = f"the deciding token ({', '.join(missing)}) is not in the visible part"
    elif match.path in rule.needs_full_name:
        why = "but only if no other operand type follows in the part that is gone"
    if why is None:
        return match
    return replace(
        match,
        path="unknown",
        reason=f"{TRUNCATED}: {kname.cut_note()}; {rule.id} would say {match.path}, {why}",
    )


def name_classification(name: str, match: Match, *, confidence: str,
                        reason: str) -> Classification:
    """What the name alone says: the matched rule's labels as a classification."""
    return Classification(
        name=name,
        op=match.labels.get("op", "other"),
        path=match.path,
        weights=match.labels.get("weights"),
        activations=match.labels.get("activations"),
        accum=match.labels.get("accum"),
        library=match.labels.get("library"),
        rule=match.rule.id,
        evidence="name",
        confidence=confidence,
        reason=reason,
    )


def _unmatched(name: str, reason: str) -> Classification:
    """The answer for a name no rule speaks for: ``unknown``, with the reason."""
    return Classification(name=name, op="other", path="unknown", weights=None,
                          activations=None, accum=None, library=None, rule=None,
                          evidence="none", confidence="low", reason=reason)


def classify_by_name(kname: KernelName, ruleset: RuleSet) -> tuple[Classification, Match | None]:
    """Classification from the name alone (evidence ``name``, or ``none`` without a match)."""
    if not kname.text:
        return _unmatched(kname.original, "empty kernel name"), None
    match = best_match(kname.text, ruleset)
    if match is None:
        reason = "no rule matches this name"
        if kname.truncated:
            reason = f"{TRUNCATED}: {kname.cut_note()}; no rule matches the part that is left"
        return _unmatched(kname.original, reason), None
    match = guard_truncation(match, kname)
    reason = match.reason
    if match.path == "unknown" and kname.truncated and not reason.startswith(TRUNCATED):
        reason = f"{TRUNCATED}: {kname.cut_note()}, and the visible part does not decide: {reason}"
    confidence = match.rule.confidence if match.path != "unknown" else "low"
    if match.path == "unknown" and match.labels.get("op") not in MATH_OPS:
        confidence = match.rule.confidence
    return (
        name_classification(kname.original, match, confidence=confidence, reason=reason),
        match,
    )
