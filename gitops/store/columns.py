"""Statements written as SQL text on a poll's hot path: a model field's value as a parameter, a
column's value read back as the ORM reads it.

Why by hand: every poll, even one that finds nothing new, runs a dozen small bookkeeping
statements (its lock, the previous poll's record, its outcome). Compiled by the ORM, each costs
200-550 µs of CPU (the lock's compare-and-set with its CASE, 545 µs); the same statement as
text costs 30-50 µs. At 1,000 clusters polled every minute that was a seventh of the poll
worker's CPU (issue 40). The statements stay plain SQL that PostgreSQL and SQLite (3.35 and
later: RETURNING, ON CONFLICT) both run; values go through the model fields, so a datetime or
a JSON value is written and read exactly as the ORM would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, models


def param(model: type[models.Model], name: str, value: Any) -> Any:
    """`value` of the field `name` as a statement parameter, as the ORM would save it."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def read(model: type[models.Model], name: str, value: Any) -> Any:
    """A value of the column of field `name` as a cursor returned it, as the ORM would read it
    (a JSON document decoded, a datetime parsed where the backend hands back text)."""
    key = (model._meta.label, name, connection.vendor)
    if key not in _CONVERTERS:
        # The ones the ORM's compiler applies to the column (SQLCompiler.get_converters): the
        # backend's, then the field's own. Keyed by vendor: a test run may switch databases.
        column = model._meta.get_field(name).get_col(model._meta.db_table)
        _CONVERTERS[key] = (column, (*connection.ops.get_db_converters(column), *column.get_db_converters(connection)))
    column, converters = _CONVERTERS[key]
    for converter in converters:
        value = converter(value, column, connection)
    return value


_CONVERTERS: dict[tuple[str, str, str], tuple[Any, tuple[Callable[..., Any], ...]]] = {}


def fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def execute(sql: str, params: Sequence[Any]) -> int:
    """Run one statement; the number of rows it touched."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
