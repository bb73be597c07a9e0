"""Fast bulk UPDATE of many rows in one statement per batch.

Django's bulk_update builds a CASE WHEN per field and row; for a poll that rewrites
thousands of wide rows that costs seconds. One `UPDATE … FROM (VALUES …)` per batch
does the same work in milliseconds on PostgreSQL and SQLite (≥ 3.33) alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connections, models, router


def bulk_update_rows(model: type[models.Model], objs: Sequence[models.Model], fields: Sequence[str],
                     batch_size: int = 500) -> None:
    if not objs:
        return
    connection = connections[router.db_for_write(model)]
    meta = model._meta
    quote = connection.ops.quote_name
    columns = [meta.get_field(name) for name in fields]
    pk = meta.pk
    postgres = connection.vendor == "postgresql"

    def placeholder(field: models.Field) -> str:
        # VALUES rows carry no column types; PostgreSQL needs them spelled out, SQLite is untyped.
        if not postgres:
            return "%s"
        db_type = field.cast_db_type(connection) if hasattr(field, "cast_db_type") else field.db_type(connection)
        return f"CAST(%s AS {db_type})"

    row_sql = "(" + ", ".join([placeholder(pk), *(placeholder(f) for f in columns)]) + ")"
    assignments = ", ".join(
        f"{quote(field.column)} = v.column{index + 2}" for index, field in enumerate(columns)
    )
    table = quote(meta.db_table)
    with connection.cursor() as cursor:
        for start in range(0, len(objs), batch_size):
            batch = objs[start : start + batch_size]
            params: list[object] = []
            for obj in batch:
                params.append(pk.get_db_prep_save(obj.pk, connection))
                for field in columns:
                    params.append(field.get_db_prep_save(getattr(obj, field.attname), connection))
            values = ", ".join([row_sql] * len(batch))
            cursor.execute(
                f"UPDATE {table} SET {assignments} FROM (VALUES {values}) AS v "  # noqa: S608 - names are quoted
                f"WHERE {table}.{quote(pk.column)} = v.column1",
                params,
            )
