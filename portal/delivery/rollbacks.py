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

A chart version is blamed by the same rule (`_to_blame`, one definition): an application that
installs a chart from a Helm or OCI repository (`portal.releases.charts.chart_pin`) and turned
failing within the window after its chart version changed is offered "Rollback PR → <previous
chart version>", the PR changing only the chart version line (`forges.pins.chart_edits`). The
versions and when each was deployed come from the application's stored history: an Argo CD
Application's `status.history[]` (oldest first; `revisions[i]` of the chart source, which Argo
CD records as the chart version it installed), a Flux HelmRelease's `status.history[]` snapshots
(`chartVersion`, `lastDeployed`; a failed attempt counts, it is what the version change did).
The version that replaced the previous one must be what Git pins now (else the pin moved on).

An image version's changes come first from the tool's own history, which holds them whenever
they happened, before the portal's first poll included: the commits an Argo CD Application's or
a Flux Kustomization's `status.history[]` shows deployed, each dated by its deployment, and what
Git pinned at each (`portal.delivery.history_pins`: read in the background once per repository,
commit and path, and only looked up here). A service the history shows no change of (or whose
history's pins are not read yet) falls back to the portal's own VersionChange rows: the changes
it saw between two of its polls. Both go through the one rule, `_to_blame`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from gitops.models import ATTENTION_HEALTH, GitOpsApp, VersionChange, grace_cutoff
from gitops.rawobjects import as_dict, as_list, as_str
from portal.delivery import history_pins
from portal.delivery.models import PullRequest
from portal.delivery.planner import ROLLBACK
from portal.kernel import links
from portal.kernel.timestamps import parse_time
from portal.releases.charts import ChartPin, chart_pin, may_install_a_chart

WINDOW = timedelta(days=1)  # how long after a version change new trouble is blamed on it
NOTHING = ""  # no service, repository or commit is named so
# How far before the trouble a history is read: the window, and one more to see whether the
# change to blame was itself a return.
HISTORY_REACH = 2 * WINDOW


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
    chart: str = ""  # a chart version rollback: the chart's name (`service` is then the app's first service)

    @property
    def subject(self) -> str:
        """What rolls back, as a sentence names it: "checkout", "the notifications chart"."""
        return f"the {self.chart} chart" if self.chart else self.service

    @property
    def event_key(self) -> str:
        """One notification per offer: the same app, service (or chart), versions and episode start."""
        what = f"chart={self.chart}" if self.chart else self.service
        return (
            f"delivery:rollback:{self.cluster}/{self.app}/{what}:{self.current}->{self.previous}"
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
    history: Sequence[Replacement] = (),
) -> list[RollbackOffer]:
    """The rollback offers for one app (one per service whose last version change is to blame). Pure.

    `replacements` are the VersionChange rows of the app's cluster, any order; `history` the
    changes the app's own tool history shows (`history_changes`), which replace them for each
    service it names.
    """
    if not _failing(app, now, grace_period):
        return []
    assert app.health_since is not None
    by_service: dict[str, list[Replacement]] = defaultdict(list)
    for change in history:
        if change.service in app.services:
            by_service[change.service].append(change)
    told = set(by_service)
    for change in replacements:
        if change.cluster == app.cluster and change.service in app.services and change.service not in told:
            by_service[change.service].append(change)
    offers = []
    for service in sorted(by_service):
        blamed = _to_blame(app.health_since, by_service[service], app.running.get(service), now, window)
        if blamed is not None:
            offers.append(_offer(app, service, *blamed))
    return offers


def _failing(app: AppHealth, now: datetime, grace_period: timedelta) -> bool:
    return app.health_status in ATTENTION_HEALTH and app.health_since is not None and (
        now - app.health_since >= grace_period)


def _to_blame(
    failing_since: datetime,
    changes: Sequence[Replacement],
    now_at: Sequence[str] | None,
    now: datetime,
    window: timedelta,
) -> tuple[str, str, datetime] | None:
    """The one rule of a rollback, for a service's image or a chart's version: (current, previous,
    replaced at) when the latest of `changes` (one subject's, any order) is to blame for trouble
    that began at `failing_since`; `now_at` is what the subject is at now (None: not known)."""
    if not changes:
        return None
    history = sorted(changes, key=lambda c: c.at, reverse=True)
    latest = history[0]
    if latest.at > now:
        return None
    # The trouble must begin at or after the change (a poll may see both at once), within the window.
    if not latest.at <= failing_since <= latest.at + window:
        return None
    previous, current = _single(latest.from_version), _single(latest.to_version)
    if previous is None or current is None or previous == current:
        return None
    if now_at is not None and current not in now_at:
        return None  # something else runs (or is pinned) by now: the change is no longer what is there
    if len(history) > 1:
        before = history[1]
        if _single(before.to_version) == previous and _single(before.from_version) == current:
            return None  # the latest change was already a rollback
    return current, previous, latest.at


def _offer(app: AppHealth, service: str, current: str, previous: str, at: datetime, chart: str = "") -> RollbackOffer:
    message = app.health_message.strip()
    assert app.health_since is not None
    return RollbackOffer(
        app_id=app.app_id,
        app=app.name,
        cluster=app.cluster,
        environment=app.environment,
        service=service,
        current=current,
        previous=previous,
        replaced_at=at,
        failing_since=app.health_since,
        failure=f"{app.health_status}: {message}" if message else app.health_status,
        chart=chart,
    )


def history_changes(
    deployed: Sequence[history_pins.Deployed], pins: Mapping[str, Mapping[str, Sequence[str]]], cluster: str
) -> list[Replacement]:
    """The image version changes a tool's history shows: between each two consecutive deployed
    commits (oldest first), each service whose pinned versions differ, dated by the later
    deployment. `pins` is commit -> service -> versions Git pinned there; nothing when one of
    the commits' pins is not known (a gap would hide a change, or a return). Pure."""
    if len(deployed) < 2 or any(d.commit not in pins for d in deployed):
        return []
    found = []
    for before, after in zip(deployed, deployed[1:], strict=False):
        old, new = pins[before.commit], pins[after.commit]
        for service in sorted(set(old) & set(new)):
            if sorted(old[service]) != sorted(new[service]):
                found.append(Replacement(service, cluster, ", ".join(sorted(old[service])),
                                         ", ".join(sorted(new[service])), after.at))
    return found


def chart_changes(history: Sequence[Mapping[str, object]], chart_source: int, cluster: str,
                  chart: str) -> list[Replacement]:
    """The chart version changes a stored history shows (oldest first, as rows keep it): an Argo
    CD entry's `revisions[chart_source]` (or its `revision` for one source), a Flux HelmRelease
    snapshot's `revision` (its `chartVersion`), each change dated by the entry's `deployed_at`."""
    found: list[Replacement] = []
    before = ""
    for entry in history:
        revisions = entry.get("revisions")
        if isinstance(revisions, list) and len(revisions) > chart_source:
            version = str(revisions[chart_source] or "")
        else:
            version = str(entry.get("revision") or "") if chart_source == 0 else ""
        at = parse_time(entry.get("deployed_at"))
        if not version or at is None:
            continue
        if before and version != before:
            found.append(Replacement(chart, cluster, before, version, at))
        before = version
    return found


def decide_chart(
    app: AppHealth,
    changes: Sequence[Replacement],
    pinned: str,
    chart: str,
    now: datetime,
    grace_period: timedelta,
    window: timedelta = WINDOW,
) -> RollbackOffer | None:
    """The chart rollback offer of one app whose Git pins `pinned` of `chart`, by the rule of
    `decide` (`changes` from `chart_changes`). Pure."""
    if not _failing(app, now, grace_period):
        return None
    assert app.health_since is not None
    blamed = _to_blame(app.health_since, changes, [pinned], now, window)
    if blamed is None:
        return None
    return _offer(app, app.services[0] if app.services else chart, *blamed, chart=chart)


# Every column of an app (and of its cluster and environment) that `offers_for_apps` judges and
# `app_health` words an offer from: a fleet's failing apps can be thousands of rows, whose
# objects and histories (their JSON columns) it never reads.
OFFER_FIELDS = (
    "id", "name", "health_status", "health_since", "health_message", "running",
    "cluster__name", "cluster__environment__name",
)


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
    """app id -> its rollback offers, for apps loaded with `cluster__environment`. None for no
    apps; else four queries, whether or not one of them is failing: a page costs the same number
    of queries whatever it holds (the API's rule, `portal.api.filters.with_after_change`)."""
    apps = list(apps)
    if not apps:
        return {}
    now = now or timezone.now()
    cutoff = grace_cutoff(now)
    candidates = [
        app
        for app in apps
        if app.health_status in ATTENTION_HEALTH and app.health_since is not None and app.health_since <= cutoff
        # A discovered cluster (an unregistered Argo CD destination) has no environment to roll back in.
        and app.cluster.environment_id is not None
    ]
    # Changes up to a window before the earliest trouble, and one window more to see whether the
    # latest change was itself a return.
    # No earlier than year 1: a row stored before parse_time read Go's zero time as unknown
    # may still say 0001-01-01, and subtracting from it would overflow.
    first = min((app.health_since for app in candidates if app.health_since is not None), default=now)
    floor = datetime.min.replace(tzinfo=first.tzinfo)
    earliest = first - 2 * WINDOW if first - floor > 2 * WINDOW else floor
    # NOTHING matches no row but keeps the query (an empty `__in` would skip it).
    services = sorted({name for app in candidates for name in (app.running or {})}) or [NOTHING]
    rows = VersionChange.objects.filter(
        cluster_id__in={app.cluster_id for app in candidates} or {0}, service__name__in=services, at__gte=earliest
    ).values_list("service__name", "cluster__name", "from_version", "to_version", "at")
    replacements = [Replacement(*row) for row in rows]
    charts = _chart_facts(candidates)
    histories = _history_changes(candidates)
    offers: dict[int, list[RollbackOffer]] = {}
    for app in candidates:
        health = app_health(app)
        found = decide(health, replacements, now, now - cutoff, history=histories.get(app.id, ()))
        if app.id in charts:
            pin, changes = charts[app.id]
            chart_offer = decide_chart(health, changes, pin.version, pin.ref.chart, now, now - cutoff)
            if chart_offer is not None:
                found.append(chart_offer)
        if found:
            offers[app.id] = found
    return offers


def _history_changes(apps: Sequence[GitOpsApp]) -> dict[int, list[Replacement]]:
    """app id -> the image version changes its tool's history shows, from the pins already read
    at its commits (`history_pins`; none is read here). Two queries: the apps' histories, the
    pins at their commits."""
    since = {app.id: app.health_since for app in apps if app.health_since is not None}
    facts = history_pins.history_facts(since or {0: timezone.now()}, HISTORY_REACH, since)
    keys = [fact.key(d.commit) for fact in facts.values() for d in fact.deployed]
    known = history_pins.stored(keys or [(NOTHING, NOTHING, NOTHING)])
    clusters = {app.id: app.cluster.name for app in apps}
    found: dict[int, list[Replacement]] = {}
    for app_id, fact in facts.items():
        pins = {d.commit: known[fact.key(d.commit)] for d in fact.deployed if fact.key(d.commit) in known}
        changes = history_changes(fact.deployed, pins, clusters[app_id])
        if changes:
            found[app_id] = changes
    return found


def _chart_facts(apps: Sequence[GitOpsApp]) -> dict[int, tuple[ChartPin, list[Replacement]]]:
    """app id -> (the chart it pins, its chart version changes), for the failing apps that install
    a chart from a Helm or OCI repository. One query (a page's objects need not carry their
    history), even when none is failing."""
    ids = [app.id for app in apps] or [0]  # no app has id 0: the query runs, and matches none
    clusters = {app.id: app.cluster.name for app in apps}
    rows = GitOpsApp.objects.filter(may_install_a_chart(), pk__in=ids).values_list(
        "id", "repo_url", "chart", "target_revision", "sources", "history")
    found: dict[int, tuple[ChartPin, list[Replacement]]] = {}
    for app_id, repo_url, chart, revision, sources, history in rows:
        stored = GitOpsApp(repo_url=repo_url, chart=chart, target_revision=revision, sources=sources)
        pin = chart_pin(stored)
        if pin is None or pin.is_range:
            continue
        found[app_id] = (pin, chart_changes(as_list(history), _chart_index(stored, pin), clusters[app_id],
                                            pin.ref.chart))
    return found


def _chart_index(app: GitOpsApp, pin: ChartPin) -> int:
    """Which of the app's sources installs the chart (its history lists revisions in that order)."""
    for index, source in enumerate(as_dict(s) for s in as_list(app.sources)):
        if as_str(source.get("chart")) == pin.ref.chart:
            return index
    return 0


def failing_apps(now: datetime) -> QuerySet[GitOpsApp]:
    """Applications degraded or missing past the grace period (the rule of `gitops.models`)."""
    return GitOpsApp.objects.filter(health_status__in=ATTENTION_HEALTH, health_since__lte=grace_cutoff(now))


def open_rollbacks(offers: Iterable[RollbackOffer]) -> dict[tuple[str, str, str], PullRequest]:
    """(service, environment, previous version) -> the rollback PR already open for it (a chart's
    under `offer_key`'s "chart=<name>"). One query at most."""
    offers = list(offers)
    wanted = {offer_key(o) for o in offers}
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
        charts = {f"{CHART_KEY}{o.chart}" for o in offers if o.chart and row.names_chart(o.chart)}
        names = [*(row.services or []), *sorted(charts)]
        for service in names:
            key = (service, row.environment, row.to_version)
            if key in wanted:
                found.setdefault(key, row)
    return found


CHART_KEY = links.CHART_SUBJECT  # how an offer key names a chart instead of a service


def offer_key(offer: RollbackOffer) -> tuple[str, str, str]:
    """(service or "chart=<name>", environment, previous version): how a page finds an offer's open PR."""
    return (f"{CHART_KEY}{offer.chart}" if offer.chart else offer.service, offer.environment, offer.previous)



def preview_url(offer: RollbackOffer) -> str:
    """The preview page of the rollback PR (a GET: following it writes nothing). The preview reads
    what went wrong and since when from the application itself."""
    subject = f"{links.CHART_SUBJECT}{offer.chart}" if offer.chart else offer.service
    return links.preview_url(ROLLBACK, [links.OfferItem(offer.app_id, subject, offer.previous, offer.current)])
