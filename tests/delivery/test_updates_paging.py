"""/updates at fleet scale: the list is paged on the server with its filters in the URL, and
finding who is behind reads light rows, never the applications' raw objects."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.delivery.upgrades import BehindLines, behind
from portal.kernel.catalog.models import Cluster
from portal.releases.models import Release
from portal.web.views.updates import PAGE_SIZE
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

APP_TABLE = GitOpsApp._meta.db_table


def releases(service, *tags):
    now = timezone.now()
    Release.objects.bulk_create(Release(service=service, tag=tag, version=tag, seen_at=now) for tag in tags)


def seed_behind(catalog, count, *, start=0, cluster=None):
    """`count` checkout apps on 1.6.0 where 1.7.0 is released: each one a line behind."""
    for n in range(start, start + count):
        seed_app(cluster or catalog.prod_eu, f"checkout-{n:03d}", service=catalog.checkout, version="1.6.0",
                 raw={"metadata": {"name": f"checkout-{n:03d}"}, "spec": {"big": "x" * 100}})


def shown_apps(html):
    return re.findall(r'data-app="([^"]+)" data-target', html)


def test_page_two_shows_the_rest_and_the_pager_keeps_the_filter(client, users, catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    releases(catalog.payments, "2.0.0", "2.1.0")
    seed_behind(catalog, PAGE_SIZE + 7)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.0.0")  # behind, filtered out
    client.force_login(users["viewer"])

    first = client.get(reverse("updates"), {"service": "checkout"}).content.decode()
    assert shown_apps(first) == [f"checkout-{n:03d}" for n in range(PAGE_SIZE)]
    assert "payments-prod" not in first
    assert f"<strong>{PAGE_SIZE + 7}</strong>applications behind" in first  # the count is of every line
    assert 'href="?service=checkout&amp;page=2"' in first

    second = client.get(reverse("updates"), {"service": "checkout", "page": "2"}).content.decode()
    assert shown_apps(second) == [f"checkout-{n:03d}" for n in range(PAGE_SIZE, PAGE_SIZE + 7)]
    assert 'href="?service=checkout&amp;page=1"' in second
    assert '<option selected>checkout</option>' in second  # the filter form shows what is chosen

    everything = client.get(reverse("updates")).content.decode()
    assert "<strong>2</strong>services with a newer acceptable release" in everything


def test_the_environment_filter_narrows_the_lines(client, users, catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    seed_behind(catalog, 2)
    seed_behind(catalog, 1, start=10, cluster=catalog.dev_cluster)
    client.force_login(users["viewer"])

    html = client.get(reverse("updates"), {"environment": "dev"}).content.decode()

    assert shown_apps(html) == ["checkout-010"]
    unknown = client.get(reverse("updates"), {"environment": "nowhere"}).content.decode()
    assert len(shown_apps(unknown)) == 3  # a name that is no environment filters nothing


def test_updates_never_reads_the_raw_objects_or_their_history(client, users, catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    seed_behind(catalog, 3)
    client.force_login(users["member"])

    with CaptureQueriesContext(connection) as queries:
        html = client.get(reverse("updates")).content.decode()

    assert len(shown_apps(html)) == 3
    app_reads = [q["sql"] for q in queries.captured_queries if f'FROM "{APP_TABLE}"' in q["sql"]]
    assert app_reads, "the page reads the applications it shows"
    for sql in app_reads:
        for column in ("raw", "history", "conditions"):
            assert f'"{APP_TABLE}"."{column}"' not in sql, sql


def test_a_fleet_where_nothing_is_behind_reads_no_application(client, users, catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    for n in range(5):
        seed_app(catalog.prod_eu, f"checkout-{n}", service=catalog.checkout, version="1.7.0")
    client.force_login(users["viewer"])

    with CaptureQueriesContext(connection) as queries:
        html = client.get(reverse("updates")).content.decode()

    assert "Every application runs the newest release its version policy accepts" in html
    assert not [q["sql"] for q in queries.captured_queries if f'FROM "{APP_TABLE}"' in q["sql"]]


def test_the_updates_page_queries_do_not_grow_with_the_fleet(client, users, catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    releases(catalog.payments, "2.0.0", "2.1.0")
    seed_behind(catalog, 2)
    seed_app(catalog.prod_us, "payments-prod", service=catalog.payments, version="2.0.0")
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("updates"))

    more = Cluster.objects.create(name="prod-ap-1", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
    seed_behind(catalog, PAGE_SIZE + 20, start=100, cluster=more)
    for n in range(8):
        seed_app(more, f"payments-{n}", service=catalog.payments, version="2.0.0")
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("updates")).content.decode()

    assert len(shown_apps(html)) == PAGE_SIZE
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_page_of_lines_loads_only_its_applications(catalog):
    releases(catalog.checkout, "1.6.0", "1.7.0")
    seed_behind(catalog, 12)
    found = BehindLines()

    page = found.load(10, 12)

    assert len(found) == 12
    assert [b.app.name for b in page] == ["checkout-010", "checkout-011"]
    assert [b.app.name for b in page] == [b.app.name for b in behind()[10:12]]
    assert {b.target for b in page} == {"1.7.0"} and {b.running for b in page} == {"1.6.0"}


def test_a_page_reads_only_its_lines_and_no_application_json(catalog):
    """The lines are counted from light rows and a page reads the names only of the lines that
    can sort among its own (same service and cluster); no query selects the applications'
    JSON columns (running, raw, history)."""
    releases(catalog.checkout, "1.6.0", "1.7.0")
    seed_behind(catalog, 30)
    elsewhere = Cluster.objects.create(name="prod-zz-1", environment=catalog.prod,
                                       connection=Cluster.Connection.MANIFESTS)
    seed_behind(catalog, 10, start=100, cluster=elsewhere)
    with CaptureQueriesContext(connection) as queries:
        found = BehindLines()
        assert len(found) == 40
        page = found.page(20, 25)
    assert [line.app for line in page] == [f"checkout-{n:03d}" for n in range(20, 25)]
    names = [q["sql"] for q in queries.captured_queries if f'"{APP_TABLE}"."name"' in q["sql"]]
    assert len(names) == 1
    read = {int(pk) for pk in re.findall(r"(?<!\w)\d+(?!\w)", names[0].split(" WHERE ", 1)[1])}
    assert read == set(GitOpsApp.objects.filter(cluster=catalog.prod_eu).values_list("pk", flat=True))
    sql = [q["sql"] for q in queries.captured_queries]
    assert not any(f'"{APP_TABLE}"."{column}"' in s for s in sql for column in ("running", "raw", "history"))


def test_a_line_moves_from_the_oldest_version_its_application_runs(catalog):
    """Two containers, two versions: the older one is what a PR moves away from, and an
    older version with nowhere to go keeps the app off the list (as `running` would say)."""
    from gitops.models import RunningVersion, Workload
    from portal.delivery.models import ServicePolicy

    releases(catalog.checkout, "1.4.0", "1.5.0", "1.5.1", "1.6.0", "1.6.1")
    ServicePolicy.objects.create(service=catalog.checkout, accept="patch")
    both_moving = seed_app(catalog.prod_eu, "checkout-a", service=catalog.checkout, version="1.6.0")
    older_stuck = seed_app(catalog.prod_eu, "checkout-b", service=catalog.checkout, version="1.6.0")
    for app, extra in ((both_moving, "1.5.0"), (older_stuck, "1.4.0")):
        workload = Workload.objects.get(app=app)
        RunningVersion.objects.create(cluster=app.cluster, workload=workload, app=app, service=catalog.checkout,
                                      container="sidecar", image=f"ghcr.io/acme/checkout:{extra}", version=extra)
    seed_app(catalog.prod_eu, "checkout-c", service=catalog.checkout, version="1.6.0")  # one container
    lines = BehindLines().lines
    # Patches only: 1.5.0 goes to 1.5.1 and 1.6.0 to 1.6.1; nothing newer of 1.4 was released.
    assert [(line.app, line.running, line.target) for line in lines] == [
        ("checkout-a", "1.5.0", "1.5.1"), ("checkout-c", "1.6.0", "1.6.1")]



def test_a_line_is_made_once_per_place_not_per_running_version_row_read(catalog, monkeypatch):
    """Every running-version row at a wanted version is read, but only each place's oldest is
    kept as a line: three containers at moving versions make one `_Row`, not three."""
    from gitops.models import RunningVersion, Workload
    from portal.delivery import upgrades

    releases(catalog.checkout, "1.4.0", "1.5.0", "1.6.0", "1.7.0")
    app = seed_app(catalog.prod_eu, "checkout-a", service=catalog.checkout, version="1.6.0")
    workload = Workload.objects.get(app=app)
    for container, version in (("sidecar", "1.4.0"), ("init", "1.5.0")):
        RunningVersion.objects.create(cluster=app.cluster, workload=workload, app=app, service=catalog.checkout,
                                      container=container, image=f"ghcr.io/acme/checkout:{version}",
                                      version=version)
    seed_app(catalog.prod_eu, "checkout-b", service=catalog.checkout, version="1.5.0")
    made = []
    row = upgrades._Row
    monkeypatch.setattr(upgrades, "_Row", lambda *columns: made.append(columns) or row(*columns))

    lines = BehindLines().lines

    assert [(line.app, line.running, line.target) for line in lines] == [
        ("checkout-a", "1.4.0", "1.7.0"), ("checkout-b", "1.5.0", "1.7.0")]
    assert len(made) == 2  # four rows read, one line each place
