"""A poll stores the tool's own "since when" for objects whose history and transitions predate the
portal's first poll (the demo's prod-eu-1 Argo CD apps and prod-us-1 Flux objects, served by the
API emulator), and the portal's first sight, flagged as not exact, only where the tool has none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from gitops import kinds
from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def demo_objects(cluster: str) -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / cluster).rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def served(name: str, kube_emulator, monkeypatch) -> Cluster:
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects(name))
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name=name).update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.select_related("environment").get(name=name)


def test_argocd_apps_keep_the_tools_times_across_polls(kube_emulator, monkeypatch):
    cluster = served("prod-eu-1", kube_emulator, monkeypatch)
    start = timezone.now()
    assert poll(cluster, at=start).ok
    apps = {a.name: a for a in GitOpsApp.objects.filter(cluster=cluster)}

    catalog = apps["catalog-prod"]
    assert catalog.sync_status == "Synced" and catalog.health_status == "Healthy"
    # Its last sync (history and operationState) and health.lastTransitionTime, days before the poll.
    assert (catalog.sync_since, catalog.sync_since_exact) == (utc("2026-11-20T13:04:45Z"), True)
    assert (catalog.health_since, catalog.health_since_exact) == (utc("2026-11-20T13:05:25Z"), True)

    payments = apps["payments-prod"]
    assert payments.sync_status == "OutOfSync"
    # Argo CD records no time for OutOfSync: the portal's first sight, "at least since".
    assert (payments.sync_since, payments.sync_since_exact) == (start, False)
    assert (payments.health_since, payments.health_since_exact) == (utc("2026-11-16T11:18:36Z"), True)

    # The next polls keep both: the tool's time, and the first sight while the status holds.
    later = start + timedelta(minutes=5)
    assert poll(cluster, at=later).ok
    payments.refresh_from_db()
    catalog.refresh_from_db()
    assert (payments.sync_since, payments.sync_since_exact) == (start, False)
    assert catalog.sync_since == utc("2026-11-20T13:04:45Z")

    # A change the portal watches is exact; a sync that Argo CD dates before the OutOfSync the
    # portal saw is an older spell, so the poll dates the change.
    objects = demo_objects("prod-eu-1")
    obj = next(o for o in objects if o.get("kind") == "Application" and o["metadata"]["name"] == "payments-prod")
    obj["status"]["sync"]["status"] = "Synced"
    kube_emulator.add(obj)
    latest = later + timedelta(minutes=1)
    assert poll(cluster, at=latest).ok
    payments.refresh_from_db()
    assert (payments.sync_status, payments.sync_since, payments.sync_since_exact) == ("Synced", latest, True)


def test_flux_objects_keep_the_tools_times(kube_emulator, monkeypatch):
    cluster = served("prod-us-1", kube_emulator, monkeypatch)
    start = timezone.now()
    assert poll(cluster, at=start).ok
    checkout = GitOpsApp.objects.get(read_from=cluster, kind="Kustomization", name="checkout")
    # status.history: the applied revision was first reconciled on 11-25; Ready turned True on 11-29.
    assert (checkout.sync_since, checkout.sync_since_exact) == (utc("2026-11-25T11:15:09Z"), True)
    assert (checkout.health_since, checkout.health_since_exact) == (utc("2026-11-29T14:49:53Z"), True)
