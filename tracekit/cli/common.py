"""Options and helpers shared by several commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from tracekit.store.db import ENV_VAR, Store, open_store
from tracekit.vocabulary import SEVERITIES

F = TypeVar("F", bound=Callable[..., Any])



def store_option(function: F) -> F:
    """``--store URL``: the store to use (``$TRACEKIT_STORE``, default ./tracekit.db)."""
    return click.option(
        "--store", "store_url", envvar=ENV_VAR, default=None, metavar="URL",
        help="Store: a SQLite file path or any SQLAlchemy URL "
             "(default ./tracekit.db, or $TRACEKIT_STORE).")(function)


def open_for(store_url: str | None, *, write: bool) -> Store:
    """Open the store for a command."""
    return open_store(store_url, write=write)


def print_json(document: Any) -> None:
    """One JSON document on stdout."""
    json.dump(document, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


def exit_code_for(findings: list[dict[str, Any]], fail_on: str | None) -> int:
    """1 when a finding at or above ``fail_on`` exists, else 0."""
    if not fail_on:
        return 0
    threshold = SEVERITIES.index(fail_on)
    worst = min((SEVERITIES.index(f["severity"]) for f in findings
                 if f["severity"] in SEVERITIES), default=len(SEVERITIES))
    return 1 if worst <= threshold else 0
