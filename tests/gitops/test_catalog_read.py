"""A poll reads the catalog's clusters only when an app deploys elsewhere than in-cluster
(gitops.store.read.Catalog): at 1,000 clusters reading every catalog row at every poll was the
largest read a standalone cluster's poll made, and it grew with the fleet."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops.collectors import collect
from gitops.derive.cluster_changes import derive
from gitops.models import GitOpsApp
from gitops.rows import Snapshot
from gitops.store.read import read_state
from gitops.store.write import write
from portal.kernel.catalog.models import Cluster, Environment
from tests.gitops.test_topology_poll import application

pytestmark = pytest.mark.django_db
ELSEWHERE = "https://prod-eu.k8s.example:6443"


@pytest.fixture
def fleet():
    env = Environment.objects.create(name="prod", order=1, production=True)
    home = Cluster.objects.create(name="home", environment=env, connection=Cluster.Connection.API,
                                  api_url="https://home.k8s.example:6443")
    Cluster.objects.bulk_create(Cluster(name=f"other-{n:02d}", environment=env, connection=Cluster.Connection.NONE,
                                        api_url=f"https://other-{n:02d}.k8s.example:6443") for n in range(30))
    target = Cluster.objects.create(name="prod-eu", environment=env, connection=Cluster.Connection.NONE,
                                    api_url=ELSEWHERE)
    return home, target


def snapshot_of(*apps: dict) -> Snapshot:
    return Snapshot(apps=collect({"Application": list(apps)}).apps, listed_kinds={"Application"})


def catalog_reads(queries: CaptureQueriesContext) -> list[str]:
    """The queries that read catalog clusters other than by primary key."""
    return [q["sql"] for q in queries.captured_queries
            if 'FROM "catalog_cluster"' in q["sql"] and 'ORDER BY "catalog_cluster"."id"' in q["sql"]]


def test_in_cluster_apps_are_placed_without_reading_the_catalog(fleet):
    home, _ = fleet
    snapshot = snapshot_of(application("web", {"server": "https://kubernetes.default.svc"}),
                           application("api", {"name": "in-cluster"}))
    with CaptureQueriesContext(connection) as queries:
        changes = derive(read_state(home, snapshot.listed_kinds), snapshot, timezone.now())
    assert catalog_reads(queries) == []
    assert {app.cluster_id for app in changes.apps.created} == {home.pk}


def test_an_app_deploying_elsewhere_reads_the_catalog_once_and_lands_there(fleet):
    home, target = fleet
    snapshot = snapshot_of(application("web", {"server": ELSEWHERE + "/"}),
                           application("api", {"server": ELSEWHERE}),
                           application("local", {"server": "https://kubernetes.default.svc"}))
    with CaptureQueriesContext(connection) as queries:
        changes = derive(read_state(home, snapshot.listed_kinds), snapshot, timezone.now())
    assert len(catalog_reads(queries)) == 1
    placed = {app.name: app.cluster_id for app in changes.apps.created}
    assert placed == {"web": target.pk, "api": target.pk, "local": home.pk}
    write(changes)
    assert set(GitOpsApp.objects.filter(cluster=target).values_list("name", flat=True)) == {"web", "api"}
