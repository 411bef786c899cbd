"""What a run was judged with, kept with the run, so that judging it again keeps the evidence.

A judgement weighs the trace against expectations the user gave: ``--model`` (what the
checkpoint declares), ``--expect``, ``--gpu``, ``--log`` (engine log lines), ``--rules``,
``--engine``. A stored run analyzed again with one new option must not lose the others: a
``--gpu`` given later used to re-judge without the ``--log`` of the first analysis, and the
log's evidence vanished from the findings without a word.

So every judgement records its expectations in the run's meta (``judgement``: paths made
absolute), and the next one starts from them: an option given again replaces the stored one
(``--log`` replaces the stored logs as a list; ``--model`` and ``--expect`` both state the
declaration, so either replaces both), an option not given is kept, and the notes say which
were kept and which replaced. ``fresh`` (``analyze --fresh``) judges with the
options given alone. Expectations that cannot be read any more (a log file since deleted)
are warnings of the judgement itself, as when they are given.

``recall`` is the one function the analysis calls before judging a stored run, and
``remember`` the one it calls in the judgement's transaction. The notes are the analysis'
``AnalysisResult.notes`` (the command prints them on stderr); what a judgement used is in
the document, ``run.meta.judgement``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, text

#: ``tracekit.analysis.AnalysisOptions`` (a dataclass with the fields of ``OPTIONS``); not
#: imported: the analysis imports this module
AnalysisOptions = TypeVar("AnalysisOptions")

#: option field → how the notes name it
OPTIONS = {"model": "--model", "expect": "--expect", "gpu": "--gpu", "logs": "--log",
           "rules_dirs": "--rules", "engine": "--engine"}
#: fields that hold paths (stored absolute, given back as Paths)
PATH_FIELDS = frozenset({"model", "logs", "rules_dirs"})
#: fields that hold a list
LIST_FIELDS = frozenset({"logs", "rules_dirs"})
#: fields that state the same thing: giving one replaces the stored others (``--model`` and
#: ``--expect`` both state the declaration)
SAME_SLOT = {"model": ("expect",), "expect": ("model",)}


def as_record(options: Any) -> dict[str, Any]:
    """The expectations of ``options`` as JSON values (paths absolute, unset ones left out)."""
    record: dict[str, Any] = {}
    for field in OPTIONS:
        value = getattr(options, field)
        if field in LIST_FIELDS:
            if value:
                record[field] = [str(Path(item).absolute()) for item in value]
        elif value is not None:
            record[field] = str(Path(value).absolute()) if field in PATH_FIELDS else value
    return record


def stored(connection: Connection, run_id: int) -> dict[str, Any]:
    """The expectations the run was last judged with (empty for a run never judged with
    any, or stored before tracekit kept them)."""
    meta_json = connection.execute(text("SELECT meta_json FROM runs WHERE id = :r"),
                                   {"r": run_id}).scalar()
    try:
        judgement = json.loads(meta_json or "{}").get("judgement")
    except (ValueError, AttributeError):
        return {}
    return dict(judgement) if isinstance(judgement, dict) else {}


def recall(previous: dict[str, Any], options: AnalysisOptions, *, fresh: bool = False
           ) -> tuple[AnalysisOptions, list[str]]:
    """``options`` completed by the earlier judgement's expectations, and the notes saying
    which were kept and which the options given replaced (nothing kept when ``fresh``)."""
    given = as_record(options)
    if fresh or not previous:
        dropped = sorted(OPTIONS[field] for field in previous if field not in given)
        notes = ([f"judged with the options given only (--fresh); the earlier judgement's "
                  f"{', '.join(dropped)} left out"] if fresh and dropped else [])
        return options, notes
    slots = set(given) | {other for field in given for other in SAME_SLOT.get(field, ())}
    kept = {field: value for field, value in previous.items()
            if field in OPTIONS and field not in slots}
    replaced = [field for field in sorted(slots) if field in previous
                and previous[field] != given.get(field)]
    completed = replace(options,  # type: ignore[type-var]  # a dataclass, by contract
                        **{field: _value(field, value) for field, value in kept.items()})
    notes = []
    if kept:
        notes.append("kept from the earlier judgement: " + "; ".join(
            f"{OPTIONS[field]} {_shown(value)}" for field, value in sorted(kept.items())))
    if replaced:
        notes.append("replaced: " + "; ".join(
            f"{OPTIONS[field]} (was {_shown(previous[field])})" for field in sorted(replaced)))
    return completed, notes


def same(previous: dict[str, Any], options: Any) -> bool:
    """Whether ``options`` (as completed by ``recall``) judge exactly as the stored
    judgement did: then there is nothing to judge again."""
    return {k: v for k, v in previous.items() if k in OPTIONS} == as_record(options)


def remember(connection: Connection, run_id: int, options: Any) -> None:
    """Record the judgement's expectations in the run's meta (inside its transaction)."""
    meta_json = connection.execute(text("SELECT meta_json FROM runs WHERE id = :r"),
                                   {"r": run_id}).scalar()
    try:
        meta = json.loads(meta_json) if meta_json else {}
    except ValueError:
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    meta["judgement"] = as_record(options)
    connection.execute(text("UPDATE runs SET meta_json = :m WHERE id = :r"),
                       {"m": json.dumps(meta, sort_keys=True, default=str), "r": run_id})


def _value(field: str, value: Any) -> Any:
    if field in LIST_FIELDS:
        return [Path(item) for item in value]
    return Path(value) if field in PATH_FIELDS else value


def _shown(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
