"""How profilers cut long kernel names: the printers of ``rules/_truncation.toml``.

``nsys stats`` keeps 99 characters and adds ``…``; torch's profiler table keeps 52 and adds
``...``; base-name printers (``nsys stats …:base``, ``ncu --print-kernel-base function``) drop the
template arguments without a mark. Other tools cut at other lengths (a report table at 40 or 64
characters, a notebook, a log line), so any ellipsis that ends a name — ``…``, two or more dots,
or a run of them, at whatever length — marks a cut (:func:`cut_mark`); the known printers only
name who cut. :func:`tracekit.classifier.names.prepare` strips the mark; the printer that
matches a cut name's length is named in ``truncated:`` reasons, so a user sees which tool hid
the deciding part and which export keeps it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from tracekit.datafiles import builtin_file
from tracekit.errors import RuleFileError

TABLE_FILE = "_truncation.toml"


@dataclass(frozen=True)
class Printer:
    """One way of shortening names: keep ``keep`` characters, then append ``mark``."""

    id: str
    printer: str
    keep: int
    mark: str
    cite: str
    examples: tuple[tuple[str, str], ...]

    def cut(self, full: str) -> str:
        """What this printer shows for ``full`` (base-name printers: the bare function name)."""
        if self.keep == 0:
            return base_name(full)
        if len(full) <= self.keep + (len(self.mark) if self.mark else 0):
            return full
        return full[: self.keep] + self.mark


def base_name(full: str) -> str:
    """The function name without return type, namespaces, template arguments or parameters."""
    text = full.strip()
    for prefix in ("void ", "__global__ void "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    depth, end = 0, len(text)
    for index, char in enumerate(text):
        if char == "<":
            if depth == 0:
                end = index
                break
            depth += 1
        elif char == "(" and depth == 0:
            end = index
            break
    return text[:end].rsplit("::", 1)[-1]


def parse_printers(data: dict[str, Any], source: str) -> tuple[Printer, ...]:
    """The printers of a parsed ``_truncation.toml`` (RuleFileError on a malformed entry)."""
    out: list[Printer] = []
    for index, raw in enumerate(data.get("printer", [])):
        try:
            examples = tuple((str(e["full"]), str(e["printed"])) for e in raw.get("example", []))
            out.append(Printer(id=str(raw["id"]), printer=str(raw["printer"]),
                               keep=int(raw["keep"]), mark=str(raw["mark"]),
                               cite=str(raw["cite"]), examples=examples))
        except (KeyError, TypeError, ValueError) as exc:
            raise RuleFileError(f"{source}: printer[{index}] is missing or has a bad {exc}",
                                hint="each printer needs id, printer, keep, mark and cite") from exc
    return tuple(out)


@cache
def printers() -> tuple[Printer, ...]:
    """The built-in printers (``tracekit.rules/_truncation.toml``)."""
    table = builtin_file(TABLE_FILE)
    return parse_printers(table.data, table.name)


@cache
def marks() -> tuple[str, ...]:
    """The distinct cut marks, longest first (``...`` before ``…``)."""
    return tuple(sorted({p.mark for p in printers() if p.mark}, key=len, reverse=True))


#: an ellipsis at the end of a name, of any length: ``…``, ``..`` or more dots, or runs of them
#: (``….``, ``... …``); a blank before the first belongs to the kept text (printers keep it)
_TRAILING_ELLIPSIS = re.compile(r"(?:…|\.{2,})(?:\s*(?:…|\.{2,}))*\s*$")


def cut_mark(text: str) -> str:
    """The ellipsis that ends ``text`` (the cut mark), or ``""`` if none."""
    found = _TRAILING_ELLIPSIS.search(text)
    return found.group(0) if found else ""


def printer_of(visible: str, mark: str) -> Printer | None:
    """The printer whose limit matches a name cut to ``visible`` with ``mark``, if one does."""
    for printer in printers():
        if printer.mark == mark and printer.keep == len(visible):
            return printer
    return None
