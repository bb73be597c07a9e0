"""From merged to running in production: running_at when the version runs in every target cluster,
"not deployed" and why, one "merged, not deployed" event an hour after the merge, lead-time
medians, and the Delivery page that shows them in a constant number of queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gitops.models import RunningVersion, VersionChange
from portal.delivery import leadtimes, version_matrix
from portal.delivery.deployments import AppFacts, progress, running_since, track, why_not
from portal.delivery.models import PullRequest
from portal.delivery.tasks import track_deployments
from portal.notifications.delivery_events import emit_delivery_events
from portal.notifications.events import EventKind
from portal.notifications.models import Episode
from tests.fixtures.seed import seed_app

MERGED = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def facts(**extra) -> AppFacts:
    values = dict(name="checkout-prod", cluster="prod-eu-1", environment="prod", tool="argo", services=("checkout",),
                  synced_revision="4f1d2c3b5a6978877665544332211aabbccddeef",
                  revision_changed_at=MERGED - timedelta(days=1), health_status="Healthy")
    values.update(extra)
    return AppFacts(**values)


# --- pure ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, words",
    [
        (dict(sync_blocked=True, sync_blocked_until=MERGED + timedelta(hours=3), window="release freeze"),
         "a sync window 'release freeze' holds checkout-prod until 2026-01-05 13:00 UTC"),
        (dict(tool="flux", suspended=True), "Flux has checkout-prod suspended, deploys once resumed"),
        (dict(manual_sync=True), "Argo CD syncs checkout-prod by hand: merging does not deploy it"),
        ({}, "Argo CD has not synced checkout-prod since the merge (still at 4f1d2c3)"),
        (dict(revision_changed_at=MERGED + timedelta(minutes=3), health_status="Progressing"),
         "checkout-prod is rolling out"),
        (dict(revision_changed_at=MERGED + timedelta(minutes=3), health_status="Degraded",
              health_message="ImagePullBackOff"),
         "Argo CD synced checkout-prod after the merge; the version does not run yet (Degraded: ImagePullBackOff)"),
    ],
    ids=["window", "suspended", "manual", "not-synced", "rolling-out", "failing"],
)
def test_why_a_merged_version_does_not_run(extra, words):
    assert why_not(facts(**extra), MERGED, MERGED + timedelta(minutes=30)) == words


def test_a_window_that_has_closed_is_not_the_reason():
    closed = facts(sync_blocked=True, sync_blocked_until=MERGED + timedelta(minutes=5))
    assert why_not(closed, MERGED, MERGED + timedelta(minutes=30)).startswith("Argo CD has not synced")


def test_running_means_every_target_cluster():
    apps = [facts(), facts(cluster="prod-us-1", manual_sync=True)]
    now = MERGED + timedelta(hours=2)
    half = progress(["checkout"], "prod", [], "1.7.0", MERGED, apps, {("checkout", "prod-eu-1", "1.7.0")}, now)
    assert half.targets == ["prod-eu-1", "prod-us-1"] and half.running == ["prod-eu-1"]
    assert not half.deployed
    assert half.why == "prod-us-1: Argo CD syncs checkout-prod by hand: merging does not deploy it; " \
                       "already running on prod-eu-1"
    both = {("checkout", "prod-eu-1", "1.7.0"), ("checkout", "prod-us-1", "1.7.0")}
    assert progress(["checkout"], "prod", [], "1.7.0", MERGED, apps, both, now).deployed
    # A PR that names its clusters targets only those.
    named = progress(["checkout"], "prod", ["prod-eu-1"], "1.7.0", MERGED, apps, half_running(), now)
    assert named.deployed and named.targets == ["prod-eu-1"]


def half_running() -> set[tuple[str, str, str]]:
    return {("checkout", "prod-eu-1", "1.7.0")}


def test_running_since_is_the_last_cluster_and_never_before_the_merge():
    now = MERGED + timedelta(hours=5)
    seen = {"prod-eu-1": MERGED + timedelta(minutes=20), "prod-us-1": MERGED + timedelta(minutes=50)}
    assert running_since(seen, MERGED, now) == MERGED + timedelta(minutes=50)
    assert running_since({"prod-eu-1": None}, MERGED, now) == now  # first seen by this run
    assert running_since({"prod-eu-1": MERGED - timedelta(hours=1)}, MERGED, now) == MERGED


def test_medians_over_the_prs_that_reached_production():
    opened = MERGED - timedelta(hours=2)
    times = [
        leadtimes.lead_time(opened, MERGED, MERGED + timedelta(minutes=10)),
        leadtimes.lead_time(opened, MERGED, MERGED + timedelta(minutes=30)),
        leadtimes.lead_time(opened, MERGED, MERGED + timedelta(minutes=50)),
        leadtimes.lead_time(opened, MERGED, None),
    ]
    medians = leadtimes.medians(times)
    assert medians.count == 3
    assert medians.from_merge == timedelta(minutes=30)
    assert medians.from_proposal == timedelta(hours=2, minutes=30)
    assert leadtimes.lead_time_words(medians.from_proposal) == "2 h 30 min"
    assert leadtimes.medians([]).from_merge is None and leadtimes.lead_time_words(None) == "—"


# --- the task, over the store ----------------------------------------------------------


def merged_pr(catalog, at, **extra) -> PullRequest:
    values = dict(
        kind="upgrade", services=["checkout"], environment="prod", clusters=[],
        repository="https://github.com/acme/gitops", forge_kind="github", number=41,
        url="https://github.com/acme/gitops/pull/41", title="Update checkout to 1.7.0 in prod",
        branch="portal/checkout-1.7.0-prod", base_branch="main", state="merged", from_version="1.6.0",
        to_version="1.7.0", opened_at=at - timedelta(hours=3), merged_at=at,
    )
    values.update(extra)
    return PullRequest.objects.create(**values)


def move(catalog, cluster, app, version, at):
    """What a poll records when the cluster starts running `version`."""
    running = RunningVersion.objects.get(cluster=cluster, app=app)
    VersionChange.objects.create(service=catalog.checkout, environment=cluster.environment, cluster=cluster, app=app,
                                 from_version=running.version, to_version=version, at=at)
    RunningVersion.objects.filter(pk=running.pk).update(version=version)
    version_matrix.refresh(cluster.id)


@pytest.mark.django_db
def test_running_at_is_set_when_every_prod_cluster_runs_it(catalog):
    now = timezone.now()
    merged_at = now - timedelta(minutes=40)
    eu = seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us = seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.6.0")
    pr = merged_pr(catalog, merged_at)

    move(catalog, catalog.prod_eu, eu, "1.7.0", merged_at + timedelta(minutes=5))
    report = track(now)
    pr.refresh_from_db()
    assert pr.running_at is None and report.not_deployed == 1

    move(catalog, catalog.prod_us, us, "1.7.0", merged_at + timedelta(minutes=25))
    report = track(now + timedelta(minutes=5))
    pr.refresh_from_db()
    assert report.running == 1
    assert pr.running_at == merged_at + timedelta(minutes=25)
    assert track(now + timedelta(minutes=10)).checked == 0  # done: no longer followed


def track_and_notify(now: datetime):
    """A tracking run, then the notifications' pass that consumes what it recorded."""
    report = track(now)
    emit_delivery_events(now)
    return report


