"""Other bots' pull requests found before anyone clicks (portal.delivery.outside_prs): a Renovate,
Dependabot or person's PR on each forge fake is stored as opened outside the portal, linked on
Updates with its hover text; neither the automatic policy nor a click opens a second; and one
pass lists each repository once, however many applications it holds (measured and printed)."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse
from django.utils import timezone

from forges.forge import ForgeError
from forges.hosts import forge_for
from gitops.models import GitOpsApp, RunningVersion
from portal.delivery.automatic import run as run_automatic
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.models import PullRequest, ServicePolicy
from portal.delivery.outside_prs import scan
from portal.delivery.pull_requests import LINKED
from portal.delivery.upgrades import BehindLines
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"
RENOVATE = "Update ghcr.io/acme/checkout Docker tag to v1.7.0"


def _releases(service, *tags):
    now = timezone.now()
    for tag in tags:
        Release.objects.create(service=service, tag=tag, version=tag, seen_at=now)


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        yield harness


@pytest.fixture
def behind_in_dev(catalog, github):
    _releases(catalog.checkout, "1.6.0", "1.7.0")
    ServicePolicy.objects.create(service=catalog.checkout, auto_pr={"dev": "minor"})
    return seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0",
                    repo_url=github.repository, path=PROD)


def test_a_renovate_pr_is_linked_on_updates_before_anyone_clicks_and_the_policy_opens_nothing(
    behind_in_dev, catalog, github, client, users
):
    github.model.branches["renovate/ghcr.io-acme-checkout-1.x"] = github.model.branches["main"]
    outside = github.model.add_pull(RENOVATE, "renovate/ghcr.io-acme-checkout-1.x", author="renovate[bot]")
    client.force_login(users["member"])
    before = client.get(reverse("updates")).content.decode()
    assert "Open PR → 1.7.0" in before  # nothing known yet: the offer stands

    report = scan()

    assert (report.repositories, report.list_calls, report.linked) == (1, 1, 1), report
    row = PullRequest.objects.get()
    assert (row.opened_outside, row.state, row.number, row.environment, row.to_version) == (
        True, "open", outside.number, "dev", "1.7.0")
    html = client.get(reverse("updates")).content.decode()
    assert "Open PR → 1.7.0" not in html
    assert f'href="{row.url}"' in html and 'title="Opened outside the portal' in html
    assert f"PR #{outside.number} open" in html

    # The policy's run finds the line proposed: nothing is opened, on the forge or in the store.
    report_auto = run_automatic()
    assert report_auto.opened == [] and report_auto.failed == []
    assert len(github.model.pulls) == 1 and PullRequest.objects.count() == 1

    # A click (a member opening it from the preview) is answered with the same pull request.
    result = open_change(change_for_upgrade(behind_in_dev, catalog.checkout, "1.7.0"), users["member"])
    assert result.status == LINKED and result.pull_request.pk == row.pk, result.message
    assert len(github.model.pulls) == 1

    # A second pass writes nothing more and lists once again.
    again = scan()
    assert (again.linked, again.already, again.list_calls) == (0, 1, 1)


@pytest.mark.parametrize(
    ("kind", "title"),
    [
        ("github", "chore(deps): update ghcr.io/acme/checkout docker tag to v1.7.0"),
        ("github", "Update image ghcr.io/acme/checkout to v1.7.0"),
        ("gitlab", "Bump acme/checkout from 1.6.0 to 1.7.0 in /apps/checkout/overlays/prod"),
        ("gitea", "checkout 1.7.0 for dev, by hand"),
    ],
)
def test_each_forge_is_listed_once_and_bots_and_people_are_recognised(catalog, monkeypatch, kind, title):
    with serving(kind, monkeypatch) as harness:
        _releases(catalog.checkout, "1.6.0", "1.7.0")
        for cluster in (catalog.dev_cluster, catalog.staging_cluster):
            seed_app(cluster, f"checkout-{cluster.name}", service=catalog.checkout, version="1.6.0",
                     repo_url=harness.repository, path=PROD)
        harness.model.add_pull(title, "main", author="someone")
        harness.model.add_pull("Update ghcr.io/acme/checkout Docker tag to v1.8.0", "main", author="renovate")

        report = scan()

        assert report.list_calls == 1 and sum(harness.server.list_calls.values()) == 1, report
        linked = {(row.environment, row.number) for row in PullRequest.objects.all()}
        # The person named dev; the bots name no environment, so they propose the version everywhere.
        expected = {("dev", 1)} if "by hand" in title else {("dev", 1), ("staging", 1)}
        assert linked == expected
        assert all(row.opened_outside and row.forge_kind == kind for row in PullRequest.objects.all())


def test_a_forge_that_fails_is_told_and_keeps_what_was_stored(behind_in_dev, github, monkeypatch):
    github.model.add_pull(RENOVATE, "main", author="renovate[bot]")
    assert scan().linked == 1

    def failing(repository):
        raise ForgeError("GitHub: 502 Bad Gateway on open pull requests")

    report = scan(forge_for=failing)

    assert report.errors and "502" in report.errors[0] and report.linked == 0
    assert PullRequest.objects.get().state == "open"


def test_a_closed_outside_pr_gives_its_row_back_to_a_new_one(behind_in_dev, github):
    github.model.add_pull(RENOVATE, "main", author="renovate[bot]")
    scan()
    PullRequest.objects.update(state="closed")
    github.model.pulls[0].state = "closed"
    reopened = github.model.add_pull(RENOVATE, "main", author="renovate[bot]")

    assert scan().linked == 1
    row = PullRequest.objects.get()
    assert (row.state, row.number) == ("open", reopened.number)


def test_1000_apps_in_40_repositories_make_at_most_40_list_calls_per_pass(catalog, github, capsys):
    """Measured: every application is behind, and every repository holds a matching PR."""
    _releases(catalog.checkout, "1.6.0", "1.7.0")
    github.server.per_page = 100
    github.model.add_pull(RENOVATE, "main", author="renovate[bot]")
    repositories = [f"{github.server.url}/acme/gitops-{n:02}.git" for n in range(40)]
    clusters = [catalog.dev_cluster, catalog.staging_cluster, catalog.prod_eu, catalog.prod_us]
    apps = GitOpsApp.objects.bulk_create(
        GitOpsApp(cluster=clusters[n % 4], tool="argo", kind="Application", namespace="argocd",
                  name=f"checkout-{n:04}", repo_url=repositories[n % 40], path=f"apps/checkout-{n:04}",
                  target_revision="main", running={"checkout": ["1.6.0"]})
        for n in range(1000)
    )
    RunningVersion.objects.bulk_create(
        RunningVersion(cluster_id=app.cluster_id, app=app, service=catalog.checkout, container="checkout",
                       image="ghcr.io/acme/checkout:1.6.0", version="1.6.0")
        for app in apps
    )
    forges: dict[str, object] = {}

    def cached(repository):
        if repository not in forges:
            forges[repository] = forge_for(repository)
        return forges[repository]

    started = time.perf_counter()
    report = scan(forge_for=cached)
    took = time.perf_counter() - started

    calls = sum(github.server.list_calls.values())
    with capsys.disabled():
        print(f"\n1000 apps in 40 repositories: {calls} list calls on the fake "
              f"({len(github.server.list_calls)} repositories listed), {report.linked} rows linked, {took:.2f}s")
    assert report.repositories == 40 and report.list_calls == 40
    assert calls <= 40 and set(github.server.list_calls.values()) == {1}
    # One row per change the portal would open: (repository, environment) here, as its branch names.
    assert report.linked == 40 and PullRequest.objects.filter(opened_outside=True).count() == 40
    lines = BehindLines().load()
    assert len(lines) == 1000 and all(line.open_pr is not None for line in lines)


def test_the_scan_runs_every_30_minutes_on_the_forge_queue_and_expires(behind_in_dev, github):
    from django.conf import settings

    from portal.delivery.tasks import scan_outside_prs

    entry = settings.CELERY_BEAT_SCHEDULE["scan-outside-prs"]
    assert entry["task"] == "delivery.scan_outside_prs" and entry["schedule"] == 1800
    assert 0 < entry["options"]["expires"] < 1800
    assert settings.CELERY_TASK_ROUTES["delivery.scan_outside_prs"] == {"queue": settings.FORGE_QUEUE}
    github.model.add_pull(RENOVATE, "main", author="renovate[bot]")
    result = scan_outside_prs.apply().get()
    assert (result["list_calls"], result["linked"]) == (1, 1)
