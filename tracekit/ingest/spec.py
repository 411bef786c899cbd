"""Format specs: the TOML files in ``parsers/`` that say what a file is and how it maps.

A spec is data: how to recognize a file from its content (``[detect]``), which reader knows
how to walk it (``reader``), and reader-specific mapping tables kept as plain dicts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tracekit.errors import TracekitError


@dataclass(frozen=True)
class Detect:
    """Content checks for one format; all that are given must hold."""

    magic: bytes | None = None
    gzip_ok: bool = False
    sqlite_tables: tuple[str, ...] = ()
    sqlite_any_table: tuple[str, ...] = ()
    json_any_key: tuple[str, ...] = ()
    text_markers: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class FormatSpec:
    """One input format: its id, its reader and its mapping tables."""

    id: str
    reader: str
    producer: str
    summary: str
    detect: Detect
    priority: int = 0
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def _parse(name: str, text: str) -> FormatSpec:
    try:
        raw = tomllib.loads(text)
        detect_raw = raw.get("detect", {})
        magic = detect_raw.get("magic")
        detect = Detect(
            magic=magic.encode("latin-1") if magic else None,
            gzip_ok=bool(detect_raw.get("gzip_ok", False)),
            sqlite_tables=tuple(detect_raw.get("sqlite_tables", ())),
            sqlite_any_table=tuple(detect_raw.get("sqlite_any_table", ())),
            json_any_key=tuple(detect_raw.get("json_any_key", ())),
            text_markers=tuple(detect_raw.get("text_markers", ())),
            extensions=tuple(detect_raw.get("extensions", ())),
        )
        return FormatSpec(
            id=raw["id"],
            reader=raw["reader"],
            producer=raw.get("producer", raw["id"]),
            summary=raw.get("summary", ""),
            detect=detect,
            priority=int(raw.get("priority", 0)),
            data=raw,
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise TracekitError(f"parser spec {name} is invalid: {exc}") from None


@lru_cache(maxsize=1)
def builtin_specs() -> tuple[FormatSpec, ...]:
    """Every spec shipped in ``tracekit.parsers``, highest priority first."""
    folder = resources.files("tracekit.parsers")
    specs = [
        _parse(entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    ]
    return tuple(sorted(specs, key=lambda spec: (-spec.priority, spec.id)))


def spec_by_id(format_id: str) -> FormatSpec:
    """The built-in spec with this id."""
    for spec in builtin_specs():
        if spec.id == format_id:
            return spec
    known = ", ".join(spec.id for spec in builtin_specs())
    raise TracekitError(f"unknown format {format_id!r}", hint=f"known formats: {known}")
