"""Following an offer says at once that the repository is being read. The click's own line shows
until the preview page answers; the page answers at once (portal.delivery.preview_jobs) with what
the forge worker is reading, and fills in by itself (htmx polling pr-preview-result) once the
worker stored the previews. The first test stops the click's navigation after the portal's own
click handler has run (a listener of its own, added after the portal's), so it sees the page in
the wait itself; the second keeps the task queued (in-memory broker) until the test runs it as
the forge worker would, so it sees the progress block, then the page filling in."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.delivery import tasks
from portal.delivery.models import ServicePolicy
from portal.kernel.accounts.roles import Role, grant
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fixtures.browser import submit_login
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROD = "apps/checkout/overlays/prod"


@pytest.fixture
def seeded(live_server, monkeypatch):
    with serving("github", monkeypatch) as github:
        catalog = make_catalog()
        for tag in ("1.6.0", "1.7.0"):
            Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=timezone.now())
        ServicePolicy.objects.create(service=catalog.checkout, accept="minor")
        seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                 repo_url=github.repository, path=PROD)
        user = get_user_model().objects.create_user("mara", password="mara-pass-123")
        grant(user, Role.MEMBER)
        yield live_server


def test_an_offer_shows_progress_while_the_preview_reads_the_repository(eager_celery, page, seeded):
    from playwright.sync_api import expect

    submit_login(page, seeded.url, "mara", "mara-pass-123")
    page.goto(f"{seeded.url}/updates")
    progress = page.locator("#forge-progress")
    expect(progress).to_be_hidden()

    # Runs after the portal's listener (added later, on the same node): the page stays as the
    # person sees it between the click and the preview's answer.
    page.evaluate("document.addEventListener('click', (e) => e.preventDefault())")
    page.click("tr[data-app=checkout-prod] a.open-pr")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Reading the repository")
    assert page.locator("tr[data-app=checkout-prod] a.open-pr").get_attribute("aria-busy") == "true"
    assert "/updates" in page.url  # still the page clicked on, and it says why

    page.goto(seeded.url + (page.locator("tr[data-app=checkout-prod] a.open-pr").get_attribute("href") or ""))
    expect(page.locator("section.preview")).to_be_visible()
    expect(page.locator("#forge-progress")).to_be_hidden()


def test_the_preview_shows_what_it_reads_and_fills_in_when_the_worker_is_done(memory_broker, page, seeded):
    from playwright.sync_api import expect

    submit_login(page, seeded.url, "mara", "mara-pass-123")
    page.goto(f"{seeded.url}/updates")
    href = page.locator("tr[data-app=checkout-prod] a.open-pr").get_attribute("href") or ""
    page.goto(seeded.url + href)
    block = page.locator("#preview-body.preview-progress")
    expect(block).to_be_visible()
    expect(block).to_contain_text("/acme/gitops.git at main…")
    expect(page.locator("section.preview")).to_have_count(0)

    [queued] = memory_broker.take("forge")
    assert queued.task == "delivery.preview_pull_requests"
    tasks.preview_pull_requests(*queued.args, **queued.kwargs)  # as the forge worker would
    expect(page.locator("section.preview")).to_be_visible(timeout=10_000)
    expect(page.locator("#preview-body.preview-progress")).to_have_count(0)
    expect(page.locator("button:has-text('Open pull request')")).to_be_enabled()
