"""A rollback sticks: the rollback PR from 1.7.0 to 1.6.0, opened and merged on the GitHub fake,
holds 1.7.0 in prod (portal.delivery.holds): the next automatic-PR run opens nothing for it,
Updates shows it held with who/when/why and an undo (which brings the offer back), a newer
release is offered past it, other environments still get it, and a Renovate PR proposing it is
marked "proposes a version rolled back on <date>" on the delivery page and in the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion, VersionChange
from portal.delivery import holds
from portal.delivery.automatic import run as run_automatic
from portal.delivery.models import DeliveryEvent, PullRequest, ServicePolicy
from portal.delivery.outside_prs import scan
from portal.delivery.tracking import refresh_open
from portal.delivery.upgrades import BehindLines
from portal.delivery.version_policy import VersionPolicy, newest_acceptable
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"
RENOVATE = "Update ghcr.io/acme/checkout Docker tag to v1.7.0"


@pytest.fixture
def github(monkeypatch):
    files = {f"{PROD}/kustomization.yaml": "images:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.7.0\n"}
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def rolled_back(eager_celery, catalog, github, client, users):
    """checkout 1.7.0 broke prod; a member opened the rollback PR, the forge merged it, and the
    app runs 1.6.0 again (as the poll after Argo CD's sync writes it)."""
    now = timezone.now()
    for tag in ("1.6.0", "1.7.0"):
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
    ServicePolicy.objects.create(service=catalog.checkout, auto_pr={"prod": "minor", "staging": "minor"})
    broken = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.7.0", health="Degraded",
                      since=timedelta(minutes=25), now=now, repo_url=github.repository, path=PROD)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod, cluster=catalog.prod_eu,
                                 app=broken, from_version="1.6.0", to_version="1.7.0", at=now - timedelta(minutes=30))
    client.force_login(users["member"])
    response = client.post(reverse("pr-open"), {"kind": "rollback", "item": f"{broken.pk}:checkout:1.6.0:1.7.0"})
    assert response.status_code == 302
    [pull] = github.model.pulls
    pull.state, pull.merged_at, pull.closed_at = "closed", now, now
    assert refresh_open().merged == 1
    RunningVersion.objects.filter(app=broken).update(version="1.6.0")
    GitOpsApp.objects.filter(pk=broken.pk).update(health_status="Healthy")
    return {"app": broken, "pull": pull, "now": now}


def test_the_merged_rollback_holds_the_bad_version_and_nothing_proposes_it(rolled_back, catalog, github, client):
    pull = rolled_back["pull"]
    row = PullRequest.objects.get(kind="rollback")
    assert (row.state, row.number) == ("merged", pull.number)
    [hold] = ServicePolicy.objects.get(service=catalog.checkout).as_policy().held("prod")
    assert (hold.version, hold.environment, hold.by, hold.why, hold.source, hold.until) == (
        "1.7.0", "prod", "member", "rolled back to 1.6.0", f"rollback PR #{pull.number}", None)
    assert AuditLog.objects.filter(action="policy.held", target="checkout", actor_name="member").count() == 1
    # The opening job and tracking recorded both steps for the app's alert (portal.notifications.episode_steps).
    assert set(DeliveryEvent.objects.filter(pull_request=row).values_list("kind", flat=True)) == {
        DeliveryEvent.ROLLBACK_PR_OPENED, DeliveryEvent.ROLLBACK_PR_MERGED}

    report = run_automatic()
    assert report.opened == [] and report.failed == []
    assert len(github.model.pulls) == 1 and PullRequest.objects.count() == 1

    html = client.get(reverse("updates")).content.decode()
    assert "Open PR → 1.7.0" not in html
    assert 'data-held="checkout:prod:1.7.0"' in html
    assert f"rolled back to 1.6.0 (rollback PR #{pull.number})" in html and "undo-hold" in html
    policy_panel = client.get(reverse("service", args=["checkout"])).content.decode()
    assert 'data-held="checkout:prod:1.7.0"' in policy_panel and "1.7.0 held in prod" in policy_panel


