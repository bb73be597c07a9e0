"""When to offer a rollback, and to which version.

An application that turns Degraded or Missing within a day of one of its services'
versions replacing another on that cluster, and stays so past the grace period (the one
rule of `gitops.models`: ATTENTION_HEALTH, `grace_cutoff`), is offered "Rollback PR →
<previous>": the version that ran before. `decide` is pure (plain rows and an injected `now`);
`offers_for_apps` loads what it needs for a page in two queries, whatever the number of apps.

Not offered when the trouble began before the version changed (the new version is not
its cause, and may be the fix), when the latest change was itself a return to the version
before (rolling back again would undo the rollback), or when the previous version is not
one version (a service that ran several versions in one workload).
Rollbacks are never held by freezes or sync windows: nothing here looks at them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from gitops.models import ATTENTION_HEALTH, GitOpsApp, VersionChange, grace_cutoff
from portal.delivery.models import PullRequest

WINDOW = timedelta(days=1)  # how long after a version change new trouble is blamed on it


@dataclass(frozen=True)
class Replacement:
    """One VersionChange row: on `cluster`, `service` went from `from_version` to `to_version` at `at`."""

    service: str
    cluster: str
    from_version: str
    to_version: str
    at: datetime


@dataclass(frozen=True)
class AppHealth:
    """What the store says about one application's health."""

    app_id: int
    name: str
    cluster: str
    environment: str
    health_status: str
    health_since: datetime | None
    health_message: str
    services: tuple[str, ...]  # services it deploys
    running: dict[str, list[str]]  # service -> versions running under it


@dataclass(frozen=True)
class RollbackOffer:
    app_id: int
    app: str
    cluster: str
    environment: str
    service: str
    current: str  # the version that replaced the previous one and runs now
    previous: str  # the version to return to
    replaced_at: datetime
    failing_since: datetime
    failure: str  # "Degraded: Deployment checkout exceeded its progress deadline"

    @property
    def event_key(self) -> str:
        """One notification per offer: the same app, service, versions and episode start."""
        return (
            f"delivery:rollback:{self.cluster}/{self.app}/{self.service}:{self.current}->{self.previous}"
            f"@{self.failing_since.isoformat()}"
        )


def _single(versions: str) -> str | None:
    """VersionChange joins several versions with ", " when a workload ran more than one."""
    parts = [v.strip() for v in versions.split(",") if v.strip()]
    return parts[0] if len(parts) == 1 else None


def decide(
    app: AppHealth,
    replacements: Sequence[Replacement],
    now: datetime,
    grace_period: timedelta,
    window: timedelta = WINDOW,
) -> list[RollbackOffer]:
    """The rollback offers for one app (one per service whose last version change is to blame). Pure.

    `replacements` are the VersionChange rows of the app's cluster, any order.
    """
    if app.health_status not in ATTENTION_HEALTH or app.health_since is None:
        return []
    if now - app.health_since < grace_period:
        return []
    by_service: dict[str, list[Replacement]] = defaultdict(list)
    for change in replacements:
        if change.cluster == app.cluster and change.service in app.services:
            by_service[change.service].append(change)
    offers = []
    for service in sorted(by_service):
        history = sorted(by_service[service], key=lambda c: c.at, reverse=True)
        latest = history[0]
        if latest.at > now:
            continue
        # The trouble must begin at or after the change (a poll may see both at once), within the window.
        if not latest.at <= app.health_since <= latest.at + window:
            continue
        previous, current = _single(latest.from_version), _single(latest.to_version)
        if previous is None or current is None or previous == current:
            continue
        if current not in app.running.get(service, [current]):
            continue  # something else runs by now: the change is no longer what is there
        if len(history) > 1:
            before = history[1]
            if _single(before.to_version) == previous and _single(before.from_version) == current:
                continue  # the latest change was already a rollback
        message = app.health_message.strip()
        offers.append(
            RollbackOffer(
                app_id=app.app_id,
                app=app.name,
                cluster=app.cluster,
                environment=app.environment,
                service=service,
                current=current,
                previous=previous,
                replaced_at=latest.at,
                failing_since=app.health_since,
                failure=f"{app.health_status}: {message}" if message else app.health_status,
            )
        )
    return offers


