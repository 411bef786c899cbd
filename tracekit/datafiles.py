"""Read tracekit's TOML data files: rule packs, the ``rules/_*.toml`` tables, the parser specs
of ``parsers/``, and users' workload files.

Every data file goes through here, so there is one TOML parser (``tomllib``, or ``tomli`` on
Python 3.10) and one error style: a file that cannot be read or parsed, or an entry that
lacks a key, is a :class:`~tracekit.errors.TracekitError` (``RuleFileError`` unless the
caller names another class) whose message starts with the file and, where it can be found,
the line — never a traceback, and never a ``KeyError`` surfacing far from the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from tracekit.errors import RuleFileError, TracekitError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["DataFile", "builtin_file", "builtin_names", "data_folder", "load_table",
           "parse_toml", "read_toml", "require", "tomllib"]

#: the installed packages that hold the shipped data files, and how messages name them
RULES_PACKAGE = "tracekit.rules"
PARSERS_PACKAGE = "tracekit.parsers"
_FOLDERS = {RULES_PACKAGE: "rules", PARSERS_PACKAGE: "parsers"}

_DECODE_LINE = re.compile(r"at line (\d+)")


@dataclass(frozen=True)
class DataFile:
    """A parsed TOML file: its data, its text (to point at lines) and the name messages use."""

    name: str
    text: str
    data: dict[str, Any]
    error: type[TracekitError] = RuleFileError

    def line_of(self, needle: str) -> int | None:
        """The first line (1-based) containing ``needle``."""
        for number, line in enumerate(self.text.splitlines(), start=1):
            if needle in line:
                return number
        return None

    def where(self, needle: str | None = None, entry: Mapping[str, Any] | None = None) -> str:
        """``name:line`` of ``needle`` (a table header, a key, a value), else of the first line
        that holds one of ``entry``'s string values (an entry of an array of tables); ``name``
        alone when neither is found."""
        line = self.line_of(needle) if needle else None
        if line is None and entry is not None:
            for value in entry.values():
                if isinstance(value, str) and value:
                    line = self.line_of(f'"{value}"') or self.line_of(f"'{value}'")
                    if line is not None:
                        break
        return f"{self.name}:{line}" if line else self.name

    def where_key(self, keys: Sequence[str]) -> str:
        """``name:line`` of the TOML key at ``keys`` (``["columns", "kernel"]``): its table
        header, else the line assigning it; the nearest enclosing key when neither is found."""
        for depth in range(len(keys), 0, -1):
            header = self.line_of(f"[{'.'.join(keys[:depth])}]")
            if header is None:
                assignment = re.compile(rf"^\s*{re.escape(keys[depth - 1])}\s*=")
                header = next((number for number, line
                               in enumerate(self.text.splitlines(), start=1)
                               if assignment.match(line)), None)
            if header is not None:
                return f"{self.name}:{header}"
        return self.name

    def fail(self, message: str, *, needle: str | None = None,
             entry: Mapping[str, Any] | None = None, hint: str | None = None) -> TracekitError:
        """The error to raise for a problem at ``needle`` (or ``entry``) of this file."""
        return self.error(f"{self.where(needle, entry)}: {message}", hint=hint)

    def require(self, entry: Mapping[str, Any], key: str, where: str) -> Any:
        """``entry[key]``, or an error naming the file, the line of the entry and the key."""
        if key not in entry:
            raise self.fail(f"{where} has no '{key}'", needle=where if where.startswith("[")
                            and not where.startswith("[[") else None, entry=entry)
        return entry[key]


def parse_toml(text: str, name: str, *, error: type[TracekitError] = RuleFileError) -> DataFile:
    """Parse TOML ``text``; invalid TOML is ``error`` naming ``name`` and the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = getattr(exc, "lineno", None) or _decode_line(str(exc), text)
        where = f"{name}:{found}" if found else name
        raise error(f"{where}: invalid TOML: {exc}") from None
    return DataFile(name=name, text=text, data=data, error=error)


def _decode_line(message: str, text: str) -> int | None:
    """The line tomllib's message names ("at line 3, column 7"; "at end of document")."""
    found = _DECODE_LINE.search(message)
    if found:
        return int(found.group(1))
    return max(1, len(text.splitlines())) if "end of document" in message else None


def read_toml(path: Path, *, error: type[TracekitError] = RuleFileError,
              name: str | None = None) -> DataFile:
    """Read and parse the TOML file at ``path`` (UTF-8, as TOML requires)."""
    shown = name or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{shown}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{shown}: not UTF-8 text (bad byte at offset {exc.start})",
                    hint="TOML files must be UTF-8") from None
    return parse_toml(text, shown, error=error)


def data_folder(package: str = RULES_PACKAGE) -> Path:
    """The folder of a data package (``tracekit.rules``, ``tracekit.parsers``): inside an
    installed wheel, or beside the package in a source checkout (``tracekit/__init__.py``
    maps it there) — every lookup of shipped data files goes through here."""
    return Path(str(resources.files(package)))


@cache
def builtin_file(file_name: str, package: str = RULES_PACKAGE) -> DataFile:
    """A data file shipped in ``package`` (cached: installed files do not change)."""
    shown = f"{_FOLDERS.get(package, package)}/{file_name}"
    resource = data_folder(package) / file_name
    if not resource.is_file():
        raise RuleFileError(f"{shown} is missing from the installation")
    return read_toml(Path(str(resource)), name=shown)


def builtin_names(package: str = RULES_PACKAGE) -> tuple[str, ...]:
    """The names of the TOML files shipped in ``package``, sorted."""
    return tuple(sorted(entry.name for entry in data_folder(package).iterdir()
                        if entry.name.endswith(".toml")))


def load_table(file_name: str) -> dict[str, Any]:
    """The data of a table shipped in ``tracekit.rules`` (``_gpus.toml``, ``_findings.toml`` …)."""
    return builtin_file(file_name).data


def require(entry: Mapping[str, Any], key: str, file_name: str, where: str) -> Any:
    """``entry[key]`` of the shipped table ``file_name``, or a RuleFileError naming the file,
    the line and the key."""
    return builtin_file(file_name).require(entry, key, where)
