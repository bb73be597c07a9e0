"""gitops.store.statistics: once polls have created a thousand applications, a store table that
holds data while PostgreSQL's statistics still say it is empty is analyzed, and nothing is asked
before that. (SQLite has no planner statistics to keep: the check is PostgreSQL's, which CI runs.)"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.models import Workload
from gitops.store import statistics
from gitops.store.bulk import bulk_insert_rows
from portal.kernel.catalog.models import Cluster

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
    # Analyzed once: the next thousand find nothing more to analyze.
    assert statistics.note_created(statistics.CHECK_EVERY_CREATED) == []
