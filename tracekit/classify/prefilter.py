"""One pass over a name finds every rule keyword in it: the prefilter that keeps classification fast.

Testing each rule's keywords with Python-level ``in`` loops costs ~60 rules x several keywords
per name; instead all keywords are compiled into one trie-shaped regex, scanned once per name
in C. The regex finds the longest keyword starting at each position; a shorter keyword at the
same position is a prefix of the longer one, so every keyword contained in a found keyword is
counted as found too (``_implied``). A rule is then a candidate when it has no keywords or one
of its keywords was found, and only candidates run their (slower) regexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tracekit.classify.model import Rule


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
    """Keywords compared with the name as is, or with the lower-cased name."""

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
    return _Space(re.compile("(?=(" + _trie_regex(keywords) + "))"), implied)


@dataclass(frozen=True)
class KeywordIndex:
    """Finds, for one name, which rules (by position in the priority-sorted list) can match."""

    exact: _Space
    folded: _Space
    exact_rules: Mapping[str, frozenset[int]]
    folded_rules: Mapping[str, frozenset[int]]
    always: frozenset[int]

    @classmethod
    def build(cls, rules: Sequence[Rule]) -> "KeywordIndex":
        exact: dict[str, set[int]] = {}
        folded: dict[str, set[int]] = {}
        always = set()
        for position, rule in enumerate(rules):
            if not rule.keywords:
                always.add(position)
            for keyword in rule.keywords:
                (folded if rule.ignore_case else exact).setdefault(keyword, set()).add(position)
        return cls(
            exact=_space(set(exact)),
            folded=_space(set(folded)),
            exact_rules={k: frozenset(v) for k, v in exact.items()},
            folded_rules={k: frozenset(v) for k, v in folded.items()},
            always=frozenset(always),
        )

    def candidates(self, text: str, lower: str) -> list[int]:
        """Positions of the rules that must run their regexes on this name, in priority order."""
        chosen = set(self.always)
        for keyword in self.exact.found(text):
            chosen |= self.exact_rules[keyword]
        for keyword in self.folded.found(lower):
            chosen |= self.folded_rules[keyword]
        return sorted(chosen)
