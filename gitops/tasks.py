"""Celery tasks: beat fans out one poll per cluster, so a slow cluster delays nobody.

A cluster whose poll is already queued or running is not queued again: `poll_all` takes a
claim on the cluster (`portal.kernel.claims`) before it queues, and the poll gives it back
when it ends. The message expires when the claim does, a little before the next tick, so
under a backlog the next tick replaces a poll that never started instead of adding one.

A worker that dies mid-poll does not hold its cluster for long: the running poll keeps its
claim and its database lock as a short lease (gitops.pollease), so both lapse a lease after the
worker stopped and the next tick queues the cluster again, its page saying "poll interrupted"
meanwhile. Redelivery of the unacknowledged message is not the recovery path when the whole
worker is gone: Redis gives it back only after the broker's visibility timeout, shared by every
queue (forge work may hold a message for many minutes), while the tick's message expires within
an interval; a late redelivery is dropped as expired, or polls once more, harmlessly."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.models import F
from django.utils import timezone

from gitops import syncwindows
from gitops.models import AppProject, ClusterPoll, GitOpsApp
from gitops.pollease import Lease
from gitops.polling import lock_seconds, poll
from gitops.store import columns
from gitops.windowstate import app_target, verdict
from portal.kernel.catalog.models import Cluster
from portal.kernel.claims import Claims, claims

log = logging.getLogger(__name__)

QUEUED_SHARE = 0.9  # of the poll interval: how long a queued poll stays claimed and valid


def poll_claim_key(cluster_id: int) -> str:
    return f"poll:{cluster_id}"


def queued_seconds() -> float:
    return settings.PORTAL_POLL_INTERVAL * QUEUED_SHARE


@shared_task(
    name="gitops.poll_cluster",
    # Acknowledged when it ends, and given back to the queue if its process dies (OOM, SIGKILL of
    # a prefork child): another process polls the cluster at once. A poll run twice stores the
    # same rows and an outcome that never moves back in time (gitops.clusterpoll.record).
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=settings.PORTAL_POLL_TIME_LIMIT,
    soft_time_limit=settings.PORTAL_POLL_SOFT_TIME_LIMIT,
)
def poll_cluster(cluster_id: int, claim: str = "") -> dict:
    key = poll_claim_key(cluster_id)
    store = claims()
    seconds = settings.PORTAL_POLL_LEASE_SECONDS
    try:
        if claim:
            # Queued -> running: the claim now lives as long as the poll's lease, renewed with it,
            # so it lapses soon after a worker that dies mid-poll and the next tick queues again.
            store.extend(key, claim, seconds)
        cluster = enabled_cluster(cluster_id)
        if cluster is None:
            return {"skipped": "no such enabled cluster"}
        also = (lambda: store.extend(key, claim, seconds)) if claim else None
        report = poll(cluster, lease=Lease(seconds, cap=lock_seconds(), also=also))
        return {
            "cluster": report.cluster,
            "ok": report.ok,
            "seconds": round(report.seconds, 3),
            "apps": report.stored.apps if report.stored else None,
            "error": report.error,
            "skipped": report.skipped,
        }
    finally:
        if claim:
            _give_back(store, key, claim)


def enabled_cluster(cluster_id: int) -> Cluster | None:
    """The cluster a poll task polls, None when it is gone or disabled. Read as SQL text (gitops.store.columns):
    every poll task reads it, and the queryset's compile cost a poll several times the statement.
    Its environment is not loaded: no poll reads it."""
    rows = columns.fetch(_ENABLED_CLUSTER, [cluster_id])
    if not rows:
        return None
    values = [columns.read(Cluster, name, value) for name, value in zip(_CLUSTER_FIELDS, rows[0], strict=True)]
    return Cluster.from_db(DEFAULT_DB_ALIAS, _CLUSTER_FIELDS, values)


_CLUSTER_FIELDS = [field.attname for field in Cluster._meta.concrete_fields]
_CLUSTER_COLUMNS = ", ".join(f'"{field.column}"' for field in Cluster._meta.concrete_fields)
_ENABLED_CLUSTER = f'SELECT {_CLUSTER_COLUMNS} FROM "catalog_cluster" WHERE "id" = %s AND "enabled"'  # noqa: S608


def _give_back(store: Claims, key: str, claim: str) -> None:
    try:
        store.release(key, claim)
    except Exception:  # noqa: BLE001 - Redis away: the claim lapses with its lease
        log.warning("could not release the claim %s; it lapses by itself", key, exc_info=True)


def poll_soon(cluster_id: int) -> None:
    """Queue a poll of one cluster now (a member's "Poll now", a cluster just added), valid for one
    interval. The expiry matters because a poll whose process dies is given back to the queue
    (reject_on_worker_lost): a cluster whose poll kills its process (out of memory) must not be
    redelivered for ever, and a poll not started within an interval is the beat tick's to run."""
    expires = timezone.now() + timedelta(seconds=settings.PORTAL_POLL_INTERVAL)
    poll_cluster.apply_async((cluster_id,), expires=expires)


@shared_task(name="gitops.poll_all")
def poll_all() -> int:
    """Queue a poll of every enabled cluster not already queued or being polled; how many were queued."""
    store = claims()
    seconds = queued_seconds()
    queued = 0
    # A cluster the portal does not read (its apps come from an Argo CD instance) is never queued.
    # Nor is one whose agent pushes it (gitops.sources.agent); mark_silent_agents watches those.
    readable = Cluster.objects.filter(enabled=True).exclude(
        connection__in=[Cluster.Connection.NONE, Cluster.Connection.AGENT]
    )
    # Longest unread first: when the workers cannot keep up, the polls a tick could not start
    # expire and the next tick queues everyone again; in a fixed order the same clusters would
    # always be first and the last ones never read.
    oldest_first = readable.order_by(F("poll__last_poll_at").asc(nulls_first=True), "id")
    for cluster_id in oldest_first.values_list("id", flat=True):
        # The message's expiry is fixed before the claim is taken, so it never outlives it.
        expires = timezone.now() + timedelta(seconds=seconds)
        token = store.take(poll_claim_key(cluster_id), seconds)
        if token is None:
            continue
        poll_cluster.apply_async((cluster_id,), {"claim": token}, expires=expires)
        queued += 1
    return queued


# Apps re-judged per round of `refresh_sync_windows`.
WINDOW_CHUNK = 2000


@shared_task(name="gitops.refresh_sync_windows")
def refresh_sync_windows() -> int:
    """Re-judge apps whose window edge has passed, without waiting for the next poll:
    a page must never show a window that has already closed (or miss one that opened).

    Edges fall on the schedule's minutes, so at the top of an hour every app of a fleet whose
    projects open or close hourly is due at once: 80,000 at 1,000 clusters. They are judged
    a chunk at a time, each project's windows compiled once, and written as one UPDATE per
    distinct verdict (most apps of a project share theirs). All in one list and one
    `bulk_update`, that took a poll process to 1.4 GB and PostgreSQL over 10 minutes on a
    statement of 80,000 CASE branches per column (2026-12-07)."""
    now = timezone.now()
    due = list(GitOpsApp.objects.filter(tool="argo", window_next_edge__lte=now).order_by("id")
               .values_list("id", flat=True))
    compiled: dict[tuple[int, str], syncwindows.CompiledWindows] = {}
    fields = ("sync_blocked", "sync_blocked_until", "sync_window", "window_next_edge")
    for first in range(0, len(due), WINDOW_CHUNK):
        apps = list(GitOpsApp.objects.filter(pk__in=due[first : first + WINDOW_CHUNK]).only(
            "id", "read_from_id", "project", "name", "destination_namespace", "destination_server",
            "destination_name", "manual_sync",
        ))
        # The AppProject lives where the app was read (a hub's), not on the cluster it deploys to.
        wanted = {(app.read_from_id, app.project or "default") for app in apps} - set(compiled)
        for project in AppProject.objects.filter(cluster_id__in={cluster for cluster, _ in wanted}):
            compiled.setdefault((project.cluster_id, project.name), syncwindows.compile_windows(project.sync_windows))
        verdicts: dict[str, tuple[dict[str, Any], list[int]]] = {}
        for app in apps:
            windows = compiled.get((app.read_from_id, app.project or "default")) or syncwindows.compile_windows([])
            state = verdict(windows, app_target(app), app.manual_sync, now)
            key = json.dumps([state[name] for name in fields], sort_keys=True, default=str)
            verdicts.setdefault(key, (state, []))[1].append(app.pk)
        for state, pks in verdicts.values():
            GitOpsApp.objects.filter(pk__in=pks).update(**{name: state[name] for name in fields})
    return len(due)


@shared_task(name="gitops.mark_silent_agents")
def mark_silent_agents(now: datetime | None = None) -> int:
    """An agent that has not reported for three poll intervals leaves its cluster stale, with its
    last good data kept: "stale since" the first report it missed."""
    now = now or timezone.now()
    interval = timedelta(seconds=settings.PORTAL_POLL_INTERVAL)
    silent = ClusterPoll.objects.filter(
        cluster__connection=Cluster.Connection.AGENT, cluster__enabled=True, stale_since__isnull=True,
        last_poll_at__lt=now - 3 * interval,  # an agent that never reported shows "not polled yet"
    )
    marked = 0
    for row in silent.only("cluster_id", "last_poll_at"):
        last = row.last_poll_at
        assert last is not None
        error = f"the agent has not reported since {last.isoformat(timespec='seconds')}"
        since = last + interval
        # Not a poll's outcome (gitops.clusterpoll.record): no poll ran, the agent is silent.
        marked += ClusterPoll.objects.filter(pk=row.pk, stale_since__isnull=True).update(
            stale_since=since, last_error=error)
    return marked
