"""/discovery in headless Chromium: an admin ticks two unclaimed images, edits a suggested
name, adds them as services in one click, and sees which apps they claimed; the page is
admins' only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from gitops.models import GitOpsApp
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.models import Service
from tests.fixtures.browser import screenshot
from tests.gitops.test_discovery import fleet  # noqa: F401 - the polled two-cluster fleet


def login(page, server, username: str) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"{username}-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


@pytest.fixture
def people(db):
    made = {}
    for name, role in (("ada", Role.ADMIN), ("vera", Role.VIEWER)):
        user = get_user_model().objects.create_user(name, password=f"{name}-pass-123")
        grant(user, role)
        made[name] = user
    return made


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_adds_discovered_images_as_services_in_one_click(page, live_server, fleet, people):  # noqa: F811
    login(page, live_server, "ada")
    page.click("nav >> text=Discovery")
    page.wait_for_url(f"{live_server.url}/discovery")
    billing = page.locator("tr[data-image='ghcr.io/acme/billing-api']")
    assert billing.locator("td.claims").inner_text().split() == [
        "prod-eu-1/argocd/billing-prod", "staging-eu-1/argocd/billing-staging"]
    assert billing.locator("input[name='name:ghcr.io/acme/billing-api']").input_value() == "billing-api"

    billing.locator("input[type=checkbox]").check()
    billing.locator("input[name='name:ghcr.io/acme/billing-api']").fill("billing")
    page.locator("tr[data-image='ghcr.io/acme/ledger'] input[type=checkbox]").check()
    page.click("button:has-text('Add as services')")
    page.wait_for_selector(".messages .success")
    screenshot(page, "discovery-added")

    messages = page.locator(".messages").inner_text()
    assert "Added billing (ghcr.io/acme/billing-api): claims 2 app(s)." in messages
    assert "Added ledger (ghcr.io/acme/ledger): claims 1 app(s)." in messages
    assert page.locator("tr[data-image='ghcr.io/acme/billing-api']").count() == 0
    assert page.locator("tr[data-image='ghcr.io/acme/web']").count() == 1
    assert Service.objects.get(name="billing").team == "payments-team"
    assert sorted(GitOpsApp.objects.filter(services__name="billing").values_list("name", flat=True)) == [
        "billing-prod", "billing-staging"]
    assert AuditLog.objects.filter(action="service.added_from_discovery", actor_name="ada").count() == 2


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_viewer_gets_no_discovery_page_and_no_link(page, live_server, fleet, people):  # noqa: F811
    login(page, live_server, "vera")
    assert page.locator("nav >> text=Discovery").count() == 0
    response = page.goto(f"{live_server.url}/discovery")
    assert response is not None and response.status == 403


# ------------------------------------------------------------- the form, without a browser


@pytest.mark.django_db
def test_only_an_admin_may_post_and_a_member_changes_nothing(client, fleet, people):  # noqa: F811
    member = get_user_model().objects.create_user("mo", password="mo-pass-123")
    grant(member, Role.MEMBER)
    client.force_login(member)
    response = client.post("/discovery", {"action": "add", "image": ["ghcr.io/acme/web"],
                                          "name:ghcr.io/acme/web": "web"})
    assert response.status_code == 403
    assert not Service.objects.filter(name="web").exists()


@pytest.mark.django_db
def test_a_rejected_add_says_why_and_adds_nothing(client, fleet, people):  # noqa: F811
    client.force_login(people["ada"])
    response = client.post("/discovery", {"action": "add", "image": ["ghcr.io/acme/web", "ghcr.io/acme/cat"],
                                          "name:ghcr.io/acme/web": "web", "name:ghcr.io/acme/cat": "web"},
                           follow=True)
    text = response.content.decode()
    assert "&#x27;web&#x27; is chosen for another image too" in text and "No service was added." in text
    assert not Service.objects.filter(name="web").exists()


@pytest.mark.django_db
def test_ignore_from_the_page_hides_the_image_and_is_audited(client, fleet, people):  # noqa: F811
    client.force_login(people["ada"])
    client.post("/discovery", {"action": "ignore", "image": ["registry.k8s.io/coredns/coredns"]})

    assert "registry.k8s.io/coredns/coredns" not in client.get("/discovery").content.decode()
    assert "registry.k8s.io/coredns/coredns" in client.get("/discovery?ignored=1").content.decode()
    assert AuditLog.objects.filter(action="image.ignored", actor_name="ada",
                                   target="registry.k8s.io/coredns/coredns").exists()
