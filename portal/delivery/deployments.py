"""From a merged pull request to "running in production": running_at, "not deployed" and why.

A merged PR is *running* when its version runs (a RunningVersion row with `to_version`)
for each of its services in **every** cluster it targets: the clusters the PR names, or,
when it names none, every cluster of its environment where an application deploys one of
its services. Every cluster, not the first one, because "in production" means that the
people the change was for have it; a PR that reached one of two prod clusters shows as
"not deployed" with the other cluster and why. `running_at` is when the last of those
clusters began to run it: the poll that recorded the version change there
(VersionChange.at, never before the merge), or the tracking run that first saw it when
no change was recorded (the cluster was first polled with the version already running).

While it is not running, the reason is read from the store, per cluster that does not
run it yet: a sync window holds it, Flux has it suspended, Argo CD syncs it by hand, the
tool has not synced a commit since the merge, or it is rolling out / failing to become
ready. There is no stored "not deployed" flag: the page and the task both derive it from
the same rows with `progress`, so they never disagree. One hour after the merge a PR
still not running records one "merged, not deployed" event (portal.delivery.announcements).

A workload no GitOps tool deploys (a Nomad job, a Compose or Swarm service, an ECS service:
its PR names its cluster) counts the same way, by what runs there; while it does not, the
reason says that no GitOps tool will roll it out, whoever deploys the workload must.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion, VersionChange, sync_held
from gitops.revisions import short_revision
from portal.delivery import announcements, history_pins, rollbacks
from portal.delivery.models import PullRequest
from portal.delivery.planner import SUSPENDED_WORDS
from portal.kernel.timestamps import utc_stamp

log = logging.getLogger(__name__)

NOT_DEPLOYED_AFTER = timedelta(hours=1)  # when "merged, not deployed" is worth a notification
TRACK_FOR = timedelta(days=30)  # merged PRs older than this are no longer followed (nor shown)
TOOL_NAMES = {"argo": "Argo CD", "flux": "Flux"}


@dataclass(frozen=True)
class AppFacts:
    """What the store says about one application, as far as deploying a merge goes."""

    name: str
    cluster: str
    environment: str
    tool: str
    services: tuple[str, ...]
    sync_blocked: bool = False
    sync_blocked_until: datetime | None = None
    window: str = ""
    suspended: bool = False
    manual_sync: bool = False
    synced_revision: str = ""
    revision_changed_at: datetime | None = None
    health_status: str = "Unknown"
    health_message: str = ""


@dataclass(frozen=True)
class Waiting:
    cluster: str
    reason: str


@dataclass
class Progress:
    targets: list[str]
    running: list[str] = field(default_factory=list)  # target clusters that run the version
    waiting: list[Waiting] = field(default_factory=list)

    @property
    def deployed(self) -> bool:
        return bool(self.targets) and not self.waiting

    @property
    def why(self) -> str:
        """One line for the page and the notification."""
        if not self.targets:
            return "no cluster of its environment deploys this service"
        parts = [f"{w.cluster}: {w.reason}" for w in self.waiting]
        if self.running:
            parts.append(f"already running on {', '.join(self.running)}")
        return "; ".join(parts)


def app_facts(app: GitOpsApp, services: Sequence[str]) -> AppFacts:
    window = app.sync_window or {}
    return AppFacts(
        name=app.name,
        cluster=app.cluster.name,
        environment=app.cluster.environment.name,
        tool=app.tool,
        services=tuple(services),
        sync_blocked=app.sync_blocked,
        sync_blocked_until=app.sync_blocked_until,
        window=str(window.get("description") or window.get("schedule") or ""),
        suspended=app.suspended,
        manual_sync=app.manual_sync,
        synced_revision=app.synced_revision,
        revision_changed_at=app.revision_changed_at,
        health_status=app.health_status,
        health_message=app.health_message or "",
    )


def why_not(app: AppFacts, merged_at: datetime, now: datetime) -> str:
    """Why `app` does not run a version merged at `merged_at` (the likeliest reason). Pure."""
    tool = TOOL_NAMES.get(app.tool, app.tool)
    if sync_held(app.sync_blocked, app.sync_blocked_until, now):
        name = f" '{app.window}'" if app.window else ""
        until = f" until {utc_stamp(app.sync_blocked_until)}" if app.sync_blocked_until else ""
        return f"a sync window{name} holds {app.name}{until}"
    if app.suspended:
        return f"Flux has {app.name} {SUSPENDED_WORDS}"
    if app.manual_sync:
        return f"Argo CD syncs {app.name} by hand: merging does not deploy it"
    if app.revision_changed_at is None or app.revision_changed_at < merged_at:
        last = f" (still at {short_revision(app.synced_revision)})" if app.synced_revision else ""
        return f"{tool} has not synced {app.name} since the merge{last}"
    if app.health_status == "Progressing":
        return f"{app.name} is rolling out"
    message = f": {app.health_message[:200]}" if app.health_message and app.health_status != "Healthy" else ""
    return f"{tool} synced {app.name} after the merge; the version does not run yet ({app.health_status}{message})"


OUTSIDE_WHY = ("runs outside GitOps: no GitOps tool rolls it out, so whoever deploys the workload must "
               "(then the next poll sees the version)")


def progress(
    services: Sequence[str],
    environment: str,
    clusters: Sequence[str],
    version: str,
    merged_at: datetime,
    apps: Iterable[AppFacts],
    running: set[tuple[str, str, str]],
    now: datetime,
    outside: Iterable[tuple[str, str]] = (),
) -> Progress:
    """Where a merged change runs, and why not elsewhere. `running`: {(service, cluster, version)};
    `outside`: {(service, cluster)} where a workload outside GitOps runs the service. Pure."""
    outside = set(outside)
    wanted = set(services)
    deploying = [a for a in apps if wanted & set(a.services)]
    if clusters:
        targets = list(dict.fromkeys(clusters))
    else:
        targets = sorted({a.cluster for a in deploying if a.environment == environment})
    result = Progress(targets=targets)
    for cluster in targets:
        here = [a for a in deploying if a.cluster == cluster]
        present = {s for s in wanted if any(s in a.services for a in here)} or wanted
        if all((service, cluster, version) in running for service in present):
            result.running.append(cluster)
            continue
        if not here and any((service, cluster) in outside for service in present):
            result.waiting.append(Waiting(cluster, OUTSIDE_WHY))
            continue
        if not here:
            result.waiting.append(Waiting(cluster, "no application on this cluster deploys it"))
            continue
        result.waiting.append(Waiting(cluster, "; ".join(dict.fromkeys(why_not(a, merged_at, now) for a in here))))
    return result


def running_since(first_seen: dict[str, datetime | None], merged_at: datetime, now: datetime) -> datetime:
    """When the last target cluster began to run the version: cluster -> VersionChange.at (None: not recorded)."""
    times = [at if at is not None else now for at in first_seen.values()] or [now]
    return max(max(times), merged_at)


# --- reading the store ----------------------------------------------------------------


@dataclass
class Fleet:
    """The rows `progress` needs for a set of pull requests, read in a fixed number of queries."""

    apps: list[AppFacts]
    running: set[tuple[str, str, str]]
    outside: set[tuple[str, str]] = field(default_factory=set)  # (service, cluster) run outside GitOps

    @classmethod
    def for_pull_requests(cls, prs: Sequence[PullRequest]) -> Fleet:
        services = sorted({s for pr in prs for s in pr.services or []})
        environments = {pr.environment for pr in prs if pr.environment}
        clusters = {c for pr in prs for c in pr.clusters or []}
        if not services:
            return cls([], set())
        where = Q(cluster__environment__name__in=environments) | Q(cluster__name__in=clusters)
        rows = list(
            GitOpsApp.objects.filter(where, services__name__in=services)
            .select_related("cluster", "cluster__environment")
            .distinct()
        )
        links = GitOpsApp.services.through.objects.filter(gitopsapp_id__in=[a.id for a in rows]).values_list(
            "gitopsapp_id", "service__name"
        )
        names: dict[int, list[str]] = defaultdict(list)
        for app_id, name in links:
            names[app_id].append(name)
        apps = [app_facts(app, sorted(names[app.id])) for app in rows]
        versions = {pr.to_version for pr in prs if pr.to_version}
        running = set(
            RunningVersion.objects.filter(service__name__in=services, version__in=versions).values_list(
                "service__name", "cluster__name", "version"
            )
        )
        outside = set(
            RunningVersion.objects.filter(service__name__in=services, app=None, workload__isnull=False)
            .filter(where).values_list("service__name", "cluster__name")
        )
        return cls(apps, running, outside)

    def progress(self, pr: PullRequest, now: datetime) -> Progress:
        return progress(
            pr.services or [], pr.environment, pr.clusters or [], pr.to_version, pr.merged_at or now, self.apps,
            self.running, now, self.outside,
        )


def not_deployed_why(prs: Iterable[PullRequest | None], now: datetime | None = None) -> dict[int, str]:
    """pull request id -> why its merged version does not run yet ("merged, not deployed — why"),
    for the merged, not-running ones among `prs`; read in the fixed queries of `Fleet`."""
    now = now or timezone.now()
    merged = {
        pr.pk: pr for pr in prs
        if pr is not None and pr.state == PullRequest.State.MERGED and pr.running_at is None and pr.to_version
    }
    if not merged:
        return {}
    fleet = Fleet.for_pull_requests(list(merged.values()))
    found = {}
    for pk, pr in merged.items():
        state = fleet.progress(pr, now)
        if not state.deployed:
            found[pk] = state.why
    return found


def awaiting(now: datetime) -> list[PullRequest]:
    """Merged PRs of the tracking period whose version is not known to run yet."""
    return list(
        PullRequest.objects.filter(
            state=PullRequest.State.MERGED, running_at__isnull=True, merged_at__gte=now - TRACK_FOR
        )
        .exclude(to_version="")
        .order_by("merged_at", "id")
    )


@dataclass
class TrackReport:
    checked: int = 0
    running: int = 0
    not_deployed: int = 0
    announced: int = 0  # "merged, not deployed" events recorded by this run (first time or again)
    rollbacks_offered: int = 0
    checks_failed: int = 0


def track(now: datetime | None = None) -> TrackReport:
    """Set running_at where the version now runs everywhere; announce what waits past an hour."""
    now = now or timezone.now()
    report = TrackReport()
    prs = awaiting(now)
    fleet = Fleet.for_pull_requests(prs)
    first_seen = _first_seen(prs)
    for pr in prs:
        report.checked += 1
        state = fleet.progress(pr, now)
        merged_at = pr.merged_at or now
        if state.deployed:
            seen = {c: first_seen.get((pr.id, c)) for c in state.targets}
            pr.running_at = running_since(seen, merged_at, now)
            PullRequest.objects.filter(pk=pr.pk, running_at__isnull=True).update(running_at=pr.running_at)
            report.running += 1
            continue
        report.not_deployed += 1
        if now - merged_at >= NOT_DEPLOYED_AFTER:
            announcements.merged_not_deployed(pr, state, now)
            report.announced += 1
    report.rollbacks_offered = announce_rollbacks(now)
    report.checks_failed = announce_failing_checks(now)
    return report


def announce_failing_checks(now: datetime) -> int:
    """Announce "checks failing" for open portal PRs that forge tracking marked failing (once each)."""
    prs = PullRequest.objects.filter(
        state=PullRequest.State.OPEN, checks=PullRequest.Checks.FAIL, checks_failed_notified_at__isnull=False,
        checks_failed_notified_at__gte=now - timedelta(days=1),
    )
    count = 0
    for pr in prs:
        announcements.checks_failed(pr, now)
        count += 1
    return count


def _first_seen(prs: Sequence[PullRequest]) -> dict[tuple[int, str], datetime]:
    """(PR id, cluster) -> the first recorded change to the PR's version there after its merge."""
    if not prs:
        return {}
    since = min(pr.merged_at for pr in prs if pr.merged_at) if any(pr.merged_at for pr in prs) else None
    services = {s for pr in prs for s in pr.services or []}
    rows = VersionChange.objects.filter(service__name__in=services)
    if since is not None:
        rows = rows.filter(at__gte=since)
    changes = list(rows.values_list("service__name", "cluster__name", "to_version", "at").order_by("at"))
    seen: dict[tuple[int, str], datetime] = {}
    for pr in prs:
        merged_at = pr.merged_at
        wanted = set(pr.services or [])
        for service, cluster, to_versions, at in changes:
            if service not in wanted or (merged_at and at < merged_at):
                continue
            if pr.to_version in [v.strip() for v in to_versions.split(",")]:
                key = (pr.id, cluster)
                # The last service of the PR to get there decides the cluster's time.
                seen[key] = max(seen.get(key, at), at)
    return seen


