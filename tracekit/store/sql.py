"""SQL text with lists bound as parameters, never pasted into the statement.

A fixed vocabulary (GEMM ops, NVTX range kinds, finding rules) used in ``x IN (…)`` is bound
as an expanding parameter: SQLAlchemy writes one placeholder per item when it runs the
statement, so no value is quoted by hand and a quote in a value cannot change the SQL.
(Statements that the database cannot take parameters for, such as PostgreSQL's ``COPY (…)
TO STDOUT``, are the exception; their values come from the checked vocabulary.)
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import TextClause, bindparam, text


def text_with_lists(sql: str, **lists: Iterable[object]) -> TextClause:
    """``text(sql)`` with each ``:name`` of ``lists`` bound to that list (write ``x IN :name``,
    without parentheses); the other parameters are given at execution as usual."""
    return text(sql).bindparams(*(bindparam(name, list(values), expanding=True)
                                  for name, values in lists.items()))
