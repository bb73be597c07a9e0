"""The hub demo (`make run`: load_demo, the demo releases, the demo forge) in headless Chromium,
on the pages tests/web/test_browser_hub.py does not cover: hub-managed apps are named with their
Argo CD instance on /gitops and the service page, are behind on Updates under their destination,
get an upgrade PR preview that edits the demo GitOps repository and names the destination, and
a merged PR waiting on a hub-managed destination says why on Delivery (the hub's AppProject's
sync window). Screenshots go to test-artifacts/hub-*.png.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from forges.demo import build_demo_repo
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, grant
from tests.fixtures.browser import screenshot, submit_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "hub-member-pass-123"
FREEZE = "Launch freeze: prod-sa-1"


@pytest.fixture
def hub_demo(live_server, settings, tmp_path):
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)
    call_command("load_demo_releases", verbosity=0)
    user = get_user_model().objects.create_user("noor", password=PASSWORD)
    grant(user, Role.MEMBER)
    return live_server


def login(page, server) -> None:
    submit_login(page, server.url, "noor", PASSWORD)


def test_gitops_rows_name_the_hub_argo_cd_that_deploys_them(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/gitops?cluster=prod-sa-1")
    row = page.locator("tr.app-row[data-app=checkout-prod-sa-1]")
    via = row.locator(".argocd-via")
    assert via.inner_text().strip() == "via Argo CD mgmt-hub"
    assert via.get_attribute("data-argocd-instance") == "mgmt-hub"
    # Filed under its destination and environment, not the hub's.
    cluster_cell = row.locator("td").nth(1).inner_text()
    assert "prod-sa-1" in cluster_cell and "mgmt-hub" not in cluster_cell
    # A standalone cluster's app names its own Argo CD.
    page.goto(f"{hub_demo.url}/gitops?cluster=prod-eu-1")
    assert "via Argo CD prod-eu-1" in page.locator("tr.app-row").first.inner_text()
    page.goto(f"{hub_demo.url}/gitops?cluster=prod-sa-1")
    screenshot(page, "hub-gitops-via")


def test_service_panel_names_the_hub_argo_cd(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/services/checkout")
    panel = page.locator("section.panel[data-app=checkout-prod-sa-1]")
    panel.wait_for()
    heading = panel.locator("h3").inner_text()
    assert heading.startswith("prod-sa-1 · Argo CD Application") and "via Argo CD mgmt-hub" in heading
    assert "versions as Argo CD reports them" in panel.inner_text()
    panel.scroll_into_view_if_needed()
    screenshot(page, "hub-service-via")


def test_updates_lists_hub_apps_behind_under_their_destination_and_previews_the_upgrade(eager_celery, page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/updates")
    row = page.locator("tr[data-service=checkout][data-app=checkout-prod-sa-1]")
    assert row.count() == 1
    cells = row.locator("td")
    assert cells.nth(2).inner_text().strip() == "prod"
    assert cells.nth(3).inner_text().strip() == "prod-sa-1 · checkout-prod-sa-1"
    assert cells.nth(4).inner_text().strip() == "3.3.1"  # as Argo CD reports it: prod-sa-1 is not read
    assert row.get_attribute("data-target") == "3.4.1"
    # The other hub destination (read by the portal) is behind too, on its own row.
    assert page.locator("tr[data-service=checkout][data-app=checkout-prod-eu-2]").count() == 1
    row.scroll_into_view_if_needed()
    screenshot(page, "hub-updates")

    row.locator("a.open-pr").click()
    page.wait_for_url("**/pr/preview?**")
    preview = page.locator("section.preview").first
    text = preview.inner_text()
    assert "Could not read the repository" not in text
    assert "Update checkout to 3.4.1 in prod" in text
    assert "prod · prod-sa-1" in text
    # The hub's AppProject holds prod-sa-1: the preview says merging will not deploy it yet.
    assert "A sync window holds checkout-prod-sa-1 on prod-sa-1" in text
    assert preview.locator(".diff .del").first.inner_text().strip() == '-    newTag: "3.3.1"'
    assert preview.locator(".diff .add").first.inner_text().strip() == '+    newTag: "3.4.1"'
    screenshot(page, "hub-upgrade-preview")


def test_delivery_says_why_a_merged_pr_waits_on_a_hub_managed_destination(page, hub_demo):
    now = timezone.now()
    PullRequest.objects.create(
        kind="upgrade", services=["checkout"], environment="prod", clusters=["prod-sa-1"],
        repository="https://github.com/acme-shop/gitops.git", forge_kind="github", number=481,
        url="https://github.com/acme-shop/gitops/pull/481", title="Update checkout to 3.4.1 in prod",
        branch="portal/checkout-3.4.1-prod", base_branch="main", state="merged", from_version="3.3.1",
        to_version="3.4.1", opened_at=now - timedelta(hours=3), merged_at=now - timedelta(hours=2),
    )
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/delivery")
    waiting = page.locator("tr[data-pr] .why").first
    text = waiting.inner_text()
    # The window lives in the hub's AppProject `regions`; it holds the app on its destination.
    assert text.startswith(f"prod-sa-1: a sync window '{FREEZE}"), text
    assert text.endswith("holds checkout-prod-sa-1"), text
    screenshot(page, "hub-delivery")
