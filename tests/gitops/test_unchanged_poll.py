"""A poll that reads exactly what the last full poll read runs no collector and writes nothing but
the cluster's "read at" (gitops.derive.unchanged), through the real path: kubernetes client → emulator."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops import kinds, polling
from gitops.derive.unchanged import FULL_POLL_EVERY, full_poll_trusted_for, listing_digest
from gitops.models import ClusterObjectVersions, GitOpsApp
from gitops.signals import cluster_stored
from gitops.store.read import instance_of
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster, Service

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"
WRITES = ("INSERT", "UPDATE", "DELETE")


def demo_objects() -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / "prod-eu-1").rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


@pytest.fixture
def cluster(db, kube_emulator, monkeypatch):
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects())
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.get(name="prod-eu-1")


@pytest.fixture
def collector_runs(monkeypatch):
    runs = []
    real = polling.collect

    def counting(objects):
        runs.append(sum(len(items) for items in objects.values()))
        return real(objects)

    monkeypatch.setattr(polling, "collect", counting)
    return runs


def writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(WRITES)]


def test_an_unchanged_cluster_is_read_and_nothing_else(cluster, collector_runs):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    assert len(collector_runs) == 1

    with CaptureQueriesContext(connection) as queries:
        report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok and report.unchanged
    assert len(collector_runs) == 1, "no collector ran"
    written = writes(queries.captured_queries)
    # Only the poll's own bookkeeping (its lock, its outcome): no row of the store.
    assert written and all('"gitops_clusterpoll"' in sql for sql in written), written
    assert not any("gitops_" in sql.replace('"gitops_clusterpoll"', "") for sql in written)
    assert Cluster.objects.get(pk=cluster.pk).poll.last_ok_at == at + timedelta(minutes=1)


def test_one_changed_app_is_collected_alone(cluster, collector_runs, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    app = copy.deepcopy(next(o for o in demo_objects() if o.get("kind") == "Application"))
    app["status"]["health"] = {"status": "Degraded", "message": "Back-off restarting failed container"}
    kube_emulator.add(app)  # a new resourceVersion, as the API server writes one

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok and not report.unchanged
    assert report.collected == 1, "only the changed app (tests/gitops/test_changed_apps_poll.py)"
    assert len(collector_runs) == 1, "no full collect"
    stored = GitOpsApp.objects.get(cluster=cluster, name=app["metadata"]["name"])
    assert stored.health_status == "Degraded"


def test_a_new_service_is_seen_by_the_next_poll(cluster, collector_runs):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    Service.objects.create(name="istio-proxy", image_repository="docker.io/istio/proxyv2")

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert not report.unchanged
    assert len(collector_runs) == 2


def test_a_service_added_while_a_poll_writes_is_seen_by_the_next_poll(cluster, collector_runs):
    """The poll collected with the catalog it planned with: a change made meanwhile (here, while
    it writes) must not be recorded as if this poll had applied it."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok

    def meanwhile(**_):
        Service.objects.create(name="istio-proxy", image_repository="docker.io/istio/proxyv2")

    cluster_stored.connect(meanwhile, dispatch_uid="test-meanwhile")
    try:
        ClusterObjectVersions.objects.filter(cluster=cluster).update(full_poll_trusted_until=at)  # a full poll
        assert not polling.poll(cluster, at=at + timedelta(minutes=1)).unchanged
    finally:
        cluster_stored.disconnect(dispatch_uid="test-meanwhile")
    assert Service.objects.filter(name="istio-proxy").exists()

    assert not polling.poll(cluster, at=at + timedelta(minutes=2)).unchanged
    assert len(collector_runs) == 3
    assert polling.poll(cluster, at=at + timedelta(minutes=3)).unchanged  # and then nothing is new


def test_a_service_whose_image_changed_is_seen_by_the_next_poll(cluster, collector_runs):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    service = Service.objects.order_by("pk").first()
    assert service is not None
    service.image_repository = "registry.example.com/renamed"
    service.save()

    assert not polling.poll(cluster, at=at + timedelta(minutes=1)).unchanged
    assert len(collector_runs) == 2


