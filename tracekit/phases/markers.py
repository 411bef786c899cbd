"""Recognize engine step markers in range texts, driven by ``rules/_phase_markers.toml``.

A marker is the text of an NVTX range or torch ``record_function`` that brackets one engine
step and states what it carried (vLLM ``execute_context_1(512)_generation_0(0)``, SGLang
``step[DECODE bs=64]``, TensorRT-LLM ``[Executor] _forward_step 7: 0 ctx reqs, 32 gen reqs``,
tracekit's own ``tracekit.step[...]``). Formats live in TOML so that a new engine version is a
new entry; this module only compiles them, checks their examples, and parses texts. Parsing
works per unique text, never per range record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tracekit.datafiles import builtin_file, parse_toml, read_toml
from tracekit.errors import RuleFileError
from tracekit.vocabulary import STEP_PHASES

MARKERS_FILE = "_phase_markers.toml"
COUNTS = ("prefill_tokens", "decode_tokens", "prefill_requests", "decode_requests")
#: ``idle``: a recognized step marker that carried no prefill or decode work (no step is made).
MARKER_PHASES = (*STEP_PHASES, "idle")
_FIELDS = (*COUNTS, "phase")
_MARKER_KEYS = {"id", "engine", "prefilter", "pattern", "phase", "cite", "fields", "fallback",
                "match", "no_match"}


@dataclass(frozen=True)
class StepInfo:
    """What one marker text says about its step."""

    marker: str
    engine: str
    phase: str
    prefill_tokens: int | None = None
    decode_tokens: int | None = None
    prefill_requests: int | None = None
    decode_requests: int | None = None


@dataclass(frozen=True)
class MarkerExample:
    """A text that must match, and what it must give (keys absent from ``expected`` are free)."""

    text: str
    expected: Mapping[str, Any]


@dataclass
class Marker:
    """One step-marker format."""

    id: str
    engine: str
    prefilter: tuple[str, ...]
    pattern: re.Pattern[str]
    phase: str | None
    cite: str
    fields: dict[str, re.Pattern[str]] = field(default_factory=dict)
    fallback: dict[str, str] = field(default_factory=dict)
    matches: list[MarkerExample] = field(default_factory=list)
    no_match: list[str] = field(default_factory=list)

    def parse(self, text: str) -> StepInfo | None:
        """The step this text describes, or None when it is not this marker."""
        found = self.pattern.match(text)
        if found is None:
            return None
        values: dict[str, Any] = {key: value for key, value in found.groupdict().items()
                                  if key in _FIELDS and value is not None}
        for key, extra in self.fields.items():
            if key not in values:
                hit = extra.search(text)
                if hit is not None:
                    values[key] = hit.group(1)
        counts = {key: int(values[key]) for key in COUNTS if key in values}
        for key, source in self.fallback.items():
            if key not in counts and source in counts:
                counts[key] = counts[source]
        phase = self.phase or values.get("phase") or phase_from_counts(counts)
        return StepInfo(marker=self.id, engine=self.engine, phase=phase, **counts)


def phase_from_counts(counts: Mapping[str, int]) -> str:
    """Only context work → prefill, only generation → decode, both → mixed, none → idle."""
    prefill = bool(counts.get("prefill_tokens") or counts.get("prefill_requests"))
    decode = bool(counts.get("decode_tokens") or counts.get("decode_requests"))
    if prefill and decode:
        return "mixed"
    if prefill:
        return "prefill"
    if decode:
        return "decode"
    return "idle"


@dataclass
class MarkerSet:
    """All marker formats, tried in file order; the first that matches a text wins."""

    markers: list[Marker]

    def parse(self, text: str | None) -> StepInfo | None:
        """The step a range text describes, or None."""
        if not text:
            return None
        for marker in self.markers:
            info = marker.parse(text)
            if info is not None:
                return info
        return None

    def prefilters(self) -> list[str]:
        """Distinct SQL LIKE patterns; a text that passes none of them is no marker."""
        seen: dict[str, None] = {}
        for marker in self.markers:
            for like in marker.prefilter:
                seen.setdefault(like, None)
        return list(seen)

    def parse_all(self, texts: Iterable[str]) -> dict[str, StepInfo]:
        """Parse unique texts; only the ones that are markers are returned."""
        result = {}
        for text in texts:
            info = self.parse(text)
            if info is not None:
                result[text] = info
        return result


def _error(path: str, message: str) -> RuleFileError:
    return RuleFileError(f"{path}: {message}")


def _compile(path: str, where: str, source: str) -> re.Pattern[str]:
    try:
        return re.compile(source)
    except re.error as exc:
        raise _error(path, f"{where}: bad regex {source!r}: {exc}") from exc


def _marker_from(path: str, raw: Mapping[str, Any]) -> Marker:
    where = f"marker {raw.get('id', '?')!r}"
    unknown = set(raw) - _MARKER_KEYS
    if unknown:
        raise _error(path, f"{where}: unknown keys {sorted(unknown)}")
    for key in ("id", "engine", "pattern", "cite", "prefilter"):
        if key not in raw:
            raise _error(path, f"{where}: missing {key!r}")
    phase = raw.get("phase")
    if phase is not None and phase not in MARKER_PHASES:
        raise _error(path, f"{where}: phase {phase!r} is not one of {MARKER_PHASES}")
    fields = {key: _compile(path, where, value) for key, value in raw.get("fields", {}).items()}
    for key, value in (*raw.get("fallback", {}).items(), *((k, k) for k in fields)):
        if key not in _FIELDS or value not in _FIELDS:
            raise _error(path, f"{where}: unknown field {key!r} / {value!r}")
    pattern = _compile(path, where, raw["pattern"])
    for name in pattern.groupindex:
        if name not in _FIELDS and name != "iteration":
            raise _error(path, f"{where}: group {name!r} is not one of {_FIELDS}")
    prefilter = raw["prefilter"]
    return Marker(
        id=raw["id"], engine=raw["engine"],
        prefilter=tuple([prefilter] if isinstance(prefilter, str) else prefilter),
        pattern=pattern, phase=phase, cite=raw["cite"], fields=fields,
        fallback=dict(raw.get("fallback", {})),
        matches=[MarkerExample(text=example["text"],
                               expected={k: v for k, v in example.items() if k != "text"})
                 for example in raw.get("match", [])],
        no_match=list(raw.get("no_match", [])),
    )


def parse_marker_file(text: str, path: str = MARKERS_FILE) -> MarkerSet:
    """Build a marker set from TOML text (strict: unknown keys and bad regexes are errors)."""
    data = parse_toml(text, path).data
    markers = [_marker_from(path, raw) for raw in data.get("marker", [])]
    ids = [marker.id for marker in markers]
    duplicates = {marker_id for marker_id in ids if ids.count(marker_id) > 1}
    if duplicates:
        raise _error(path, f"duplicate marker ids {sorted(duplicates)}")
    return MarkerSet(markers)


@cache
def load_markers(path: Path | None = None) -> MarkerSet:
    """The built-in marker set (``tracekit.rules/_phase_markers.toml``), or one from ``path``."""
    table = read_toml(path) if path is not None else builtin_file(MARKERS_FILE)
    return parse_marker_file(table.text, table.name)


def check_marker_examples(markers: MarkerSet) -> list[str]:
    """Every example failure, as one line each (empty when all examples hold).

    A ``match`` example must be recognized by its own entry — not only by an earlier one —
    and give the stated phase and counts; a ``no_match`` example must not match its entry.
    """
    problems: list[str] = []
    for marker in markers.markers:
        for example in marker.matches:
            info = markers.parse(example.text)
            if info is None or info.marker != marker.id:
                got = info.marker if info else None
                problems.append(f"{marker.id}: {example.text!r} matched by {got!r}")
                continue
            for key, expected in example.expected.items():
                if getattr(info, key) != expected:
                    problems.append(f"{marker.id}: {example.text!r} gives {key}="
                                    f"{getattr(info, key)!r}, expected {expected!r}")
        for text in marker.no_match:
            if marker.parse(text) is not None:
                problems.append(f"{marker.id}: {text!r} must not match")
    return problems
