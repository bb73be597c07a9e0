"""A poll's lock as a lease (gitops.pollease, gitops.clusterpoll): how an unfinished poll reads
(polling, then interrupted once its lease lapsed), the next poll taking it over, the lease renewed
and capped, and every way a poll can fail giving its lock back. Times are injected; the one test
of the renewing thread waits for a condition, never for a fixed time.

The real-worker SIGKILL test is tests/gitops/test_poll_worker_killed.py."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError
from django.urls import reverse
from django.utils import timezone

from gitops import polling
from gitops.clusterpoll import INTERRUPTED, NEVER, OK, POLLING, STALE, ClusterPoll, Outcome, record
from gitops.pollease import Heartbeat, Lease
from gitops.polling import lock_seconds, poll
from gitops.tasks import poll_cluster
from portal.kernel.catalog.models import Cluster, Environment
from tests.kernel.test_metrics import scrape, value

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def cluster(db) -> Cluster:
    return Cluster.objects.create(
        name="dev-eu-1",
        environment=Environment.objects.create(name="dev", order=0),
        connection=Cluster.Connection.MANIFESTS,
        manifests_path=str(ROOT / "examples" / "clusters" / "dev-eu-1"),
    )


def row(cluster: Cluster) -> ClusterPoll:
    return ClusterPoll.objects.get(pk=cluster.pk)


# --- what an unfinished poll reads as -----------------------------------------------------------


def test_a_poll_under_way_reads_polling_and_once_its_lease_lapsed_interrupted_never_fresh(cluster):
    first = ClusterPoll.acquire(cluster.pk, _at(0), 10)
    assert first is not None and first.recovered is None
    record(cluster.pk, Outcome(_at(0), 1.0))
    ClusterPoll.release(cluster.pk, first.token)
    assert row(cluster).state(_at(5)).kind == OK

    second = ClusterPoll.acquire(cluster.pk, _at(60), 10)  # the next poll; its worker dies
    assert second is not None
    assert (row(cluster).state(_at(65)).kind, row(cluster).state(_at(65)).at) == (POLLING, _at(60))
    lapsed = row(cluster).state(_at(70))  # the lease ran out, and no outcome came
    assert (lapsed.kind, lapsed.at, lapsed.fresh) == (INTERRUPTED, _at(60), False)
    assert row(cluster).last_ok_at == _at(0)  # freshness stays with the last good poll


def test_the_next_poll_takes_over_records_the_interruption_and_only_success_clears_it(cluster):
    ClusterPoll.acquire(cluster.pk, _at(0), 10)  # a first poll that never ends
    taken = ClusterPoll.acquire(cluster.pk, _at(5), 10)
    assert taken is None, "a lock still within its lease is not taken"

    recovered = ClusterPoll.acquire(cluster.pk, _at(11), 10)
    assert recovered is not None and recovered.recovered == _at(0)
    assert row(cluster).interrupted_at == _at(0)
    # While the recovering poll runs, and when it fails, the interruption is still what is said.
    assert (row(cluster).state(_at(12)).kind, row(cluster).state(_at(12)).at) == (INTERRUPTED, _at(0))
    record(cluster.pk, Outcome(_at(11), 1.0, error="timeout: the API did not answer"))
    ClusterPoll.release(cluster.pk, recovered.token)
    assert row(cluster).state(_at(13)).kind == INTERRUPTED and row(cluster).stale_since == _at(11)

    again = ClusterPoll.acquire(cluster.pk, _at(20), 10)
    assert again is not None and again.recovered is None  # that poll ended: stale, not interrupted
    assert row(cluster).interrupted_at == _at(0)  # taking over twice writes the same time
    record(cluster.pk, Outcome(_at(20), 1.0))
    ClusterPoll.release(cluster.pk, again.token)
    done = row(cluster)
    assert (done.state(_at(21)).kind, done.interrupted_at, done.last_ok_at) == (OK, None, _at(20))


def test_states_in_order_of_what_matters_most(cluster):
    assert ClusterPoll(cluster=cluster).state(T0).kind == NEVER
    stale = ClusterPoll(cluster=cluster, last_poll_at=_at(0), last_ok_at=_at(-60), stale_since=_at(0))
    assert stale.state(_at(1)).kind == STALE
    stale.poll_started_at, stale.poll_lock_until = _at(30), _at(40)
    assert stale.state(_at(31)).kind == STALE  # a poll under way does not hide that the data is stale
    assert stale.state(_at(41)).kind == INTERRUPTED


def test_an_outcome_never_moves_back_in_time(cluster):
    """A poll presumed dead (its lease taken over) that finishes after its successor changes nothing."""
    ClusterPoll.acquire(cluster.pk, _at(0), 10)
    record(cluster.pk, Outcome(_at(20), 1.0))
    record(cluster.pk, Outcome(_at(0), 30.0, error="poll failed: late"))
    stored = row(cluster)
    assert (stored.last_poll_at, stored.last_ok_at, stored.last_error) == (_at(20), _at(20), "")
    assert stored.stale_since is None
    record(cluster.pk, Outcome(_at(20), 1.0))  # the same outcome twice: the same row
    assert row(cluster).last_poll_at == _at(20)


# --- the lease ----------------------------------------------------------------------------------


def test_the_lease_is_renewed_from_now_but_never_past_the_cap():
    lease = Lease(seconds=20, cap=330)
    assert lease.until(T0, _at(10)) == _at(30)
    assert lease.until(T0, _at(320)) == _at(330)
    assert lease.every == pytest.approx(20 / 3)


def test_a_beat_renews_the_lock_and_the_claim_and_notices_a_lock_taken_over(cluster):
    lock = ClusterPoll.acquire(cluster.pk, _at(0), 10)
    assert lock is not None
    claims = []
    beat = Heartbeat(Lease(10, cap=100, also=lambda: claims.append(1) or True), cluster.pk, lock.token, _at(0))
    beat.beat(_at(8))
    assert row(cluster).poll_lock_until == _at(18) and claims == [1] and not beat.lost

    ClusterPoll.objects.filter(pk=cluster.pk).update(poll_lock_token="someone-else")
    beat.beat(_at(16))
    assert beat.lost and claims == [1]
    assert row(cluster).poll_lock_until == _at(18)  # theirs, untouched


def test_a_beat_that_fails_is_logged_and_does_not_stop_the_lease(cluster, caplog):
    lock = ClusterPoll.acquire(cluster.pk, _at(0), 10)
    assert lock is not None

    def redis_away() -> bool:
        raise ConnectionError("Redis is restarting")

    beat = Heartbeat(Lease(10, cap=100, also=redis_away), cluster.pk, lock.token, _at(0))
    with caplog.at_level(logging.WARNING, logger="gitops.pollease"):
        beat.beat(_at(5))
    assert not beat.lost and beat.renewals == 0
    assert "could not renew the poll lease" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_keeps_the_lock_alive_while_the_poll_runs(cluster):
    now = timezone.now()
    lock = ClusterPoll.acquire(cluster.pk, now, 0.3)
    assert lock is not None
    lease = Lease(seconds=0.3, cap=60)
    with lease.kept(cluster.pk, lock.token, now) as beat:
        deadline = time.monotonic() + 10
        while beat.renewals < 3:  # three renewals: the lock lived three times a lease
            assert time.monotonic() < deadline, "the lease was not renewed"
            time.sleep(0.02)  # waiting for a condition
        assert row(cluster).poll_lock_until > now + timedelta(seconds=0.3)
    assert not beat.is_alive()


# --- every failure path gives the lock back -------------------------------------------------


class RaisingSource:
    """A source whose read fails with `error`: the failure of a bug, or Celery's soft time limit."""

    name = "dev-eu-1"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def list_objects(self, kind: object, *, namespace: str | None = None) -> object:
        raise self.error