def test_a_deleted_cluster_is_seen_by_the_next_poll_of_another(cluster, collector_runs):
    """A destination that no longer is one changes what the apps deploying to it mean."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    Cluster.objects.exclude(pk=cluster.pk).order_by("pk").first().delete()

    assert not polling.poll(cluster, at=at + timedelta(minutes=1)).unchanged
    assert len(collector_runs) == 2


def test_an_unchanged_poll_reads_no_other_clusters_row_and_no_service(cluster):
    """What a poll reads of the catalog must not grow with the fleet: 500 clusters polled every
    minute, each reading every cluster and service, read 350,000 rows a minute."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    with CaptureQueriesContext(connection) as queries:
        assert polling.poll(cluster, at=at + timedelta(minutes=1)).unchanged
    read = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]
    assert not [sql for sql in read if 'FROM "catalog_service"' in sql]
    of_clusters = [sql for sql in read if 'FROM "catalog_cluster"' in sql]
    assert of_clusters and all('"catalog_cluster"."id" = ' in sql for sql in of_clusters), of_clusters


def test_another_clusters_argo_cd_being_recorded_is_no_change_here(cluster, collector_runs):
    """Each Argo CD cluster's first poll records its instance: while a fleet is first swept, that
    must not make every other cluster's next poll a full one."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    other = Cluster.objects.exclude(pk=cluster.pk).first()
    assert other is not None
    instance_of(other)

    assert polling.poll(cluster, at=at + timedelta(minutes=1)).unchanged
    assert len(collector_runs) == 1


def test_a_full_poll_runs_at_least_once_a_period(cluster, collector_runs):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    first = ClusterObjectVersions.objects.get(cluster=cluster).full_poll_trusted_until - at
    assert first == full_poll_trusted_for(cluster.pk, at, first=True)
    assert FULL_POLL_EVERY / 4 <= first <= FULL_POLL_EVERY
    assert polling.poll(cluster, at=at + first - timedelta(seconds=1)).unchanged
    assert not polling.poll(cluster, at=at + first).unchanged
    assert len(collector_runs) == 2
    # The next full poll is no first one: trusted for half of the period at least.
    again = ClusterObjectVersions.objects.get(cluster=cluster).full_poll_trusted_until - (at + first)
    assert again == full_poll_trusted_for(cluster.pk, at + first)
    assert FULL_POLL_EVERY / 2 <= again <= FULL_POLL_EVERY


def test_a_fleet_first_polled_in_one_minute_is_not_polled_in_full_in_one_minute_again():
    """1,000 clusters whose full polls fell in the same second fall due for the next one spread
    over the last three quarters of the period, and again over more after that one; each asking
    poll gets one answer."""
    at = timezone.now()
    minutes = int(FULL_POLL_EVERY / timedelta(minutes=1))
    due = [at + full_poll_trusted_for(pk, at, first=True) for pk in range(1, 1001)]
    per_minute = Counter(int((d - at) / timedelta(minutes=1)) for d in due)
    assert set(per_minute) == set(range(minutes // 4, minutes))
    spread = 1000 / (minutes * 3 / 4)  # a minute's share; one period would put all 1,000 in one minute
    assert max(per_minute.values()) < 3 * spread
    again = [d + full_poll_trusted_for(pk, d) for pk, d in zip(range(1, 1001), due, strict=True)]
    assert max(again) - min(again) > FULL_POLL_EVERY
    later = Counter(int((d - at) / timedelta(minutes=1)) for d in again)
    assert max(later.values()) < 3 * spread
    assert full_poll_trusted_for(7, at) == full_poll_trusted_for(7, at)


def test_a_kind_that_could_not_be_listed_is_a_change(cluster, collector_runs, kube_emulator):
    from tests.fakes.kube_emulator import Fault

    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    kube_emulator.fail(kinds.kinds_for(kinds.ARGOCD_PROJECTS)[0], Fault.forbidden())

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert not report.unchanged
    assert "argocd-projects" in Cluster.objects.get(pk=cluster.pk).poll.unavailable


def test_objects_without_a_resource_version_have_no_digest():
    listed = {"Application": [{"metadata": {"name": "a", "uid": "u1"}}]}
    assert listing_digest(listed, ["Application"], {}, "catalog") is None
    with_version = {"Application": [{"metadata": {"name": "a", "uid": "u1", "resourceVersion": "7"}}]}
    digest = listing_digest(with_version, ["Application"], {}, "catalog")
    assert digest and digest == listing_digest(with_version, ["Application"], {}, "catalog")
    assert digest != listing_digest(with_version, ["Application"], {}, "another catalog")
    assert digest != listing_digest(with_version, ["Application", "Deployment"], {}, "catalog")
