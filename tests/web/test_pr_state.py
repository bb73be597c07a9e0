"""The one PR state badge (portal.web.badges.pr_state_html) on every page that links a pull request:
Updates, the matrix, the service panels, /gitops and Delivery, for an open PR with failing checks
(linked to where the forge shows them), one opened outside the portal (its hover), a merged one
whose version does not run yet (with why), and a closed one (the offer comes back beside it)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.delivery.models import PullRequest
from portal.releases.models import Release
from portal.web.badges import pr_state_html
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

URL = "https://github.com/acme/gitops/pull/12"
OFFER = "Open PR → 1.7.0"
WHY = "merged, not deployed — dev-eu-1: Argo CD has not synced checkout-dev since the merge"


@pytest.fixture
def behind(catalog):
    now = timezone.now()
    for tag in ("1.6.0", "1.7.0"):
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
    return seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0",
                    revision_changed_at=now - timedelta(days=1))


def pr(state: str, **extra) -> PullRequest:
    now = timezone.now()
    fields = {
        "kind": "upgrade", "services": ["checkout"], "environment": "dev", "clusters": ["dev-eu-1"],
        "repository": "https://github.com/acme/gitops", "forge_kind": "github", "number": 12, "url": URL,
        "title": "Update checkout to 1.7.0 in dev", "branch": "portal/checkout-1.7.0-dev", "base_branch": "main",
        "state": state, "from_version": "1.6.0", "to_version": "1.7.0", "image": "ghcr.io/acme/checkout",
        "opened_at": now - timedelta(hours=3),
    }
    if state == "merged":
        fields["merged_at"] = now - timedelta(hours=2)
    if state == "closed":
        fields["closed_at"] = now - timedelta(hours=2)
    return PullRequest.objects.create(**{**fields, **extra})


PAGES = {
    "updates": lambda: reverse("updates"),
    "matrix": lambda: reverse("matrix"),
    "service": lambda: reverse("service", args=["checkout"]),
    "gitops": lambda: reverse("gitops"),
    "delivery": lambda: reverse("delivery"),
}
OFFERING = ("updates", "matrix", "service")  # the pages that offer "Open PR"


def page(client, users, name: str) -> str:
    client.force_login(users["member"])
    response = client.get(PAGES[name]())
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("name", list(PAGES))
def test_an_open_pr_with_failing_checks_replaces_the_offer_and_links_the_failing_check(
    behind, client, users, name
):
    pr("open", checks="fail")
    html = page(client, users, name)
    assert f'href="{URL}"' in html and "PR #12 open" in html
    assert f'href="{URL}/checks"' in html and "checks fail" in html
    assert OFFER not in html


@pytest.mark.parametrize("name", list(PAGES))
def test_a_pr_opened_outside_the_portal_says_so_on_hover(behind, client, users, name):
    pr("open", checks="running", opened_outside=True, title="Update ghcr.io/acme/checkout Docker tag to v1.7.0")
    html = page(client, users, name)
    assert 'title="Opened outside the portal: Update ghcr.io/acme/checkout Docker tag to v1.7.0"' in html
    assert "checks running" in html and OFFER not in html


@pytest.mark.parametrize("name", list(PAGES))
def test_a_merged_pr_not_deployed_says_why_and_offers_nothing(behind, client, users, name):
    pr("merged", checks="pass")
    html = page(client, users, name)
    assert "PR #12 merged" in html and "checks pass" in html
    assert OFFER not in html
    if name == "matrix":  # a cell keeps it short: the reason is the hover
        assert 'title="dev-eu-1: Argo CD has not synced checkout-dev since the merge' in html
    elif name != "delivery":  # Delivery says why in its own column, beside the badge
        assert WHY in html
    else:
        assert "Argo CD has not synced checkout-dev since the merge" in html


@pytest.mark.parametrize("name", list(PAGES))
def test_a_closed_pr_brings_the_offer_back_beside_it(behind, client, users, name):
    pr("closed", checks="fail")
    html = page(client, users, name)
    if name == "gitops":
        assert "PR #12" not in html  # /gitops lists the pull requests still changing an application
        return
    assert "PR #12 closed" in html
    assert "checks fail" not in html  # a closed PR's checks no longer matter
    assert (OFFER in html) is (name in OFFERING)


def test_the_failing_check_the_forge_named_is_linked_rather_than_the_checks_list(behind, client, users):
    pr("open", checks="fail", checks_url="https://ci.example/acme/gitops/runs/991")
    html = page(client, users, "updates")
    assert 'href="https://ci.example/acme/gitops/runs/991"' in html and f'href="{URL}/checks"' not in html


def test_a_pr_without_an_http_link_is_shown_without_one_and_every_part_is_escaped():
    row = PullRequest(state="open", number=3, url="javascript:alert(1)", title='<b>"x"</b>', checks="fail",
                      forge_kind="github", opened_outside=True)
    html = pr_state_html(row)
    assert "javascript:" not in html and "<b>" not in html
    assert "&lt;b&gt;&quot;x&quot;&lt;/b&gt;" in html and "checks fail" in html
    assert pr_state_html(PullRequest(state="opening")).count("PR being opened") == 1


def test_gitops_shows_what_git_pins_and_the_service_panels_link_to_it_filtered(behind, catalog, client, users):
    from tests.fixtures.seed import seed_pin

    seed_pin(behind, catalog.checkout, "1.7.0", line=4)
    other = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.1.0")
    seed_pin(other, catalog.payments, "3.1.0", line=7)
    client.force_login(users["viewer"])

    service = client.get(reverse("service", args=["checkout"])).content.decode()
    link = reverse("gitops") + "?service=checkout&amp;environment=dev"
    assert f'href="{link}"' in service

    filtered = client.get(reverse("gitops") + "?service=checkout&environment=dev").content.decode()
    assert 'data-app="checkout-dev"' in filtered and 'data-app="payments-prod"' not in filtered
    assert "Git pins 1.7.0, runs 1.6.0" in filtered
    everything = client.get(reverse("gitops")).content.decode()
    assert "Git pins 3.1.0" in everything  # pins and runs agree: what Git pins, still said
