"""A labelled kernel-name corpus: read it, classify it, score it, snapshot the answers.

A corpus is one or more JSON-lines files, one object per real kernel name::

    {"name": …, "path": …, "op": …, "weights": …, "activations": …,
     "family": …, "source": …, "why": …}

``name`` is exactly as a profiler or engine printed it (truncation marks included), ``path``,
``op``, ``weights`` and ``activations`` are the truth in the classifier's own vocabulary
(``weights``/``activations`` may be null), ``family`` groups the report, ``source`` says where
the name was seen and ``why`` which token decides the truth. ``tracekit rules accuracy`` and the
test suite both read corpora through this module, so a user can score a rule pack against names
of their own.

Scoring words (used by the report and by the suite's targets):

- *right*: the answer's path equals the truth's path (``unknown`` == ``unknown`` included);
- *abstained*: the answer is ``unknown`` while the truth is a path;
- *confident-wrong*: the answer is a path other than ``unknown`` and differs from the truth —
  including every path answered where the truth is ``unknown`` (the visible text cannot decide).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.classifier.model import OPS, PATHS, Classification
from tracekit.errors import InputError

REQUIRED_KEYS: tuple[str, ...] = (
    "name", "path", "op", "weights", "activations", "family", "source", "why",
)
OPTIONAL_KEYS: tuple[str, ...] = ("arch", "note")
#: the answer fields a snapshot records per name (``tracekit classify --format jsonl`` keys)
SNAPSHOT_KEYS: tuple[str, ...] = (
    "name", "path", "op", "weights", "activations", "accum", "library", "rule", "confidence",
    "evidence", "reason",
)


@dataclass(frozen=True)
class Entry:
    """One labelled name and where it is written (``file:line`` for messages)."""

    name: str
    path: str
    op: str
    weights: str | None
    activations: str | None
    family: str
    source: str
    why: str
    file: str
    line: int
    arch: str | None = None
    note: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def corpus_files(paths: Iterable[Path]) -> list[Path]:
    """The ``*.jsonl`` files named by ``paths`` (a directory stands for its ``*.jsonl``)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise InputError(f"{path}: no *.jsonl corpus files in this directory")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such corpus file or directory")
    return files


def load_corpus(paths: Iterable[Path], operand_types: Mapping[str, str]) -> list[Entry]:
    """Every entry of the corpus files, validated; InputError names the file and line at fault.

    A name may appear once in the whole corpus: two truths for one name would make the score
    depend on which file is read first.
    """
    entries: list[Entry] = []
    seen: dict[str, str] = {}
    for file in corpus_files(paths):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{file}: cannot read corpus file ({exc})") from exc
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            entry = _entry(line, file, number, operand_types)
            if entry.name in seen:
                raise InputError(f"{entry.where}: name already labelled at {seen[entry.name]}",
                                 hint="keep one line per name")
            seen[entry.name] = entry.where
            entries.append(entry)
    return entries


