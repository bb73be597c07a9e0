"""The service page at fleet scale: an environment of many clusters shows its first panels
and every one needing attention in full, the rest as a row each behind a disclosure."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.kernel.catalog.models import Cluster
from portal.web.views import service as service_view
from portal.web.views.service import PANELS_SHOWN
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def prod_clusters(catalog, count, start=0):
    made = [Cluster(name=f"prod-{n:02d}", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
            for n in range(start, start + count)]
    Cluster.objects.bulk_create(made)
    return list(Cluster.objects.filter(name__in=[c.name for c in made]).order_by("name"))


def full_panels(html):
    return re.findall(r'<section class="panel[^"]*" data-app="([^"]+)"', html)


def compact_rows(html):
    return re.findall(r'<tr data-app="([^"]+)" data-cluster=', html)


def test_many_clusters_show_the_first_panels_and_every_problem_in_full(client, users, catalog):
    clusters = prod_clusters(catalog, PANELS_SHOWN + 5)
    for n, cluster in enumerate(clusters):
        degraded = n == PANELS_SHOWN + 3
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout, version="1.6.0",
                 health="Degraded" if degraded else "Healthy", since=timedelta(hours=1))
    client.force_login(users["viewer"])

    html = client.get(reverse("service", args=["checkout"])).content.decode()

    names = [f"checkout-{n:02d}" for n in range(PANELS_SHOWN + 5)]
    assert full_panels(html) == names[:PANELS_SHOWN] + [names[PANELS_SHOWN + 3]]
    assert compact_rows(html) == [n for n in names[PANELS_SHOWN:] if n != names[PANELS_SHOWN + 3]]
    assert "<summary>4 more applications in prod, none needing attention</summary>" in html
    panels = client.get(reverse("service-panels", args=["checkout"])).content.decode()
    assert full_panels(panels) == full_panels(html)  # the 30-second refresh draws the same


def test_a_service_in_every_cluster_shows_at_most_so_many_and_links_the_rest(client, users, catalog, monkeypatch):
    # At scale (2,100 apps of one service, 360 needing attention) the page was 1.4 MB: the full
    # panels and the rows are capped, those needing attention first, and the rest counted.
    monkeypatch.setattr(service_view, "FULL_AT_MOST", PANELS_SHOWN + 2)
    monkeypatch.setattr(service_view, "ROWS_AT_MOST", 4)
    clusters = prod_clusters(catalog, PANELS_SHOWN + 12)
    broken = {PANELS_SHOWN + n for n in (1, 3, 5, 7, 9)}  # five need attention, past the first panels
    for n, cluster in enumerate(clusters):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout, version="1.6.0",
                 health="Degraded" if n in broken else "Healthy", since=timedelta(hours=1))
    client.force_login(users["viewer"])

    html = client.get(reverse("service", args=["checkout"])).content.decode()

    names = [f"checkout-{n:02d}" for n in range(PANELS_SHOWN + 12)]
    first, third = PANELS_SHOWN + 1, PANELS_SHOWN + 3
    assert full_panels(html) == names[:PANELS_SHOWN] + [names[first], names[third]]
    # The three needing attention past the cap lead the rows; one healthy row fits after them.
    rows = [names[PANELS_SHOWN + 5], names[PANELS_SHOWN + 7], names[PANELS_SHOWN + 9], names[PANELS_SHOWN]]
    assert compact_rows(html) == rows
    assert "<summary>4 more applications in prod, 3 needing attention</summary>" in html
    assert "And 6 more in prod:" in html  # 22 apps: 12 panels, 4 rows
    listed = "/gitops?service=checkout&amp;environment=prod"
    assert f'href="{listed}"' in html
    page = client.get(listed.replace("&amp;", "&")).content.decode()
    assert all(name in page for name in names)  # the GitOps page lists every one of them


def test_an_environment_of_few_clusters_is_all_panels(client, users, catalog):
    for n, cluster in enumerate(prod_clusters(catalog, PANELS_SHOWN)):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout)
    client.force_login(users["viewer"])

    html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert len(full_panels(html)) == PANELS_SHOWN and "panel-more" not in html


def test_the_service_page_queries_do_not_grow_with_its_clusters(client, users, catalog):
    for n, cluster in enumerate(prod_clusters(catalog, 3)):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout)
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("service", args=["checkout"]))

    for n, cluster in enumerate(prod_clusters(catalog, PANELS_SHOWN + 10, start=3), start=3):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout)
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert len(compact_rows(html)) == 13
    assert len(many.captured_queries) == len(few.captured_queries)
    raw = [q["sql"] for q in many.captured_queries if '"gitops_gitopsapp"."raw"' in q["sql"]]
    assert not raw, "the page never reads the applications' raw objects"


def test_compact_rows_escape_what_clusters_say(client, users, catalog):
    clusters = prod_clusters(catalog, PANELS_SHOWN + 3)
    for n, cluster in enumerate(clusters):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout, version="1.6.0")
    seed_app(prod_clusters(catalog, 1, start=90)[0], 'x"><script>alert(1)</script>',
             service=catalog.checkout, version="<b>1.6</b>", manual_sync=True)
    client.force_login(users["viewer"])
    html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert len(compact_rows(html)) == 4
    assert "<script>alert(1)</script>" not in html
    row = re.search(r'<tr data-app="x&quot;&gt;&lt;script&gt;.*?</tr>', html, re.S)
    assert row is not None, "the hostile app is a compact row, its name escaped"
    assert 'prod-90 · <span class="mono">argocd/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</span>' in row.group(0)
    assert '<span class="badge manual" title="No automated sync' in row.group(0)
    assert '<td class="mono">&lt;b&gt;1.6&lt;/b&gt;</td>' in row.group(0)
    assert '<span class="badge ok">Synced</span>' in row.group(0)


def test_the_rows_of_every_application_read_no_json_column_but_what_they_show(client, users, catalog):
    for n, cluster in enumerate(prod_clusters(catalog, PANELS_SHOWN + 5)):
        seed_app(cluster, f"checkout-{n:02d}", service=catalog.checkout)
    client.force_login(users["viewer"])
    with CaptureQueriesContext(connection) as queries:
        html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert len(compact_rows(html)) == 5
    apps = [q["sql"] for q in queries.captured_queries
            if q["sql"].startswith('SELECT "gitops_gitopsapp"."id"') and '"gitops_gitopsapp"."namespace"' in q["sql"]]
    # Every row: by the link table's ids (the deploy holds read theirs without the sync status).
    every = [sql for sql in apps if "gitops_gitopsapp_services" in sql and '"gitops_gitopsapp"."sync_status"' in sql]
    # The full panels by their ids: an array on PostgreSQL (gitops.queries.with_ids), IN on SQLite.
    by_ids = '"gitops_gitopsapp"."id" = ANY(' if connection.vendor == "postgresql" else '"gitops_gitopsapp"."id" IN ('
    full = [sql for sql in apps if by_ids in sql and "gitops_gitopsapp_services" not in sql]
    assert len(every) == 1 and len(full) == 1
    for column in ("raw", "history", "conditions", "sources", "images", "warnings", "synced_revisions",
                   "health_rules", "flux_alerts", "repo_url"):
        assert f'"gitops_gitopsapp"."{column}"' not in every[0], column
    # The pk filter, not the JSON key reads' own IN (the rule words: GitOpsAppQuerySet.with_rule_words).
    assert len(re.findall(r"\b\d+\b", full[0].split(by_ids)[1].split(")")[0])) \
        == PANELS_SHOWN, \
        "the full panels alone are read with what a panel shows"
    workloads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "gitops_workload"')]
    assert len(workloads) == 1 and len(re.findall(r"\b\d+\b", workloads[0].split(" IN (")[1].split(")")[0])) \
        == PANELS_SHOWN, "workloads are read for the full panels only"
