"""Lists in SQL are bound parameters (``tracekit.store.sql.text_with_lists``), never a
Python repr pasted into the statement: a value with quotes selects exactly its own rows on
SQLite and PostgreSQL, where the pasted form breaks the statement or selects other rows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError

from tracekit.store.db import normalize_url
from tracekit.store.sql import text_with_lists

#: values whose repr, pasted into ``IN (…)``, is not the list of these strings
AWKWARD = ("it's", 'say "hi"', "a', 'b", 'it\'s "both"', "x")
STORED = (*AWKWARD, "a", "b", "hi", "it")


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    """An empty database, SQLite and PostgreSQL (the ``store_url`` fixture)."""
    engine = create_engine(normalize_url(store_url))
    yield engine
    engine.dispose()


def test_a_bound_list_selects_exactly_its_values(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE words (id INTEGER, word TEXT)"))
        connection.execute(text("INSERT INTO words VALUES (:id, :word)"),
                           [{"id": index, "word": word} for index, word in enumerate(STORED)])
        found = connection.execute(text_with_lists(
            "SELECT word FROM words WHERE word IN :wanted AND id >= :first ORDER BY id",
            wanted=AWKWARD), {"first": 0}).scalars().all()
        assert tuple(found) == AWKWARD
        # the same statement object serves another call with other plain parameters
        statement = text_with_lists("SELECT COUNT(*) FROM words WHERE word IN :wanted "
                                    "AND id >= :first", wanted=AWKWARD)
        assert connection.execute(statement, {"first": 1}).scalar() == len(AWKWARD) - 1
        assert connection.execute(statement, {"first": 0}).scalar() == len(AWKWARD)


def test_the_pasted_repr_is_not_the_same_query(engine: Engine) -> None:
    """What the bound form replaces: the repr of the tuple is not SQL for these values."""
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE words (id INTEGER, word TEXT)"))
        connection.execute(text("INSERT INTO words VALUES (:id, :word)"),
                           [{"id": index, "word": word} for index, word in enumerate(STORED)])
    with engine.connect() as connection:
        try:
            found = connection.execute(text(
                f"SELECT word FROM words WHERE word IN {AWKWARD!r} ORDER BY id")).scalars().all()
        except DBAPIError:
            return  # the pasted form does not parse (repr's \' is no SQL escape)
        assert tuple(found) != AWKWARD
