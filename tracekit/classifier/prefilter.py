"""One pass over a name finds every rule keyword in it: the prefilter that keeps classifying fast.

Testing each rule's keywords with Python-level ``in`` loops costs ~60 rules x several keywords
per name; instead all keywords are compiled into one trie-shaped regex, scanned once per name
in C. The regex finds the longest keyword starting at each position; a shorter keyword at the
same position is a prefix of the longer one, so every keyword contained in a found keyword is
counted as found too (``implied``). A rule is then a candidate when it has no keywords or one
of its keywords was found, and only candidates run their (slower) regexes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tracekit.classifier.model import Rule


def _trie_regex(words: Iterable[str]) -> str:
    """A regex matching any of ``words``, branching by character (longest alternative first)."""
    root: dict = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


@dataclass(frozen=True)
class _Space:
    """Finds which of a set of (lower-case) keywords occur in a lower-cased name, in one scan."""

    pattern: re.Pattern[str] | None
    implied: Mapping[str, frozenset[str]]

    def found(self, text: str) -> set[str]:
        if self.pattern is None:
            return set()
        out: set[str] = set()
        for match in self.pattern.finditer(text):
            out |= self.implied[match.group(1)]
        return out


def _space(keywords: set[str]) -> _Space:
    if not keywords:
        return _Space(None, {})
    implied = {k: frozenset(other for other in keywords if other in k) for k in keywords}
    # A leading character class lets the regex engine skip quickly to positions where some
    # keyword can start; the look-behind then captures the whole keyword from that position.
    first = "".join(sorted({re.escape(k[0]) for k in keywords}))
    return _Space(re.compile(f"[{first}](?<=(?=({_trie_regex(keywords)})).)"), implied)


@dataclass(frozen=True)
class KeywordIndex:
    """Finds, for one name, which rules (by position in the priority-sorted list) can match.

    All keywords are scanned in the lower-cased name; a case-sensitive keyword found that way
    is then confirmed with a plain ``in`` on the original name.
    """

    space: _Space
    folded_rules: Mapping[str, frozenset[int]]
    exact_rules: Mapping[str, tuple[tuple[str, frozenset[int]], ...]]
    always: frozenset[int]

    @classmethod
    def build(cls, rules: Sequence[Rule]) -> KeywordIndex:
        folded: dict[str, set[int]] = {}
        exact: dict[str, dict[str, set[int]]] = {}
        always = set()
        for position, rule in enumerate(rules):
            if not rule.keywords:
                always.add(position)
            for keyword in rule.keywords:
                if rule.ignore_case:
                    folded.setdefault(keyword, set()).add(position)
                else:
                    exact.setdefault(keyword.lower(), {}).setdefault(keyword, set()).add(position)
        return cls(
            space=_space(set(folded) | set(exact)),
            folded_rules={k: frozenset(v) for k, v in folded.items()},
            exact_rules={
                low: tuple((k, frozenset(v)) for k, v in variants.items())
                for low, variants in exact.items()
            },
            always=frozenset(always),
        )

    def candidates(self, text: str, lower: str) -> list[int]:
        """Positions of the rules that must run their regexes on this name, in priority order."""
        chosen = set(self.always)
        for keyword in self.space.found(lower):
            rules = self.folded_rules.get(keyword)
            if rules:
                chosen |= rules
            for original, positions in self.exact_rules.get(keyword, ()):
                if original in text:
                    chosen |= positions
        return sorted(chosen)
