"""Rollback offers from the GitOps tools' own history (issue 34).

The demo's payments-staging (Argo CD, staging-eu-1) turned Degraded ten minutes after its
`status.history` shows a new commit deployed, and orders on prod-us-1 (Flux) five minutes after
its Kustomization's `status.history` shows a new commit first applied; both a week before the
portal's first poll, which saw no version change. What ran before is what Git pinned at the
previous commit of the history. Most tests here build a repository of two real commits (the pins
before: payments 2.4.0 in staging, orders 3.1.2 in prod; then the demo's own) and collect the
demo's cluster objects with their history naming those two commits (the objects as the tools
write them, through the collectors); one takes the demo as `make run` builds it. Then the one
offer shows on the service panel, /gitops, the API's after_change and the degraded alert, and
its preview proposes the older version.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from forges.demo import build_demo_repo
from gitops.models import GitOpsApp, VersionChange
from gitops.rows import ARGO, FLUX
from portal.delivery import history_pins
from portal.delivery.deployments import announce_rollbacks
from portal.delivery.history_pins import Deployed, deployed_commits, needed
from portal.delivery.models import PinsAtRevision
from portal.delivery.rollbacks import (
    WINDOW,
    AppHealth,
    decide,
    history_changes,
    offers_for_apps,
    preview_url,
)
from portal.kernel.accounts import tokens
from portal.notifications.gitops_events import build_event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PAYMENTS_STAGING = "apps/payments/overlays/staging/kustomization.yaml"
ORDERS_PROD = "apps/orders/overlays/prod/kustomization.yaml"
# The commits the demo's objects name (examples/generate_fleet.py makes them up).
ARGO_BEFORE, ARGO_AFTER = "167c1719b3cf40b707e7e9ffe5328dcfdb86cdb8", "2e76247a88fe52638783cad38df9cfd6e8033ec0"
FLUX_BEFORE, FLUX_AFTER = "14bc29490165075fdb092c969405b2c20bc2c711", "32418a9408aaef8491f0097bb4be7cd631a604ba"
SYNCED = datetime(2026, 11, 29, 13, 12, 36, tzinfo=UTC)  # payments-staging's last history entry
APPLIED = datetime(2026, 11, 29, 14, 49, 31, tzinfo=UTC)  # orders' newest revision, firstReconciled


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- the pure parts ---------------------------------------------------------------------

# As gitops.collectors store them (oldest first): the demo's payments-staging and orders.
ARGO_HISTORY = [
    {"id": 1, "revision": "5425f89a2d16a5bf917d284bf1a8fab3716f4b63", "deployed_at": "2026-11-03T15:05:05Z"},
    {"id": 2, "revision": ARGO_BEFORE, "deployed_at": "2026-11-11T23:01:35Z"},
    {"id": 3, "revision": ARGO_AFTER, "deployed_at": "2026-11-29T13:12:36Z"},
]
FLUX_HISTORY = [
    {"revision": f"main@sha1:{FLUX_BEFORE}", "deployed_at": "2026-11-29T14:45:40Z", "first_at": "2026-11-19T10:04:12Z",
     "status": "ReconciliationSucceeded"},
    {"revision": f"main@sha1:{FLUX_AFTER}", "deployed_at": "2026-11-29T15:36:02Z", "first_at": "2026-11-29T14:49:31Z",
     "status": "HealthCheckFailed"},
]


def test_argo_history_entries_are_commits_dated_by_their_deployment():
    assert deployed_commits(ARGO, ARGO_HISTORY) == [
        Deployed("5425f89a2d16a5bf917d284bf1a8fab3716f4b63", at("2026-11-03T15:05:05Z")),
        Deployed(ARGO_BEFORE, at("2026-11-11T23:01:35Z")),
        Deployed(ARGO_AFTER, SYNCED),
    ]
    # A multi-source Application: the revision of the source holding the pins.
    multi = [{"revisions": ["4.9.2", ARGO_BEFORE], "deployed_at": "2026-11-11T23:01:35Z"}]
    assert deployed_commits(ARGO, multi, source_index=1) == [Deployed(ARGO_BEFORE, at("2026-11-11T23:01:35Z"))]
    assert deployed_commits(ARGO, multi, source_index=0) == []  # a chart version is no commit


def test_flux_history_entries_are_dated_by_their_first_reconciliation_and_one_commit_counts_once():
    """kustomize-controller keeps one entry per (digest, status): a commit that failed, then
    succeeded, is one deployment, first applied at its first entry's firstReconciled."""
    again = {**FLUX_HISTORY[1], "status": "ReconciliationSucceeded", "first_at": "2026-11-29T16:00:00Z"}
    assert deployed_commits(FLUX, [*FLUX_HISTORY, again]) == [
        Deployed(FLUX_BEFORE, at("2026-11-19T10:04:12Z")), Deployed(FLUX_AFTER, APPLIED)]