def _lock_free(cluster: Cluster) -> bool:
    stored = row(cluster)
    return stored.poll_lock_until is None and stored.poll_lock_token == ""


def test_an_unexpected_error_writes_a_stale_outcome_and_releases(cluster):
    report = poll(cluster, source=RaisingSource(RuntimeError("a collector tripped")))
    assert not report.ok and report.error == "poll failed: RuntimeError: a collector tripped"
    assert _lock_free(cluster) and row(cluster).stale_since is not None


def test_past_its_soft_time_limit_a_poll_stops_writes_a_timeout_and_releases(cluster, settings):
    settings.PORTAL_POLL_SOFT_TIME_LIMIT = 270
    report = poll(cluster, source=RaisingSource(SoftTimeLimitExceeded()))
    assert report.error == "timeout: the poll ran past its time limit of 270 s and was stopped"
    assert _lock_free(cluster) and row(cluster).last_error == report.error


def test_when_the_outcome_cannot_be_written_the_lock_is_still_released(cluster, monkeypatch):
    def database_gone(*_: object) -> None:
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(polling, "record", database_gone)
    with pytest.raises(DatabaseError):
        poll(cluster)
    assert _lock_free(cluster)


def test_a_release_that_fails_is_logged_and_the_lease_lapses_by_itself(cluster, monkeypatch, caplog):
    def database_gone(*_: object) -> None:
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(ClusterPoll, "release", database_gone)
    with caplog.at_level(logging.WARNING, logger="gitops.polling"):
        report = poll(cluster, lease=Lease(seconds=20, cap=330))
    assert report.ok, report.error
    assert "could not release the poll lock of dev-eu-1" in caplog.text
    stored = row(cluster)
    assert stored.poll_lock_until is not None and stored.poll_lock_until <= stored.poll_started_at + timedelta(
        seconds=20
    )


