"""Run selectors: how ``tracekit report RUN``, ``tracekit diff`` and ``store.run(...)`` name a run.

A selector is ``latest`` (any case), ``-1`` (the latest), ``-2`` (the one before), …, a run
id, or a run's label. The one definition lives here so that the check that refuses labels
spelled like a selector (``tracekit analyze --label``) and the lookup agree on every case:
a label ``Latest`` could never be selected, since ``Latest`` means the latest run.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, text

from tracekit.errors import InputError, TracekitError

SELECTOR_HELP = "a run id, `latest`, -1 (latest), -2 (the one before), … or a run's label"

_POSITION = re.compile(r"-[0-9]+")
_ID = re.compile(r"[0-9]+")


def is_selector_word(token: str) -> bool:
    """True when ``token`` reads as ``latest``, a position (-N) or an id, never as a label."""
    token = token.strip()
    return token.lower() == "latest" or bool(_POSITION.fullmatch(token) or _ID.fullmatch(token))


def check_label(label: str | None) -> None:
    """Refuse labels that a run selector would read as an id, a position or ``latest``."""
    if label is not None and is_selector_word(label):
        raise TracekitError(f"label {label!r} looks like a run selector (an id, -N or latest)",
                            hint="choose a label with a letter in it")


def resolve_run(connection: Connection, selector: str | int) -> int:
    """The run id that ``selector`` names (see ``SELECTOR_HELP``)."""
    token = str(selector).strip()
    ids = [row[0] for row in connection.execute(text("SELECT id FROM runs ORDER BY id"))]
    if not ids:
        raise InputError("the store holds no runs yet", hint="run `tracekit analyze TRACE`")
    if token.lower() == "latest":
        return int(ids[-1])
    if _POSITION.fullmatch(token):
        index = int(token)
        if index == 0 or -index > len(ids):
            raise InputError(f"run {token}: the store holds {len(ids)} run(s)",
                             hint="`tracekit runs` lists them")
        return int(ids[index])
    if _ID.fullmatch(token):
        if int(token) not in ids:
            raise InputError(f"run {token} is not in the store",
                             hint="`tracekit runs` lists them")
        return int(token)
    labelled = [row[0] for row in connection.execute(
        text("SELECT id FROM runs WHERE label = :label ORDER BY id"), {"label": token})]
    if len(labelled) == 1:
        return int(labelled[0])
    if labelled:
        raise InputError(f"label {token!r} names runs {', '.join(map(str, labelled))}",
                         hint="pass the run id")
    raise InputError(f"no run {token!r}: expected {SELECTOR_HELP}",
                     hint="`tracekit runs` lists them")
