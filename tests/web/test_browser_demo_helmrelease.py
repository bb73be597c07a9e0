"""The demo as `make run` serves it, in headless Chromium: Delivery → "Open PR → prod" for the Flux
HelmRelease `notifications` previews the values edit beside the HelmRelease in the demo GitOps
repository (examples/gitops-repo through the demo forge), not a change aimed at the Helm chart
repository. Screenshot: test-artifacts/demo-helmrelease-preview.png."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from forges.demo import build_demo_repo
from portal.kernel.accounts.roles import Role, grant
from tests.fixtures.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VALUES = "apps/notifications/overlays/prod/values.yaml"


@pytest.fixture
def demo(live_server, settings, tmp_path):
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)
    call_command("load_demo_releases", verbosity=0)
    user = get_user_model().objects.create_user("mara", password="mara-pass-123")
    grant(user, Role.MEMBER)
    return live_server


def test_delivery_open_pr_to_prod_for_the_helmrelease_previews_its_values_in_git(eager_celery, page, demo):
    page.goto(f"{demo.url}/accounts/login/")
    page.fill("input[name=username]", "mara")
    page.fill("input[name=password]", "mara-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{demo.url}/")

    page.goto(f"{demo.url}/delivery")
    row = page.locator("tr.promotion[data-service=notifications]")
    row.locator("a.promote[data-cluster=prod-us-1]").click()
    page.wait_for_url("**/pr/preview?**")

    preview = page.locator("section.preview").first
    text = preview.inner_text()
    assert "Could not read the repository" not in text
    assert "charts.acme-shop.io" not in text
    assert VALUES in text
    assert preview.locator(".diff .del").first.inner_text().strip() == '-  tag: "0.8.4"'
    assert preview.locator(".diff .add").first.inner_text().strip() == '+  tag: "0.9.0"'
    # The demo never opens pull requests: the button is there, disabled, and says why.
    assert page.locator("button.primary[disabled]").count() == 1
    screenshot(page, "demo-helmrelease-preview")


CHART_RELEASE = "apps/notifications/overlays/prod/helmrelease.yaml"


def test_updates_and_delivery_offer_the_demo_chart_version_and_preview_only_its_line(eager_celery, page, demo):
    page.goto(f"{demo.url}/accounts/login/")
    page.fill("input[name=username]", "mara")
    page.fill("input[name=password]", "mara-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{demo.url}/")

    # Updates: prod-us-1's HelmRelease pins the chart at 0.3.1; the chart repository lists 0.3.2.
    page.goto(f"{demo.url}/updates")
    row = page.locator('tr[data-chart="notifications"][data-app="notifications"]')
    assert row.locator(".upgrade-target").inner_text().strip() == "0.3.2"
    row.scroll_into_view_if_needed()
    screenshot(page, "demo-chart-upgrade-offer")
    row.locator("a.open-pr").click()
    page.wait_for_url("**/pr/preview?**")
    preview = page.locator("section.preview").first
    text = preview.inner_text()
    assert "Could not read the repository" not in text and CHART_RELEASE in text
    assert [d.inner_text().strip() for d in preview.locator(".diff .del").all()] == ['-      version: "0.3.1"']
    assert [a.inner_text().strip() for a in preview.locator(".diff .add").all()] == ['+      version: "0.3.2"']
    screenshot(page, "demo-chart-upgrade-preview")

    # Delivery: staging pins 0.3.2, so the chart promotion waits for prod, with the same one-line edit.
    page.goto(f"{demo.url}/delivery")
    promotion = page.locator('tr.chart-promotion[data-chart="notifications"]')
    promotion.locator("a.promote-chart[data-cluster=prod-us-1]").click()
    page.wait_for_url("**/pr/preview?**")
    preview = page.locator("section.preview").first
    assert "Promote the notifications chart 0.3.2 to prod" in page.content()
    assert [d.inner_text().strip() for d in preview.locator(".diff .del").all()] == ['-      version: "0.3.1"']
    assert [a.inner_text().strip() for a in preview.locator(".diff .add").all()] == ['+      version: "0.3.2"']
    screenshot(page, "demo-chart-promotion-preview")
