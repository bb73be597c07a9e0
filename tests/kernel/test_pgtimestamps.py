"""portal.kernel.pgtimestamps reads every timestamptz PostgreSQL sends exactly as Django's own
loader does: checked against Django's loader on the same values, on a real server. How much
faster it is is a figure, not a test (the commit that made it gives one): timed beside seven
other test processes, the two took the same 65 ms."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader

from gitops.models import GitOpsApp
from portal.kernel.catalog.models import Cluster, Environment

pytestmark = pytest.mark.django_db

VALUES = [
    "2026-12-06 17:54:42.536832+00",
    "2026-12-06 17:54:42+00",
    "2026-12-06 23:24:42.5+05:30",  # an offset: the session's zone decides how it is written
    "2026-03-29 01:30:00 Europe/Berlin",
    "0001-01-01 00:00:00+00",
    "1969-12-31 23:59:59.999999+00",
    "9999-12-31 23:59:59+00",
    "0044-03-15 12:00:00+00 BC",  # not ISO 8601: Django's loader reads it (or refuses) as before
    "infinity",
    "-infinity",
]


def _read(sql_values: list[str], *, django_loader: bool) -> list[object]:
    with connection.cursor() as cursor:
        if django_loader:
            register_tzloader(connection.timezone, cursor.cursor)
        results: list[object] = []
        for value in sql_values:
            try:
                cursor.execute("SELECT %s::timestamptz", [value])
                results.append(cursor.fetchone()[0])
            except Exception as error:  # noqa: BLE001 - what each loader does with it is the point
                results.append(type(error).__name__)
        return results


def _postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the loader is PostgreSQL's (CI runs PostgreSQL)")


def test_every_value_reads_as_djangos_own_loader_reads_it() -> None:
    _postgresql()
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(1184, 0)
    assert loader.__name__ == "FastTimestamptzLoader"  # installed on the connection
    fast, django = _read(VALUES, django_loader=False), _read(VALUES, django_loader=True)
    assert fast == django
    for value in fast:
        if isinstance(value, datetime):
            assert value.tzinfo is connection.timezone


def test_a_session_in_another_zone_reads_the_same_moments() -> None:
    _postgresql()
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Asia/Kolkata'")
        try:
            fast = _read(VALUES[:4], django_loader=False)
            django = _read(VALUES[:4], django_loader=True)
        finally:
            cursor.execute("SET TIME ZONE 'UTC'")
    assert fast == django


def test_model_rows_read_the_moment_they_stored() -> None:
    _postgresql()
    env = Environment.objects.create(name="prod", order=1)
    cluster = Cluster.objects.create(name="c", environment=env)
    moment = datetime(2026, 12, 6, 17, 54, 42, 536832, tzinfo=UTC)
    GitOpsApp.objects.bulk_create(
        GitOpsApp(cluster=cluster, tool="argo", kind="Application", namespace="argocd", name=f"a{i}",
                  sync_since=moment) for i in range(300))
    read = list(GitOpsApp.objects.values_list("sync_since", flat=True))
    assert set(read) == {moment} and all(value.tzinfo is connection.timezone for value in read)
