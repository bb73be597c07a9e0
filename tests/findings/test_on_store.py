"""Findings are judged as a poll's store announces its apps (`cluster_stored`), inside its
transaction: the stored apps' findings appear with them, only the apps read are judged again,
and a failure to judge never costs the poll its data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gitops.models import Finding, GitOpsApp
from gitops.polling import store_snapshot
from gitops.rows import ARGO, HEALTHY, SYNCED, AppRow, Snapshot
from portal.findings import derivation
from portal.kernel.catalog.models import Cluster, Environment

pytestmark = pytest.mark.django_db


def snapshot(*names: str, self_heal: bool = False) -> Snapshot:
    apps = [
        AppRow(tool=ARGO, kind="Application", namespace="argocd", name=name, project="shop", sync_status=SYNCED,
               health_status=HEALTHY,
               raw={"metadata": {"name": name, "namespace": "argocd"},
                    "spec": {"project": "shop", "syncPolicy": {"automated": {"selfHeal": self_heal}}}})
        for name in names
    ]
    return Snapshot(apps=apps, listed_kinds={"Application"})


@pytest.fixture
def cluster():
    prod = Environment.objects.create(name="prod", order=3, production=True)
    return Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.MANIFESTS)


def test_the_stored_apps_are_judged_with_the_poll(cluster):
    at = timezone.now()
    store_snapshot(cluster, snapshot("checkout", "cart"), at)
    found = set(Finding.objects.values_list("app__name", "rule", "at"))
    assert {("checkout", "self-heal-off", at), ("cart", "self-heal-off", at)} <= found
    # Judged as before: the rows and their time stay.
    store_snapshot(cluster, snapshot("checkout", "cart"), at + timedelta(minutes=1))
    assert set(Finding.objects.values_list("app__name", "rule", "at")) == found
    # Fixed in the cluster: gone with the poll that read it.
    store_snapshot(cluster, snapshot("checkout", "cart", self_heal=True), at + timedelta(minutes=2))
    assert not Finding.objects.filter(rule="self-heal-off").exists()


def test_a_failure_to_judge_never_costs_the_poll_its_data(cluster, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a defect in a rule")

    monkeypatch.setattr(derivation, "findings_for", broken)
    store_snapshot(cluster, snapshot("checkout"), timezone.now())
    assert GitOpsApp.objects.filter(read_from=cluster, name="checkout").exists()
    assert not Finding.objects.exclude(rule__in=["silent-sync-failure", "no-failure-notification"]).exists()
    assert "findings of prod-1 not derived" in caplog.text
