"""Polling a cluster end to end: the official kubernetes client over HTTP against the
in-repo API emulator, collectors, and the store. Faults keep the last good data."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from gitops import kinds
from gitops.models import AppProject, ClusterPoll, GitOpsApp, StateChange, VersionChange, Workload
from gitops.polling import poll
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster
from tests.fakes.kube_emulator import Fault

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"


def demo_objects(cluster: str) -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / cluster).rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


@pytest.fixture
def fleet(db):
    load_fleet(ROOT / "examples" / "fleet.yaml")


@pytest.fixture
def api_cluster(fleet, kube_emulator, monkeypatch):
    """prod-eu-1 of the demo fleet, served by the emulator and reached with URL + token."""
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    for spec in kinds.KINDS:  # every CRD installed, most of them empty
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.select_related("environment").get(name="prod-eu-1")


def test_poll_stores_argo_apps_across_namespaces_with_workloads_services_and_windows(api_cluster):
    report = poll(api_cluster)
    assert report.ok, report.error
    apps = {a.name: a for a in GitOpsApp.objects.filter(cluster=api_cluster)}
    assert {"payments-prod", "checkout-prod", "search-prod"} <= set(apps)
    assert {a.namespace for a in apps.values()} >= {"argocd", "team-checkout"}  # apps in any namespace

    payments = apps["payments-prod"]
    assert payments.sync_status == "OutOfSync"
    assert payments.sync_blocked and payments.sync_window["kind"] == "deny"
    assert payments.running == {"payments": ["2.4.0"]}
    assert list(payments.services.values_list("name", flat=True)) == ["payments"]
    assert Workload.objects.filter(app=payments, kind="Deployment").count() == 1

    assert apps["search-prod"].manual_sync
    multi = [a for a in apps.values() if len(a.sources) > 1]
    assert multi, "the demo's Helm + values-ref apps are multi-source"
    assert AppProject.objects.filter(cluster=api_cluster, name="payments").exists()


def test_lists_are_read_in_chunks_across_pages(api_cluster, kube_emulator, settings, monkeypatch):
    from gitops import polling

    original = polling.source_for

    def small_pages(cluster):
        source = original(cluster)
        source.page_size = 3
        return source

    monkeypatch.setattr(polling, "source_for", small_pages)
    assert poll(api_cluster).ok
    pages = [r for r in kube_emulator.requests_for(kinds.kinds_for(kinds.ARGOCD)[0])]
    total = GitOpsApp.objects.filter(cluster=api_cluster, tool="argo").count()
    assert total >= 9 and len(pages) >= 3
    assert len(pages) == -(-total // 3)


def test_unreachable_cluster_keeps_its_last_good_data_and_goes_stale(api_cluster, kube_emulator):
    assert poll(api_cluster).ok
    before = GitOpsApp.objects.filter(cluster=api_cluster).count()
    kube_emulator.stop()
    later = timezone.now() + timedelta(minutes=5)
    report = poll(api_cluster, at=later)
    assert not report.ok and report.error.startswith("unreachable")
    api_cluster.refresh_from_db()
    assert api_cluster.poll.stale_since == later
    assert "unreachable" in api_cluster.poll.last_error
    assert GitOpsApp.objects.filter(cluster=api_cluster).count() == before
    assert not StateChange.objects.filter(field="presence", new="gone").exists()


def test_wrong_token_is_unauthorized_and_never_echoes_the_token(api_cluster, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "wrong-token-value-123")
    report = poll(api_cluster)
    assert not report.ok and report.error.startswith("unauthorized")
    api_cluster.refresh_from_db()
    assert "wrong-token-value-123" not in api_cluster.poll.last_error


def test_timeout_is_a_clear_error(api_cluster, kube_emulator, settings):
    settings.PORTAL_KUBE_TIMEOUT = 0.5
    release = threading.Event()
    kube_emulator.fail(kinds.kinds_for(kinds.ARGOCD)[0], Fault.delay(release))
    try:
        report = poll(api_cluster)
    finally:
        release.set()
    assert not report.ok and report.error.startswith("timeout")


def test_forbidden_appprojects_disable_only_sync_windows(api_cluster, kube_emulator):
    kube_emulator.fail(kinds.kinds_for(kinds.ARGOCD_PROJECTS)[0], Fault.forbidden())
    report = poll(api_cluster)
    assert report.ok
    assert report.unavailable[kinds.ARGOCD_PROJECTS] == (
        "sync windows unavailable: no permission to list appprojects.argoproj.io"
    )
    assert GitOpsApp.objects.filter(cluster=api_cluster).count() > 0
    api_cluster.refresh_from_db()
    assert kinds.ARGOCD_PROJECTS in api_cluster.poll.unavailable


def test_flux_not_installed_is_not_an_error_for_an_argo_cluster(api_cluster, kube_emulator):
    fresh = kube_emulator.__class__(token=kube_emulator.token).start()
    try:
        fresh.add_all(demo_objects("prod-eu-1"))  # only the kinds these objects need exist
        Cluster.objects.filter(pk=api_cluster.pk).update(api_url=fresh.url)
        api_cluster.refresh_from_db()
        report = poll(api_cluster)
    finally:
        fresh.stop()
    assert report.ok
    assert "not installed" in report.unavailable[kinds.FLUX_KUSTOMIZE]
    assert GitOpsApp.objects.filter(cluster=api_cluster, tool="argo").count() > 0


@pytest.mark.parametrize("fault", [Fault.server_error(), Fault.garbage()], ids=["500", "malformed"])
def test_a_failed_list_changes_nothing_of_its_kind(api_cluster, kube_emulator, fault):
    assert poll(api_cluster).ok
    before = {a.name: a.updated_at for a in GitOpsApp.objects.filter(cluster=api_cluster)}
    kube_emulator.fail(kinds.kinds_for(kinds.ARGOCD)[0], fault)
    report = poll(api_cluster, at=timezone.now() + timedelta(minutes=1))
    assert report.ok  # the rest of the cluster was read
    assert "not updated" in report.unavailable[kinds.ARGOCD]
    after = {a.name: a.updated_at for a in GitOpsApp.objects.filter(cluster=api_cluster)}
    assert after == before


def test_changes_removals_and_version_changes_are_recorded(api_cluster, kube_emulator):
    start = timezone.now()
    assert poll(api_cluster, at=start).ok
    objects = demo_objects("prod-eu-1")
    app = next(o for o in objects if o["kind"] == "Application" and o["metadata"]["name"] == "checkout-prod")
    app["status"]["health"] = {"status": "Degraded", "message": "1 of 3 replicas unavailable"}
    deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "checkout")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/acme-shop/checkout:3.4.0"
    kube_emulator.add(app)
    kube_emulator.add(deployment)
    gone = next(o for o in objects if o["kind"] == "Application" and o["metadata"]["name"] == "auth-prod")
    kube_emulator.remove(gone)

    later = start + timedelta(minutes=3)
    assert poll(api_cluster, at=later).ok
    checkout = GitOpsApp.objects.get(cluster=api_cluster, name="checkout-prod")
    assert checkout.health_status == "Degraded" and checkout.health_since == later
    change = StateChange.objects.get(app=checkout, field="health")
    assert (change.old, change.new, change.at) == ("Healthy", "Degraded", later)
    assert not GitOpsApp.objects.filter(cluster=api_cluster, name="auth-prod").exists()
    assert StateChange.objects.filter(object_key__endswith="/auth-prod", field="presence", new="gone").exists()
    version = VersionChange.objects.get(cluster=api_cluster, service__name="checkout")
    assert (version.from_version, version.to_version) == ("3.3.1", "3.4.0")


def test_a_poll_that_finds_nothing_new_rewrites_no_app(api_cluster, kube_emulator):
    start = timezone.now()
    first = poll(api_cluster, at=start)
    assert first.ok and first.stored.created > 0
    before = dict(GitOpsApp.objects.filter(cluster=api_cluster).values_list("name", "updated_at"))

    again = poll(api_cluster, at=start + timedelta(minutes=1))
    assert again.ok and again.unchanged  # every object as the first poll read it: nothing to store
    assert dict(GitOpsApp.objects.filter(cluster=api_cluster).values_list("name", "updated_at")) == before

    # Any write to the object (a new resourceVersion) with a new state is picked up.
    app = next(o for o in demo_objects("prod-eu-1")
               if o["kind"] == "Application" and o["metadata"]["name"] == "checkout-prod")
    app["status"]["sync"]["status"] = "OutOfSync"
    kube_emulator.add(app)
    third = poll(api_cluster, at=start + timedelta(minutes=2))
    assert third.ok and third.stored.updated == 1
    checkout = GitOpsApp.objects.get(cluster=api_cluster, name="checkout-prod")
    assert checkout.sync_status == "OutOfSync" and checkout.raw["status"]["sync"]["status"] == "OutOfSync"
    assert checkout.updated_at == start + timedelta(minutes=2)


def test_a_second_poll_of_the_same_cluster_waits_its_turn(api_cluster):
    ClusterPoll.objects.create(
        cluster=api_cluster, poll_lock_until=timezone.now() + timedelta(minutes=1), poll_lock_token="someone-else"
    )
    report = poll(api_cluster)
    assert report.skipped and not report.ok
    assert not GitOpsApp.objects.exists()


def test_the_demo_fleet_is_collected_with_correct_states(fleet):
    # Every cluster the portal reads (prod-sa-1 is not: the hub's Argo CD reports its apps).
    for cluster in Cluster.objects.exclude(connection=Cluster.Connection.NONE).select_related("environment"):
        report = poll(cluster)
        assert report.ok, (cluster.name, report.error)
        assert not report.warnings, (cluster.name, report.warnings)
    by = {(a.cluster.name, a.name): a for a in GitOpsApp.objects.select_related("cluster")}
    assert by[("staging-eu-1", "payments-staging")].health_status == "Degraded"
    assert by[("prod-ap-1", "recommendations-prod")].health_status == "Missing"
    orders = by[("prod-us-1", "orders")]
    assert orders.health_status == "Degraded" and orders.ready_reason == "HealthCheckFailed"
    assert by[("prod-us-1", "notifications")].suspended
    assert by[("prod-ap-1", "inventory-prod")].manual_sync
    assert by[("prod-eu-1", "payments-prod")].sync_blocked
    platform = [a for a in by.values() if a.project == "platform"]
    assert platform and all(a.sync_blocked != (a.sync_blocked_until is None) or a.sync_window.get("error")
                            for a in platform if a.sync_blocked)
