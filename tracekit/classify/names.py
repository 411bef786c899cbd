"""Kernel names as profilers print them: mangled, demangled, or cut short.

Rules match demangled text, so Itanium ``_Z…`` names are demangled first (cxxfilt wraps the
platform's ``__cxa_demangle``; if it fails the raw name is kept). Profilers cut long names and
mark the cut (``nsys stats`` keeps 99 characters + ``…``, torch's table 52 + ``...``; the limits
and their sources are in ``rules/_truncation.toml``): the mark is removed and the name flagged,
so a rule can still decide from what is left while a rule whose answer could change beyond the
cut answers ``unknown`` with a ``truncated:`` reason.

rocprof (rocprofv2/v3, omniperf) prints an AMD kernel as its code-object kernel descriptor,
``<symbol>.kd``: the suffix is dropped before demangling, so rules see the same text as for
the torch profiler's spelling of the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tracekit.classify.truncation import marks, printer_of


@dataclass(frozen=True)
class KernelName:
    """A name prepared for matching: ``text`` is what rules see."""

    original: str
    text: str
    truncated: bool
    demangled: bool
    #: the printer whose limit matches the cut (``nsys-stats-column``, ``torch-table``), if known
    cut_by: str | None = None

    def cut_note(self) -> str:
        """How the name was cut, for reasons: which printer, or just that it was."""
        if not self.truncated:
            return ""
        if self.cut_by:
            return f"the name was cut by {self.cut_by}"
        return "the name was cut"


#: suffix of an AMD code-object kernel descriptor symbol, as rocprof prints kernel names
KERNEL_DESCRIPTOR_SUFFIX = ".kd"


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
    """Strip whitespace, truncation marks and rocprof's ``.kd``, demangle; never raises."""
    text = name.strip()
    if text.endswith(KERNEL_DESCRIPTOR_SUFFIX):
        text = text[: -len(KERNEL_DESCRIPTOR_SUFFIX)].rstrip()
    truncated = False
    cut_by = None
    for mark in marks():
        if text.endswith(mark):
            visible = text[: -len(mark)]
            printer = printer_of(visible, mark)
            cut_by = printer.id if printer else None
            text = visible.rstrip()
            truncated = True
            break
    demangled = False
    if text.startswith("_Z"):
        plain = demangle(text)
        if plain is not None:
            text, demangled = plain, True
    return KernelName(original=name, text=text, truncated=truncated, demangled=demangled,
                      cut_by=cut_by)
