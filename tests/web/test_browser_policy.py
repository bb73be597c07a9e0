"""The version policy on the service page in headless Chromium: an admin sets a range, an
automatic-PR level and reviewers, sees the live preview of the newest acceptable release per
environment before saving, and saves; a viewer sees the policy but no form.
Screenshots: test-artifacts/policy-admin.png, test-artifacts/policy-viewer.png."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.delivery.models import ServicePolicy
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def seeded(live_server):
    catalog = make_catalog()
    now = timezone.now()
    for tag in ("1.6.0", "1.6.1", "1.7.0", "2.0.0"):
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    for name, role in (("ada", Role.ADMIN), ("vic", Role.VIEWER)):
        grant(get_user_model().objects.create_user(name, password=f"{name}-pass-123"), role)
    return live_server


def login(page, server, name):
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", f"{name}-pass-123")
    page.click("button[type=submit]")
    page.wait_for_load_state()


def test_an_admin_previews_and_saves_a_policy_and_a_viewer_reads_it(page, seeded):
    login(page, seeded, "ada")
    page.goto(f"{seeded.url}/services/checkout")
    saved_picks = page.locator("#policy > table.policy-picks")
    assert saved_picks.locator('tr[data-environment="dev"] td.newest').inner_text() == "2.0.0"

    page.click("#policy-edit summary")
    page.fill("input[name=range]", ">=1.6 <2")
    page.select_option("select[name=auto_pr__dev]", "minor")
    page.fill("input[name=pr_reviewers]", "alice, @acme/platform")
    page.fill("input[name=pr_labels]", "dependencies")
    # The live check (htmx): what this policy would pick, before anything is saved.
    check = page.locator("#policy-check")
    check.get_by_text("not saved yet").wait_for()
    page.wait_for_function(
        "() => document.querySelector('#policy-check tr[data-environment=\"dev\"] td.newest')?.innerText === '1.7.0'")
    dev = check.locator('tr[data-environment="dev"]')
    assert "automatic by policy" in dev.inner_text()
    assert "offered, not automatic" in check.locator('tr[data-environment="prod"]').inner_text()
    assert not ServicePolicy.objects.exists()

    # A typo is refused live, and the save button still refuses it if pressed.
    page.fill("input[name=range]", ">=1.6 <two")
    page.locator("#policy-check .policy-problem").wait_for()
    assert "'<two' in range" in page.locator("#policy-check").inner_text()
    page.fill("input[name=range]", ">=1.6 <2")
    page.wait_for_function(
        "() => document.querySelector('#policy-check tr[data-environment=\"dev\"] td.newest')?.innerText === '1.7.0'")
    screenshot(page, "policy-admin")

    page.click("button:has-text('Save policy')")
    page.locator(".policy-saved").wait_for()
    row = ServicePolicy.objects.get()
    assert row.range == ">=1.6 <2" and row.auto_pr == {"dev": "minor"}
    assert row.reviewers == ["alice", "@acme/platform"] and row.labels == ["dependencies"]
    assert AuditLog.objects.filter(action="policy.changed", actor_name="ada").count() == 1
    assert page.locator("#policy > table.policy-picks tr[data-environment='dev'] td.newest").inner_text() == "1.7.0"

    page.context.clear_cookies()
    login(page, seeded, "vic")
    page.goto(f"{seeded.url}/services/checkout")
    policy = page.locator("#policy")
    assert "alice, @acme/platform" in policy.locator(".policy-reviewers").inner_text()
    assert "dev: minor" in policy.locator(".policy-auto-pr").inner_text()
    assert page.locator("#policy-edit").count() == 0 and page.locator("form.policy-form").count() == 0
    screenshot(page, "policy-viewer")