@pytest.mark.django_db
def test_merged_not_deployed_is_announced_once_after_an_hour_with_why(catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
             sync_blocked=True, sync_blocked_until=now + timedelta(hours=5),
             sync_window={"kind": "deny", "description": "weekend freeze"})
    pr = merged_pr(catalog, now - timedelta(minutes=50))

    track_and_notify(now)
    assert not Episode.objects.filter(kind=EventKind.MERGED_NOT_DEPLOYED).exists()  # 50 min: not yet

    track_and_notify(now + timedelta(minutes=11))
    track_and_notify(now + timedelta(minutes=40))  # run again: still one episode
    episode = Episode.objects.get(kind=EventKind.MERGED_NOT_DEPLOYED)
    assert episode.key == f"delivery:merged-not-deployed:{pr.pk}"
    event = episode.event
    assert "merged but not deployed in prod" in event.title
    assert "sync window 'weekend freeze' holds checkout-prod" in event.summary
    pr.refresh_from_db()
    assert pr.running_at is None


@pytest.mark.django_db
def test_a_version_already_running_when_first_polled_counts_from_this_run(catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.7.0")
    pr = merged_pr(catalog, now - timedelta(minutes=30))
    track(now)
    pr.refresh_from_db()
    assert pr.running_at == now


def test_the_task_is_on_the_beat_schedule_and_registered(settings):
    from portal.celery import app

    # A worker imports each installed app's `tasks` module at start (autodiscovery).
    assert track_deployments.__module__ == "portal.delivery.tasks"
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "delivery.track_deployments")
    assert entry["schedule"] <= 600
    assert track_deployments.name in app.tasks


