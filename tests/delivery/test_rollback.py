"""Rollback offers: only inside the one-day window after a version change, only past the grace
period, naming the version that ran before; shown on the service panel and /gitops (a button
for members, a note for viewers), announced once, never held by a sync window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp, VersionChange
from portal.delivery.deployments import announce_rollbacks
from portal.delivery.models import PullRequest
from portal.delivery.rollbacks import AppHealth, Replacement, decide, offers_for_apps, preview_url
from portal.notifications.delivery_events import emit_delivery_events
from portal.notifications.events import EventKind
from portal.notifications.models import Episode
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

GRACE = timedelta(minutes=10)
CHANGED = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def app(status: str = "Degraded", since: datetime | None = None, running: str = "1.7.0", **extra) -> AppHealth:
    values = dict(
        app_id=1, name="checkout-prod", cluster="prod-eu-1", environment="prod", health_status=status,
        health_since=since or CHANGED + timedelta(minutes=5), health_message="Deployment checkout exceeded its "
        "progress deadline", services=("checkout",), running={"checkout": [running]},
    )
    values.update(extra)
    return AppHealth(**values)


def change(from_version: str = "1.6.0", to_version: str = "1.7.0", at: datetime = CHANGED, **extra) -> Replacement:
    values = dict(service="checkout", cluster="prod-eu-1", from_version=from_version, to_version=to_version, at=at)
    values.update(extra)
    return Replacement(**values)


# --- the pure decision ----------------------------------------------------------------


def test_offered_after_the_grace_period_naming_the_previous_version():
    degraded_at = CHANGED + timedelta(minutes=5)
    offers = decide(app(since=degraded_at), [change()], degraded_at + timedelta(minutes=11), GRACE)
    assert len(offers) == 1
    offer = offers[0]
    assert (offer.service, offer.current, offer.previous) == ("checkout", "1.7.0", "1.6.0")
    assert offer.failing_since == degraded_at and offer.replaced_at == CHANGED
    assert offer.failure == "Degraded: Deployment checkout exceeded its progress deadline"


@pytest.mark.parametrize("minutes, offered", [(0, False), (9, False), (10, True), (30, True)])
def test_not_before_the_grace_period_ends(minutes, offered):
    degraded_at = CHANGED + timedelta(minutes=5)
    now = degraded_at + timedelta(minutes=minutes)
    assert bool(decide(app(since=degraded_at), [change()], now, GRACE)) is offered


@pytest.mark.parametrize(
    "after, offered",
    [(timedelta(0), True), (timedelta(hours=23, minutes=59), True), (timedelta(days=1), True),
     (timedelta(days=1, minutes=1), False), (timedelta(days=3), False), (-timedelta(minutes=1), False)],
    ids=["same-poll", "just-inside", "edge", "just-outside", "days-later", "before-the-change"],
)
def test_only_when_the_trouble_begins_within_a_day_of_the_change(after, offered):
    degraded_at = CHANGED + after
    now = degraded_at + timedelta(minutes=15)
    assert bool(decide(app(since=degraded_at), [change()], now, GRACE)) is offered


def test_the_latest_change_of_the_service_on_that_cluster_decides():
    history = [
        change("1.5.0", "1.6.0", CHANGED - timedelta(hours=5)),
        change("1.6.0", "1.7.0", CHANGED),
        change("1.7.0", "2.0.0", CHANGED, cluster="prod-us-1"),  # another cluster
        change("3.0.0", "3.1.0", CHANGED, service="payments"),  # another service
    ]
    offers = decide(app(), history, CHANGED + timedelta(hours=1), GRACE)
    assert [(o.service, o.previous) for o in offers] == [("checkout", "1.6.0")]


def test_a_healthy_or_progressing_app_gets_no_offer():
    now = CHANGED + timedelta(hours=1)
    assert decide(app(status="Healthy"), [change()], now, GRACE) == []
    assert decide(app(status="Progressing"), [change()], now, GRACE) == []
    assert decide(app(status="Missing"), [change()], now, GRACE)[0].failure.startswith("Missing")


def test_no_offer_to_undo_a_rollback_or_when_the_running_version_moved_on():
    now = CHANGED + timedelta(hours=1)
    undone = [change("1.6.0", "1.7.0", CHANGED - timedelta(hours=2)), change("1.7.0", "1.6.0", CHANGED)]
    assert decide(app(running="1.6.0"), undone, now, GRACE) == []
    assert decide(app(running="1.8.0"), [change()], now, GRACE) == []
    assert decide(app(), [change("1.6.0, 1.6.1", "1.7.0")], now, GRACE) == []  # no single previous version


# --- pages, event, preview link -------------------------------------------------------

PROD = "apps/checkout/overlays/prod"


def seed_broken(catalog, minutes_degraded: int = 25, changed_ago: timedelta = timedelta(minutes=30), **fields):
    now = timezone.now()
    broken = seed_app(
        catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.7.0", health="Degraded",
        since=timedelta(minutes=minutes_degraded), health_message="Deployment checkout exceeded its progress deadline",
        now=now, **fields,
    )
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod, cluster=catalog.prod_eu,
                                 app=broken, from_version="1.6.0", to_version="1.7.0", at=now - changed_ago)
    return broken


@pytest.mark.django_db
def test_member_sees_the_rollback_button_on_the_panel_and_gitops(client, users, catalog):
    broken = seed_broken(catalog)
    client.force_login(users["member"])
    panel = client.get(reverse("service", args=["checkout"])).content.decode()
    assert "Rollback PR → 1.6.0" in panel
    listing = client.get(reverse("gitops")).content.decode()
    assert "Rollback PR → 1.6.0" in listing
    url = preview_url(offers_for_apps([GitOpsApp.objects.select_related("cluster__environment").get(pk=broken.pk)])
                      [broken.pk][0])
    assert url.replace("&", "&amp;") in panel
    query = parse_qs(urlsplit(url).query)
    assert urlsplit(url).path == reverse("pr-preview")
    assert query == {"kind": ["rollback"], "mode": ["grouped"], "item": [f"{broken.pk}:checkout:1.6.0:1.7.0"]}


@pytest.fixture
def github(monkeypatch):
    files = {f"{PROD}/kustomization.yaml": "images:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.7.0\n"}
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.mark.django_db
def test_the_preview_says_it_rolls_back_what_went_wrong_and_since_when(eager_celery, client, users, catalog, github):
    broken = seed_broken(catalog, repo_url=github.repository, path=PROD)
    client.force_login(users["member"])
    offer = offers_for_apps([GitOpsApp.objects.select_related("cluster__environment").get(pk=broken.pk)])[broken.pk][0]
    response = client.get(preview_url(offer))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Roll back checkout to 1.6.0 in prod" in html
    since = f"{broken.health_since.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    assert f"1.7.0 is failing since {since}" in html
    assert "exceeded its progress deadline" in html
    assert "newTag: 1.6.0" in html  # the diff


@pytest.mark.django_db
def test_viewer_sees_a_note_not_a_button(client, users, catalog):
    seed_broken(catalog)
    client.force_login(users["viewer"])
    panel = client.get(reverse("service", args=["checkout"])).content.decode()
    assert "Rollback to 1.6.0 offered; a member can open it." in panel
    assert "Rollback PR →" not in panel
    listing = client.get(reverse("gitops")).content.decode()
    assert "rollback to 1.6.0 offered" in listing and "Rollback PR →" not in listing


@pytest.mark.django_db
@pytest.mark.parametrize(
    "minutes_degraded, changed_ago, offered",
    [(5, timedelta(minutes=8), False), (60, timedelta(days=2), False), (60, timedelta(hours=20), True)],
    ids=["inside-grace", "day-after-change", "inside-window"],
)
def test_offer_only_past_the_grace_and_inside_the_window(client, users, catalog, minutes_degraded, changed_ago,
                                                          offered):
    client.force_login(users["member"])
    seed_broken(catalog, minutes_degraded=minutes_degraded, changed_ago=changed_ago)
    html = client.get(reverse("service", args=["checkout"])).content.decode()
    assert ("Rollback PR → 1.6.0" in html) is offered


@pytest.mark.django_db
def test_a_sync_window_does_not_hold_the_offer(client, users, catalog):
    now = timezone.now()
    seed_broken(catalog, sync_blocked=True, sync_blocked_until=now + timedelta(hours=6),
                sync_window={"kind": "deny", "description": "weekend freeze"})
    client.force_login(users["member"])
    assert "Rollback PR → 1.6.0" in client.get(reverse("gitops")).content.decode()


@pytest.mark.django_db
def test_an_open_rollback_pr_replaces_the_button(client, users, catalog):
    seed_broken(catalog)
    PullRequest.objects.create(
        kind="rollback", services=["checkout"], environment="prod", clusters=["prod-eu-1"],
        repository="https://github.com/acme/gitops", forge_kind="github", number=77,
        url="https://github.com/acme/gitops/pull/77", title="Roll back checkout to 1.6.0 in prod", branch="b",
        base_branch="main", state="open", from_version="1.7.0", to_version="1.6.0", opened_at=timezone.now(),
    )
    client.force_login(users["member"])
    html = client.get(reverse("service", args=["checkout"])).content.decode()
    assert "Rollback PR #77 open" in html and "Rollback PR → 1.6.0" not in html


@pytest.mark.django_db
def test_rollback_offered_is_announced_once(catalog):
    broken = seed_broken(catalog)
    now = timezone.now()
    assert announce_rollbacks(now) == 1
    assert emit_delivery_events(now) == 1
    assert announce_rollbacks(now + timedelta(minutes=5)) == 1  # found again: same key, same episode
    assert emit_delivery_events(now + timedelta(minutes=5)) == 1
    episodes = Episode.objects.filter(kind=EventKind.ROLLBACK_OFFERED)
    assert episodes.count() == 1
    event = episodes.get().event
    assert event.services == ("checkout",) and event.cluster == "prod-eu-1"
    assert "1.7.0 replaced 1.6.0" in event.summary and "Degraded" in event.summary
    assert f"item={broken.pk}%3A" in event.links[0].url


@pytest.mark.django_db
def test_announcing_reads_no_failing_apps_object_or_history(catalog):
    """A fleet's failing apps can be thousands: their JSON objects would be most of a worker's memory."""
    seed_broken(catalog)
    with CaptureQueriesContext(connection) as queries:
        assert announce_rollbacks(timezone.now()) == 1
    # The history pass's (ids and times) and the offers' (what an offer is worded from).
    failing = [q["sql"].split(" FROM ")[0] for q in queries.captured_queries
               if q["sql"].startswith('SELECT "gitops_gitopsapp"."id"') and '"health_since" <=' in q["sql"]]
    assert len(failing) == 2 and any('"gitops_gitopsapp"."running"' in columns for columns in failing)
    for columns in failing:
        for unread in ("raw", "history", "conditions", "resources", "sources", "health_rules"):
            assert f'"gitops_gitopsapp"."{unread}"' not in columns


@pytest.mark.django_db
def test_gitops_query_count_does_not_grow_with_offers(client, users, catalog):
    client.force_login(users["member"])
    seed_broken(catalog)
    with CaptureQueriesContext(connection) as one:
        client.get(reverse("gitops"))
    for index in range(6):
        seed_broken_more(catalog, index)
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("gitops")).content.decode()
    assert html.count("Rollback PR →") == 7
    assert len(many.captured_queries) == len(one.captured_queries)


def seed_broken_more(catalog, index: int) -> None:
    now = timezone.now()
    other = seed_app(catalog.prod_us, f"checkout-{index}", service=catalog.checkout, version="1.7.0",
                     health="Missing", since=timedelta(minutes=20), now=now)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod, cluster=catalog.prod_us,
                                 app=other, from_version="1.6.0", to_version="1.7.0",
                                 at=now - timedelta(minutes=40))
