"""Versions that run in staging and wait for production, and since when.

For each production environment, "staging" is the environment just before it (the
highest `order` below it that is not itself production). A service's newest version
running on a staging cluster waits for a production cluster when that cluster runs the
service at an older version (versions compared as `portal.releases.versions` reads tags;
a tag that is not a version is never promoted). One offer per production cluster; when
several services of one production application wait together, they also make one
"Promote <app> → prod" group. Since when: the earliest recorded change to that version on
a staging cluster (VersionChange.at); when none was recorded (the version ran there from
the first poll), the application's first sight, marked as "at least".

`waiting` is pure; `load` reads the store in a fixed number of queries.

Chart versions wait the same way (`chart_promotions`): a chart version an application pins in
staging (a HelmRelease's `spec.chart.spec.version`, an Argo CD Helm source's `targetRevision`)
and that production applications pin older; a range is not a pin and never waits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache

from django.db.models import Case, F, When
from django.db.models.functions import Coalesce

from gitops.models import RunningVersion, VersionChange, Workload
from gitops.queries import apps_with_ids_from, with_ids_from
from portal.delivery.models import VersionLine
from portal.delivery.planner import PROMOTION
from portal.kernel import links
from portal.kernel.catalog.models import Environment
from portal.releases.versions import Version, parse_tag


@dataclass(frozen=True)
class Running:
    """One service running one version under one application on one cluster."""

    service: str
    version: str
    cluster: str
    environment: str
    app_id: int | None
    app: str
    # Since when the app has run at least what it runs now, when no change is recorded ("at least
    # since"): its last sync as the tool dates it, or the portal's first sight of it if that is older.
    first_seen: datetime | None = None
    workload_id: int | None = None  # a workload outside GitOps (no app): its PR goes where its labels say


@dataclass(frozen=True)
class Target:
    """A production cluster where the service runs an older version."""

    cluster: str
    app_id: int | None
    app: str
    current: str
    workload_id: int | None = None  # a workload outside GitOps, when `app_id` is None
    pinned: str = ""  # what Git pins there, when one version is known (`from_git_pins`)

    @property
    def start(self) -> str:
        """What the promotion's pull request moves away from: Git's pin, else what runs."""
        return self.pinned or self.current

    @property
    def ref(self) -> str | None:
        """How a preview's URL names where the PR lands (`12`, or `w31` for a workload outside
        GitOps); None: a cluster whose application the portal does not know."""
        if self.app_id is not None:
            return str(self.app_id)
        return f"w{self.workload_id}" if self.workload_id is not None else None


@dataclass
class Promotion:
    service: str
    version: str
    staging: str
    staging_clusters: list[str]
    production: str
    since: datetime | None
    since_exact: bool  # False: "at least since" (no recorded change)
    targets: list[Target] = field(default_factory=list)


@dataclass
class AppPromotion:
    """Several services of one production application waiting together: one PR for all."""

    app_id: int
    app: str
    cluster: str
    production: str
    moves: list[tuple[str, str, str]]  # (service, from, to)


@dataclass
class Train:
    """Every service the environment before has proven, waiting for one production environment:
    one "Promote all → prod" link, which the preview splits into one pull request per repository,
    branch and environment. `moves`: (where, service, from, to), `where` as `Target.ref`."""

    production: str
    staging: str
    moves: list[tuple[str, str, str, str]]

    @property
    def services(self) -> list[str]:
        return list(dict.fromkeys(service for _, service, _, _ in self.moves))


def trains(found: Iterable[Promotion], leave_out: Callable[[Target], bool] = lambda _t: False) -> list[Train]:
    """Per production environment, the promotions waiting there as one train, when two or more
    services wait; the targets `leave_out` names (no Git location, a PR already open) are left
    out. Pure."""
    by_env: dict[tuple[str, str], list[tuple[str, str, str, str]]] = defaultdict(list)
    for promotion in found:
        for target in promotion.targets:
            if target.ref is not None and not leave_out(target):
                by_env[(promotion.production, promotion.staging)].append(
                    (target.ref, promotion.service, target.start, promotion.version))
    return [
        Train(production, staging, moves)
        for (production, staging), moves in sorted(by_env.items())
        if len({service for _, service, _, _ in moves}) > 1
    ]


def train_url(train: Train, back: str = "") -> str:
    """The preview of a train: every move in one link (the preview groups them into PRs)."""
    return links.preview_url(PROMOTION, [links.OfferItem(where, service, to, start)
                                         for where, service, start, to in train.moves], back=back)


def staging_for(environments: Sequence[Environment]) -> dict[str, str]:
    """production environment name -> the environment before it."""
    ordered = sorted(environments, key=lambda e: (e.order, e.name))
    pairs = {}
    for index, env in enumerate(ordered):
        if not env.production:
            continue
        before = [e for e in ordered[:index] if not e.production and e.order < env.order]
        if before:
            pairs[env.name] = before[-1].name
    return pairs


def _newer(candidate: str, than: str, parse: Callable[[str], Version | None] = parse_tag) -> bool:
    a, b = parse(candidate), parse(than)
    return a is not None and b is not None and a.family == b.family and a.key > b.key


def waiting(
    pairs: dict[str, str], rows: Iterable[Running], arrivals: dict[tuple[str, str, str], datetime]
) -> list[Promotion]:
    """Promotions waiting, newest wait last. `arrivals`: (service, cluster, version) -> when it began to run. Pure."""
    # Each distinct tag read once: thousands of rows share a handful of versions.
    parse = cache(parse_tag)
    by_env: dict[str, list[Running]] = defaultdict(list)
    for row in rows:
        by_env[row.environment].append(row)
    found: list[Promotion] = []
    for production, staging in sorted(pairs.items()):
        staged: dict[str, list[Running]] = defaultdict(list)
        for row in by_env.get(staging, []):
            if parse(row.version) is not None:
                staged[row.service].append(row)
        prod_rows: dict[str, list[Running]] = defaultdict(list)
        for row in by_env.get(production, []):
            prod_rows[row.service].append(row)
        for service in sorted(staged):
            newest = max(staged[service], key=lambda r: parse(r.version).key).version  # type: ignore[union-attr]
            on = [r for r in staged[service] if r.version == newest]
            targets: dict[tuple[str, int | None, int | None], Target] = {}
            for row in prod_rows.get(service, []):
                if _newer(newest, row.version, parse):
                    key = (row.cluster, row.app_id, row.workload_id if row.app_id is None else None)
                    # A cluster running two versions of the service: promote from the older one.
                    if key not in targets or _newer(targets[key].current, row.version, parse):
                        targets[key] = Target(row.cluster, row.app_id, row.app, row.version,
                                              row.workload_id if row.app_id is None else None)
            if not targets:
                continue
            times = [arrivals[(service, r.cluster, newest)] for r in on if (service, r.cluster, newest) in arrivals]
            fallback = [r.first_seen for r in on if r.first_seen is not None]
            since = min(times) if times else (min(fallback) if fallback else None)
            found.append(
                Promotion(
                    service=service,
                    version=newest,
                    staging=staging,
                    staging_clusters=sorted({r.cluster for r in on}),
                    production=production,
                    since=since,
                    since_exact=bool(times),
                    targets=sorted(targets.values(), key=lambda t: (t.cluster, t.app)),
                )
            )
    found.sort(key=lambda p: (p.since is None, p.since.timestamp() if p.since else 0.0, p.service))
    return found


def groups(promotions: Iterable[Promotion]) -> list[AppPromotion]:
    """Production applications where two or more services wait together."""
    by_app: dict[tuple[int, str, str, str], list[tuple[str, str, str]]] = defaultdict(list)
    for promotion in promotions:
        for target in promotion.targets:
            if target.app_id is not None:
                key = (target.app_id, target.app, target.cluster, promotion.production)
                by_app[key].append((promotion.service, target.start, promotion.version))
    return [
        AppPromotion(app_id, app, cluster, production, sorted(moves))
        for (app_id, app, cluster, production), moves in sorted(by_app.items(), key=lambda kv: (kv[0][2], kv[0][1]))
        if len(moves) > 1
    ]


def from_git_pins(found: list[Promotion], pins: dict[tuple[int, str], list[str]]) -> list[Promotion]:
    """The promotions as Git has them: a target whose Git already pins the version (merged,
    waiting to deploy) or a newer one waits for nothing; the others start from Git's pin when
    it is one version. `pins`: (app id, service) -> the versions Git pins
    (`current_pins.pinned_versions`). Pure."""
    kept = []
    for promotion in found:
        targets = []
        for target in promotion.targets:
            versions = pins.get((target.app_id, promotion.service), []) if target.app_id is not None else []
            pinned = versions[0] if len(versions) == 1 and parse_tag(versions[0]) is not None else ""
            if pinned and not _newer(promotion.version, pinned):
                continue
            targets.append(replace(target, pinned=pinned) if pinned else target)
        if targets:
            kept.append(replace(promotion, targets=targets))
    return kept


def _waiting_services(pairs: dict[str, str]) -> set[str]:
    """The services whose newest version in a staging environment is newer than a version
    they run in its production environment: only those can wait, so only their rows are read.
    Which versions run where is the matrix's read model (`VersionLine`: per service and
    environment, the versions its enabled clusters run, kept equal to RunningVersion in the
    store's own transaction): a few hundred lines where RunningVersion has a row per
    container of every staging and production application."""
    versions: dict[tuple[str, str], set[str]] = defaultdict(set)
    for service, environment, joined in VersionLine.objects.filter(
        environment__name__in=set(pairs) | set(pairs.values())
    ).values_list("service__name", "environment__name", "versions"):
        versions[(service, environment)].update(joined.split(","))  # placements.joined's spelling
    # Workloads outside GitOps (Nomad, Docker, ECS) are not in the matrix's read model; they are
    # few, and their rows are found by the app column's index (IS NULL).
    for service, environment, version in RunningVersion.objects.filter(
        app__isnull=True, workload__isnull=False, cluster__enabled=True,
        cluster__environment__name__in=set(pairs) | set(pairs.values()),
    ).values_list("service__name", "cluster__environment__name", "version").distinct():
        versions[(service, environment)].add(version)
    services = {service for service, _ in versions}
    found = set()
    for production, staging in pairs.items():
        for service in services:
            staged = [v for v in versions.get((service, staging), ()) if parse_tag(v) is not None]
            if not staged:
                continue
            newest = max(staged, key=lambda v: parse_tag(v).key)  # type: ignore[union-attr]
            if any(_newer(newest, v) for v in versions.get((service, production), ())):
                found.add(service)
    return found


# A Synced app has run what Git gave it at least since its last sync, which the tool dates
# (gitops.derive.app_changes.since_when): days before the portal's first poll, on a fresh install.
_RUNS_AT_LEAST_SINCE = Coalesce(
    Case(When(sync_status="Synced", sync_since_exact=True, sync_since__lt=F("first_seen"), then=F("sync_since"))),
    F("first_seen"),
)


def load() -> tuple[list[Promotion], list[AppPromotion]]:
    """Read the store (seven queries) and decide. A fleet of 50,000 applications where a few
    services wait reads the rows of those few, not of every staging and production app."""
    pairs = staging_for(list(Environment.objects.all()))
    if not pairs:
        return [], []
    candidates = _waiting_services(pairs)
    if not candidates:
        return [], []
    names = set(pairs) | set(pairs.values())
    running = RunningVersion.objects.filter(
        cluster__environment__name__in=names, cluster__enabled=True, service__name__in=candidates
    ).order_by()
    # The applications' and workloads' own columns are read by the ids these rows name
    # (gitops.queries.with_ids_from): joined to them, a planner without statistics yet looped
    # over every application for each running version (49 s at 100,000 apps).
    apps = {pk: (name, since) for pk, name, since in apps_with_ids_from(
        running.exclude(app=None).values("app_id")).values_list("id", "name", _RUNS_AT_LEAST_SINCE)}
    workloads = dict(with_ids_from(Workload.objects.all(), running.filter(app=None).values("workload_id"))
                     .values_list("id", "name"))

    def running_row(service: str, version: str, cluster: str, environment: str, app_id: int | None,
                    workload_id: int | None) -> Running:
        if app_id is None:
            return Running(service, version, cluster, environment, None, workloads.get(workload_id, ""), None,
                           workload_id)
        name, since = apps.get(app_id, ("", None))
        return Running(service, version, cluster, environment, app_id, name, since, None)

    # Two containers of one application running one version are one row: made distinct here,
    # where a DISTINCT over the joined rows cost PostgreSQL a sort or hash of all of them.
    rows = list(dict.fromkeys(running_row(*row) for row in running.values_list(
        "service__name", "version", "cluster__name", "cluster__environment__name", "app_id", "workload_id")))
    staged = {(r.service, r.cluster, r.version) for r in rows if r.environment in pairs.values()}
    arrivals: dict[tuple[str, str, str], datetime] = {}
    if staged:
        changes = VersionChange.objects.filter(
            environment__name__in=set(pairs.values()), service__name__in={s for s, _, _ in staged}
        ).values_list("service__name", "cluster__name", "to_version", "at")
        for service, cluster, to_versions, at in changes:
            for version in (v.strip() for v in to_versions.split(",")):
                key = (service, cluster, version)
                if key in staged:
                    # The latest arrival counts: a version that left and came back runs since it came back.
                    arrivals[key] = max(arrivals.get(key, at), at)
    found = waiting(pairs, rows, arrivals)
    from portal.delivery.current_pins import pinned_versions

    found = from_git_pins(found, pinned_versions({t.app_id for p in found for t in p.targets if t.app_id is not None}))
    return found, groups(found)


def ran_before(service: str, version: str, production: str) -> Promotion | None:
    """The waiting promotion of `service` `version` into `production`: the environment before it
    and since when the version runs there (the same `since` the Delivery page shows)."""
    found, _groups = load()
    return next(
        (p for p in found if p.service == service and p.version == version and p.production == production), None
    )


def preview_url(app_id: int | str, moves: Sequence[tuple[str, str, str]], back: str = "") -> str:
    """The preview page of a promotion PR into production application `app_id`, one item per
    (service, from, to); several items make one pull request."""
    return links.preview_url(PROMOTION, [links.OfferItem(app_id, service, to, current)
                                         for service, current, to in moves], back=back)


# --- chart versions --------------------------------------------------------------------


@dataclass
class ChartPromotion:
    """A chart version pinned in staging that production applications pin older."""

    chart: str
    repository: str
    version: str
    staging: str
    production: str
    staging_apps: list[str]
    targets: list[tuple[int, str, str, str]] = field(default_factory=list)  # (app id, app, cluster, pinned)


def chart_promotions() -> list[ChartPromotion]:
    """For each production environment, each chart its applications pin (`charts.chart_pin`;
    a range is not a pin) at a version older than the newest the environment before pins.
    Reads the applications that may install a chart, in two queries."""
    from gitops.models import GitOpsApp
    from portal.releases.charts import chart_pin, may_install_a_chart

    pairs = staging_for(list(Environment.objects.all()))
    if not pairs:
        return []
    apps = (
        GitOpsApp.objects.filter(may_install_a_chart(), cluster__enabled=True,
                                 cluster__environment__name__in=set(pairs) | set(pairs.values()))
        .select_related("cluster__environment")
        .defer("raw", "history", "conditions", "synced_revisions", "images", "warnings")
        .order_by("cluster__name", "name")
    )
    pinned: dict[tuple[str, str, str], list[tuple[GitOpsApp, str]]] = defaultdict(list)
    for app in apps:
        pin = chart_pin(app)
        if pin is not None and not pin.is_range and parse_tag(pin.version) is not None:
            key = (app.cluster.environment.name, pin.ref.repository, pin.ref.chart)
            pinned[key].append((app, pin.version))
    found = []
    for production, staging in sorted(pairs.items()):
        for (environment, repository, chart), staged in sorted(pinned.items()):
            if environment != staging:
                continue
            newest = max((v for _, v in staged), key=lambda v: parse_tag(v).key)  # type: ignore[union-attr]
            targets = [
                (app.pk, app.name, app.cluster.name, version)
                for app, version in pinned.get((production, repository, chart), [])
                if _newer(newest, version)
            ]
            if targets:
                found.append(ChartPromotion(chart, repository, newest, staging, production,
                                            sorted({a.name for a, v in staged if v == newest}), targets))
    return found


def chart_preview_url(app_id: int, chart: str, to_version: str, current: str, back: str = "") -> str:
    """The preview of a chart promotion into production application `app_id`."""
    return links.preview_url(PROMOTION, [links.OfferItem(app_id, links.CHART_SUBJECT + chart, to_version, current)],
                             back=back)
