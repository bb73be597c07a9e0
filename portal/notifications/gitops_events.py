"""Gitops episodes from the store: an application out of sync, degraded or missing past the grace period.

An episode begins when the application leaves "in sync and healthy" (the StateChange row
that took it there; for an app first seen in trouble, when that trouble began) and ends
when it is back in sync and healthy. Going Degraded -> Progressing -> Degraded, or
OutOfSync -> Synced while still Degraded, stays one episode: people hear about it once.
The episode's start is part of its key, so the key is the same on every scan and on
every worker.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from forges import weblinks
from gitops.models import ATTENTION_HEALTH, GitOpsApp, StateChange, VersionChange, grace_cutoff
from gitops.revisions import short_revision
from gitops.store import app_key
from portal.links import argocd_app_url
from portal.notifications.events import Event, EventKind, emit, links, portal_url
from portal.notifications.models import Episode

# Causes are looked for among changes of the day before the episode began.
CAUSE_WINDOW = timedelta(days=1)
# How far back the StateChange history is read to find where an episode began.
HISTORY = timedelta(days=30)


def is_resolved(sync: str, health: str) -> bool:
    """Back in sync and healthy: the end of an episode."""
    return sync != "OutOfSync" and health == "Healthy"


@dataclass(frozen=True)
class Change:
    field: str
    old: str
    new: str
    at: datetime


def episode_start(app: GitOpsApp, changes: list[Change], anchor: datetime | None = None) -> datetime:
    """When the app last left "in sync and healthy".

    `changes` are the app's sync/health StateChange rows, newest first. Walking back from
    the current state, the first earlier state that was resolved marks the start. When the
    history never shows one (the app was first seen in trouble), the start is `anchor` (the
    open episode's start, so the key stays stable) or the earliest the trouble is known.
    """
    sync, health = app.sync_status, app.health_status
    index = 0
    while index < len(changes):
        at = changes[index].at
        # All changes of one poll share `at`: undo them together.
        while index < len(changes) and changes[index].at == at:
            change = changes[index]
            if change.field == "sync":
                sync = change.old
            elif change.field == "health":
                health = change.old
            index += 1
        if is_resolved(sync, health):
            return at
    if anchor is not None:
        return anchor
    # Never resolved in the history read: the trouble began when the oldest known bad state
    # did. A field that never changed has its `since`; one that did, began before our record.
    changed = {c.field for c in changes}
    known = []
    if sync == "OutOfSync":
        known.append(app.first_seen if "sync" in changed or not app.sync_since else app.sync_since)
    if health != "Healthy":
        known.append(app.first_seen if "health" in changed or not app.health_since else app.health_since)
    return min(known)


def episode_key(app: GitOpsApp, start: datetime) -> str:
    object_key = app_key(app.tool, app.kind, app.namespace, app.name)
    return f"gitops:{app.cluster.name}/{object_key}@{start.astimezone(UTC).isoformat()}"


def state_words(app: GitOpsApp) -> str:
    """"degraded", "missing", "out of sync", "degraded and out of sync"."""
    words = []
    if app.health_status in ATTENTION_HEALTH:
        words.append(app.health_status.lower())
    if app.sync_status == "OutOfSync":
        words.append("out of sync")
    return " and ".join(words) or app.health_status.lower()


def state_title(app: GitOpsApp) -> str:
    words = []
    if app.health_status in ATTENTION_HEALTH:
        words.append(app.health_status)
    if app.sync_status == "OutOfSync":
        words.append("OutOfSync")
    return " and ".join(words) or app.health_status


def humanize(delta: timedelta) -> str:
    """"less than a minute", "5 minutes", "an hour", "3 hours", "a day"."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return "less than a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return "a minute" if minutes == 1 else f"{minutes} minutes"
    hours = round(minutes / 60)
    if hours < 24:
        return "an hour" if hours == 1 else f"{hours} hours"
    days = round(hours / 24)
    return "a day" if days == 1 else f"{days} days"


def _causes(app: GitOpsApp, start: datetime, versions: list[VersionChange]) -> list[str]:
    """Changes of the day before, nearest to the start first: the likeliest cause leads."""
    where = f"{state_words(app)} on {app.cluster.name}"
    several = len({v.service_id for v in versions}) > 1
    candidates: list[tuple[timedelta, str]] = []
    for change in versions:
        what = f"{change.to_version} replaced {change.from_version}"
        if several:
            what = f"{change.service.name} {what}"
        candidates.append((start - change.at, f"{where}, {humanize(start - change.at)} after {what}"))
    if app.previous_synced_revision and app.revision_changed_at and start - CAUSE_WINDOW <= app.revision_changed_at:
        if app.revision_changed_at <= start:
            new, old = short_revision(app.synced_revision), short_revision(app.previous_synced_revision)
            delta = start - app.revision_changed_at
            candidates.append((delta, f"{where}, {humanize(delta)} after commit {new} replaced {old}"))
    candidates.sort(key=lambda c: c[0])
    return [text for _, text in candidates]


def _action_link(app: GitOpsApp, services: list[str]) -> str:
    """The service page when the app deploys one service, else /gitops filtered to the app."""
    if len(services) == 1:
        return portal_url(reverse("service", args=[services[0]]))
    return portal_url(reverse("gitops") + "?" + urlencode({"cluster": app.cluster.name, "q": app.name}))


def build_event(app: GitOpsApp, start: datetime, at: datetime) -> Event:
    services = sorted(s.name for s in app.services.all())
    versions = list(
        VersionChange.objects.filter(Q(app=app) | Q(cluster=app.cluster, service__name__in=services))
        .filter(at__gte=start - CAUSE_WINDOW, at__lte=start)
        .select_related("service")
        .distinct()
        .order_by("-at", "-id")
    )
    causes = _causes(app, start, versions)
    cluster = app.cluster.name
    since = f"{start.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    summary = causes[0] if causes else f"{state_words(app)} on {cluster} since {since}"
    summary = summary[:1].upper() + summary[1:]
    commit_url = weblinks.commit_url(app.repo_url, app.synced_commit())
    changes_url = None
    if app.revision_changed_at and start - CAUSE_WINDOW <= app.revision_changed_at <= at:
        changes_url = weblinks.compare_url(app.repo_url, app.previous_commit(), app.synced_commit())
    facts = [
        ("Environment", app.cluster.environment.name),
        ("Cluster", cluster),
        ("Application", f"{app.namespace}/{app.name}"),
        ("Sync", app.sync_status),
        ("Health", app.health_status),
        ("Since", since),
    ]
    if services:
        facts.append(("Services", ", ".join(services)))
    if app.synced_revision:
        facts.append(("Synced commit", short_revision(app.synced_revision)))
    if app.health_message:
        facts.append(("Message", app.health_message[:300]))
    return Event(
        kind=EventKind.APP_ATTENTION,
        key=episode_key(app, start),
        title=f"{app.name} is {state_title(app)} on {cluster}",
        summary=summary,
        started_at=start,
        environment=app.cluster.environment.name,
        cluster=cluster,
        services=tuple(services),
        facts=tuple(facts),
        causes=tuple(causes),
        links=links(
            ("Open in portal", _action_link(app, services)),
            ("Changes", changes_url),
            ("Synced commit", commit_url),
            ("Argo CD", argocd_app_url(app.namespace, app.name) if app.tool == "argo" else None),
        ),
        details={
            "app": {
                "tool": app.tool,
                "kind": app.kind,
                "namespace": app.namespace,
                "name": app.name,
                "sync_status": app.sync_status,
                "health_status": app.health_status,
                "health_message": app.health_message,
            },
            "revision": {
                "synced": app.synced_revision,
                "commit_url": commit_url,
                "previous": app.previous_synced_revision,
                "changes_url": changes_url,
            },
            "version_changes": [
                {"service": v.service.name, "from": v.from_version, "to": v.to_version, "at": v.at.isoformat()}
                for v in versions
            ],
        },
    )


def emit_gitops_events(at: datetime | None = None) -> list[Episode]:
    """Open, close and emit gitops episodes from the store as of `at`."""
    at = at or timezone.now()
    cutoff = grace_cutoff(at)
    # Apps in an attention state now; one in Progressing between two Degraded stays in its episode.
    bad = list(
        GitOpsApp.objects.filter(Q(sync_status="OutOfSync") | Q(health_status__in=ATTENTION_HEALTH))
        .select_related("cluster", "cluster__environment")
        .prefetch_related("services")
    )
    history: dict[int, list[Change]] = defaultdict(list)
    rows = (
        StateChange.objects.filter(app__in=[a.id for a in bad], field__in=("sync", "health"), at__gte=at - HISTORY)
        .order_by("app_id", "-at", "-id")
        .values_list("app_id", "field", "old", "new", "at")
    )
    for app_id, name, old, new, when in rows:
        history[app_id].append(Change(name, old, new, when))
    open_episodes = {
        e.app_id: e
        for e in Episode.objects.filter(kind=EventKind.APP_ATTENTION, ended_at__isnull=True, app__isnull=False)
    }

    current: dict[int, str] = {}
    emitted = []
    for app in bad:
        anchor = open_episodes[app.id].started_at if app.id in open_episodes else None
        start = episode_start(app, history[app.id], anchor)
        key = episode_key(app, start)
        current[app.id] = key
        if start > cutoff:
            continue
        known = Episode.objects.filter(key=key).first()
        # An episode already recorded keeps its first words; only a new one is described afresh.
        event = known.event if known is not None else build_event(app, start, at)
        emitted.append(emit(event, at=at, app_id=app.id))

    # Close what is over: the app is back in sync and healthy, gone, or in a newer episode.
    still_open = set(current.values())
    others = Episode.objects.filter(kind=EventKind.APP_ATTENTION, ended_at__isnull=True).exclude(key__in=still_open)
    for episode in others.select_related("app"):
        app = episode.app
        if app is None or is_resolved(app.sync_status, app.health_status) or app.id in current:
            Episode.objects.filter(pk=episode.pk, ended_at__isnull=True).update(ended_at=at)
    return emitted