def test_only_the_deployments_that_can_be_blamed_and_the_one_before_them_are_needed():
    deployed = deployed_commits(ARGO, ARGO_HISTORY)
    failing = at("2026-11-29T13:22:44Z")
    assert needed(deployed, failing, 2 * WINDOW) == deployed[1:]
    assert needed(deployed, failing, timedelta(days=30)) == deployed
    assert needed(deployed[:1], failing, 2 * WINDOW) == deployed[:1]
    assert needed(deployed, datetime(1, 1, 1, tzinfo=UTC), 2 * WINDOW) == deployed  # Go's zero time, stored


def health(since: datetime, running: str = "2.5.0") -> AppHealth:
    return AppHealth(app_id=1, name="payments-staging", cluster="staging-eu-1", environment="staging",
                     health_status="Degraded", health_since=since, health_message="exceeded its progress deadline",
                     services=("payments",), running={"payments": [running]})


def test_the_history_names_the_version_that_ran_before():
    deployed = [Deployed("a" * 40, SYNCED - timedelta(days=18)), Deployed("b" * 40, SYNCED)]
    pins = {"a" * 40: {"payments": ["2.4.0"]}, "b" * 40: {"payments": ["2.5.0"]}}
    changes = history_changes(deployed, pins, "staging-eu-1")
    failing = SYNCED + timedelta(minutes=10)
    [offer] = decide(health(failing), [], failing + timedelta(days=7), timedelta(minutes=10), history=changes)
    assert (offer.service, offer.current, offer.previous, offer.replaced_at) == ("payments", "2.5.0", "2.4.0", SYNCED)
    # Trouble that began before the deployment is not its: no offer.
    assert decide(health(SYNCED - timedelta(minutes=1)), [], failing, timedelta(0), history=changes) == []
    # A commit whose pins are not read yet: the history says nothing (the portal's rows may).
    assert history_changes(deployed, {"b" * 40: {"payments": ["2.5.0"]}}, "staging-eu-1") == []


def test_no_offer_when_the_latest_deployment_was_a_return():
    deployed = [Deployed("a" * 40, SYNCED - timedelta(hours=5)), Deployed("b" * 40, SYNCED - timedelta(hours=2)),
                Deployed("c" * 40, SYNCED)]
    failing = SYNCED + timedelta(minutes=10)
    now = failing + timedelta(hours=1)
    # 2.4.0 -> 2.5.0 -> 2.4.0: the latest deployment undid the one before; rolling back would redo it.
    back = {"a" * 40: {"payments": ["2.4.0"]}, "b" * 40: {"payments": ["2.5.0"]}, "c" * 40: {"payments": ["2.4.0"]}}
    returned = history_changes(deployed, back, "staging-eu-1")
    assert [(c.from_version, c.to_version) for c in returned] == [("2.4.0", "2.5.0"), ("2.5.0", "2.4.0")]
    assert decide(health(failing, running="2.4.0"), [], now, timedelta(0), history=returned) == []
    # The same deployments with a commit that changed nothing for payments between them: still 2.4.0 -> 2.5.0.
    quiet = {"a" * 40: {"payments": ["2.4.0"]}, "b" * 40: {"payments": ["2.4.0"]}, "c" * 40: {"payments": ["2.5.0"]}}
    [offer] = decide(health(failing), [], now, timedelta(0), history=history_changes(deployed, quiet, "staging-eu-1"))
    assert (offer.previous, offer.replaced_at) == ("2.4.0", SYNCED)


# --- the demo, collected with a history the demo repository holds ------------------------


