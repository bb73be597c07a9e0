"""A trigram index for the /gitops text search (gitops.appfilter.SEARCH_SQL), on PostgreSQL
only: at 50,000 applications a search read every row, five columns each. SQLite searches
without it (a no-op here). Where the role may not create the pg_trgm extension, the index
is left out with a message and the search works as before, only slower."""

import logging

from django.db import migrations, transaction

logger = logging.getLogger(__name__)

# gitops.appfilter.SEARCH_SQL, written out: a migration does not import the code it predates.
SEARCH_SQL = "name || chr(10) || namespace || chr(10) || repo_url || chr(10) || path || chr(10) || chart"
INDEX = "gitops_app_search_trgm"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception as error:  # noqa: BLE001 - any refusal: go on without the index
        logger.warning("gitops: no trigram index for the text search (pg_trgm: %s); searches read every row", error)
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON gitops_gitopsapp USING gin (({SEARCH_SQL}) gin_trgm_ops)"
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("gitops", "0008_workload_git_location")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