# --- the task's settings and the metrics ------------------------------------------------------


def test_the_poll_task_is_acked_late_requeued_on_a_lost_worker_and_bounded_by_its_time_limits(settings):
    assert poll_cluster.acks_late and poll_cluster.reject_on_worker_lost
    assert poll_cluster.soft_time_limit < poll_cluster.time_limit == settings.PORTAL_POLL_TIME_LIMIT
    assert poll_cluster.time_limit < lock_seconds() <= poll_cluster.time_limit + settings.PORTAL_POLL_LEASE_SECONDS
    # A dead worker's lease lapses well within one interval, so the next tick can queue again.
    assert settings.PORTAL_POLL_LEASE_SECONDS < settings.PORTAL_POLL_INTERVAL


def test_skipped_and_interrupted_polls_are_counted(cluster):
    skipped, interrupted = "portal_poll_skipped_total", "portal_poll_interrupted_total"
    _, before = scrape()
    ClusterPoll.acquire(cluster.pk, timezone.now() - timedelta(seconds=60), 30)  # a poll that died a minute ago
    assert poll(cluster).ok  # takes it over
    held = ClusterPoll.acquire(cluster.pk, timezone.now(), 60)
    assert held is not None
    assert poll(cluster).skipped == "another worker is polling this cluster"
    Cluster.objects.filter(pk=cluster.pk).update(connection=Cluster.Connection.AGENT)
    assert poll(Cluster.objects.get(pk=cluster.pk)).skipped

    _, after = scrape()
    assert value(after, interrupted, cluster="dev-eu-1") == value(before, interrupted, cluster="dev-eu-1") + 1
    for reason in ("locked", "not_read_here"):
        assert value(after, skipped, reason=reason) == value(before, skipped, reason=reason) + 1


# --- what people see --------------------------------------------------------------------------


def test_clusters_page_and_api_say_poll_interrupted_and_not_ok(cluster, client, users, settings):
    settings.TIME_ZONE = "UTC"
    started = timezone.now().replace(microsecond=0) - timedelta(minutes=3)
    ClusterPoll.objects.create(
        cluster=cluster,
        last_poll_at=started - timedelta(minutes=1),
        last_ok_at=started - timedelta(minutes=1),
        poll_started_at=started,
        poll_lock_until=started + timedelta(seconds=20),
    )
    client.force_login(users["viewer"])
    html = client.get(reverse("clusters")).content.decode()
    assert 'data-poll-state="interrupted"' in html and 'data-poll-state="ok"' not in html
    assert f'poll interrupted at <time datetime="{started.isoformat()}">' in html
    assert started.strftime("%H:%M") in html

    from gitops.models import GitOpsApp

    GitOpsApp.objects.create(cluster=cluster, read_from=cluster, tool="argo", namespace="argocd", name="web")
    response = client.get("/api/v1/gitops")
    assert response.status_code == 200, response.content
    [item] = response.json()["results"]
    assert item["cluster_poll_interrupted_at"] == started.isoformat()


def test_a_poll_asked_for_now_expires_within_an_interval(cluster, memory_broker, settings):
    """Redelivered when its process dies, a "Poll now" must not loop for ever on a cluster whose
    poll kills its process: it expires, and the beat tick polls the cluster from then on."""
    from gitops.tasks import poll_soon

    poll_soon(cluster.pk)
    [queued] = memory_broker.take("poll")
    assert (queued.task, queued.args) == ("gitops.poll_cluster", [cluster.pk])
    assert queued.expires is not None
    left = (datetime.fromisoformat(queued.expires) - timezone.now()).total_seconds()
    assert 0 < left <= settings.PORTAL_POLL_INTERVAL