def app_health(app: GitOpsApp) -> AppHealth:
    """The pure input for one stored app (its cluster and environment already selected)."""
    running = app.running or {}
    return AppHealth(
        app_id=app.id,
        name=app.name,
        cluster=app.cluster.name,
        environment=app.cluster.environment.name,
        health_status=app.health_status,
        health_since=app.health_since,
        health_message=app.health_message or "",
        services=tuple(sorted(running)),
        running={k: list(v) for k, v in running.items()},
    )


def offers_for_apps(apps: Iterable[GitOpsApp], now: datetime | None = None) -> dict[int, list[RollbackOffer]]:
    """app id -> its rollback offers, for apps loaded with `cluster__environment`. One query at most."""
    now = now or timezone.now()
    cutoff = grace_cutoff(now)
    candidates = [
        app
        for app in apps
        if app.health_status in ATTENTION_HEALTH and app.health_since is not None and app.health_since <= cutoff
        # A discovered cluster (an unregistered Argo CD destination) has no environment to roll back in.
        and app.cluster.environment_id is not None
    ]
    if not candidates:
        return {}
    # Changes up to a window before the earliest trouble, and one window more to see whether the
    # latest change was itself a return.
    # No earlier than year 1: a row stored before parse_time read Go's zero time as unknown
    # may still say 0001-01-01, and subtracting from it would overflow.
    first = min(app.health_since for app in candidates)  # type: ignore[type-var]
    floor = datetime.min.replace(tzinfo=first.tzinfo)
    earliest = first - 2 * WINDOW if first - floor > 2 * WINDOW else floor
    services = sorted({name for app in candidates for name in (app.running or {})})
    rows = VersionChange.objects.filter(
        cluster_id__in={app.cluster_id for app in candidates}, service__name__in=services, at__gte=earliest
    ).values_list("service__name", "cluster__name", "from_version", "to_version", "at")
    replacements = [Replacement(*row) for row in rows]
    offers: dict[int, list[RollbackOffer]] = {}
    for app in candidates:
        found = decide(app_health(app), replacements, now, now - cutoff)
        if found:
            offers[app.id] = found
    return offers


def failing_apps(now: datetime) -> QuerySet[GitOpsApp]:
    """Applications degraded or missing past the grace period (the rule of `gitops.models`)."""
    return GitOpsApp.objects.filter(health_status__in=ATTENTION_HEALTH, health_since__lte=grace_cutoff(now))


def open_rollbacks(offers: Iterable[RollbackOffer]) -> dict[tuple[str, str, str], PullRequest]:
    """(service, environment, previous version) -> the rollback PR already open for it. One query at most."""
    wanted = {(o.service, o.environment, o.previous) for o in offers}
    if not wanted:
        return {}
    rows = PullRequest.objects.filter(
        kind=PullRequest.Kind.ROLLBACK,
        state__in=[PullRequest.State.OPENING, PullRequest.State.OPEN],
        environment__in={w[1] for w in wanted},
        to_version__in={w[2] for w in wanted},
    )
    found: dict[tuple[str, str, str], PullRequest] = {}
    for row in rows:
        for service in row.services or []:
            key = (service, row.environment, row.to_version)
            if key in wanted:
                found.setdefault(key, row)
    return found


def preview_url(offer: RollbackOffer) -> str:
    """The preview page of the rollback PR (a GET: following it writes nothing). The preview reads
    what went wrong and since when from the application itself."""
    params = [
        ("kind", "rollback"),
        ("app", str(offer.app_id)),
        ("service", offer.service),
        ("from", offer.current),
        ("to", offer.previous),
    ]
    return f"{reverse('pr-preview')}?{urlencode(params)}"
