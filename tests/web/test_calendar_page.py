"""/calendar and its iCalendar feeds: the lanes an environment's viewer sees, the next deploy
of each service, feed addresses made and revoked, and feeds read back by two parsers."""

from __future__ import annotations

from datetime import timedelta

import icalendar
import ics
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from gitops.models import AppProject
from portal.delivery.models import ChangeFreeze
from portal.kernel.accounts import calendarfeeds
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

NOON_DENY = {"kind": "deny", "schedule": "0 12 * * *", "duration": "1h", "applications": ["checkout-*"],
             "description": "noon <script>alert(1)</script>"}
BERLIN_ALLOW = {"kind": "allow", "schedule": "0 6 * * *", "duration": "20h", "timeZone": "Europe/Berlin",
                "applications": ["checkout-*"], "description": "daytime", "manualSync": True}


@pytest.fixture
def fleet(catalog):
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="shop",
                              sync_windows=[NOON_DENY, BERLIN_ALLOW])
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, project="shop",
             destination_namespace="shop", destination_server="https://kubernetes.default.svc")
    seed_app(catalog.prod_us, "payments", service=catalog.payments, tool="flux", suspended=True)
    AppProject.objects.create(cluster=catalog.staging_cluster, namespace="argocd", name="shop",
                              sync_windows=[NOON_DENY])
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, project="shop")
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now + timedelta(days=2), ends_at=now + timedelta(days=3),
                                         reason="quarter close")
    freeze.environments.add(catalog.prod)
    return catalog


@pytest.fixture
def viewer_client(client, users):
    client.force_login(users["viewer"])
    return client


def test_the_calendar_is_in_the_navigation(viewer_client, fleet):
    html = viewer_client.get(reverse("overview")).content.decode()
    assert f'href="{reverse("calendar")}"' in html


def test_the_calendar_draws_each_lane_with_what_it_holds(viewer_client, fleet):
    response = viewer_client.get(reverse("calendar"), {"environment": "prod"})
    assert response.status_code == 200
    html = response.content.decode()
    lanes = response.context["lanes"]
    kinds = {d.lane.kind: d for d in lanes}
    assert set(kinds) == {"deny", "allow", "outside-allow", "freeze", "suspended"}
    deny = kinds["deny"]
    assert len(deny.bands) == 14  # noon UTC on each of the 14 days from today 00:00 UTC
    assert deny.bands[0].x == pytest.approx(12 / (14 * 24) * 1000, abs=0.01)
    assert deny.bands[0].utc.endswith("12:00 – 13:00 UTC") and deny.bands[0].local == ""
    allow = kinds["allow"]
    assert allow.bands[0].local.split(" ")[-1] in ("CET", "CEST")  # shown in the window's own zone too
    assert "manual sync allowed" in html
    # Untrusted strings from the cluster are escaped.
    assert "<script>alert(1)</script>" not in html and "noon &lt;script&gt;" in html
    assert "/gitops?environment=prod&amp;project=shop" in html
    assert "/gitops?environment=prod&amp;status=suspended" in html
    answers = {a.service: a for a in response.context["answers"]}
    assert answers["payments"].at is None and "suspended" in answers["payments"].reason
    assert set(answers) == {"checkout", "payments"}


def test_the_calendar_filters_by_service_and_cluster(viewer_client, fleet):
    response = viewer_client.get(reverse("calendar"), {"environment": "prod", "cluster": "prod-us-1"})
    assert [d.lane.kind for d in response.context["lanes"]] == ["suspended", "freeze"]  # by first band
    response = viewer_client.get(reverse("calendar"), {"environment": "prod", "service": "checkout"})
    assert "suspended" not in {d.lane.kind for d in response.context["lanes"]}
    assert [a.service for a in response.context["answers"]] == ["checkout"]


def test_an_unknown_filter_value_is_ignored(viewer_client, fleet):
    response = viewer_client.get(reverse("calendar"), {"environment": "nope", "service": "<x>"})
    assert response.status_code == 200
    assert response.context["environment"] == "dev"  # the first environment


def _new_feed(client) -> tuple[str, str]:
    response = client.post(reverse("calendar-feeds"), {"action": "create", "name": "work"})
    assert response.status_code == 200
    created = response.context["created"]
    env_url = dict(created["environments"])["prod"]
    service_url = dict(created["services"])["checkout"]
    return env_url, service_url


