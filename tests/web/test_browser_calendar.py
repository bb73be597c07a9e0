"""/calendar as a person sees it in Debian's headless Chromium: the lanes drawn, a band's times
in UTC and in its window's zone, the nav link, and a feed address made on the feeds page.
The screenshot goes to test-artifacts/calendar.png to be looked at."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from gitops.models import AppProject
from portal.delivery.models import ChangeFreeze
from portal.kernel.accounts.roles import Role, grant
from tests.fixtures.browser import screenshot, submit_login
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def seeded(live_server):
    catalog = make_catalog()
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="shop", sync_windows=[
        {"kind": "deny", "schedule": "0 18 * * 5", "duration": "62h", "timeZone": "Europe/Berlin",
         "applications": ["checkout-*"], "description": "weekend freeze"},
        {"kind": "allow", "schedule": "0 7 * * 1-5", "duration": "10h", "timeZone": "Europe/Berlin",
         "namespaces": ["shop"], "description": "office hours", "manualSync": True},
    ])
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, project="shop",
             destination_namespace="shop", destination_server="https://kubernetes.default.svc")
    seed_app(catalog.prod_us, "payments-us", service=catalog.payments, tool="flux", suspended=True)
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now + timedelta(days=3), ends_at=now + timedelta(days=4),
                                         reason="quarter close")
    freeze.environments.add(catalog.prod)
    user = get_user_model().objects.create_user("vera", password="vera-pass-123")
    grant(user, Role.VIEWER)
    return live_server


def test_the_calendar_draws_the_environment_s_holds(page, seeded):
    submit_login(page, seeded.url, "vera", "vera-pass-123")
    page.click("nav >> text=Calendar")
    page.select_option("select[name=environment]", "prod")
    page.click("#calendar-filters button[type=submit]")
    page.wait_for_url("**/calendar?environment=prod*")
    kinds = page.locator("tr.lane").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert set(kinds) == {"deny", "allow", "outside-allow", "freeze", "suspended"}
    deny = page.locator("tr.lane-deny")
    # Two Friday evenings in 14 days, and one more weekend when today is still inside one.
    count = deny.locator("rect.band").count()
    assert count == int(deny.get_attribute("data-bands")) and count in (2, 3)
    box = deny.locator("svg[role=img]").bounding_box()
    bands = [deny.locator("rect.band").nth(i).bounding_box() for i in range(count)]
    assert all(box["x"] <= b["x"] and b["x"] + b["width"] <= box["x"] + box["width"] + 1 for b in bands)
    assert max(b["width"] for b in bands) > box["width"] / 14  # 62 hours: more than a day's column
    deny.locator("details.band-times summary").click()
    times = deny.locator("details.band-times li").nth(count - 1).inner_text()
    assert times.startswith("Fri") and "UTC" in times and ("CET" in times or "CEST" in times)
    assert page.locator("#next-deploys tr[data-service=payments] td.next-deploy-at").inner_text() == "no end in sight"
    screenshot(page, "calendar")


def test_a_feed_address_is_shown_once_on_the_feeds_page(page, seeded):
    submit_login(page, seeded.url, "vera", "vera-pass-123")
    page.goto(f"{seeded.url}/calendar/feeds")
    page.fill("input[name=name]", "work")
    page.click("button:text('Create feed')")
    address = page.locator("code[data-environment=prod]").inner_text()
    assert address.startswith(f"{seeded.url}/calendar/feeds/gcal_") and address.endswith("/environments/prod.ics")
    page.goto(f"{seeded.url}/calendar/feeds")
    assert page.locator("code[data-environment=prod]").count() == 0
    assert page.locator("tr[data-feed]").count() == 1
