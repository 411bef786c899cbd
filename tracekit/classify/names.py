"""Kernel names as profilers print them: mangled, demangled, or cut at 100 characters.

Rules match demangled text, so Itanium ``_Z…`` names are demangled first (cxxfilt wraps the
platform's ``__cxa_demangle``; if it fails the raw name is kept). ``nsys stats`` cuts long
names with ``…`` and torch tables with ``...``; the marker is removed and the name flagged, so
a rule can still decide from what is left while a family catch-all answers ``unknown`` when
the deciding part is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

TRUNCATION_MARKERS: tuple[str, ...] = ("…", "...")


@dataclass(frozen=True)
class KernelName:
    """A name prepared for matching: ``text`` is what rules see."""

    original: str
    text: str
    truncated: bool
    demangled: bool


@lru_cache(maxsize=65536)
def demangle(name: str) -> str | None:
    """The demangled form of an Itanium-mangled name, or None when it is not one or fails."""
    if not name.startswith("_Z"):
        return None
    try:
        import cxxfilt

        text = cxxfilt.demangle(name, external_only=False)
    except Exception:  # cxxfilt raises InvalidName, or the library may be missing
        return None
    return text if text and text != name else None


def prepare(name: str) -> KernelName:
    """Strip whitespace and truncation markers, demangle; never raises."""
    text = name.strip()
    truncated = False
    for marker in TRUNCATION_MARKERS:
        if text.endswith(marker):
            text = text[: -len(marker)].rstrip()
            truncated = True
            break
    demangled = False
    if text.startswith("_Z"):
        plain = demangle(text)
        if plain is not None:
            text, demangled = plain, True
    return KernelName(original=name, text=text, truncated=truncated, demangled=demangled)
