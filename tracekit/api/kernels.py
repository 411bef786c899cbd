"""``Run.kernels()``: one row per kernel record, filtered in SQL and streamed into pandas.

A record's name, op, path and the rest of its classification are properties of its name, so
the query selects only the record's ``name_id``; the run's few thousand names are read once
and each record's name id becomes a position among them (:func:`frames.positions`), from
which every per-name column is a categorical. Filters by path or op are resolved to name ids
in Python (per unique name) and applied in SQL; a phase filter is a plain SQL condition.

Rows come in the store's record order (``kernels.id``, the order the trace listed them): on
SQLite that is the order of the ``run_id`` index, so no sort is needed; PostgreSQL sorts (or
walks its primary key) inside the binary COPY that streams them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import Connection, text

from tracekit.api.columns import (
    DEFAULT_KERNEL_COLUMNS,
    KERNEL_COLUMNS,
    NAME_COLUMNS,
    RECORD_COLUMNS,
    UNCLASSIFIED,
    VOCABULARY,
)
from tracekit.api.frames import Column, code_dtype, frame_of, read_columns
from tracekit.errors import UsageError
from tracekit.report.document import CLASSIFICATION_FIELDS
from tracekit.store.db import Store
from tracekit.vocabulary import PHASES


@dataclass(frozen=True)
class RunNames:
    """A run's kernel names: ids (sorted) and each name's classification, by position."""

    ids: np.ndarray
    attributes: dict[str, list[str | None]]

    def categorical(self, column: str, positions: np.ndarray) -> pd.Categorical:
        """The per-name ``column`` of the records whose names sit at ``positions``."""
        values = self.attributes[column]
        known = list(VOCABULARY.get(column, ()))
        vocabulary = set(known)
        extra = [value for value in dict.fromkeys(v for v in values if v is not None)
                 if value not in vocabulary]
        categories = known + extra
        index = {value: code for code, value in enumerate(categories)}
        by_position = np.array([index.get(value, -1) if value is not None else -1
                                for value in values] + [-1],
                               dtype=code_dtype(len(categories)))
        # positions of -1 (a name id that is not the run's) pick the trailing -1
        return pd.Categorical.from_codes(by_position[positions], categories=categories)

    def ids_where(self, column: str, wanted: set[str]) -> list[int]:
        """Ids of the names whose ``column`` is one of ``wanted``."""
        return [int(name_id) for name_id, value in zip(self.ids, self.attributes[column],
                                                       strict=True) if value in wanted]


def run_names(connection: Connection, run_id: int) -> RunNames:
    """One query over the run's names and their classifications (per unique name)."""
    rows = connection.execute(text(
        "SELECT n.id, n.name, n.short_name, "
        + ", ".join(f"c.{field}" for field in CLASSIFICATION_FIELDS)
        + " FROM kernel_names n LEFT JOIN classifications c "
        "ON c.run_id = n.run_id AND c.name_id = n.id WHERE n.run_id = :run_id ORDER BY n.id"),
        {"run_id": run_id}).all()
    attributes: dict[str, list[str | None]] = {column: [] for column in NAME_COLUMNS}
    for row in rows:
        classified = row[3] is not None
        for column, value in zip(NAME_COLUMNS, row[1:], strict=True):
            if not classified and column in UNCLASSIFIED:
                value = UNCLASSIFIED[column]
            attributes[column].append(value)
    return RunNames(np.array([row[0] for row in rows], dtype=np.int64), attributes)


def _words(value: str | Iterable[str] | None, what: str) -> list[str] | None:
    if value is None:
        return None
    words = [value] if isinstance(value, str) else list(value)
    if not words or not all(isinstance(word, str) for word in words):
        raise UsageError(f"{what}= takes a word or a list of words, got {value!r}")
    return words


def _check_vocabulary(words: list[str], what: str, allowed: Sequence[str]) -> None:
    unknown = [word for word in words if word not in allowed]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}",
                         hint=f"{what} is one of {', '.join(allowed)}")


def check_columns(columns: Sequence[str] | None) -> list[str]:
    """The requested columns, or the defaults; unknown names are refused."""
    if columns is None:
        return list(DEFAULT_KERNEL_COLUMNS)
    if isinstance(columns, str):
        columns = [columns]
    unknown = [column for column in columns if column not in KERNEL_COLUMNS]
    if unknown:
        raise UsageError(f"no kernel column {unknown[0]!r}",
                         hint=f"columns are {', '.join(KERNEL_COLUMNS)}")
    return list(dict.fromkeys(columns))


def kernel_frame(store: Store, connection: Connection, run_id: int, *,
                 phase: str | Iterable[str] | None = None,
                 path: str | Iterable[str] | None = None,
                 op: str | Iterable[str] | None = None,
                 columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The run's kernel records (see ``Run.kernels``)."""
    wanted = check_columns(columns)
    phases, paths, ops = _words(phase, "phase"), _words(path, "path"), _words(op, "op")
    where = [f"k.run_id = {int(run_id)}"]
    if phases is not None:
        _check_vocabulary(phases, "phase", PHASES)
        named = [f"'{word}'" for word in phases if word != "unattributed"]
        conditions = [f"k.phase IN ({', '.join(named)})"] if named else []
        if "unattributed" in phases:
            attributed = ", ".join(f"'{word}'" for word in PHASES[:-1])
            conditions.append(f"(k.phase IS NULL OR k.phase NOT IN ({attributed}))")
        where.append("(" + " OR ".join(conditions) + ")")
    names = run_names(connection, run_id)
    name_ids: set[int] | None = None
    for words, column in ((paths, "path"), (ops, "op")):
        if words is None:
            continue
        present = [value for value in names.attributes[column] if value is not None]
        _check_vocabulary(words, column, list(dict.fromkeys([*VOCABULARY[column], *present])))
        matching = set(names.ids_where(column, set(words)))
        name_ids = matching if name_ids is None else name_ids & matching
    if name_ids is not None:
        where.append(f"k.name_id IN ({', '.join(map(str, sorted(name_ids)))})" if name_ids
                     else "1 = 0")
    by_name = [column for column in wanted if column in NAME_COLUMNS]
    # Each selected value costs the driver a Python object per row: a duration next to its
    # start and end is one subtraction in numpy instead.
    subtract = {"duration_ns", "start_ns", "end_ns"} <= set(wanted)
    selected = [_record_column(column) for column in wanted
                if column in RECORD_COLUMNS and not (subtract and column == "duration_ns")]
    if by_name:
        selected.append(Column("_name_position", "k.name_id", "int",
                               dtype=str(code_dtype(len(names.ids) + 1)),
                               positions_of=names.ids))
    data = read_columns(store, connection, selected,
                        "FROM kernels k WHERE " + " AND ".join(where), order_by="k.id")
    if subtract:
        data["duration_ns"] = data["end_ns"] - data["start_ns"]
    if by_name:
        positions = data.pop("_name_position")
        for column in by_name:
            data[column] = names.categorical(column, positions)
        del positions
    return frame_of({column: data.pop(column) for column in wanted})


def _record_column(name: str) -> Column:
    sql, kind, dtype = RECORD_COLUMNS[name]
    categories: Sequence[str] = PHASES if name == "phase" else ()
    return Column(name, sql, kind, dtype, categories)  # type: ignore[arg-type]
