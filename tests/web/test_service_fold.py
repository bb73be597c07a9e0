"""The service page at fleet scale: an environment of many clusters shows its first panels
and every one needing attention in full, the rest as a row each behind a disclosure."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.catalog.models import Cluster
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
