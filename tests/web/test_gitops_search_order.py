"""A text search on /gitops tests every row, so its page is sorted from a scan of the table,
never by walking the first sort key's index (at 100,000 apps PostgreSQL walked the rank's
index, visiting every row in index order: 3× the scan and sort). The order shown is the same."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models import Count, Window
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from gitops.appfilter import GitOpsAppFilter
from gitops.models import GitOpsApp
from portal.web.views.gitops import _in_scanned_order
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(catalog):
    clusters = [catalog.dev_cluster, catalog.staging_cluster, catalog.prod_eu, catalog.prod_us]
    for n in range(24):
        seed_app(clusters[n % 4], f"shop-{(n * 7) % 24:02d}", health="Degraded" if n % 5 == 0 else "Healthy",
                 sync="OutOfSync" if n % 3 == 0 else "Synced")
        seed_app(clusters[n % 4], f"other-{n:02d}")


def _search(sort: str):
    request = RequestFactory().get("/gitops", {"q": "shop", "sort": sort})
    return GitOpsAppFilter(request.GET, GitOpsApp.objects.all(), at=timezone.now()).qs


@pytest.mark.parametrize("sort", ["problems", "name", "-name", "cluster", "sync_since"])
def test_the_scanned_order_is_the_order_shown(fleet, sort):
    apps = _search(sort)
    assert list(_in_scanned_order(apps).values_list("pk", flat=True)) == list(apps.values_list("pk", flat=True))


def test_a_search_page_lists_the_matches_problems_first(client, users, fleet):
    client.force_login(users["viewer"])
    html = client.get(reverse("gitops"), {"q": "shop"}).content.decode()
    shown = re.findall(r"shop-\d\d", html)
    expected = list(_search("problems").values_list("name", flat=True))
    assert list(dict.fromkeys(shown)) == expected and len(expected) == 24


def test_a_search_is_not_ordered_by_walking_the_rank_index(fleet):
    if connection.vendor != "postgresql":
        pytest.skip("the production database's planner")
    query = _in_scanned_order(_search("problems")).annotate(matching=Window(Count("id"))).values_list("pk", "matching")
    sql, params = query[:50].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {GitOpsApp._meta.db_table}")
        # Indexes made as attractive as they can be: the one on the first key must still not serve.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "gitops_gito_problem" not in plan, plan  # GitOpsApp.Meta's (problem_rank, cluster, …)
