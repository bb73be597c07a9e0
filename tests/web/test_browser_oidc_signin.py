"""Signing in through a real OpenID Connect provider in headless Chromium: django-oidc-provider as
its own process (tests/fakes/oidc_provider), its own login form filled as a person would. An admin
group's user is an admin, a member group's user can open a pull request from the preview, a user in
no mapped group reads why, and signing out ends the portal's session and the provider's.
Screenshots: test-artifacts/oidc-*.png."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.delivery.models import ServicePolicy
from portal.kernel.accounts import oidc
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fakes.oidc_provider import Person, start_provider, stop_provider
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app, seed_pin

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROD = "apps/checkout/overlays/prod"
ADA = Person("ada", "ada-pass-123", "ada@example.com", ("platform-admins",))
MARA = Person("mara", "mara-pass-123", "mara@example.com", ("checkout-devs",))
NOBODY = Person("nobody", "nobody-pass-123", "nobody@example.com", ("marketing",))


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory):
    started = start_provider(
        tmp_path_factory.mktemp("idp"),
        people=[ADA, MARA, NOBODY],
        redirect_uris=[f"{live_server.url}/accounts/oidc/callback/"],
        post_logout_redirect_uris=[f"{live_server.url}/accounts/login/"],
    )
    oidc._clients.clear()
    yield started
    stop_provider(started)


@pytest.fixture
def portal(live_server, provider, settings, monkeypatch):
    for name, value in provider.portal_settings().items():
        setattr(settings, name, value)
    settings.PORTAL_OIDC_NAME = "Example SSO"
    settings.PORTAL_OIDC_ADMIN_GROUPS = ["platform-admins"]
    settings.PORTAL_OIDC_MEMBER_GROUPS = ["checkout-devs"]
    settings.PORTAL_OIDC_VIEWER_GROUPS = ["readers"]
    with serving("github", monkeypatch) as github:
        catalog = make_catalog()
        now = timezone.now()
        for tag in ("1.6.0", "1.7.0"):
            Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
        ServicePolicy.objects.create(service=catalog.checkout, accept="minor")
        app = seed_app(
            catalog.prod_eu,
            "checkout-prod",
            service=catalog.checkout,
            version="1.6.0",
            repo_url=github.repository,
            path=PROD,
        )
        seed_pin(app, catalog.checkout, "1.6.0", path=f"{PROD}/values.yaml", line=4, read_at=now)
        yield live_server


def sign_in(page, portal, provider, person: Person) -> None:
    page.goto(f"{portal.url}/accounts/login/")
    page.click("a.oidc-login")
    page.wait_for_url(f"{provider.site_url}/login/**")
    page.fill("#provider-username", person.username)
    page.fill("#provider-password", person.password)
    page.click("#provider-submit")
    page.wait_for_url(f"{portal.url}/**")


def test_an_admin_group_user_is_an_admin(page, portal, provider):
    page.goto(f"{portal.url}/accounts/login/")
    assert page.locator("a.oidc-login").inner_text() == "Sign in with Example SSO"
    screenshot(page, "oidc-login")
    sign_in(page, portal, provider, ADA)
    assert page.url == f"{portal.url}/"
    answer = page.goto(f"{portal.url}/discovery")  # admins only
    assert answer.status == 200 and page.locator("header a[href='/accounts/profile/']").inner_text() == "ada"
    screenshot(page, "oidc-admin")


def test_a_member_group_user_can_open_a_pull_request_from_the_preview(eager_celery, page, portal, provider):
    sign_in(page, portal, provider, MARA)
    page.goto(f"{portal.url}/updates")
    page.click("tr[data-app=checkout-prod] a.open-pr")
    page.wait_for_url("**/pr/preview?**")
    button = page.locator("button:has-text('Open pull request')")
    assert button.is_visible() and button.is_enabled()
    screenshot(page, "oidc-member-preview")


def test_a_user_in_no_mapped_group_reads_why(page, portal, provider):
    sign_in(page, portal, provider, NOBODY)
    text = page.locator("section.no-role").inner_text()
    assert "Your account nobody signed in through Example SSO but is in none of the groups" in text
    assert "platform-admins, checkout-devs, readers" in text and "marketing" in text
    screenshot(page, "oidc-no-role")
    page.goto(f"{portal.url}/updates")
    assert page.url.startswith(f"{portal.url}/accounts/login/")


def test_sign_out_ends_the_session_here_and_at_the_provider(page, portal, provider):
    sign_in(page, portal, provider, ADA)
    visited: list[str] = []
    page.on("request", lambda request: visited.append(request.url))
    page.click("header button:has-text('Log out')")
    page.wait_for_url(f"{portal.url}/accounts/login/")
    assert any(url.startswith(f"{provider.end_session_url}?") for url in visited)
    page.goto(f"{portal.url}/discovery")
    assert page.url.startswith(f"{portal.url}/accounts/login/")  # asks to sign in again
    screenshot(page, "oidc-signed-out")
    # The provider's session ended too: signing in asks for the password again.
    page.click("a.oidc-login")
    page.wait_for_url(f"{provider.site_url}/login/**")
