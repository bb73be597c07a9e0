"""The pages as a person sees them, in Debian's headless Chromium. Screenshots go to
test-artifacts/ to be looked at."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.kernel.accounts.roles import Role, grant
from tests.fixtures.browser import ARTIFACTS, screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def seeded(live_server):
    catalog = make_catalog()
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
             since=timedelta(minutes=42), health_message="Deployment payments exceeded its progress deadline",
             sync_blocked=True, sync_blocked_until=now + timedelta(hours=6),
             sync_window={"kind": "deny", "description": "payments change freeze", "schedule": "0 0 * * *"})
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, version="2.6.0",
             sync="OutOfSync", since=timedelta(minutes=2))
    seed_app(catalog.prod_us, "payments-us", service=catalog.payments, version="2.4.1", tool="flux",
             suspended=True)
    user = get_user_model().objects.create_user("vera", password="vera-pass-123")
    grant(user, Role.VIEWER)
    return live_server


def login(page, server):
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "vera")
    page.fill("input[name=password]", "vera-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_home_page_shows_tiles_with_the_degraded_service_first(page, seeded):
    login(page, seeded)
    tiles = page.locator(".tile h3 a").all_inner_texts()
    assert tiles[0] == "payments"
    assert "attention" in page.locator(".tile").first.get_attribute("class")
    assert page.locator(".count").first.inner_text().startswith("1")
    screenshot(page, "overview")


def test_gitops_list_badges_and_needs_attention_toggle_in_the_url(page, seeded):
    login(page, seeded)
    page.goto(f"{seeded.url}/gitops")
    rows = page.locator("tr.app-row")
    assert rows.first.get_attribute("data-app") == "payments-prod"
    window = page.locator("tr[data-app=payments-prod] .badge.window")
    title = window.get_attribute("title")
    assert title.startswith("deny 'payments change freeze' until ")
    assert page.locator("tr[data-app=payments-us] .badge.suspended").count() == 1
    screenshot(page, "gitops")

    page.check("input[name=attention]")
    page.wait_for_url("**attention=1**")
    page.wait_for_function("document.querySelectorAll('tr.app-row').length === 1")
    assert page.locator("tr.app-row").first.get_attribute("data-app") == "payments-prod"
    screenshot(page, "gitops-needs-attention")

    page.reload()  # the filtered view survives a reload: it lives in the URL
    assert page.locator("input[name=attention]").is_checked()
    assert page.locator("tr.app-row").count() == 1


def test_matrix_and_service_page(page, seeded):
    login(page, seeded)
    page.goto(f"{seeded.url}/matrix")
    cell = page.locator("tr[data-service=payments] td.attention")
    assert cell.count() == 1
    assert "Argo: degraded" in cell.inner_text()
    assert "since" in cell.locator(".cell-line").first.get_attribute("title")
    screenshot(page, "matrix")

    page.goto(f"{seeded.url}/services/payments")
    assert page.locator("section.panel[data-app]").count() == 3  # one GitOps panel per application
    assert "Degraded" in page.locator("section[data-app=payments-prod]").inner_text()
    screenshot(page, "service-payments")


# The pages' refreshes, made short so a test sees several: every "every 30s" the server writes
# becomes every 0.4 s, in the page and in each partial, so a second poller would show at once.
POLL_MS = 400
RECORD_POLLS = """
window.polls = [];
window.settled = [];
document.addEventListener("htmx:beforeRequest", () => window.polls.push(performance.now()));
document.addEventListener("htmx:afterSettle", () => window.settled.push([
  document.querySelectorAll("[id=overview-body]").length,
  document.querySelectorAll("[hx-trigger*=every]").length,
]));
"""


def short_polls(route):
    response = route.fetch()
    body = response.text().replace('hx-trigger="every 30s"', f'hx-trigger="every {POLL_MS}ms"')
    route.fulfill(response=response, body=body)


def test_the_overview_has_one_body_and_one_poller_at_first_and_after_every_refresh(page, seeded):
    login(page, seeded)
    page.add_init_script(RECORD_POLLS)
    page.route(f"{seeded.url}/", short_polls)
    page.goto(f"{seeded.url}/")
    assert page.locator("[id=overview-body]").count() == 1
    assert page.locator("[hx-trigger*=every]").count() == 1

    page.wait_for_function("window.settled.length >= 4", timeout=15000)
    polls = page.evaluate("window.polls")
    assert all(counts == [1, 1] for counts in page.evaluate("window.settled")), page.evaluate("window.settled")
    # One poller asks once per interval; two would ask twice in the same tick.
    gaps = [later - earlier for earlier, later in zip(polls, polls[1:], strict=False)]
    assert polls[0] >= POLL_MS * 0.8 and all(gap >= POLL_MS * 0.5 for gap in gaps), (polls, gaps)
    assert page.locator(".tile h3 a").first.inner_text() == "payments"  # the refreshed body still shows the tiles


@pytest.mark.parametrize("path", ["/", "/gitops", "/matrix", "/services/payments", "/delivery"])
def test_every_refreshing_page_has_one_poller_with_an_id_of_its_own(page, seeded, path):
    login(page, seeded)
    page.goto(f"{seeded.url}{path}")
    pollers = page.eval_on_selector_all("[hx-trigger*=every]", "found => found.map(element => element.id)")
    assert len(pollers) == 1 and pollers[0], pollers
    assert page.locator(f"[id={pollers[0]}]").count() == 1


def test_the_api_docs_page_draws_the_schema_with_swagger_ui_from_the_portal_alone(page, seeded):
    login(page, seeded)
    elsewhere = []
    page.on("request", lambda request: None if request.url.startswith(seeded.url) else elsewhere.append(request.url))
    page.goto(f"{seeded.url}/api/docs")
    page.wait_for_selector("#swagger-ui .opblock")
    page.wait_for_selector("#swagger-ui .models")
    # gitops, its detail, pull-requests, one of them, projects, workloads, services, findings, security
    assert page.locator("#swagger-ui .opblock-get").count() == 9
    shown = page.locator("#swagger-ui").inner_text()
    for text in ("/api/v1/gitops", "/api/v1/pull-requests", "needs_attention", "sync_blocked_until", "after_change"):
        assert text in shown, text
    assert elsewhere == []
    screenshot(page, "api-docs")
    page.screenshot(path=str(ARTIFACTS / "api-docs-top.png"))  # the full page is long: its first screen too
