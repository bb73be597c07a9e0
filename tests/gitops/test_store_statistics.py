"""gitops.store.statistics: once polls have created a thousand applications, a store table that
holds data while PostgreSQL's statistics still say it is empty is analyzed, and nothing is asked
before that. (SQLite has no planner statistics to keep: the check is PostgreSQL's, which CI runs.)"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.models import GitOpsApp, RunningVersion, Workload
from gitops.store import statistics
from gitops.store.bulk import bulk_insert_rows
from portal.kernel.catalog.models import Cluster, Service

pytestmark = pytest.mark.django_db


def _reltuples(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_a_filled_table_planned_as_empty_is_analyzed_after_a_thousand_new_apps(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's (CI runs PostgreSQL)")
    table = Workload._meta.db_table
    assert _reltuples(table) <= 0, "no test analyzes the workloads: planned as empty, as migrated"
    monkeypatch.setattr(statistics, "FILLED_BYTES", 64 * 1024)
    cluster = Cluster.objects.create(name="big")
    bulk_insert_rows(Workload, [
        Workload(cluster=cluster, kind="Deployment", namespace="shop", name=f"w{i}",
                 containers=[{"name": "app", "image": f"ghcr.io/acme/svc{i}:1.0.0", "note": f"{i}" * 300}])
        for i in range(600)])

    with CaptureQueriesContext(connection) as asked:
        assert statistics.note_created(statistics.CHECK_EVERY_CREATED - 1) == []
    assert len(asked) == 0  # nothing is asked before a thousand new applications

    assert table in statistics.note_created(1)
    assert _reltuples(table) >= 600
    # Analyzed once: the next thousand leave it be. (Another table may be analyzed then: a test's
    # rolled-back rows leave the apps table's pages on disk, and an ANALYZE that finds no row
    # leaves it counted as empty.)
    assert table not in statistics.note_created(statistics.CHECK_EVERY_CREATED)


def test_a_table_filled_after_the_apps_is_analyzed_too(monkeypatch):
    """The apps fill first, their running versions later: each is analyzed once it holds data (a
    cut that stopped once the apps had statistics left the others unanalyzed for good). ANALYZE
    writes pg_class in place, so no test's rollback undoes it: each table is analyzed by one test."""
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's (CI runs PostgreSQL)")
    monkeypatch.setattr(statistics, "FILLED_BYTES", 64 * 1024)
    cluster = Cluster.objects.create(name="big")
    bulk_insert_rows(GitOpsApp, [
        GitOpsApp(cluster=cluster, tool="argo", kind="Application", namespace="argocd", name=f"a{i}",
                  health_message=f"{i}" * 300)
        for i in range(600)])
    statistics.note_created(statistics.CHECK_EVERY_CREATED)  # other tests of pages analyze the apps too
    assert _reltuples(GitOpsApp._meta.db_table) > 0

    service = Service.objects.create(name="svc", image_repository="ghcr.io/acme/svc")
    bulk_insert_rows(RunningVersion, [
        RunningVersion(cluster=cluster, service=service, container="app", version="1.0.0",
                       image=f"ghcr.io/acme/svc:1.0.0@sha256:{i:064d}" + "x" * 300)
        for i in range(600)])
    # (Another table may be analyzed with it: rolled-back rows of earlier tests leave pages on disk.)
    analyzed = statistics.note_created(statistics.CHECK_EVERY_CREATED)
    assert RunningVersion._meta.db_table in analyzed and GitOpsApp._meta.db_table not in analyzed, analyzed
    assert _reltuples(RunningVersion._meta.db_table) >= 600


def test_every_store_table_is_planned_at_its_size_before_any_statistics():
    """Before the first ANALYZE, PostgreSQL counts a table's rows as its pages times the rows a
    page holds at the width its column types imply (an integer: portal.kernel.fields). A width
    over a page made a filled GitOpsApp table look empty; at most half a page, a table is
    counted at no less than two rows a page."""
    if connection.vendor != "postgresql":
        pytest.skip("planner estimates are PostgreSQL's (CI runs PostgreSQL)")
    from django.apps import apps

    half_page = (8192 - 24) // 2  # a block less its header, halved
    widths = {}
    for model in apps.get_app_config("gitops").get_models():
        table = model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f'EXPLAIN (FORMAT JSON) SELECT * FROM "{table}"')  # noqa: S608 - a model's table
            widths[table] = cursor.fetchone()[0][0]["Plan"]["Plan Width"]
    assert widths["gitops_gitopsapp"] < 2000, widths
    assert {table: width for table, width in widths.items() if width > half_page} == {}, widths
