"""Updates → preview → open, as a member sees it in headless Chromium, against the GitHub fake.
Screenshots: test-artifacts/updates.png and test-artifacts/pr-preview.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.delivery.models import ChangeFreeze, PullRequest, ServicePolicy
from portal.kernel.accounts.roles import Role, grant
from portal.releases.models import Release
from tests.fakes.forges.harness import FILES, serving
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app, seed_pin

# Opening queues a job; here it runs inside the POST (the job's own workers: test_forge_jobs_workers.py).
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]

PROD = "apps/checkout/overlays/prod"


@pytest.fixture
def github(monkeypatch):
    files = dict(FILES)
    files["apps/payments/prod/values.yaml"] = "image:\n  repository: ghcr.io/acme/payments\n  tag: 2.5.0\n"
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def seeded(live_server, github):
    catalog = make_catalog()
    now = timezone.now()
    for service, tags in ((catalog.checkout, ("1.6.0", "1.7.0", "2.0.0")), (catalog.payments, ("2.5.0", "2.5.1"))):
        for tag in tags:
            Release.objects.create(service=service, tag=tag, version=tag, seen_at=now)
    ServicePolicy.objects.create(service=catalog.checkout, accept="minor")
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=github.repository, path=PROD, manual_sync=True)
    seed_pin(app, catalog.checkout, "1.6.0", path=f"{PROD}/values.yaml", line=4, read_at=now)
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0",
             repo_url=github.repository, path="apps/checkout/overlays/staging")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0",
             repo_url=github.repository, path="apps/payments/prod")
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=2),
                                         reason="end-of-quarter close")
    freeze.environments.add(catalog.prod)
    user = get_user_model().objects.create_user("mara", password="mara-pass-123")
    grant(user, Role.MEMBER)
    return live_server


def login(page, server):
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "mara")
    page.fill("input[name=password]", "mara-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_updates_page_then_preview_then_open(page, seeded, github):
    login(page, seeded)
    page.goto(f"{seeded.url}/updates")
    rows = page.locator("table.updates tbody tr")
    assert rows.count() == 2
    assert page.locator("tr[data-app=checkout-prod]").get_attribute("data-target") == "1.7.0"
    assert page.locator("tr[data-app=payments-prod]").get_attribute("data-target") == "2.5.1"
    assert "end-of-quarter close" in page.locator(".freeze-active").inner_text()
    screenshot(page, "updates")

    page.click("tr[data-app=checkout-prod] a.open-pr")
    page.wait_for_url("**/pr/preview?**")
    assert page.locator("h3").first.inner_text() == "Update checkout to 1.7.0 in prod"
    assert page.locator(".diff .add").first.inner_text().strip() == '+    newTag: "1.7.0" # bumped by the portal'
    warnings = page.locator(".warnings").inner_text()
    assert "change freeze" in warnings and "synced by hand" in warnings and "Pinned by digest" in warnings
    screenshot(page, "pr-preview")

    page.click("button:has-text('Open pull request')")
    page.wait_for_url("**/pr/opened?**")
    page.wait_for_selector("tr[data-pr][data-state=open] td.progress:has-text('opened #1')")  # followed to the end
    link = page.locator("tr[data-pr] a")
    assert link.inner_text().startswith("#1 Update checkout to 1.7.0 in prod")
    assert PullRequest.objects.get().state == "open" and len(github.model.pulls) == 1
    assert "freeze" in github.model.pulls[0].body

    # Back on Updates the line now says a PR is open instead of offering another.
    page.goto(f"{seeded.url}/updates")
    assert "PR #1 open" in page.locator("tr[data-app=checkout-prod]").inner_text()


def test_ticking_two_lines_previews_one_pull_request_each(page, seeded):
    login(page, seeded)
    page.goto(f"{seeded.url}/updates")
    page.check("tr[data-app=checkout-prod] input[type=checkbox]")
    page.check("tr[data-app=payments-prod] input[type=checkbox]")
    page.check("input[name=mode][value=each]")
    page.click("button:has-text('Preview ticked')")
    page.wait_for_url("**/pr/preview?**")
    titles = page.locator("section.preview h3").all_inner_texts()
    assert titles == ["Update checkout to 1.7.0 in prod", "Update payments to 2.5.1 in prod"]


def test_matrix_cell_offers_open_pr_then_points_to_the_opened_one(page, seeded, github):
    login(page, seeded)
    page.goto(f"{seeded.url}/matrix")
    prod = page.locator("tr[data-service=checkout] td.cell").nth(2)
    offer = prod.locator("a.open-pr")
    assert offer.inner_text() == "Open PR → 1.7.0"
    assert "newest release its policy accepts is 1.7.0" in offer.get_attribute("title")
    screenshot(page, "matrix-open-pr")

    offer.click()
    page.wait_for_url("**/pr/preview?**")
    assert page.locator("h3").first.inner_text() == "Update checkout to 1.7.0 in prod"
    page.click("button:has-text('Open pull request')")
    page.wait_for_url("**/pr/opened?**")

    page.goto(f"{seeded.url}/matrix")
    cell = page.locator("tr[data-service=checkout] td.cell").nth(2)
    link = cell.locator("a.pr-state")  # the one PR state badge, in place of the offer
    assert link.inner_text() == "PR #1 open" and cell.locator("a.open-pr").count() == 0
    assert link.get_attribute("href") == PullRequest.objects.get().url
