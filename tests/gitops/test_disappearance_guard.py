"""The mass-disappearance guard, through the real poll path (kubernetes client → API emulator).

An Applications list that comes back empty while the apps' workloads still run is held for one
poll (no app deleted, no "gone" state change, the cluster says why); the next poll either brings
the apps back or confirms the removal, which is then written. A teardown that took the workloads
too is written at once.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from gitops import kinds
from gitops.models import GitOpsApp, StateChange
from gitops.polling import poll
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "CronJob"}


def demo_objects(cluster: str) -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / cluster).rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


@pytest.fixture
def cluster(db, kube_emulator, monkeypatch):
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.select_related("environment").get(name="prod-eu-1")


def applications() -> list[dict]:
    return [o for o in demo_objects("prod-eu-1") if o.get("kind") == "Application"]


def argo_apps(cluster: Cluster) -> set[str]:
    return set(GitOpsApp.objects.filter(cluster=cluster, kind="Application").values_list("name", flat=True))


def gone_changes() -> int:
    return StateChange.objects.filter(field="presence", new="gone").count()


def test_an_empty_applications_list_is_held_until_the_next_poll_confirms_it(cluster, kube_emulator):
    at = timezone.now()
    assert poll(cluster, at=at).ok
    before = argo_apps(cluster)
    assert len(before) >= 3, "the demo cluster has enough apps for the guard to apply"
    since = {a.name: (a.sync_since, a.health_since) for a in GitOpsApp.objects.filter(cluster=cluster)}

    for app in applications():
        kube_emulator.remove(app)  # the workloads stay: they still run
    report = poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok
    assert argo_apps(cluster) == before
    assert gone_changes() == 0
    message = Cluster.objects.get(pk=cluster.pk).poll.unavailable["held:Application"]
    assert message == "Applications list came back empty; keeping the last good data until the next poll confirms it"
    assert {a.name: (a.sync_since, a.health_since) for a in GitOpsApp.objects.filter(cluster=cluster)} == since

    # The page people read says so, under the cluster.
    viewer = get_user_model().objects.create_user("viewer")
    grant(viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    page = client.get("/clusters").content.decode()
    assert "Applications list came back empty; keeping the last good data" in page

    # Still empty a minute later: the removal is real and is written, once per app.
    assert poll(cluster, at=at + timedelta(minutes=2)).ok
    assert argo_apps(cluster) == set()
    assert gone_changes() == len(before)
    assert "held:Application" not in Cluster.objects.get(pk=cluster.pk).poll.unavailable


def test_apps_that_come_back_lose_nothing(cluster, kube_emulator):
    at = timezone.now()
    assert poll(cluster, at=at).ok
    before = {a.name: (a.first_seen, a.sync_since, a.health_since) for a in GitOpsApp.objects.filter(cluster=cluster)}
    arrivals = StateChange.objects.filter(field="presence", new="present").count()

    removed = applications()
    for app in removed:
        kube_emulator.remove(app)
    assert poll(cluster, at=at + timedelta(minutes=1)).ok
    kube_emulator.add_all(removed)
    assert poll(cluster, at=at + timedelta(minutes=2)).ok

    after = {a.name: (a.first_seen, a.sync_since, a.health_since) for a in GitOpsApp.objects.filter(cluster=cluster)}
    assert after == before
    assert gone_changes() == 0
    assert StateChange.objects.filter(field="presence", new="present").count() == arrivals  # none came "back"
    assert not any(key.startswith("held:") for key in Cluster.objects.get(pk=cluster.pk).poll.unavailable)


def test_a_teardown_that_took_the_workloads_too_is_written_at_once(cluster, kube_emulator):
    at = timezone.now()
    assert poll(cluster, at=at).ok
    before = argo_apps(cluster)
    for obj in demo_objects("prod-eu-1"):
        if obj.get("kind") == "Application" or obj.get("kind") in WORKLOAD_KINDS:
            kube_emulator.remove(obj)

    assert poll(cluster, at=at + timedelta(minutes=1)).ok
    # Only the apps whose workloads were recorded here count as evidence; every one of them
    # had its workloads in this cluster, so nothing is held.
    assert argo_apps(cluster) == set()
    assert gone_changes() == len(before)


def test_ordinary_churn_is_never_held(cluster, kube_emulator):
    at = timezone.now()
    assert poll(cluster, at=at).ok
    before = argo_apps(cluster)
    one = applications()[0]
    kube_emulator.remove(one)

    assert poll(cluster, at=at + timedelta(minutes=1)).ok
    assert argo_apps(cluster) == before - {one["metadata"]["name"]}
    assert gone_changes() == 1


def test_a_list_ninety_percent_smaller_is_held_and_the_message_says_how_much():
    from gitops.derive.disappearance import holds
    from gitops.rows import FLUX, AppRow, Snapshot, app_key
    from gitops.store.read import ClusterState

    stored = {
        app_key(FLUX, "HelmRelease", "apps", f"r{i}"): GitOpsApp(id=i + 1, tool=FLUX, kind="HelmRelease",
                                                               namespace="apps", name=f"r{i}")
        for i in range(20)
    }
    state = ClusterState(cluster=Cluster(name="c"), listed_kinds={"HelmRelease"}, service_index={}, service_ids={},
                         apps=stored, projects=None)
    two_left = Snapshot(apps=[AppRow(tool=FLUX, kind="HelmRelease", namespace="apps", name=f"r{i}") for i in range(2)],
                        listed_kinds={"HelmRelease"})
    three_left = Snapshot(apps=[AppRow(tool=FLUX, kind="HelmRelease", namespace="apps", name=f"r{i}")
                                for i in range(3)], listed_kinds={"HelmRelease"})

    (hold,) = holds(state, two_left, held_before=set())
    assert hold.key == "held:HelmRelease"
    assert hold.message == ("Flux HelmReleases list came back with 2 of 20; keeping the last good data until "
                            "the next poll confirms it")
    assert holds(state, three_left, held_before=set()) == []  # 85 % smaller: a big change, not a vanishing
    assert holds(state, two_left, held_before={"HelmRelease"}) == []  # the second look confirms
