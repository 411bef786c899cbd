"""Kernel names as profilers print them: mangled, demangled, or cut short.

Rules match demangled text, so Itanium ``_Z…`` names are demangled first (``demangle``: the C++
runtime's demangler, then binutils' ``c++filt`` for the names it fails on; if both fail the raw
name is kept). Profilers cut long names and
mark the cut (``nsys stats`` keeps 99 characters + ``…``, torch's table 52 + ``...``; the limits
and their sources are in ``rules/_truncation.toml``); any ellipsis ending a name counts, at any
length (``tracekit.classifier.truncation.cut_mark``): the mark is removed and the name flagged,
so a rule can still decide from what is left while a rule whose answer could change beyond the
cut answers ``unknown`` with a ``truncated:`` reason.

rocprof (rocprofv2/v3, omniperf) prints an AMD kernel as its code-object kernel descriptor,
``<symbol>.kd``: the suffix is dropped before demangling, so rules see the same text as for
the torch profiler's spelling of the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tracekit.classifier.demangle import demangle, demangle_all
from tracekit.classifier.truncation import cut_mark, printer_of

__all__ = ["KernelName", "demangle", "prepare", "prepare_all"]


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


def prepare(name: str) -> KernelName:
    """Strip whitespace, truncation marks and rocprof's ``.kd``, demangle; never raises."""
    return _prepared(name, *_visible(name))


def prepare_all(names: Iterable[str]) -> dict[str, KernelName]:
    """``prepare`` for many names: each distinct name once, the demangler run once for all."""
    visible = {name: _visible(name) for name in dict.fromkeys(names)}
    demangle_all(text for text, _, _ in visible.values() if text.startswith("_Z"))
    return {name: _prepared(name, *parts) for name, parts in visible.items()}


def _visible(name: str) -> tuple[str, bool, str | None]:
    """The text a profiler left (marks and ``.kd`` removed), whether it was cut, and by whom."""
    text = name.strip()
    if text.endswith(KERNEL_DESCRIPTOR_SUFFIX):
        text = text[: -len(KERNEL_DESCRIPTOR_SUFFIX)].rstrip()
    mark = cut_mark(text)
    if mark:
        visible = text[: -len(mark)]
        printer = printer_of(visible, mark.strip())
        return visible.rstrip(), True, printer.id if printer else None
    return text, False, None


def _prepared(name: str, text: str, truncated: bool, cut_by: str | None) -> KernelName:
    demangled = False
    if text.startswith("_Z"):
        plain = demangle(text)
        if plain is not None:
            text, demangled = plain, True
    return KernelName(original=name, text=text, truncated=truncated, demangled=demangled,
                      cut_by=cut_by)