def test_the_hold_is_for_its_environment_and_a_newer_release_goes_past_it(rolled_back, catalog):
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0")
    assert [line.target for line in BehindLines(environment="staging").lines] == ["1.7.0"]
    held_in_prod = BehindLines(environment="prod")
    assert (len(held_in_prod), held_in_prod.lines) == (0, [])  # counted as the pager counts, not only hidden

    Release.objects.create(service=catalog.checkout, tag="1.7.1", version="1.7.1", seen_at=rolled_back["now"])
    assert [line.target for line in BehindLines(environment="prod").lines] == ["1.7.1"]


def test_undo_brings_the_offer_back_audited(rolled_back, catalog, client):
    response = client.post(reverse("updates-release-hold"),
                           {"service": "checkout", "version": "1.7.0", "environment": "prod"})
    assert response.status_code == 302
    assert ServicePolicy.objects.get(service=catalog.checkout).as_policy().held() == ()
    assert AuditLog.objects.filter(action="policy.hold_released", target="checkout", actor_name="member").exists()
    html = client.get(reverse("updates")).content.decode()
    assert 'data-held="' not in html
    assert "Open PR → 1.7.0" in html


def test_a_viewer_may_not_undo(rolled_back, catalog, client, users):
    client.force_login(users["viewer"])
    assert "undo-hold" not in client.get(reverse("updates")).content.decode()
    response = client.post(reverse("updates-release-hold"),
                           {"service": "checkout", "version": "1.7.0", "environment": "prod"})
    assert response.status_code == 403
    assert len(ServicePolicy.objects.get(service=catalog.checkout).as_policy().held("prod")) == 1


def test_a_renovate_pr_proposing_the_held_version_is_marked(rolled_back, github, client):
    github.model.branches["renovate/ghcr.io-acme-checkout-1.x"] = github.model.branches["main"]
    github.model.add_pull(RENOVATE, "renovate/ghcr.io-acme-checkout-1.x", author="renovate[bot]",
                          created_at=timezone.now())
    assert scan().linked == 1
    outside = PullRequest.objects.get(opened_outside=True)
    assert (outside.environment, outside.to_version) == ("prod", "1.7.0")

    day = f"{timezone.now():%Y-%m-%d}"
    page = client.get(reverse("delivery")).content.decode()
    assert f"proposes a version rolled back on {day}" in page
    listed = {pr["number"]: pr for pr in client.get("/api/v1/pull-requests").json()["results"]}
    assert listed[outside.number]["rolled_back_on"] == day
    assert listed[rolled_back["pull"].number]["rolled_back_on"] is None

    # Undone, the mark goes with the hold.
    assert holds.release(outside_service(), "1.7.0", "prod")
    assert "proposes a version rolled back" not in client.get(reverse("delivery")).content.decode()


def outside_service():
    from portal.kernel.catalog.models import Service

    return Service.objects.get(name="checkout")


def test_a_held_version_without_a_date_is_skipped_only_where_held():
    policy = VersionPolicy.from_dict({"put_off": [
        {"version": "1.7.0", "environment": "prod", "by": "ana", "at": "2026-03-02T12:00:00+00:00",
         "why": "rolled back to 1.6.0", "source": "rollback PR #12"},
    ]})
    today = timezone.now().date()
    assert newest_acceptable("1.6.0", ["1.6.0", "1.7.0"], policy, today, "prod") is None
    assert newest_acceptable("1.6.0", ["1.6.0", "1.7.0"], policy, today, "staging") == "1.7.0"
    assert newest_acceptable("1.6.0", ["1.6.0", "1.7.0"], policy, today) == "1.7.0"
    assert VersionPolicy.from_dict(policy.to_dict()) == policy  # the document keeps every field


def test_reloading_the_fleet_file_keeps_a_hold(rolled_back, catalog):
    from portal.delivery.policy_editing import on_fleet_service

    on_fleet_service(None, catalog.checkout, {"policy": {"accept": "minor", "auto_pr": {"prod": "minor"}}})
    policy = ServicePolicy.objects.get(service=catalog.checkout).as_policy()
    assert policy.accept == "minor"
    assert [(h.version, h.environment) for h in policy.held()] == [("1.7.0", "prod")]
