"""Every fleet page reads the store in a fixed number of queries (issue 40): the same count for a
fleet of two clusters and ten applications as for ten clusters, twice the services and more than
a thousand applications with releases, Git pins, poll records and problems. A query per
cluster, service or application would pass on a laptop and take seconds at 100,000 apps."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gitops.models import ClusterPoll, GitOpsApp
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.releases.models import Release
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app, seed_fleet, seed_pin

pytestmark = pytest.mark.django_db

PAGES = {
    "overview": lambda: reverse("overview"),
    "matrix": lambda: reverse("matrix"),
    "delivery": lambda: reverse("delivery"),
    "clusters": lambda: reverse("clusters"),
    "updates": lambda: reverse("updates"),
    "service": lambda: reverse("service", kwargs={"name": "checkout"}),
    "gitops": lambda: reverse("gitops"),
    "gitops-filtered": lambda: reverse("gitops") + "?environment=prod&attention=1&q=check",
    "gitops-searched": lambda: reverse("gitops") + "?tool=argo&status=healthy&q=svc",
}


def _services(start: int, count: int) -> list[Service]:
    return [Service.objects.create(name=f"svc{i}", image_repository=f"ghcr.io/acme/svc{i}", team="shop")
            for i in range(start, start + count)]


def _released(services: list[Service]) -> None:
    """Each service released past what the seeded fleet runs (1.0.0 to 1.4.0): every line has an offer."""
    now = timezone.now()
    Release.objects.bulk_create([Release(service=s, tag=tag, version=tag, seen_at=now)
                                 for s in services for tag in ("1.4.0", "1.5.0")])


def _polled(clusters: list[Cluster]) -> None:
    now = timezone.now()
    for index, cluster in enumerate(clusters):
        ClusterPoll.objects.update_or_create(cluster=cluster, defaults={
            "last_poll_at": now, "last_ok_at": now - timedelta(minutes=index),
            "stale_since": now - timedelta(minutes=5) if index % 3 == 0 else None,
            "last_error": "connection refused" if index % 3 == 0 else "",
            "poll_warning_count": index % 2, "poll_warnings": ["an object skipped"] if index % 2 else []})


def _queries(client, url: str) -> int:
    from django.core.cache import caches

    caches["pages"].clear()  # the page drawn, not a body kept from the other fleet's request
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.fixture(scope="module")
def counted(django_db_setup, django_db_blocker) -> Iterator[dict[str, tuple[int, int]]]:
    """Each page's query count on the small fleet, then on the large one: page -> (small, large).
    Both fleets are built once for every page (they took a quarter of a minute each)."""
    from django.test import Client

    with django_db_blocker.unblock():
        catalog = make_catalog()
        member = get_user_model().objects.create_user("counter", password="pw")
        grant(member, Role.MEMBER)  # a member's pages draw everything a viewer's do, and the offers besides
        client = Client()
        client.force_login(member)
        urls = {page: url() for page, url in PAGES.items()}
        services = [catalog.checkout, catalog.payments, *_services(0, 8)]
        seed_fleet([catalog.prod_eu, catalog.prod_us], services, apps_per_cluster=5)
        # Five apps a cluster make checkout's Flux only: one Argo CD app gives the small fleet
        # every kind of row the large one has (an Argo CD app's project and its sync windows).
        seed_app(catalog.prod_eu, "checkout-argo", service=catalog.checkout)
        _released(services[:2])
        _polled([catalog.prod_eu])
        small = {page: _queries(client, url) for page, url in urls.items()}

        more = [*services, *_services(8, 10)]
        manifests = Cluster.Connection.MANIFESTS
        clusters = [Cluster.objects.create(name=f"{env.name}-x{i}", environment=env, connection=manifests)
                    for env in (catalog.dev, catalog.staging, catalog.prod) for i in range(2)]
        seed_fleet([catalog.staging_cluster, catalog.dev_cluster, *clusters], more, apps_per_cluster=130)
        _released(more[2:])
        _polled(list(Cluster.objects.all()))
        for app in GitOpsApp.objects.filter(cluster__in=clusters).order_by("id")[:40]:
            seed_pin(app, Service.objects.get(name=next(iter(app.running))), "1.5.0")
        assert GitOpsApp.objects.count() > 1000
        large = {page: _queries(client, url) for page, url in urls.items()}
    yield {page: (small[page], large[page]) for page in PAGES}
    with django_db_blocker.unblock():
        get_user_model().objects.filter(username="counter").delete()
        Cluster.objects.all().delete()
        Service.objects.all().delete()
        Environment.objects.all().delete()


@pytest.mark.parametrize("page", list(PAGES))
def test_a_page_reads_the_same_number_of_queries_whatever_the_fleet(counted, page):
    small, large = counted[page]
    assert small == large, f"{page}: {small} queries with 10 apps, {large} with more than 1,000"
