"""Kernel names cut to a column's width without two names reading the same.

Demangled names run to thousands of characters and differ late (template arguments, a tile
shape at the end), so cutting them to a terminal column can turn two kernels into one row
twice. ``distinct_cuts`` cuts each name to ``width``; names whose cuts collide show their
head, then the stretch where they start to differ (``head…stretch…``), and names that still
read the same get a ``#n`` suffix in the order given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

ELLIPSIS = "…"
#: characters shown before the place where colliding names start to differ
CONTEXT = 8


def cut(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters: its head and an ellipsis when longer."""
    return name if len(name) <= width else name[: width - 1] + ELLIPSIS


def distinct_cuts(names: Sequence[str], width: int) -> list[str]:
    """Each of ``names`` in at most ``width`` characters, no two different names alike."""
    shown = [cut(name, width) for name in names]
    for group in _collisions(names, shown):
        common = _common_prefix([names[index] for index in group])
        for index in group:
            shown[index] = _around(names[index], common, width)
        for same in _collisions(names, shown, among=group):
            for number, index in enumerate(same, start=1):
                suffix = f" #{number}"
                shown[index] = cut(shown[index], width - len(suffix)) + suffix
    return shown


def _common_prefix(names: Sequence[str]) -> int:
    first, last = min(names), max(names)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return length


def _around(name: str, differs_at: int, width: int) -> str:
    """The head of ``name``, then its stretch from just before ``differs_at``."""
    head = name[: width // 3]
    start = max(len(head), differs_at - CONTEXT)
    room = width - len(head) - 1
    stretch = name[start:start + room]
    if start + room < len(name):
        stretch = stretch[:-1] + ELLIPSIS
    return head + ELLIPSIS + stretch


def _collisions(names: Sequence[str], shown: Sequence[str],
                among: Sequence[int] | None = None) -> list[list[int]]:
    """Groups of positions whose shown texts are equal although their names differ."""
    by_text: dict[str, list[int]] = defaultdict(list)
    for index in (among if among is not None else range(len(names))):
        by_text[shown[index]].append(index)
    return [group for group in by_text.values()
            if len({names[index] for index in group}) > 1]
