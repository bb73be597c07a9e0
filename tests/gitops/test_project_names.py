"""The projects the GitOps page's filter offers: every project an application names, once, in
order, read by stepping down the project index rather than a DISTINCT over every application."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.urls import reverse

from gitops.queries import _PROJECT_NAMES_SQL, project_names
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def projected(catalog):
    for n, project in enumerate(["payments", "default", "", "payments", "checkout", "Zeta", "default", ""]):
        seed_app(catalog.prod_eu if n % 2 else catalog.staging_cluster, f"app-{n}", project=project,
                 tool="argo" if project else "flux")


def test_each_named_project_once_in_order(projected):
    from gitops.models import GitOpsApp

    expected = list(GitOpsApp.objects.exclude(project="").values_list("project", flat=True)
                    .distinct().order_by("project"))
    assert project_names() == expected
    assert sorted(set(project_names()), key=expected.index) == project_names()
    assert {"payments", "default", "checkout", "Zeta"} == set(project_names())


def test_no_application_no_project(catalog):
    assert project_names() == []


def test_the_gitops_filter_offers_them(client, users, projected):
    client.force_login(users["viewer"])
    html = client.get(reverse("gitops")).content.decode()
    select = re.search(r'<select name="project">(.*?)</select>', html, flags=re.S)
    assert select is not None
    assert re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1)) == ["all", *project_names()]


def test_the_projects_are_read_from_the_index_before_any_analyze(projected):
    if connection.vendor != "postgresql":
        pytest.skip("the production database's planner")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + _PROJECT_NAMES_SQL.format(table="gitops_gitopsapp"))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "gitopsapp_project_idx" in plan and "Seq Scan" not in plan, plan
