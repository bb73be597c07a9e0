"""StateChange rows consumed once: a row is stamped by the pass that claims it, an episode
opens from a row claimed before its grace period passed, a quiet pass reads no history,
and an app that recovers or is removed ends its episode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.models import GitOpsApp, StateChange
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Episode, Rule, Trouble
from portal.notifications.statechanges import emit_gitops_events
from tests.notifications.store_rows import seeded, state_change

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def rule(db) -> Rule:
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url="http://127.0.0.1:9/hook")
    return Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)


def test_a_row_is_claimed_once_and_its_episode_opens_when_its_grace_has_passed(catalog, rule):
    app = seeded(catalog.prod_eu, "payments-prod", health="Degraded", now=T0, since=timedelta(0),
                 first_seen=T0 - timedelta(days=2))
    assert emit_gitops_events(T0 + timedelta(minutes=1)) == []
    assert set(StateChange.objects.values_list("processed", flat=True)) == {T0 + timedelta(minutes=1)}
    assert Trouble.objects.get(app=app).since == T0

    [episode] = emit_gitops_events(T0 + timedelta(minutes=10))
    assert episode.started_at == T0
    # Opening the episode read no row again: each keeps the stamp of the pass that claimed it.
    assert set(StateChange.objects.values_list("processed", flat=True)) == {T0 + timedelta(minutes=1)}
    assert emit_gitops_events(T0 + timedelta(minutes=11)) == []
    assert Episode.objects.count() == 1


def test_a_quiet_pass_reads_only_unclaimed_rows_however_long_the_history(catalog, rule):
    for n in range(5):
        app = seeded(catalog.prod_eu, f"app-{n}", health="Degraded", now=T0, since=timedelta(hours=1),
                     first_seen=T0 - timedelta(days=30))
        for day in range(1, 30):  # a month of flapping before this episode
            at = T0 - timedelta(days=day)
            state_change(app, "health", "Healthy", "Degraded", at)
            state_change(app, "health", "Degraded", "Healthy", at + timedelta(minutes=20))
    assert len(emit_gitops_events(T0)) == 5
    assert not StateChange.objects.filter(processed__isnull=True).exists()

    with CaptureQueriesContext(connection) as quiet:
        assert emit_gitops_events(T0 + timedelta(minutes=1)) == []
    history = [q["sql"] for q in quiet.captured_queries if "gitops_statechange" in q["sql"]]
    assert len(history) == 1 and '"processed" IS NULL' in history[0]
    # A constant handful: rows to claim (in a transaction: its savepoint and release here),
    # troubles to open, episodes to close, rules, open episodes and their deliveries.
    assert len(quiet.captured_queries) == 8


def test_an_app_first_seen_in_trouble_starts_its_episode_when_it_was_first_seen(catalog, rule):
    app = GitOpsApp.objects.create(cluster=catalog.prod_eu, tool="argo", kind="Application", namespace="argocd",
                                   name="new-app", sync_status="OutOfSync", health_status="Missing",
                                   sync_since=T0, health_since=T0, first_seen=T0)
    state_change(app, "presence", "", "present", T0)  # all the store writes for a new app
    [episode] = emit_gitops_events(T0 + timedelta(minutes=10))
    assert episode.started_at == T0
    assert episode.event.title == "new-app is Missing and OutOfSync on prod-eu-1"


def test_recovery_and_removal_end_their_episodes(catalog, rule):
    recovering = seeded(catalog.prod_eu, "recovering", health="Degraded", now=T0, since=timedelta(minutes=30),
                        first_seen=T0 - timedelta(days=1))
    removed = seeded(catalog.prod_eu, "removed", sync="OutOfSync", now=T0, since=timedelta(minutes=30),
                     first_seen=T0 - timedelta(days=1))
    assert len(emit_gitops_events(T0)) == 2

    state_change(recovering, "health", "Degraded", "Healthy", T0 + timedelta(minutes=2))
    removed.delete()  # as the store does when the object is gone (its row names no app)
    StateChange.objects.create(cluster=catalog.prod_eu, object_key="argo/Application/argocd/removed",
                               field="presence", old="present", new="gone", at=T0 + timedelta(minutes=2))
    emit_gitops_events(T0 + timedelta(minutes=3))
    assert set(Episode.objects.values_list("ended_at", flat=True)) == {T0 + timedelta(minutes=3)}
    assert not Trouble.objects.exists()


def test_many_due_episodes_are_worded_a_chunk_at_a_time(catalog, rule, monkeypatch):
    """A backlog of due troubles (a fleet's first minutes past the grace period) is worded a
    chunk of apps at a time, their Git pins read once per chunk, none of Argo CD's whole object."""
    from portal.notifications import statechanges

    monkeypatch.setattr(statechanges, "EPISODE_CHUNK", 2)
    reads: list[list[int]] = []
    real = statechanges.pinned_versions
    monkeypatch.setattr(statechanges, "pinned_versions", lambda ids: reads.append(list(ids)) or real(ids))
    apps = [seeded(catalog.prod_eu, f"shop-{i}", health="Degraded", now=T0, since=timedelta(0),
                   first_seen=T0 - timedelta(days=2)) for i in range(5)]
    assert emit_gitops_events(T0 + timedelta(minutes=1)) == []

    with CaptureQueriesContext(connection) as queries:
        opened = emit_gitops_events(T0 + timedelta(minutes=10))

    assert sorted(e.app_id for e in opened) == sorted(app.pk for app in apps)
    assert len(reads) == 3, "one pin read per chunk of two"
    app_reads = [q["sql"] for q in queries.captured_queries if 'FROM "gitops_gitopsapp"' in q["sql"]]
    assert app_reads and not any('"gitops_gitopsapp"."raw"' in sql for sql in app_reads)


DISAGREEMENT = "Flux says healthy, but DecisionModel support-router reports RolledBack: candidate failed the gate"


def test_a_disagreement_while_degraded_is_one_episode_that_ends_when_both_are_over(catalog, rule):
    app = seeded(catalog.prod_eu, "support-router", health="Degraded", now=T0, since=timedelta(0),
                 first_seen=T0 - timedelta(days=1))
    state_change(app, "disagreement", "", DISAGREEMENT, T0 + timedelta(minutes=2))
    [episode] = emit_gitops_events(T0 + timedelta(minutes=10))
    assert episode.started_at == T0
    # Healthy again, but the disagreement holds: the trouble and its episode go on.
    state_change(app, "health", "Degraded", "Healthy", T0 + timedelta(minutes=20))
    assert emit_gitops_events(T0 + timedelta(minutes=21)) == []
    assert Trouble.objects.get(app=app).disagreement == DISAGREEMENT
    assert Episode.objects.get().ended_at is None
    state_change(app, "disagreement", DISAGREEMENT, "", T0 + timedelta(minutes=30))
    emit_gitops_events(T0 + timedelta(minutes=31))
    assert Episode.objects.get().ended_at == T0 + timedelta(minutes=31)
    assert not Trouble.objects.exists()


def test_an_app_first_seen_disagreeing_opens_an_episode_after_the_grace_period(catalog, rule):
    app = GitOpsApp.objects.create(cluster=catalog.prod_eu, tool="flux", kind="Kustomization", namespace="flux-system",
                                   name="support-router", sync_status="Unknown", health_status="Healthy",
                                   health_since=T0, health_disagreement=DISAGREEMENT, health_disagreement_since=T0,
                                   first_seen=T0)
    state_change(app, "presence", "", "present", T0)  # all the store writes for a new app
    assert emit_gitops_events(T0 + timedelta(minutes=9)) == []
    [episode] = emit_gitops_events(T0 + timedelta(minutes=10))
    assert episode.event.title == "support-router is in health disagreement on prod-eu-1"
    assert episode.event.summary == DISAGREEMENT
    # No suggested rule on this row: the page is linked as ever.
    assert episode.event.links[0].label == "Open in portal"
