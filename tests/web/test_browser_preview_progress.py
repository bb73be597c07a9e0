"""Following an offer says at once that the repository is being read: the preview answers only
once it has read the files (a second or more on a large repository), and until then the page the
person clicked on must not look as if nothing happened. The preview's request is held in the
browser (Playwright's routing) so the test sees the wait itself, however fast the fake answers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.accounts.roles import Role, grant
from portal.delivery.models import ServicePolicy
from portal.releases.models import Release
from tests.fixtures.browser import submit_login
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app
from tests.forge_fakes.harness import serving

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


def test_an_offer_shows_progress_while_the_preview_reads_the_repository(page, seeded):
    from playwright.sync_api import expect

    submit_login(page, seeded.url, "mara", "mara-pass-123")
    page.goto(f"{seeded.url}/updates")
    progress = page.locator("#forge-progress")
    expect(progress).to_be_hidden()

    held: list = []
    page.route("**/pr/preview?**", lambda route: held.append(route))  # waits until the test lets it go
    page.click("tr[data-app=checkout-prod] a.open-pr", no_wait_after=True)
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Reading the repository")
    assert page.locator("tr[data-app=checkout-prod] a.open-pr").get_attribute("aria-busy") == "true"
    assert "/updates" in page.url  # still the page clicked on, and it says why

    for _ in range(500):  # the held request reaches the handler when Playwright next dispatches
        if held:
            break
        page.wait_for_timeout(10)
    assert len(held) == 1
    held[0].continue_()
    page.wait_for_url("**/pr/preview?**")
    expect(page.locator("h3").first).to_have_text("Update checkout to 1.7.0 in prod")
    expect(page.locator("#forge-progress")).to_be_hidden()  # the answer is the preview, no spinner left


def test_back_from_the_preview_shows_no_spinner_left_over(page, seeded):
    from playwright.sync_api import expect

    submit_login(page, seeded.url, "mara", "mara-pass-123")
    page.goto(f"{seeded.url}/updates")
    page.click("tr[data-app=checkout-prod] a.open-pr")
    page.wait_for_url("**/pr/preview?**")
    page.go_back()
    page.wait_for_url("**/updates")
    expect(page.locator("#forge-progress")).to_be_hidden()