def read_failing_histories(now: datetime, app_ids: Iterable[int] | None = None) -> int:
    """Read what Git pinned at the commits the failing apps' tool histories name (of `app_ids`
    only, when given), where not read yet: the facts a history rollback offer is judged from. In
    the worker, so that no page waits on a forge for it; how many commits were read."""
    apps = rollbacks.failing_apps(now)
    if app_ids is not None:
        apps = apps.filter(pk__in=list(app_ids))
    failing = dict(apps.filter(cluster__environment__isnull=False).values_list("id", "health_since"))
    return history_pins.read_missing(failing, now, rollbacks.HISTORY_REACH) if failing else 0


def announce_rollbacks(now: datetime) -> int:
    """Announce "rollback offered" once per offer (the key names the offer and its episode).
    First reads what Git pinned at the commits the failing apps' tool histories name, where not
    read yet: here, in the worker, so that no page waits on a forge for it."""
    read_failing_histories(now)
    apps = list(rollbacks.failing_apps(now).select_related("cluster", "cluster__environment")
                .only(*rollbacks.OFFER_FIELDS))
    count = 0
    for app_id, offers in rollbacks.offers_for_apps(apps, now).items():
        for offer in offers:
            announcements.rollback_offered(offer, app_id, now)
            count += 1
    return count
