"""What the fleet pages read (issue 18: every page under 300 ms at 50,000 applications),
counted rather than timed: the problem queries answer from the partial index of apps that can
need attention, the matrix's offers never name thousands of applications by id, and each
version string is parsed once however many lines show it."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.releases.models import Release
from portal.releases.versions import parse_tag
from portal.web.fleet import attention_flags
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def behind(catalog):
    """checkout runs 1.4.0 on every cluster and 1.5.0 is released: every line is behind."""
    for cluster in (catalog.dev_cluster, catalog.staging_cluster, catalog.prod_eu, catalog.prod_us):
        seed_app(cluster, f"checkout-{cluster.name}", service=catalog.checkout, version="1.4.0")
        seed_app(cluster, f"payments-{cluster.name}", service=catalog.payments, version="2.0.1",
                 health="Degraded" if cluster == catalog.prod_eu else "Healthy")
    Release.objects.create(service=catalog.checkout, tag="1.5.0", version="1.5.0", seen_at=timezone.now())


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        # A test table is tiny, where a scan is cheaper anyway: ask whether the index can answer.
        cursor.execute(f"ANALYZE {GitOpsApp._meta.db_table}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_matrix_problems_are_read_from_the_partial_index_of_candidates(behind):
    if connection.vendor != "postgresql":
        pytest.skip("the production database's planner; SQLite's own picks plans for tiny tables")
    with CaptureQueriesContext(connection) as read:
        flags = attention_flags()
    assert [flag.app for found in flags.values() for flag in found] == ["payments-prod-eu-1"]
    (query,) = [q["sql"] for q in read.captured_queries if GitOpsApp._meta.db_table in q["sql"]]
    # The captured SQL has its values inlined; planning it again needs no parameters.
    assert "gitopsapp_attention_idx" in _plan(query)


def test_the_matrix_offers_do_not_name_applications_by_id(client, users, catalog, behind):
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as read:
        html = client.get(reverse("matrix")).content.decode()
    assert html.count("Open PR → 1.5.0") == 3  # dev, staging and prod's line of two clusters
    # By a subquery's ids (gitops.queries.apps_with_ids_from), never a list of them.
    app_ids = re.compile(rf'"{GitOpsApp._meta.db_table}"\."id" IN \(\d')
    assert not [q["sql"] for q in read.captured_queries if app_ids.search(q["sql"])]


def test_each_version_is_parsed_once_however_many_lines_show_it(client, users, catalog, behind):
    client.force_login(users["member"])
    client.get(reverse("matrix"))
    parsed = parse_tag.cache_info().misses
    client.get(reverse("matrix"))
    assert parse_tag.cache_info().misses == parsed
    assert parse_tag.cache_info().hits > 0


def test_the_clusters_page_counts_apps_without_joining_their_rows(client, users, catalog, behind):
    client.force_login(users["viewer"])
    with CaptureQueriesContext(connection) as read:
        html = client.get(reverse("clusters")).content.decode()
    apps = [q["sql"] for q in read.captured_queries if f'FROM "{GitOpsApp._meta.db_table}"' in q["sql"]]
    assert len(apps) == 1 and "JOIN" not in apps[0]  # the cluster_id index answers it
    row = html[html.index("<strong>prod-eu-1</strong>"):]
    assert row[: row.index("</tr>")].count("<td>2</td>") == 1  # checkout and payments


def test_the_overview_counts_read_only_the_indexed_few(catalog, behind):
    from gitops.models import GitOpsApp as App
    from portal.web.fleet import fleet_counts

    App.objects.filter(name="checkout-dev-eu-1").update(suspended=True)
    App.objects.filter(name="checkout-prod-us-1").update(sync_blocked=True)
    with CaptureQueriesContext(connection) as read:
        counts = fleet_counts()
    assert (counts["apps"], counts["attention"], counts["suspended"], counts["blocked"]) == (8, 1, 1, 1)
    if connection.vendor != "postgresql":
        return
    table = App._meta.db_table
    # The total comes from an index; the other counts from the two partial indexes, never the table.
    for sql in [q["sql"] for q in read.captured_queries if f'FROM "{table}"' in q["sql"]]:
        assert f"Seq Scan on {table}" not in _plan(sql)


def test_the_chart_reads_of_delivery_use_the_partial_index_of_chart_apps(catalog, behind):
    from portal.delivery.promotions import chart_promotions

    seed_app(catalog.prod_eu, "ingress", chart="ingress-nginx", path="",
             repo_url="https://kubernetes.github.io/ingress-nginx")
    with CaptureQueriesContext(connection) as read:
        chart_promotions()
    table = GitOpsApp._meta.db_table
    (sql,) = [q["sql"] for q in read.captured_queries if f'FROM "{table}"' in q["sql"]]
    if connection.vendor == "postgresql":
        assert "gitopsapp_chart_idx" in _plan(sql)


def test_the_matrix_offers_and_promotions_read_applications_by_primary_key(client, users, catalog, behind):
    """The shape that keeps its plan before any ANALYZE (gitops.queries.with_ids_from): the ids'
    subquery runs once, then the primary key answers; no join the planner could turn into a
    loop over every application."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's plan; SQLite reads `id IN (subquery)`")
    from portal.delivery.promotions import load

    seed_app(catalog.staging_cluster, "checkout-next", service=catalog.checkout, version="1.5.0")
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as read:
        client.get(reverse("matrix"))
        load()
    by_ids = [q["sql"] for q in read.captured_queries if "= ANY(ARRAY(" in q["sql"]]
    assert len(by_ids) == 3  # the matrix's offers; the promotions' applications and workloads
    for sql in by_ids[:2]:
        plan = _plan(sql)
        assert "InitPlan" in plan and "gitops_gitopsapp_pkey" in plan and "Join" not in plan.split("InitPlan")[0]
