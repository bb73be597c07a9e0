"""A chart version as a rollback: an application that installs a chart from a Helm repository and
turned failing within the window after its chart version changed (the image rollback's rule, one
definition) is offered "Rollback PR → chart <previous>"; the versions and when each deployed come
from the object's own status.history (a Flux HelmRelease's snapshots, an Argo CD Application's
revisions per source), and the pull request changes only the chart version line."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from django.urls import reverse
from django.utils import timezone

from gitops.collectors.argocd import application_row
from gitops.collectors.flux import helmrelease_row
from gitops.models import GitOpsApp
from portal.delivery.rollbacks import (
    WINDOW,
    AppHealth,
    Replacement,
    chart_changes,
    decide_chart,
    offers_for_apps,
    preview_url,
)
from portal.kernel.timestamps import rfc3339
from tests.delivery.test_pin_location import CHARTS, NOTIFICATIONS, demo_files, demo_helmrelease
from tests.fakes.forges.harness import FILES, Harness, serving
from tests.fixtures.seed import seed_app

ROOT = Path(__file__).resolve().parents[2]
REAL = Path("/work/shared/testdata/real-objects")
GRACE = timedelta(minutes=10)
RELEASE = f"{NOTIFICATIONS}/helmrelease.yaml"


def health(since: datetime, status: str = "Degraded") -> AppHealth:
    return AppHealth(app_id=1, name="notifications", cluster="prod-us-1", environment="prod", health_status=status,
                     health_since=since, health_message="Helm upgrade failed: context deadline exceeded",
                     services=("notifications",), running={"notifications": ["0.9.0"]})


def staging_notifications() -> dict:
    """staging-eu-1's Argo CD Application notifications-staging, as the demo dump holds it: a chart
    source (https://charts.acme-shop.io, 0.3.2) and a `ref: values` Git source."""
    path = ROOT / "examples" / "clusters" / "staging-eu-1" / "argocd" / "applications.yaml"
    return next(d for d in yaml.safe_load_all(path.read_text())
                if d and d["metadata"]["name"] == "notifications-staging")


# --- pure: the history read, the rule applied ------------------------------------------


def test_an_argo_cd_multi_source_history_gives_the_chart_sources_version_changes():
    row = application_row(staging_notifications())
    index = next(i for i, s in enumerate(row.sources) if s.chart == "notifications")
    assert index == 0
    [change] = chart_changes(row.history, index, "staging-eu-1", "notifications")
    last = staging_notifications()["status"]["history"][-1]
    assert (change.from_version, change.to_version) == ("0.3.1", "0.3.2")
    assert change.at == datetime.fromisoformat(last["deployedAt"].replace("Z", "+00:00"))
    # The Git source's revisions (SHAs) are never read as chart versions.
    assert chart_changes(row.history, 1, "staging-eu-1", "notifications")[0].to_version != "0.3.2"


def test_a_real_flux_history_gives_its_chart_version_changes_newest_last():
    objects = json.loads((REAL / "flux" / "flux-operator__resource.js-helmreleases.json").read_text())
    by_name = {o["metadata"]["name"]: o for o in objects}
    tailscale = helmrelease_row(by_name["tailscale-operator"], {})
    [change] = chart_changes(tailscale.history, 0, "c", "tailscale-operator")
    assert (change.from_version, change.to_version, change.at) == (
        "1.90.8", "1.90.9", datetime(2025, 11, 26, 19, 26, 23, tzinfo=UTC))
    # Three releases of one chart version (one failed): no chart version change to blame.
    zot = helmrelease_row(by_name["zot-registry"], {})
    assert chart_changes(zot.history, 0, "c", "zot-registry") == []


def test_the_chart_rollback_follows_the_image_rollbacks_rule():
    changed = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    history = [Replacement("notifications", "prod-us-1", "0.3.0", "0.3.1", changed - timedelta(days=9)),
               Replacement("notifications", "prod-us-1", "0.3.1", "0.3.2", changed)]
    failing = health(changed + timedelta(minutes=3))
    now = changed + timedelta(minutes=30)

    offer = decide_chart(failing, history, "0.3.2", "notifications", now, GRACE)
    assert offer is not None
    assert (offer.chart, offer.current, offer.previous, offer.replaced_at, offer.service) == (
        "notifications", "0.3.2", "0.3.1", changed, "notifications")
    assert offer.subject == "the notifications chart"
    assert offer.failure == "Degraded: Helm upgrade failed: context deadline exceeded"
    assert "chart=notifications" in offer.event_key

    # Not before the grace period ends; not when healthy; not when the trouble began before the
    # change or more than a window after it; not when Git pins another version by now.
    assert decide_chart(failing, history, "0.3.2", "notifications", failing.health_since + GRACE / 2, GRACE) is None
    assert decide_chart(health(changed, "Healthy"), history, "0.3.2", "notifications", now, GRACE) is None
    assert decide_chart(health(changed - timedelta(minutes=1)), history, "0.3.2", "notifications", now, GRACE) is None
    late = health(changed + WINDOW + timedelta(minutes=1))
    assert decide_chart(late, history, "0.3.2", "notifications", late.health_since + GRACE, GRACE) is None
    assert decide_chart(failing, history, "0.3.3", "notifications", now, GRACE) is None
    # The latest change was itself a return to the version before: not undone again.
    undone = [*history, Replacement("notifications", "prod-us-1", "0.3.2", "0.3.1", changed + timedelta(minutes=1))]
    assert decide_chart(health(changed + timedelta(minutes=2)), undone, "0.3.1", "notifications", now, GRACE) is None


# --- through the store, the pages and the forge fakes ------------------------------------


def failed_upgrade(changed: datetime) -> dict:
    """prod-us-1's notifications HelmRelease after Flux upgraded the chart 0.3.1 → 0.3.2 and the
    upgrade failed: history newest first (0.3.2 failed, 0.3.1 superseded), as helm-controller writes."""
    raw = copy.deepcopy(demo_helmrelease())
    raw["spec"]["chart"]["spec"]["version"] = "0.3.2"
    raw["spec"].pop("suspend", None)
    deployed, *older = raw["status"]["history"]
    assert deployed["chartVersion"] == "0.3.1"
    failed = dict(deployed, chartVersion="0.3.2", appVersion="0.9.0", status="failed", version=deployed["version"] + 1,
                  firstDeployed=rfc3339(changed), lastDeployed=rfc3339(changed))
    raw["status"]["history"] = [failed, dict(deployed, status="superseded"), *older]
    return raw


def seed_failing_release(catalog, service, repository: str, *, pinned: str = "0.3.2") -> GitOpsApp:
    now = timezone.now()
    changed = (now - timedelta(minutes=40)).replace(microsecond=0)
    seed_app(catalog.prod_us, "notifications", tool="flux", kind="Kustomization", namespace="flux-system",
             repo_url=repository, path=f"./{NOTIFICATIONS}", target_revision="main")
    raw = failed_upgrade(changed)
    row = helmrelease_row(raw, {})
    return seed_app(catalog.prod_us, "notifications", service=service, version="0.8.4", tool="flux",
                    kind="HelmRelease", namespace="notifications", health="Degraded", since=timedelta(minutes=30),
                    health_message="Helm upgrade failed for release notifications/notifications with chart "
                    "notifications@0.3.2: context deadline exceeded", now=now, repo_url=CHARTS, path="",
                    chart="notifications", target_revision=pinned, raw=raw, history=row.history,
                    sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications", "target_revision": pinned,
                              "ref": "HelmRepository/flux-system/acme-charts"}])