def test_a_feed_parses_back_with_icalendar_and_ics(viewer_client, client, fleet):
    env_url, _ = _new_feed(viewer_client)
    client.logout()
    response = client.get(env_url)  # a calendar app sends no session and no token
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/calendar")
    parsed = icalendar.Calendar.from_ical(response.content)
    events = list(parsed.walk("VEVENT"))
    # The 14 noon denials and the freeze; allow windows are not busy time.
    assert len(events) == 15
    deny = [e for e in events if "deny window" in str(e["summary"])]
    assert len(deny) == 14 and all(str(e["transp"]) == "OPAQUE" for e in events)
    first = min(deny, key=lambda e: e.decoded("dtstart"))
    assert first.decoded("dtend") - first.decoded("dtstart") == timedelta(hours=1)
    assert "AppProject shop on prod-eu-1, syncWindows[0]: deny '0 12 * * *' for 1h (UTC)" in str(first["description"])
    assert "prod-eu-1/checkout-prod" in str(first["description"])
    assert str(first["url"]) == "http://testserver/calendar?environment=prod"
    assert len({str(e["uid"]) for e in events}) == 15
    # A second parser, as a calendar client reads it.
    other = ics.Calendar(response.content.decode())
    assert len(other.events) == 15
    assert {e.begin.datetime for e in other.events} == {e.decoded("dtstart") for e in events}
    freeze = [e for e in other.events if "quarter close" in e.name]
    assert len(freeze) == 1 and freeze[0].transparent is False


def test_a_service_feed_covers_every_environment_it_deploys_to(viewer_client, client, fleet):
    _, service_url = _new_feed(viewer_client)
    events = list(icalendar.Calendar.from_ical(client.get(service_url).content).walk("VEVENT"))
    assert {str(e["summary"]).split(":")[0] for e in events} == {"prod", "staging"}


def test_a_revoked_or_unknown_feed_answers_404(viewer_client, client, users, fleet):
    env_url, service_url = _new_feed(viewer_client)
    feed = users["viewer"].calendar_feeds.get()
    assert client.get(env_url).status_code == 200
    response = viewer_client.post(reverse("calendar-feeds"), {"action": "revoke", "feed": feed.pk})
    assert response.status_code == 302
    assert client.get(env_url).status_code == 404
    assert client.get(service_url).status_code == 404
    unknown = reverse("calendar-feed-environment", args=[calendarfeeds.PREFIX + "x" * 43, "prod"])
    assert client.get(unknown).status_code == 404


def test_a_feed_answers_404_once_its_user_may_not_read_the_portal(fleet):
    user = get_user_model().objects.create_user("left-the-company")
    _, plain = calendarfeeds.issue(user, "old")
    assert calendarfeeds.resolve(plain) is None  # no role
    from portal.kernel.accounts.roles import Role, grant

    grant(user, Role.VIEWER)
    user = get_user_model().objects.get(pk=user.pk)
    assert calendarfeeds.resolve(plain) is not None
    user.is_active = False
    user.save()
    assert calendarfeeds.resolve(plain) is None


def test_the_feeds_page_keeps_only_a_digest(viewer_client, users, fleet):
    env_url, _ = _new_feed(viewer_client)
    secret = env_url.split("/")[-3]
    feed = users["viewer"].calendar_feeds.get()
    assert secret not in (feed.digest, feed.hint) and feed.hint == secret[:11]
    page = viewer_client.get(reverse("calendar-feeds")).content.decode()
    assert secret not in page and feed.hint in page


def test_the_service_page_says_when_it_can_next_deploy(viewer_client, fleet):
    html = viewer_client.get(reverse("service", args=["payments"])).content.decode()
    assert '<p class="next-deploy" data-environment="prod">' in html
    assert "no end in sight" in html and "payments on prod-us-1 suspended (spec.suspend: true)" in html
    assert f'{reverse("calendar")}?environment=prod&amp;service=payments' in html
    html = viewer_client.get(reverse("service", args=["checkout"])).content.decode()
    assert '<p class="next-deploy" data-environment="staging">' in html


def test_the_calendar_reads_a_fixed_number_of_queries(viewer_client, fleet):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(reverse("calendar"), {"environment": "prod"}).status_code == 200
        return len(captured)

    before = queries()
    for n in range(6):
        seed_app(fleet.prod_eu, f"checkout-canary-{n}", service=fleet.checkout, project="shop",
                 destination_namespace="shop")
    assert queries() == before


def test_a_window_description_cannot_add_events_to_a_feed(viewer_client, client, fleet):
    hostile = {**NOON_DENY, "description": "noon\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nSUMMARY:fake"}
    AppProject.objects.filter(cluster=fleet.prod_eu).update(sync_windows=[hostile, BERLIN_ALLOW])
    env_url, _ = _new_feed(viewer_client)
    body = client.get(env_url).content
    events = list(icalendar.Calendar.from_ical(body).walk("VEVENT"))
    assert len(events) == 15 and not any(str(e["summary"]) == "fake" for e in events)
    assert len(ics.Calendar(body.decode()).events) == 15
