"""Gitops episodes from the store: the grace period, one event per episode through flapping,
a new episode after recovery, the likeliest cause first, the links; rules and `emit`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from gitops.models import StateChange, VersionChange
from portal.kernel.timestamps import duration_words
from portal.notifications.events import Event, EventKind, Link, emit
from portal.notifications.models import Channel, Delivery, Episode, Rule
from portal.notifications.statechanges import emit_gitops_events
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
OLD_SHA = "9a8b7c6d5e4f30211223344556677889900aabbc"
NEW_SHA = "4f1d2c3b5a6978877665544332211aabbccddeef"


@pytest.fixture
def channel(db) -> Channel:
    return Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url="http://127.0.0.1:9/hook")


def rule(channel: Channel, name: str = "all", **filters) -> Rule:
    return Rule.objects.create(name=name, kinds=[EventKind.APP_ATTENTION], channel=channel, **filters)


def change(app, field: str, old: str, new: str, at: datetime) -> None:
    StateChange.objects.create(cluster=app.cluster, app=app, object_key=f"argo/Application/argocd/{app.name}",
                               field=field, old=old, new=new, at=at)


def set_health(app, health: str, at: datetime) -> None:
    change(app, "health", app.health_status, health, at)
    app.health_status, app.health_since = health, at
    app.save(update_fields=["health_status", "health_since"])


def flapping_app(catalog):
    """Healthy until T0, then Degraded -> Progressing -> Degraded: one episode since T0."""
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, now=T0, since=timedelta(hours=3),
                 first_seen=T0 - timedelta(hours=3))
    set_health(app, "Degraded", T0)
    set_health(app, "Progressing", T0 + timedelta(minutes=3))
    set_health(app, "Degraded", T0 + timedelta(minutes=6))
    return app


def test_nothing_within_the_grace_period_then_one_event_per_episode(catalog, channel):
    rule(channel)
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded", now=T0,
                 since=timedelta(minutes=5), first_seen=T0 - timedelta(days=1))
    assert emit_gitops_events(T0) == []
    assert not Episode.objects.exists()

    for minutes in (6, 7, 30):
        emit_gitops_events(T0 + timedelta(minutes=minutes))
    episode = Episode.objects.get()
    assert episode.started_at == app.health_since
    assert episode.emitted_at == T0 + timedelta(minutes=6)
    assert episode.kind == EventKind.APP_ATTENTION
    assert Delivery.objects.filter(episode=episode).count() == 1


def test_flapping_stays_one_episode_and_recovery_ends_it(catalog, channel):
    rule(channel)
    app = flapping_app(catalog)
    # Degraded again for only 6 minutes, but the episode began at T0: 12 minutes is past the grace.
    first = emit_gitops_events(T0 + timedelta(minutes=12))
    assert [e.started_at for e in first] == [T0]
    set_health(app, "Progressing", T0 + timedelta(minutes=14))
    assert emit_gitops_events(T0 + timedelta(minutes=15)) == []  # not an attention state now
    set_health(app, "Degraded", T0 + timedelta(minutes=16))
    emit_gitops_events(T0 + timedelta(minutes=17))
    assert Episode.objects.count() == 1
    assert Delivery.objects.count() == 1
    assert Episode.objects.get().ended_at is None

    set_health(app, "Healthy", T0 + timedelta(minutes=30))
    emit_gitops_events(T0 + timedelta(minutes=31))
    assert Episode.objects.get().ended_at == T0 + timedelta(minutes=31)

    set_health(app, "Degraded", T0 + timedelta(minutes=40))
    emit_gitops_events(T0 + timedelta(minutes=55))
    assert sorted(Episode.objects.values_list("started_at", flat=True)) == [T0, T0 + timedelta(minutes=40)]
    assert Delivery.objects.count() == 2


def test_a_recovery_between_two_scans_still_starts_a_new_episode(catalog, channel):
    rule(channel)
    app = flapping_app(catalog)
    emit_gitops_events(T0 + timedelta(minutes=12))
    # Healthy and Degraded again between scans: the history shows the recovery.
    set_health(app, "Healthy", T0 + timedelta(minutes=13))
    set_health(app, "Degraded", T0 + timedelta(minutes=14))
    emit_gitops_events(T0 + timedelta(minutes=30))
    episodes = list(Episode.objects.order_by("started_at"))
    assert [e.started_at for e in episodes] == [T0, T0 + timedelta(minutes=14)]
    assert episodes[0].ended_at == T0 + timedelta(minutes=30)
    assert episodes[1].ended_at is None


def test_out_of_sync_then_degraded_is_one_episode_from_the_first_state(catalog, channel):
    rule(channel)
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, now=T0, since=timedelta(hours=3),
                 first_seen=T0 - timedelta(hours=3))
    change(app, "sync", "Synced", "OutOfSync", T0)
    change(app, "sync", "OutOfSync", "Synced", T0 + timedelta(minutes=4))
    change(app, "health", "Healthy", "Degraded", T0 + timedelta(minutes=4))
    app.sync_since = app.health_since = T0 + timedelta(minutes=4)
    app.health_status = "Degraded"
    app.save()
    emit_gitops_events(T0 + timedelta(minutes=11))
    assert Episode.objects.get().started_at == T0


def test_the_event_names_the_likeliest_cause_first_and_links_back(catalog, channel):
    rule(channel)
    start = T0
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
                 now=start, since=timedelta(0), first_seen=start - timedelta(days=3), synced_revision=NEW_SHA,
                 previous_synced_revision=OLD_SHA, revision_changed_at=start - timedelta(hours=2),
                 health_message="Deployment payments exceeded its progress deadline")
    for hours, old, new in ((1, "2.4.0", "2.5.0"), (5, "2.3.1", "2.4.0"), (30, "2.3.0", "2.3.1")):
        VersionChange.objects.create(service=catalog.payments, environment=catalog.prod, cluster=catalog.prod_eu,
                                     app=app, from_version=old, to_version=new, at=start - timedelta(hours=hours))
    # Another cluster's upgrade is not this app's cause.
    VersionChange.objects.create(service=catalog.payments, environment=catalog.prod, cluster=catalog.prod_us,
                                 from_version="2.4.0", to_version="2.6.0", at=start - timedelta(minutes=5))

    with override_settings(PORTAL_BASE_URL="https://portal.example.com/"):
        emit_gitops_events(start + timedelta(minutes=10))
    event = Episode.objects.get().event
    assert event.title == "payments-prod is Degraded on prod-eu-1"
    assert event.summary == "Degraded on prod-eu-1, an hour after 2.5.0 replaced 2.4.0"
    assert event.causes == (
        "degraded on prod-eu-1, an hour after 2.5.0 replaced 2.4.0",
        "degraded on prod-eu-1, 2 hours after commit 4f1d2c3 replaced 9a8b7c6",
        "degraded on prod-eu-1, 5 hours after 2.4.0 replaced 2.3.1",
    )
    # A rollback is on offer (2.5.0 replaced 2.4.0 an hour before): the alert carries it first.
    rollback = f"https://portal.example.com/pr/preview?kind=rollback&mode=grouped&item={app.pk}%3Apayments%3A2.4.0%3A2.5.0"
    assert event.links == (
        Link("Rollback PR → 2.4.0", rollback),
        Link("Open in portal", "https://portal.example.com/services/payments"),
        Link("Changes", f"https://github.com/acme/gitops/compare/{OLD_SHA}...{NEW_SHA}"),
        Link("Synced commit", f"https://github.com/acme/gitops/commit/{NEW_SHA}"),
    )
    assert event.environment == "prod" and event.cluster == "prod-eu-1" and event.services == ("payments",)
    assert ("Synced commit", "4f1d2c3") in event.facts
    assert ("Message", "Deployment payments exceeded its progress deadline") in event.facts
    assert event.details["revision"] == {
        "synced": NEW_SHA,
        "commit_url": f"https://github.com/acme/gitops/commit/{NEW_SHA}",
        "previous": OLD_SHA,
        "changes_url": f"https://github.com/acme/gitops/compare/{OLD_SHA}...{NEW_SHA}",
    }
    assert [v["to"] for v in event.details["version_changes"]] == ["2.5.0", "2.4.0"]


def test_without_a_recent_commit_there_is_no_changes_link_and_the_action_is_the_gitops_list(catalog, channel):
    rule(channel)
    seeded(catalog.staging_cluster, "shared-ingress", sync="OutOfSync", now=T0, since=timedelta(minutes=20),
           first_seen=T0 - timedelta(days=3), previous_synced_revision=OLD_SHA,
           revision_changed_at=T0 - timedelta(days=2))
    emit_gitops_events(T0)
    event = Episode.objects.get().event
    assert event.title == "shared-ingress is OutOfSync on staging-eu-1"
    assert event.summary == "Out of sync on staging-eu-1 since 2026-03-02 11:40 UTC"
    assert event.causes == ()
    assert [link.label for link in event.links] == ["Open in portal", "Synced commit"]
    assert event.action_url == "http://127.0.0.1:8000/gitops?cluster=staging-eu-1&q=shared-ingress"


def test_rules_filter_by_kind_environment_cluster_and_service(catalog, channel):
    matching = [
        rule(channel, "everything"),
        rule(channel, "prod", environment=catalog.prod),
        rule(channel, "prod-eu-1", cluster=catalog.prod_eu),
        rule(channel, "payments", service=catalog.payments),
    ]
    rule(channel, "staging", environment=catalog.staging)
    rule(channel, "prod-us-1", cluster=catalog.prod_us)
    rule(channel, "checkout", service=catalog.checkout)
    Rule.objects.create(name="prs only", kinds=[EventKind.PR_CHECKS_FAILED], channel=channel)
    Rule.objects.create(name="off", kinds=[EventKind.APP_ATTENTION], channel=channel, enabled=False)
    seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Missing", now=T0,
           since=timedelta(minutes=15), first_seen=T0 - timedelta(days=1))
    emit_gitops_events(T0)
    assert set(Delivery.objects.values_list("rule__name", flat=True)) == {r.name for r in matching}


def test_a_rule_added_during_an_episode_gets_its_delivery_once(catalog, channel):
    rule(channel, "first")
    seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded", now=T0,
           since=timedelta(minutes=15), first_seen=T0 - timedelta(days=1))
    emit_gitops_events(T0)
    rule(channel, "second")
    emit_gitops_events(T0 + timedelta(minutes=1))
    emit_gitops_events(T0 + timedelta(minutes=2))
    assert sorted(Delivery.objects.values_list("rule__name", flat=True)) == ["first", "second"]


def test_other_producers_emit_their_kinds_once_per_key(catalog, channel):
    Rule.objects.create(name="prs", kinds=[EventKind.PR_CHECKS_FAILED], channel=channel, service=catalog.checkout)
    rule(channel, "apps only")
    event = Event(kind=EventKind.PR_CHECKS_FAILED, key="pr:github.com/acme/gitops#42@abc1234",
                  title="Checks failing on acme/gitops#42", summary="e2e failed on checkout 1.8.0",
                  started_at=T0, environment="staging", services=("checkout",),
                  links=(Link("Open in portal", "http://127.0.0.1:8000/updates"),))
    first = emit(event, at=T0)
    again = emit(event, at=T0 + timedelta(minutes=1))
    assert first.pk == again.pk
    assert Episode.objects.get().event == event
    assert list(Delivery.objects.values_list("rule__name", flat=True)) == ["prs"]


@pytest.mark.parametrize(
    ("delta", "words"),
    [
        (timedelta(seconds=20), "less than a minute"),
        (timedelta(minutes=1), "a minute"),
        (timedelta(minutes=59), "59 minutes"),
        (timedelta(minutes=65), "an hour"),
        (timedelta(hours=3, minutes=10), "3 hours"),
        (timedelta(hours=23), "23 hours"),
        (timedelta(hours=26), "a day"),
    ],
)
def test_alerts_spell_durations_rounded(delta, words):
    assert duration_words(delta, spelled=True) == words
