"""What holds a deploy, the next time a service can deploy, and the calendar's lanes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitops import syncwindows
from gitops.models import AppProject
from gitops.windowstate import app_target
from portal.delivery import deploy_calendar
from portal.delivery.deploy_holds import DeployHolds
from portal.delivery.models import ChangeFreeze
from tests.fixtures.seed import seed_app

MONDAY = datetime(2026, 3, 23, tzinfo=UTC)  # Berlin is UTC+1 this week until Sunday 29th
LUNCH_DENY = {"kind": "deny", "schedule": "0 12 * * *", "duration": "2h", "timeZone": "Europe/Berlin",
              "applications": ["checkout-*"], "description": "lunch <b>peak</b>"}
OFFICE_ALLOW = {"kind": "allow", "schedule": "0 9 * * 1-5", "duration": "8h", "timeZone": "Europe/Berlin",
                "namespaces": ["shop"], "description": "office hours"}


@pytest.fixture
def fleet(catalog):
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="shop",
                              sync_windows=[LUNCH_DENY, OFFICE_ALLOW])
    checkout = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, project="shop",
                        destination_namespace="shop", destination_server="https://kubernetes.default.svc")
    payments = seed_app(catalog.prod_us, "payments", service=catalog.payments, tool="flux", suspended=True)
    return catalog, checkout, payments


def holds(**kwargs):
    return DeployHolds.load(MONDAY, **kwargs)


def test_next_deploy_is_when_the_badge_says_the_deny_window_ends(fleet):
    catalog, checkout, _ = fleet
    at = MONDAY.replace(hour=11, minute=30)  # 12:30 in Berlin
    answer = holds().next_deploy("checkout", "prod", at)
    badge = syncwindows.evaluate([LUNCH_DENY, OFFICE_ALLOW], app_target(checkout), at)
    assert answer.at == badge.blocked_until == MONDAY.replace(hour=13)
    assert not answer.now
    assert answer.holds == [
        "checkout-prod on prod-eu-1: blocked by deny window 'lunch <b>peak</b>' until Mon 2026-03-23 13:00 UTC"]


def test_nothing_holds_a_deploy_inside_the_allow_window(fleet):
    at = MONDAY.replace(hour=9)
    answer = holds().next_deploy("checkout", "prod", at)
    assert answer.now and answer.at == at
    assert answer.reason == "nothing holds it"


def test_a_freeze_hands_over_to_the_next_allow_window(fleet):
    catalog, _, _ = fleet
    freeze = ChangeFreeze.objects.create(starts_at=MONDAY.replace(hour=12), ends_at=MONDAY.replace(hour=18),
                                         reason="quarter close")
    freeze.environments.add(catalog.prod)
    answer = holds().next_deploy("checkout", "prod", MONDAY.replace(hour=11, minute=30))
    # Deny ends 13:00 UTC inside the freeze; the freeze ends at 18:00 UTC, after office hours
    # (16:00 UTC); the allow window opens again Tuesday 09:00 Berlin = 08:00 UTC.
    assert answer.at == MONDAY + timedelta(days=1, hours=8)
    assert [hold.split(":")[0] for hold in answer.holds] == [
        "checkout-prod on prod-eu-1", "change freeze 'quarter close' until 2026-03-23 18", "checkout-prod on prod-eu-1"]
    assert "outside allow windows" in answer.holds[2]


def test_a_freeze_of_another_environment_holds_nothing_here(fleet):
    catalog, _, _ = fleet
    freeze = ChangeFreeze.objects.create(starts_at=MONDAY, ends_at=MONDAY + timedelta(days=3), reason="staging only")
    freeze.environments.add(catalog.staging)
    assert holds().next_deploy("checkout", "prod", MONDAY.replace(hour=9)).now


def test_a_suspended_flux_object_has_no_end_in_sight(fleet):
    answer = holds().next_deploy("payments", "prod", MONDAY)
    assert answer.at is None
    assert "suspended" in answer.reason


def test_a_service_not_deployed_there_has_no_answer(fleet):
    assert holds().next_deploy("checkout", "staging", MONDAY) is None


def test_the_calendar_lanes_of_an_environment(fleet):
    catalog, checkout, payments = fleet
    calendar = deploy_calendar.environment_calendar(holds(), "prod", MONDAY)
    lanes = {(lane.kind, lane.title): lane for lane in calendar.lanes}
    deny = lanes[("deny", "lunch <b>peak</b>")]
    # 14 days, crossing Berlin's spring-forward on the 29th: 11:00 UTC, then 10:00 UTC.
    assert len(deny.bands) == 14
    assert (deny.bands[0].start, deny.bands[0].end) == (MONDAY.replace(hour=11), MONDAY.replace(hour=13))
    assert deny.bands[-1].start == MONDAY + timedelta(days=13, hours=10)
    assert [app.name for app in deny.apps] == ["checkout-prod"] and deny.services == ["checkout"]
    assert deny.project == "shop" and deny.project_cluster == "prod-eu-1" and deny.time_zone == "Europe/Berlin"
    allow = lanes[("allow", "office hours")]
    assert len(allow.bands) == 10  # weekdays only
    outside = lanes[("outside-allow", "outside allow windows")]
    assert outside.bands[0].start == MONDAY and outside.bands[0].end == MONDAY.replace(hour=8)
    assert not any(a.start < o.end and o.start < a.end for a in allow.bands for o in outside.bands)
    # The weekend is outside office hours but for the lunch deny, which the deny lane shows.
    friday_evening = MONDAY + timedelta(days=4, hours=16)
    assert (friday_evening, friday_evening + timedelta(hours=19)) in [(o.start, o.end) for o in outside.bands]
    suspended = lanes[("suspended", "suspended (spec.suspend: true)")]
    assert suspended.open_ended and [app.name for app in suspended.apps] == ["payments"]


def test_the_calendar_filters_by_service_and_cluster(fleet):
    calendar = deploy_calendar.environment_calendar(holds(clusters=["prod-us-1"]), "prod", MONDAY)
    assert [lane.kind for lane in calendar.lanes] == ["suspended"]
    calendar = deploy_calendar.environment_calendar(holds(), "prod", MONDAY, service="checkout")
    assert "suspended" not in {lane.kind for lane in calendar.lanes}


def test_an_invalid_window_is_a_busy_lane_for_the_whole_stretch(fleet):
    AppProject.objects.filter(name="shop").update(sync_windows=[{**LUNCH_DENY, "duration": "2d"}])
    calendar = deploy_calendar.environment_calendar(holds(), "prod", MONDAY, days=2)
    [lane] = [lane for lane in calendar.lanes if lane.kind == "invalid"]
    assert lane.busy and lane.bands[0].start == MONDAY and lane.bands[0].end == MONDAY + timedelta(days=2)
    assert "cannot parse duration" in lane.note


def test_an_app_without_automated_sync_is_judged_for_a_manual_sync_and_noted(fleet):
    catalog, checkout, _ = fleet
    manual_deny = {**LUNCH_DENY, "manualSync": True}
    AppProject.objects.filter(name="shop").update(sync_windows=[manual_deny, OFFICE_ALLOW])
    type(checkout).objects.filter(pk=checkout.pk).update(manual_sync=True)
    # Inside the lunch deny, which lets manual syncs through: nothing holds a manual-only app.
    answer = holds().next_deploy("checkout", "prod", MONDAY.replace(hour=11, minute=30))
    assert answer.now
    assert answer.caveats == ["checkout-prod on prod-eu-1 has no automated sync: it deploys when someone syncs it"]
    calendar = deploy_calendar.environment_calendar(holds(), "prod", MONDAY, days=1)
    [manual] = [lane for lane in calendar.lanes if lane.kind == "manual"]
    assert manual.open_ended and [app.name for app in manual.apps] == ["checkout-prod"]
    deny = next(lane for lane in calendar.lanes if lane.kind == "deny")
    assert deny.manual_sync_allowed and not deny.open_ended


def test_apps_of_one_project_share_a_verdict_only_where_the_same_windows_match(fleet):
    """Verdicts are shared between apps the same windows match (a service in 1,000 clusters asks
    2,100 of them): on one AppProject, an app the lunch deny does not match is not held by it,
    and two AppProjects with the same windows on different clusters each hold their own apps."""
    catalog, _, _ = fleet
    AppProject.objects.create(cluster=catalog.prod_us, namespace="argocd", name="shop",
                              sync_windows=[LUNCH_DENY, OFFICE_ALLOW])
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, project="shop",
             destination_namespace="shop", destination_server="https://kubernetes.default.svc")
    seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, project="shop",
             destination_namespace="shop", destination_server="https://kubernetes.default.svc")
    at = MONDAY.replace(hour=11, minute=30)  # lunch in Berlin: checkout-* denied, the shop allowed
    loaded = holds()
    checkout = loaded.next_deploy("checkout", "prod", at)
    assert checkout.at == MONDAY.replace(hour=13)
    verdicts = {app.label: loaded.verdict(app, at) for app in loaded.apps if app.windows}
    assert {label: verdict.can_sync for label, verdict in verdicts.items()} == {
        "checkout-prod on prod-eu-1": False, "payments-prod on prod-eu-1": True, "checkout-us on prod-us-1": False}
    assert verdicts["checkout-us on prod-us-1"] is verdicts["checkout-prod on prod-eu-1"]  # the same windows matched