def git_head(repo: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "rev-parse", "refs/heads/main"], capture_output=True,
                          check=True, text=True).stdout.strip()


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


@pytest.fixture
def history_demo(settings, tmp_path: Path) -> dict[str, str]:
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES, examples)
    repo = tmp_path / "demo-gitops.git"
    before = examples / "gitops-repo"
    replace_in(before / PAYMENTS_STAGING, 'newTag: "2.5.0"', 'newTag: "2.4.0"')
    replace_in(before / ORDERS_PROD, 'newTag: "3.2.0"', 'newTag: "3.1.2"')
    build_demo_repo(repo, source=before)
    old = git_head(repo)
    build_demo_repo(repo)  # the demo's own files: what runs now
    new = git_head(repo)
    assert old != new
    argo = examples / "clusters" / "staging-eu-1" / "argocd" / "applications.yaml"
    replace_in(argo, ARGO_BEFORE, old)
    replace_in(argo, ARGO_AFTER, new)
    flux = examples / "clusters" / "prod-us-1" / "flux-system" / "kustomizations.yaml"
    replace_in(flux, FLUX_BEFORE, old)
    replace_in(flux, FLUX_AFTER, new)
    call_command("load_demo", "--fleet", str(examples / "fleet.yaml"), verbosity=0)
    return {"before": old, "after": new}


def payments_staging() -> GitOpsApp:
    return GitOpsApp.objects.select_related("cluster__environment").get(
        cluster__name="staging-eu-1", name="payments-staging")


def orders_prod_us() -> GitOpsApp:
    return GitOpsApp.objects.select_related("cluster__environment").get(
        cluster__name="prod-us-1", kind="Kustomization", name="orders")


@pytest.mark.django_db
@pytest.mark.parametrize("commit_chunk", [1, 200])  # 1: the two commits' apps loaded a chunk at a time
def test_pages_read_no_forge_and_the_worker_reads_each_commit_once(history_demo, client, users, monkeypatch,
                                                                  commit_chunk):
    monkeypatch.setattr(history_pins, "COMMIT_CHUNK", commit_chunk)
    assert not VersionChange.objects.exists()  # the portal saw no change: only the tools' history did
    client.force_login(users["member"])
    assert "Rollback PR → 2.4.0" not in client.get(reverse("service", args=["payments"])).content.decode()
    assert not PinsAtRevision.objects.exists()  # a page load read nothing at an old commit

    now = timezone.now()
    assert announce_rollbacks(now) >= 2
    rows = {(r.revision, r.path): r for r in PinsAtRevision.objects.all()}
    assert rows[history_demo["before"], "apps/payments/overlays/staging"].pins == {"payments": ["2.4.0"]}
    assert rows[history_demo["after"], "apps/payments/overlays/staging"].pins == {"payments": ["2.5.0"]}
    assert rows[history_demo["before"], "apps/orders/overlays/prod"].pins == {"orders": ["3.1.2"]}
    assert all(row.error == "" for row in rows.values())
    count = len(rows)
    announce_rollbacks(now + timedelta(minutes=1))
    assert PinsAtRevision.objects.count() == count  # a commit is read once


@pytest.mark.django_db
def test_the_argo_and_flux_histories_offer_the_rollback_everywhere(history_demo, client, users):
    announce_rollbacks(timezone.now())
    payments, orders = payments_staging(), orders_prod_us()
    found = offers_for_apps([payments, orders])
    [offer] = found[payments.pk]
    assert (offer.service, offer.current, offer.previous, offer.replaced_at) == ("payments", "2.5.0", "2.4.0", SYNCED)
    assert offer.failing_since == at("2026-11-29T13:22:44Z")  # Argo CD's health.lastTransitionTime
    [flux_offer] = found[orders.pk]
    assert (flux_offer.service, flux_offer.current, flux_offer.previous, flux_offer.replaced_at) == (
        "orders", "3.2.0", "3.1.2", APPLIED)

    client.force_login(users["member"])
    panel = client.get(reverse("service", args=["payments"])).content.decode()
    assert "Rollback PR → 2.4.0" in panel and preview_url(offer).replace("&", "&amp;") in panel
    listing = client.get(reverse("gitops")).content.decode()
    assert "Rollback PR → 2.4.0" in listing and "Rollback PR → 3.1.2" in listing

    _, plain = tokens.issue(users["viewer"], "tests")
    items = client.get("/api/v1/gitops", {"page_size": 200}, HTTP_AUTHORIZATION=f"Bearer {plain}").json()["results"]
    by_key = {(i["cluster"], i["kind"], i["name"]): i for i in items}
    after = by_key["staging-eu-1", "Application", "payments-staging"]["after_change"]
    assert after == {"service": "payments", "from": "2.4.0", "to": "2.5.0", "at": "2026-11-29T13:12:36+00:00",
                     "rollback": {"to": "2.4.0", "preview_url": f"http://testserver{preview_url(offer)}"}}
    assert by_key["prod-us-1", "Kustomization", "orders"]["after_change"]["rollback"]["to"] == "3.1.2"

    event = build_event(payments, payments.health_since, timezone.now())
    assert event.links[0].label == "Rollback PR → 2.4.0"
    assert event.links[0].url.endswith(preview_url(offer))


