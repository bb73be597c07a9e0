"""PR state as a member sees it in headless Chromium: a Renovate PR found by the scan on the GitHub
fake is linked on Updates and the matrix before anyone clicks (hover: "Opened outside the portal"),
a merged one says why it is not deployed, a failing one links its checks, a closed one shows
beside the offer that came back. Screenshots: test-artifacts/pr-state-updates.png and
test-artifacts/pr-state-matrix.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.delivery.models import PullRequest
from portal.delivery.outside_prs import scan
from portal.kernel.accounts.roles import Role, grant
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROD = "apps/checkout/overlays/prod"
RENOVATE = "Update ghcr.io/acme/checkout Docker tag to v1.7.0"


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        yield harness


def _pr(number, state, environment, service, to_version, **extra):
    now = timezone.now()
    return PullRequest.objects.create(
        kind="upgrade", services=[service], environment=environment, repository="https://github.com/acme/gitops",
        forge_kind="github", number=number, url=f"https://github.com/acme/gitops/pull/{number}",
        title=f"Update {service} to {to_version} in {environment}",
        branch=f"portal/{service}-{to_version}-{environment}",
        base_branch="main", state=state, to_version=to_version, opened_at=now - timedelta(hours=5), **extra,
    )


@pytest.fixture
def seeded(live_server, github):
    catalog = make_catalog()
    now = timezone.now()
    for service, tags in ((catalog.checkout, ("1.6.0", "1.7.0")), (catalog.payments, ("2.5.0", "2.6.0"))):
        for tag in tags:
            Release.objects.create(service=service, tag=tag, version=tag, seen_at=now)
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0",
             repo_url=github.repository, path=PROD)
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0",
             repo_url="https://github.com/acme/other-gitops.git", path=PROD)
    seed_app(catalog.dev_cluster, "payments-dev", service=catalog.payments, version="2.5.0",
             repo_url="https://github.com/acme/other-gitops.git", path="apps/payments/dev",
             revision_changed_at=now - timedelta(days=2))
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, version="2.5.0",
             repo_url="https://github.com/acme/other-gitops.git", path="apps/payments/staging")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0",
             repo_url="https://github.com/acme/other-gitops.git", path="apps/payments/prod")
    _pr(21, "merged", "dev", "payments", "2.6.0", merged_at=now - timedelta(hours=2), checks="pass")
    _pr(22, "open", "staging", "payments", "2.6.0", checks="fail")
    _pr(23, "closed", "prod", "payments", "2.6.0", closed_at=now - timedelta(hours=1))
    _pr(24, "open", "staging", "checkout", "1.7.0", checks="running")
    github.model.add_pull(RENOVATE, "main", author="renovate[bot]")
    user = get_user_model().objects.create_user("mara", password="mara-pass-123")
    grant(user, Role.MEMBER)
    return live_server


def login(page, server):
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "mara")
    page.fill("input[name=password]", "mara-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_updates_and_matrix_show_pr_state_and_the_outside_pr_before_anyone_clicks(page, seeded, github):
    report = scan()  # what the 30-minute task does; the page is not opened before
    assert report.linked == 1, report

    login(page, seeded)
    page.goto(f"{seeded.url}/updates")
    dev = page.locator("tr[data-app=checkout-dev]")
    outside = dev.locator("a.pr-state")
    assert outside.inner_text() == "PR #1 open"
    assert outside.get_attribute("title") == f"Opened outside the portal: {RENOVATE}"
    assert dev.locator("a.open-pr").count() == 0
    merged = page.locator("tr[data-app=payments-dev]").inner_text()
    assert "PR #21 merged" in merged and "merged, not deployed — dev-eu-1: Argo CD has not synced" in merged
    failing = page.locator("tr[data-app=payments-staging] a.pr-checks")
    assert failing.inner_text() == "checks fail"
    assert failing.get_attribute("href") == "https://github.com/acme/gitops/pull/22/checks"
    prod = page.locator("tr[data-app=payments-prod]")
    assert "PR #23 closed" in prod.inner_text() and prod.locator("a.open-pr").inner_text() == "Open PR → 2.6.0"
    screenshot(page, "pr-state-updates")

    page.goto(f"{seeded.url}/matrix")
    assert page.locator(f"a.pr-state[title='Opened outside the portal: {RENOVATE}']").count() == 1
    assert page.locator("a.pr-checks:has-text('checks fail')").count() == 1
    assert page.locator(".pr-why").count() == 1
    screenshot(page, "pr-state-matrix")

    # /gitops: the Git pins and pull requests columns, and the filter the service panels link to.
    page.goto(f"{seeded.url}/gitops?service=payments&environment=staging")
    row = page.locator("tr[data-app=payments-staging]")
    assert page.locator("tr.app-row").count() == 1
    assert "PR #22 open" in row.locator("td.pull-requests").inner_text()
    screenshot(page, "pr-state-gitops")