# --- the Delivery page ----------------------------------------------------------------


@pytest.mark.django_db
def test_delivery_page_shows_prs_medians_who_and_not_deployed(client, users, catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0", manual_sync=True)
    merged_at = now - timedelta(hours=2)
    merged_pr(catalog, merged_at, number=1, url="https://github.com/acme/gitops/pull/1", branch="b1",
              opened_by=users["member"], running_at=merged_at + timedelta(minutes=20),
              opened_at=merged_at - timedelta(hours=1))
    merged_pr(catalog, merged_at, number=2, url="https://github.com/acme/gitops/pull/2", branch="b2",
              automatic=True, running_at=merged_at + timedelta(minutes=40),
              opened_at=merged_at - timedelta(hours=3))
    merged_pr(catalog, merged_at, number=3, url="javascript:alert(1)", branch="b3", to_version="1.8.0")
    merged_pr(catalog, now, number=4, url="https://github.com/acme/gitops/pull/4", branch="b4", state="open",
              merged_at=None, opened_at=now - timedelta(minutes=5), title="<b>Update</b> payments")
    merged_pr(catalog, now, number=5, branch="b5", state="closed", merged_at=None,
              opened_at=now - timedelta(days=45), closed_at=now - timedelta(days=40))  # outside 30 days

    client.force_login(users["viewer"])
    response = client.get(reverse("delivery"))
    html = response.content.decode()
    context = response.context
    assert [row.pr.number for row in context["rows"]] == [4, 1, 3, 2]  # newest opened first
    assert context["median_merge"] == "30 min"  # median of 20 and 40 minutes
    assert context["median_proposal"] == "2 h 30 min"  # median of 1 h 20 and 3 h 40
    assert "20 min after merge" in html and "1 h 20 min after opening" in html
    assert ">member<" in html and "automatic" in html
    row3 = next(row for row in context["rows"] if row.pr.number == 3)
    assert row3.status == "not deployed"
    assert "Argo CD syncs checkout-prod by hand" in row3.progress.why
    assert "javascript:" not in html  # an unsafe forge URL is never a link
    assert "&lt;b&gt;Update&lt;/b&gt; payments" in html


@pytest.mark.django_db
def test_delivery_page_query_count_is_constant(client, users, catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    client.force_login(users["viewer"])
    merged_pr(catalog, now - timedelta(hours=2), number=1, branch="b1", opened_by=users["member"])
    with CaptureQueriesContext(connection) as few:
        assert client.get(reverse("delivery")).status_code == 200
    for number in range(2, 30):
        merged_pr(catalog, now - timedelta(hours=2), number=number, branch=f"b{number}", opened_by=users["admin"],
                  to_version=f"1.{number}.0", running_at=now if number % 2 else None)
    with CaptureQueriesContext(connection) as many:
        response = client.get(reverse("delivery"))
    assert len(response.context["rows"]) == 29
    assert len(many.captured_queries) == len(few.captured_queries)


@pytest.mark.django_db
def test_failing_checks_on_a_portal_pr_are_announced_once_per_failure(catalog):
    now = timezone.now()
    failed_at = now - timedelta(minutes=5)
    pr = merged_pr(catalog, now, state="open", merged_at=None, checks="fail", checks_failed_notified_at=failed_at)
    merged_pr(catalog, now, number=42, branch="portal/other", checks="pass")  # passing: nothing to say

    assert track_and_notify(now).checks_failed == 1
    track_and_notify(now + timedelta(minutes=5))  # the next run: still one episode
    episode = Episode.objects.get(kind=EventKind.PR_CHECKS_FAILED)
    assert episode.key == f"delivery:checks-failed:{pr.pk}:{failed_at.isoformat()}"
    assert episode.event.title == "Checks failing on #41: Update checkout to 1.7.0 in prod"
    assert episode.event.links[0].url == "https://github.com/acme/gitops/pull/41"