@pytest.fixture
def notifications(catalog):
    from portal.kernel.catalog.models import Service

    return Service.objects.create(name="notifications", image_repository="ghcr.io/acme-shop/notifications")


@pytest.fixture
def at_0_3_2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    files = {**FILES, **demo_files("apps/notifications")}
    files[RELEASE] = files[RELEASE].replace('version: "0.3.1"', 'version: "0.3.2"')
    with serving("github", monkeypatch, files) as harness:
        yield harness


def loaded(app: GitOpsApp) -> GitOpsApp:
    # As pages load them: without the JSON columns the chart rollback reads itself.
    return GitOpsApp.objects.select_related("cluster__environment").defer("raw", "history", "sources").get(pk=app.pk)


@pytest.mark.django_db
@pytest.mark.usefixtures("eager_celery")  # opening queues a job: run it in the request here
def test_a_failing_helmrelease_is_offered_its_previous_chart_version_and_the_pr_changes_only_that_line(
    client, users, catalog, notifications, at_0_3_2
):
    release = seed_failing_release(catalog, notifications, at_0_3_2.repository)

    [offer] = offers_for_apps([loaded(release)])[release.pk]
    assert (offer.chart, offer.current, offer.previous) == ("notifications", "0.3.2", "0.3.1")
    query = parse_qs(urlsplit(preview_url(offer)).query)
    assert query == {"kind": ["rollback"], "mode": ["grouped"],
                     "item": [f"{release.pk}:chart=notifications:0.3.1:0.3.2"]}

    client.force_login(users["member"])
    listing = client.get(reverse("gitops")).content.decode()
    assert "Rollback PR → chart 0.3.1" in listing
    panel = client.get(reverse("service", args=["notifications"])).content.decode()
    assert "Rollback PR → chart 0.3.1" in panel

    page = client.get(preview_url(offer)).content.decode()
    assert "Roll back the notifications chart to 0.3.1 in prod" in page
    assert "0.3.2 is failing since" in page and "context deadline exceeded" in page
    assert RELEASE in page
    assert '-      version: &quot;0.3.2&quot;' in page and '+      version: &quot;0.3.1&quot;' in page

    item = f"{release.pk}:chart=notifications:0.3.1:0.3.2"
    response = client.post(reverse("pr-open"), {"kind": "rollback", "item": item})
    assert response.status_code == 302
    [pull] = at_0_3_2.model.pulls
    assert pull.title == "Roll back the notifications chart to 0.3.1 in prod"
    files = at_0_3_2.model.files_at(pull.head)
    assert 'version: "0.3.1"' in files[RELEASE]
    # Only the version line changed, every other file and byte as it was.
    before = at_0_3_2.model.files_at("main")
    assert {p for p in files if files[p] != before.get(p)} == {RELEASE}
    assert files[RELEASE] == before[RELEASE].replace('version: "0.3.2"', 'version: "0.3.1"')

    # The PR now open replaces the button.
    listing = client.get(reverse("gitops")).content.decode()
    assert "Rollback PR → chart 0.3.1" not in listing and "Rollback PR #" in listing