@pytest.mark.django_db
@pytest.mark.parametrize("app, service, current, previous, environment", [
    (payments_staging, "payments", "2.5.0", "2.4.0", "staging"),
    (orders_prod_us, "orders", "3.2.0", "3.1.2", "prod"),
], ids=["argo", "flux"])
def test_following_the_offer_gives_a_clean_preview_of_the_older_version(eager_celery, history_demo, client, users, app,
                                                                      service, current, previous, environment):
    announce_rollbacks(timezone.now())
    [offer] = offers_for_apps([app()])[app().pk]
    client.force_login(users["member"])
    response = client.get(preview_url(offer))
    page = response.content.decode()
    assert response.status_code == 200
    assert f"Roll back {service} to {previous} in {environment}" in page
    assert f'-    newTag: &quot;{current}&quot;' in page and f'+    newTag: &quot;{previous}&quot;' in page
    assert 'class="error"' not in page


@pytest.mark.django_db
def test_the_demo_as_make_run_builds_it_offers_both_rollbacks(eager_celery, settings, tmp_path, client, users):
    """The demo repository holds the commits its clusters' histories name
    (examples/gitops-repo-history.yaml), so `make run`'s own demo offers both rollbacks, as soon
    as the worker's first pin read of the repository is done (not at the deployment pass)."""
    from portal.delivery.current_pins import due_batches
    from portal.delivery.tasks import read_repository_pins

    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)
    for batch in due_batches():
        assert read_repository_pins(batch.repository, batch.revision, batch.app_ids)["ok"]
    payments, orders = payments_staging(), orders_prod_us()
    found = offers_for_apps([payments, orders])
    assert [(o.service, o.current, o.previous) for o in found[payments.pk]] == [("payments", "2.5.0", "2.4.0")]
    assert [(o.service, o.current, o.previous) for o in found[orders.pk]] == [("orders", "3.2.0", "3.1.2")]
    client.force_login(users["member"])
    page = client.get(preview_url(found[payments.pk][0])).content.decode()
    assert '+    newTag: &quot;2.4.0&quot;' in page and 'class="error"' not in page


@pytest.mark.django_db
def test_a_commit_the_repository_does_not_hold_offers_nothing_and_says_why(settings, tmp_path):
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES, examples)
    unknown = "0123456789abcdef" * 2 + "01234567"
    replace_in(examples / "clusters" / "staging-eu-1" / "argocd" / "applications.yaml", ARGO_BEFORE, unknown)
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", "--fleet", str(examples / "fleet.yaml"), verbosity=0)
    announce_rollbacks(timezone.now())
    row = PinsAtRevision.objects.get(revision=unknown, path="apps/payments/overlays/staging")
    assert "no branch or commit" in row.error and row.pins == {}
    assert offers_for_apps([payments_staging()]) == {}
    # Not read again before RETRY; read again after it.
    failing = {payments_staging().pk: payments_staging().health_since}
    assert history_pins.read_missing(failing, timezone.now() + timedelta(minutes=5), 2 * WINDOW) == 0
    assert history_pins.read_missing(failing, timezone.now() + history_pins.RETRY, 2 * WINDOW) == 1
