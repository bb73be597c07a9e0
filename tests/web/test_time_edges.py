"""Times at the edges of what a cluster writes: Go's zero time (`0001-01-01T00:00:00Z`, what an
unset `metav1.Time` marshals to) and the far future (`9999-12-31T23:59:59Z`), read through the
Argo CD collector, must leave every page answering for viewers in any zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.urls import reverse

from gitops.collectors.argocd import application_row
from portal.kernel.catalog.models import Service
from portal.web.timezones import COOKIE
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

ZONES = ["UTC", "America/New_York", "Asia/Tokyo"]


def _argo_application(name: str, health: str, transition: str, started: str, finished: str) -> dict[str, Any]:
    """An Application as Argo CD writes it, with the given times in its status."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "uid": f"uid-{name}", "generation": 3},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://github.com/acme/gitops.git", "path": f"apps/{name}",
                       "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
        },
        "status": {
            "sync": {"status": "Synced", "revision": "4f1d2c3b5a6978877665544332211aabbccddeef"},
            "health": {"status": health, "lastTransitionTime": transition},
            "reconciledAt": transition,
            "operationState": {
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": started,
                "finishedAt": finished,
                "operation": {"sync": {"revision": "4f1d2c3b5a6978877665544332211aabbccddeef"},
                              "initiatedBy": {"automated": True}},
                "syncResult": {"revision": "4f1d2c3b5a6978877665544332211aabbccddeef"},
            },
        },
    }


def _seed_from_argo(cluster: Any, service: Service, obj: dict[str, Any]) -> None:
    row = application_row(obj)
    app = seed_app(cluster, row.name, service=service, health=row.health_status)
    # The collector's reading of the times, stored as the store would store them.
    app.health_since = row.health_since
    app.sync_since = row.health_since
    app.operation_phase = row.operation_phase
    app.operation_started_at = row.operation_started_at
    app.operation_finished_at = row.operation_finished_at
    app.save()


@pytest.fixture
def edge_fleet(catalog):
    zero, far = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"
    _seed_from_argo(catalog.prod_eu, catalog.payments,
                    _argo_application("payments-prod", "Degraded", zero, zero, far))
    _seed_from_argo(catalog.prod_us, catalog.payments,
                    _argo_application("payments-us", "Missing", zero, far, zero))
    # The edges that still get through: the first second of 1970 and the last of 8999.
    _seed_from_argo(catalog.staging_cluster, catalog.payments,
                    _argo_application("payments-staging", "Degraded", "1970-01-01T00:00:00Z",
                                      "1970-01-01T00:00:00Z", "8999-12-31T23:59:59Z"))
    _seed_from_argo(catalog.prod_eu, catalog.checkout,
                    _argo_application("checkout-prod", "Degraded", "8999-12-31T23:59:59Z",
                                      "8999-12-31T23:59:59Z", "1970-01-01T00:00:00Z"))
    return catalog


@pytest.mark.parametrize("zone", ZONES)
def test_every_page_answers_with_edge_times_in_every_zone(client, users, edge_fleet, zone) -> None:
    client.force_login(users["viewer"])
    client.cookies[COOKIE] = zone
    for url in (reverse("overview"), reverse("gitops"), reverse("matrix"),
                reverse("service", args=["payments"]), reverse("service", args=["checkout"]),
                reverse("api-gitops")):
        response = client.get(url)
        assert response.status_code == 200, (zone, url)
    html = client.get(reverse("gitops")).content.decode()
    assert "payments-prod" in html and "payments-staging" in html


def test_go_zero_time_and_the_far_future_are_stored_as_unknown(edge_fleet) -> None:
    from gitops.models import GitOpsApp

    app = GitOpsApp.objects.get(name="payments-prod")
    assert app.health_since is None and app.operation_started_at is None and app.operation_finished_at is None
    staging = GitOpsApp.objects.get(name="payments-staging")
    assert staging.health_since == datetime(1970, 1, 1, tzinfo=UTC)
    assert staging.operation_finished_at == datetime(8999, 12, 31, 23, 59, 59, tzinfo=UTC)


@pytest.mark.parametrize("zone", ZONES)
def test_pages_answer_for_go_zero_times_stored_before_the_clamp(client, users, catalog, zone) -> None:
    # Rows polled before parse_time clamped still hold Go's zero time and the far future.
    zero = datetime(1, 1, 1, tzinfo=UTC)
    far = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    for cluster, name, health in ((catalog.prod_eu, "payments-prod", "Degraded"),
                                  (catalog.prod_us, "payments-us", "Missing")):
        app = seed_app(cluster, name, service=catalog.payments, health=health, sync="OutOfSync")
        app.health_since = app.sync_since = zero
        app.operation_phase = "Succeeded"
        app.operation_started_at, app.operation_finished_at = zero, far
        app.reconciled_at = far
        # A deny window whose end was stored as the far future: the badge says until when.
        app.sync_blocked, app.sync_blocked_until = True, far
        app.sync_window = {"kind": "deny", "description": "change freeze", "schedule": "0 0 * * *"}
        app.save()
    client.force_login(users["viewer"])
    client.cookies[COOKIE] = zone
    for url in (reverse("overview"), reverse("gitops"), reverse("matrix"),
                reverse("service", args=["payments"]), reverse("api-gitops")):
        assert client.get(url).status_code == 200, (zone, url)