@pytest.mark.django_db
def test_no_chart_rollback_once_git_pins_another_version_or_a_range(catalog, notifications):
    moved = seed_failing_release(catalog, notifications, "https://github.com/acme-shop/gitops", pinned="0.3.3")
    assert offers_for_apps([loaded(moved)]) == {}
    GitOpsApp.objects.filter(pk=moved.pk).update(
        target_revision="0.3.*", sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications",
                                           "target_revision": "0.3.*"}])
    assert offers_for_apps([loaded(moved)]) == {}


@pytest.mark.django_db
def test_the_chart_rollback_is_announced_as_the_chart():
    from portal.notifications.delivery_events import rollback_event

    changed = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    history = [Replacement("notifications", "prod-us-1", "0.3.1", "0.3.2", changed)]
    offer = decide_chart(health(changed + timedelta(minutes=3)), history, "0.3.2", "notifications",
                         changed + timedelta(minutes=30), GRACE)
    assert offer is not None
    event = rollback_event(offer)
    assert event.title == "Rollback offered: the notifications chart 0.3.2 → 0.3.1 on prod-us-1"
    assert event.key == offer.event_key and "chart=notifications" in event.key
    [preview] = [link.url for link in event.links if link.label == "Preview rollback PR"]
    assert "%3Achart%3Dnotifications%3A0.3.1%3A0.3.2" in preview