def _entry(line: str, file: Path, number: int, operand_types: Mapping[str, str]) -> Entry:
    where = f"{file}:{number}"
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not a JSON object ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not a JSON object")
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}",
                         hint="see tests/corpus/README.md for the line format")
    unknown = sorted(set(raw) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key {', '.join(unknown)}")
    for key in ("name", "family", "source", "why"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise InputError(f"{where}: {key} must be a non-empty string")
    if raw["path"] not in PATHS:
        raise InputError(f"{where}: path {raw['path']!r} is not one of {', '.join(PATHS)}")
    if raw["op"] not in OPS:
        raise InputError(f"{where}: op {raw['op']!r} is not one of {', '.join(OPS)}")
    for key in ("weights", "activations"):
        value = raw[key]
        if value is not None and value not in operand_types:
            raise InputError(f"{where}: {key} {value!r} is not an operand type of _paths.toml")
    return Entry(
        name=raw["name"], path=raw["path"], op=raw["op"], weights=raw["weights"],
        activations=raw["activations"], family=raw["family"], source=raw["source"],
        why=raw["why"], file=str(file), line=number, arch=raw.get("arch"), note=raw.get("note"),
    )


# --- scoring ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts for one family (or the whole corpus).

    ``typed`` counts the names whose truth is a path other than ``unknown``: only they test
    whether the rules *read* a name. A set of mostly untyped names scores high for a rule set that
    says ``unknown`` to everything, so ``unknown_baseline_rate`` (that rule set's score) is
    reported beside ``right_rate``, and ``typed_right_rate`` apart from it.
    """

    names: int = 0
    right: int = 0
    abstained: int = 0
    answered_unknown: int = 0
    confident_wrong: int = 0
    typed: int = 0
    typed_right: int = 0

    def add(self, truth: str, answer: str) -> None:
        self.names += 1
        self.answered_unknown += answer == "unknown"
        if truth != "unknown":
            self.typed += 1
            self.typed_right += answer == truth
        if answer == truth:
            self.right += 1
        elif answer == "unknown":
            self.abstained += 1
        else:
            self.confident_wrong += 1

    @property
    def right_rate(self) -> float:
        return self.right / self.names if self.names else 1.0

    @property
    def abstention_rate(self) -> float:
        """Share of names answered ``unknown`` (right or not)."""
        return self.answered_unknown / self.names if self.names else 0.0

    @property
    def typed_right_rate(self) -> float:
        """Share of the typed names (truth not ``unknown``) answered with their path."""
        return self.typed_right / self.typed if self.typed else 1.0

    @property
    def unknown_baseline_rate(self) -> float:
        """The right rate of answering ``unknown`` to every name: the floor a score must beat."""
        return (self.names - self.typed) / self.names if self.names else 1.0


@dataclass
class Score:
    """The accuracy of a rule set on a corpus: totals, per family, confusion, the misses."""

    total: Tally = field(default_factory=Tally)
    families: dict[str, Tally] = field(default_factory=dict)
    #: per GPU architecture the names were recorded on or built for (``any`` when not said)
    archs: dict[str, Tally] = field(default_factory=dict)
    #: (truth path, answered path) -> names
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    misses: list[tuple[Entry, Classification]] = field(default_factory=list)

    @property
    def confident_wrong(self) -> list[tuple[Entry, Classification]]:
        return [(e, r) for e, r in self.misses if r.path != "unknown"]


def score(entries: Sequence[Entry], answers: Sequence[Classification]) -> Score:
    """Compare each answer's path with its entry's truth."""
    result = Score()
    families: dict[str, Tally] = defaultdict(Tally)
    archs: dict[str, Tally] = defaultdict(Tally)
    for entry, answer in zip(entries, answers, strict=True):
        result.total.add(entry.path, answer.path)
        families[entry.family].add(entry.path, answer.path)
        archs[entry.arch or NO_ARCH].add(entry.path, answer.path)
        result.confusion[(entry.path, answer.path)] += 1
        if answer.path != entry.path:
            result.misses.append((entry, answer))
    result.families = dict(sorted(families.items()))
    result.archs = dict(sorted(archs.items(), key=lambda item: _arch_order(item[0])))
    return result


#: the arch group of names whose entry does not say where they ran
NO_ARCH = "any"


def _arch_order(arch: str) -> tuple[int, int, str]:
    """NVIDIA before AMD, by generation (sm70 < sm90 < sm100; gfx90a < gfx942 < gfx1200), then
    names without an arch (``any``)."""
    if arch == NO_ARCH:
        return (2, 0, arch)
    if arch.startswith("gfx") and len(arch) > 5:
        major = arch[3:-2]
        return (1, int(major) if major.isdigit() else 0, arch)
    digits = "".join(c for c in arch if c.isdigit())
    return (0, int(digits or 0), arch)


#: how ``render_score`` groups the table: per family, per architecture, or both
GROUPINGS = ("family", "arch", "both")


def render_score(result: Score, by: str = "family") -> str:
    """The accuracy report as text: per-family and/or per-arch table, totals, confusion, misses."""
    lines: list[str] = []

    def row(label: str, tally: Tally) -> str:
        return (f"{label:24} {tally.names:6d} {tally.right_rate:7.1%} "
                f"{tally.abstention_rate:8.1%} {tally.confident_wrong:10d} "
                f"{tally.typed:6d} {typed_rate(tally):>11}")

    for grouping, groups in (("family", result.families), ("arch", result.archs)):
        if by not in (grouping, "both"):
            continue
        if lines:
            lines.append("")
        lines.append(f"{grouping:24} {'names':>6} {'right':>7} {'abstain':>8} {'conf-wrong':>10} "
                     f"{'typed':>6} {'typed-right':>11}")
        lines.extend(row(label, tally) for label, tally in groups.items())
        lines.append(row("all", result.total))
    lines.append("")
    total = result.total
    lines.append(f"answering unknown to every name would score {total.unknown_baseline_rate:.1%}"
                 f" ({total.names - total.typed} of {total.names} truths are unknown)")
    lines.append("")
    lines.extend(render_confusion(result.confusion))
    if result.misses:
        lines.append("")
        lines.append("misses (truth -> answer):")
        for entry, answer in result.misses:
            short = entry.name if len(entry.name) <= 100 else entry.name[:97] + "..."
            lines.append(f"  {entry.path} -> {answer.path} [{answer.rule or '-'}] {short}"
                         f"  ({entry.where})")
    return "\n".join(lines)


def typed_rate(tally: Tally) -> str:
    """The typed-right rate as a table cell: ``-`` where a group has no typed name."""
    return f"{tally.typed_right_rate:.1%}" if tally.typed else "-"


def render_markdown(result: Score) -> str:
    """README.md's accuracy tables: the total, then per family and per architecture."""

    def cells(tally: Tally) -> str:
        return (f"{tally.names} | {tally.right_rate:.1%} | {tally.abstention_rate:.1%} | "
                f"{tally.confident_wrong} | {tally.typed} | {typed_rate(tally)} |"
                ).replace("%", " %")

    head = "names | right path | answered unknown | confident wrong | typed | typed right |"
    rule = "---:|---:|---:|---:|---:|---:|"
    lines = [f"| {head}", f"|{rule}", f"| {cells(result.total)}", ""]
    for grouping, groups in (("family", result.families), ("arch", result.archs)):
        lines.extend([f"| {grouping} | {head}", f"|---|{rule}"])
        lines.extend(f"| {label} | {cells(tally)}" for label, tally in groups.items())
        lines.append("")
    return "\n".join(lines[:-1])


def render_confusion(confusion: Mapping[tuple[str, str], int]) -> list[str]:
    """Path x path matrix: rows are the truth, columns the answer (only paths that occur)."""
    corner = "truth \\ answer"
    used = [p for p in PATHS if any(p in pair for pair in confusion)]
    width = max(len(p) for p in (*used, corner))
    cell = max(5, *(len(p) for p in used))
    header = f"{corner:{width}} " + " ".join(f"{p:>{cell}}" for p in used)
    lines = [header]
    for truth in used:
        counts = [confusion.get((truth, answer), 0) for answer in used]
        if not any(counts):
            continue
        lines.append(f"{truth:{width}} " + " ".join(
            f"{(str(c) if c else '.'):>{cell}}" for c in counts))
    return lines


def score_as_dict(result: Score) -> dict[str, Any]:
    """The JSON shape of ``tracekit rules accuracy --json``."""

    def tally(t: Tally) -> dict[str, Any]:
        return {"names": t.names, "right": t.right, "right_rate": round(t.right_rate, 4),
                "abstained": t.abstained, "abstention_rate": round(t.abstention_rate, 4),
                "confident_wrong": t.confident_wrong, "typed": t.typed,
                "typed_right": t.typed_right, "typed_right_rate": round(t.typed_right_rate, 4),
                "unknown_baseline_rate": round(t.unknown_baseline_rate, 4)}

    return {
        "total": tally(result.total),
        "families": {name: tally(t) for name, t in result.families.items()},
        "archs": {name: tally(t) for name, t in result.archs.items()},
        "confusion": [{"truth": t, "answer": a, "names": n}
                      for (t, a), n in sorted(result.confusion.items())],
        "misses": [{"name": e.name, "truth": e.path, "answer": r.path, "rule": r.rule,
                    "confidence": r.confidence, "where": e.where} for e, r in result.misses],
    }


# --- snapshot --------------------------------------------------------------------------------


def snapshot_lines(answers: Iterable[Classification]) -> list[str]:
    """One JSON line per answer with the SNAPSHOT_KEYS, sorted by name (stable diffs)."""
    rows = sorted((a.as_dict() for a in answers), key=lambda row: row["name"])
    return [json.dumps({k: row[k] for k in SNAPSHOT_KEYS}, ensure_ascii=False) for row in rows]


def snapshot_diff(recorded: Sequence[str], current: Sequence[str]) -> list[str]:
    """What changed between two snapshots, one line per name: added, removed, field changes."""
    old = {json.loads(line)["name"]: json.loads(line) for line in recorded if line.strip()}
    new = {json.loads(line)["name"]: json.loads(line) for line in current if line.strip()}
    changes: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        short = name if len(name) <= 100 else name[:97] + "..."
        if name not in old:
            changes.append(f"+ {short}: {new[name]['path']} ({new[name]['rule']})")
        elif name not in new:
            changes.append(f"- {short}")
        elif old[name] != new[name]:
            fields = ", ".join(
                f"{key} {old[name].get(key)!r} -> {new[name].get(key)!r}"
                for key in SNAPSHOT_KEYS if old[name].get(key) != new[name].get(key)
            )
            changes.append(f"~ {short}: {fields}")
    return changes
