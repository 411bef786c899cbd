"""Load the TOML tables in ``tracekit.rules`` that the expect and findings stages read.

The tables are data (``rules/_gpus.toml``, ``rules/_checkpoints.toml``,
``rules/_log_patterns.toml``, ``rules/_findings.toml``); a broken file is a
:class:`~tracekit.errors.RuleFileError` naming the file, never a traceback.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from tracekit.errors import RuleFileError


@cache
def load_table(file_name: str) -> dict[str, Any]:
    """Parse one TOML table shipped in ``tracekit.rules`` (cached: the files never change)."""
    resource = resources.files("tracekit.rules") / file_name
    try:
        with resource.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise RuleFileError(f"rules/{file_name} is missing from the installation") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"rules/{file_name} is not valid TOML: {exc}") from exc


def require(entry: dict[str, Any], key: str, file_name: str, where: str) -> Any:
    """Return ``entry[key]`` or raise a RuleFileError naming the file, entry and key."""
    if key not in entry:
        raise RuleFileError(f"rules/{file_name}: {where} has no '{key}'")
    return entry[key]
