"""Who is behind: per application and service, the newest release the service's policy accepts.

Read from the store only (running versions, `Release` rows, policies, Git pins, open
pull requests), in a constant number of queries whatever the fleet size, so the
Updates page, the service panel and the automatic-PR task share one answer. A line whose
application has no known Git location carries the reason (`change_builders.no_pr_reasons`) for the
pages to show instead of a button.

A workload no GitOps tool deploys (a Nomad job, a Compose or Swarm service, an ECS service:
`gitops.platforms`; a running version with a workload and no application) is a line of its
own, found by the same SQL: its change goes where its portal.git.* labels say
(`change_builders.change_for_workload`), and without them the line says so (`change_builders.no_pr_reason`).

Chart versions behind are portal.delivery.chart_upgrades.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.db.models import CharField, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion, Workload
from gitops.queries import with_ids
from portal.delivery.change_builders import no_pr_reason, no_pr_reasons
from portal.delivery.current_pins import pinned_versions
from portal.delivery.models import PullRequest, ServicePolicy
from portal.delivery.version_policy import PolicyError, VersionPolicy, newest_acceptable
from portal.kernel.catalog.models import Cluster, Service
from portal.kernel.links import safe_http_url
from portal.releases.models import Release
from portal.releases.versions import jump, parse_tag, sort_tags

MAX_PUT_OFF_DAYS = 366


@dataclass
class Behind:
    """One service in one application (or one workload outside GitOps, `workload`, with `app`
    None) that runs older than its newest acceptable release."""

    app: GitOpsApp | None
    service: Service
    running: str  # the oldest version it runs (the one a PR moves away from)
    target: str  # newest acceptable release
    jump: str  # "major", "minor" or "patch"
    pinned: list[str] = field(default_factory=list)  # what Git pins, when read
    open_pr: PullRequest | None = None  # an open pull request already proposing the target
    # The target's last pull request that is not open: merged (it replaces the offer while its
    # version does not run) or closed without merging (the offer comes back beside it).
    past_pr: PullRequest | None = None
    pr_why: str = ""  # a merged PR's "not deployed" reason, when a page asked (deployments.not_deployed_why)
    notes_url: str | None = None  # the target's release notes on the forge, when known
    no_pr: str = ""  # why no pull request can be proposed (no Git location known), else ""
    workload: Workload | None = None  # the workload no GitOps tool deploys, when `app` is None

    @property
    def cluster(self) -> Cluster:
        place = self.app if self.app is not None else self.workload
        assert place is not None, "a line is in an application or a workload"
        return place.cluster

    @property
    def name(self) -> str:
        """The application's name, or the workload's."""
        place = self.app if self.app is not None else self.workload
        assert place is not None, "a line is in an application or a workload"
        return place.name

    @property
    def ref(self) -> str:
        """How a pull request preview's URL names where the change lands: `12` or `w31`."""
        if self.app is not None:
            return str(self.app.pk)
        assert self.workload is not None, "a line is in an application or a workload"
        return self.workload.git_ref

    @property
    def environment(self) -> str:
        return self.cluster.environment.name

    @property
    def pinned_at_target(self) -> bool:
        """Git already pins the target: the change is merged and waits to deploy, no PR needed."""
        return self.target in self.pinned

    @property
    def pr(self) -> PullRequest | None:
        """The pull request the line shows: the open one, else the last merged or closed one."""
        return self.open_pr or self.past_pr

    @property
    def offered(self) -> bool:
        """Whether "Open PR" is offered: no open or merged PR proposes the target, Git does not pin
        it, and the app has a Git location (else `no_pr` says why)."""
        merged = self.past_pr is not None and self.past_pr.state == PullRequest.State.MERGED
        return self.open_pr is None and not merged and not self.pinned_at_target and not self.no_pr

    @property
    def key(self) -> str:
        """How a tick on the Updates page names this line: `app id:service:version` (`w<id>` for
        a workload outside GitOps)."""
        return f"{self.ref}:{self.service.name}:{self.target}"


def service_policies(services: list[Service]) -> dict[int, VersionPolicy]:
    """Each service's policy by service id; a service without one is absent (the default applies)."""
    found: dict[int, VersionPolicy] = {}
    for row in ServicePolicy.objects.filter(service__in=services):
        try:
            found[row.service_id] = row.as_policy()
        except PolicyError:
            # A policy that no longer applies offers nothing rather than breaking every page.
            found[row.service_id] = VersionPolicy(accept="patch", allow_tags=(r"^$",))
    return found


def _tags(services: list[Service]) -> tuple[dict[int, list[str]], dict[tuple[int, str], str]]:
    """Each service's tags, and the release notes page of those whose notes are known."""
    found: dict[int, list[str]] = defaultdict(list)
    notes: dict[tuple[int, str], str] = {}
    rows = Release.objects.filter(service__in=services).values_list("service_id", "tag", "notes_url")
    for service_id, tag, notes_url in rows:
        found[service_id].append(tag)
        # Stored only when http(s); checked again because a page turns it into a link.
        link = safe_http_url(notes_url)
        if link:
            notes[(service_id, tag)] = link
    return found, notes


def open_upgrade_prs() -> list[PullRequest]:
    """The upgrade and promotion pull requests open (or being opened) now: what an offer matches."""
    states = (PullRequest.State.OPEN, PullRequest.State.OPENING)
    return list(PullRequest.objects.filter(state__in=states, kind__in=("upgrade", "promotion")))


PAST_FOR = timedelta(days=30)  # merged or closed pull requests shown beside a line this long


def _past_prs() -> list[PullRequest]:
    """Merged PRs whose version does not run yet and closed ones, of the last 30 days, newest first."""
    since = timezone.now() - PAST_FOR
    merged = Q(state=PullRequest.State.MERGED, running_at__isnull=True, merged_at__gte=since)
    closed = Q(state=PullRequest.State.CLOSED, closed_at__gte=since)
    return list(
        PullRequest.objects.filter(merged | closed, kind__in=("upgrade", "promotion")).order_by(
            "-merged_at", "-closed_at", "-id"
        )
    )


def _matching_pr(prs: list[PullRequest], service: str, environment: str, target: str) -> PullRequest | None:
    for pr in prs:
        versions = pr.to_version.split(",")
        if service in (pr.services or []) and pr.environment == environment and target in versions:
            return pr
    return None


class UpgradeTargets:
    """The newest acceptable release of many services at once, for every page that offers
    "Open PR → X": three queries (policies, tags, open pull requests) whatever the number of
    applications, and each (service, running version) judged once."""

    def __init__(self, services: list[Service], today: date | None = None, *, apply_holds: bool = True) -> None:
        self.today = today or timezone.now().date()
        self.apply_holds = apply_holds  # False: versions held after a rollback are offered (outside PR scan)
        self.policies = service_policies(services)
        self.tags, self.notes = _tags(services)
        self.prs = open_upgrade_prs()
        self.past = _past_prs()
        self._judged: dict[tuple[int, str, str | None], str | None] = {}
        self._newest_keys: dict[int, dict[tuple, tuple]] = {}

    @staticmethod
    def current(versions: list[str]) -> str | None:
        """The oldest version that reads as one: the one a pull request moves away from."""
        readable = [v for v in versions if parse_tag(v) is not None]
        return sort_tags(readable)[0] if readable else None

    def target(self, service_id: int, current: str, environment: str | None = None) -> str | None:
        """The newest acceptable release from `current`, in `environment` where a version may be
        held after a rollback (None: whatever the environment, so no hold applies)."""
        policy = self.policies.get(service_id)
        if environment is not None and (not self.apply_holds or policy is None or not policy.held(environment)):
            environment = None  # nothing held there: the environment-less answer, judged once
        key = (service_id, current, environment)
        if key not in self._judged:
            self._judged[key] = self._judge(service_id, current, environment)
        return self._judged[key]

    def _judge(self, service_id: int, current: str, environment: str | None) -> str | None:
        now = parse_tag(current)
        newest = self._newest(service_id).get(now.family) if now is not None else None
        if newest is None or newest <= now.key:  # type: ignore[union-attr]
            # Nothing newer of its family was released (the usual case: it runs the newest):
            # no tag can be accepted, so the policy need not look at each one.
            return None
        policy = self.policies.get(service_id, VersionPolicy())
        return newest_acceptable(current, self.tags.get(service_id, []), policy, self.today, environment)

    def _newest(self, service_id: int) -> dict[tuple, tuple]:
        """Per version family, the key of the newest tag the service has released."""
        found = self._newest_keys.get(service_id)
        if found is None:
            found = self._newest_keys[service_id] = {}
            for tag in self.tags.get(service_id, []):
                version = parse_tag(tag)
                if version is not None and (version.family not in found or version.key > found[version.family]):
                    found[version.family] = version.key
        return found

    def open_pr(self, service: str, environment: str, target: str) -> PullRequest | None:
        return _matching_pr(self.prs, service, environment, target)

    def past_pr(self, service: str, environment: str, target: str) -> PullRequest | None:
        """The newest merged-not-running or closed PR for the target (a merged one first)."""
        found = [pr for pr in self.past if _matching_pr([pr], service, environment, target)]
        merged = [pr for pr in found if pr.state == PullRequest.State.MERGED]
        shown = merged or found
        return shown[0] if shown else None


# What the lists of lines behind never show, and so never read: the whole object as the
# cluster holds it and the columns decoded from it (the same list the store defers).
UNSHOWN_APP_FIELDS = ("raw", "history", "conditions", "sources", "synced_revisions", "images", "warnings")


@dataclass(frozen=True, slots=True)
class _Line:
    """A line behind before its application (or workload) is loaded: what orders and counts it."""

    service: Service
    environment_order: int | None
    cluster: str
    app: str  # the application's name, or the workload's
    app_id: int | None  # None: a workload outside GitOps, `workload_id`
    running: str
    target: str
    workload_id: int | None = None

    @property
    def order(self) -> tuple[str, int, str, str]:
        return (self.service.name, self.environment_order or 0, self.cluster, self.app)


def _key(*parts: Any) -> Concat:
    """Several columns (or outer references) as one "a:b:c" text, to match against a list."""
    joined: list[Any] = []
    for part in parts:
        if joined:
            joined.append(Value(":"))
        joined.append(Cast(part, CharField()) if isinstance(part, str) and part.endswith("_id") else part)
    return Concat(*joined, output_field=CharField())


@dataclass(frozen=True, slots=True)
class _Row:
    """A line as `BehindLines._find` leaves it: the ids of its running-version row, unordered."""

    service_id: int
    cluster_id: int
    app_id: int | None  # None: a workload outside GitOps
    workload_id: int | None
    version: str

    @property
    def place(self) -> tuple[int | None, int | None]:
        """(app id, None), or (None, workload id) for a workload outside GitOps."""
        return (self.app_id, None) if self.app_id is not None else (None, self.workload_id)


class BehindLines:
    """Every (application, service) that runs older than its newest acceptable release, and
    every workload outside GitOps that does (a running version with a workload and no
    application: `gitops.platforms`), found from light rows (which versions run where) and
    ordered by service, environment order, cluster and application (or workload) name:
    `len()` counts them and `page` reads one slice of them, so a page of the Updates list
    reads fifty lines however many are behind, and never an application's JSON columns;
    `load` turns a slice into `Behind` lines with their applications (or workloads), pins and
    pull requests. The queries are a fixed handful, whatever the fleet size.

    Only the versions that have a newer acceptable release select rows, so a fleet where
    nothing is behind reads no application at all. The version a line moves away from is
    the oldest readable one its application (or workload) runs of the service (two
    containers may run two): a place is a line when that oldest version is one with
    somewhere to go. SQL returns only the rows at such versions and at the readable versions
    that sort before one (which may veto it), and the oldest is picked here, from the
    service's versions sorted once.

    The order is kept here too, by code point (as the databases' C and binary collations
    sort): the clusters' names and environment orders are one query of the lines' clusters,
    and the names of applications only of the lines sharing a service and cluster with the
    page asked for, since only those can sort among its lines. Ordered and sliced in SQL,
    joined to four tables, the page cost more than the lines' search."""

    def __init__(
        self,
        *,
        service: Service | None = None,
        environment: str | None = None,
        app_ids: list[int] | None = None,
        today: date | None = None,
        apply_holds: bool = True,
    ) -> None:
        self.targets: UpgradeTargets | None = None
        self._apply_holds = apply_holds
        self._by_id: dict[int, Service] = {}
        self._rows: list[_Row] = []  # a running-version row per line, unordered, then in order
        self._clusters: dict[int, tuple[str, int | None]] = {}  # id -> (name, environment order)
        self._environments: dict[int, str | None] = {}  # cluster id -> its environment's name
        self._sorted = False
        self._services: set[int] = set()
        self._find(service, environment, app_ids, today or timezone.now().date())

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, wanted: slice) -> list[_Line]:
        """A slice of the lines, as a Paginator takes its page (steps are not supported)."""
        return self.page(wanted.start or 0, wanted.stop)

    @property
    def lines(self) -> list[_Line]:
        """Every line, in order (the automatic PRs and the service page read them all)."""
        return self.page(0, None)

    @property
    def services(self) -> list[Service]:
        """The services with a line behind, in the lines' order."""
        return sorted((self._by_id[pk] for pk in self._services), key=lambda svc: (svc.name, svc.pk))

    def _group(self, row: _Row) -> tuple[str, int, bool, int, str]:
        """Where a line sorts, but for its application's name: service, environment, cluster."""
        cluster, order = self._clusters[row.cluster_id]
        # An environment-less cluster's lines last, as PostgreSQL sorts a NULL order.
        return (self._by_id[row.service_id].name, row.service_id, order is None, order or 0, cluster)

    def page(self, start: int = 0, stop: int | None = None) -> list[_Line]:
        """The lines from `start` to `stop`, in order (see the class docstring)."""
        rows = self._rows
        stop = len(rows) if stop is None else min(stop, len(rows))
        if self.targets is None or start >= stop:
            return []
        if not self._sorted:
            rows.sort(key=self._group)
            self._sorted = True
        low, high = start, stop
        while low > 0 and self._group(rows[low - 1]) == self._group(rows[start]):
            low -= 1
        while high < len(rows) and self._group(rows[high]) == self._group(rows[stop - 1]):
            high += 1
        window = rows[low:high]
        names = self._names(window)

        def place(row: _Row) -> tuple[str, int, int]:
            return (names.get(row.place, ""), row.app_id or 0, row.workload_id or 0)

        window.sort(key=lambda row: (self._group(row), place(row)))
        targets, by_id = self.targets, self._by_id
        lines = []
        for row in window[start - low:stop - low]:
            target = targets.target(row.service_id, row.version, self._environments[row.cluster_id])
            if target is not None:  # moving: judged when the rows were chosen
                cluster, order = self._clusters[row.cluster_id]
                lines.append(_Line(by_id[row.service_id], order, cluster, names.get(row.place, ""),
                                   row.app_id, row.version, target, row.workload_id if row.app_id is None else None))
        return lines

    @staticmethod
    def _names(rows: list[_Row]) -> dict[tuple[int | None, int | None], str]:
        """(app id, None) or (None, workload id) -> its name, of these lines (a query each kind)."""
        apps = {row.app_id for row in rows if row.app_id is not None}
        workloads = {row.workload_id for row in rows if row.app_id is None and row.workload_id is not None}
        names: dict[tuple[int | None, int | None], str] = {}
        if apps:
            names.update(((pk, None), name) for pk, name in
                         with_ids(GitOpsApp.objects.all(), apps).values_list("pk", "name"))
        if workloads:
            names.update(((None, pk), name) for pk, name in
                         with_ids(Workload.objects.all(), workloads).values_list("pk", "name"))
        return names

    def _find(self, service: Service | None, environment: str | None, app_ids: list[int] | None,
              today: date) -> None:
        if app_ids is not None:
            placed = with_ids(RunningVersion.objects.all(), app_ids, "app_id")
        else:
            # In an application, or outside GitOps: in a workload no application deploys.
            placed = RunningVersion.objects.filter(Q(app__isnull=False) | Q(workload__isnull=False))
        if service is not None:
            placed = placed.filter(service=service)
        if environment is not None:
            placed = placed.filter(cluster__environment__name=environment)
        versions: dict[int, set[str]] = defaultdict(set)
        for service_id, version in placed.values_list("service_id", "version").distinct():
            versions[service_id].add(version)
        if not versions:
            return
        services = list(Service.objects.filter(pk__in=versions))
        self.targets = targets = UpgradeTargets(services, today, apply_holds=self._apply_holds)
        self._by_id = {svc.pk: svc for svc in services}
        # The versions with somewhere to go, and the readable versions sorting before one (which
        # may make a place's oldest version another): only rows at these can be lines or veto one.
        rank: dict[int, dict[str, int]] = {}
        wanted: list[str] = []
        # (service id, version) with somewhere to go: tens of thousands of places test it below.
        movable: set[tuple[int, str]] = set()
        for svc in services:
            readable = sort_tags([v for v in versions[svc.pk] if parse_tag(v) is not None])
            rank[svc.pk] = {version: position for position, version in enumerate(readable)}
            moving = [position for position, version in enumerate(readable) if targets.target(svc.pk, version)]
            movable.update((svc.pk, readable[position]) for position in moving)
            if moving:
                wanted.extend(f"{svc.pk}:{version}" for version in readable[:moving[-1] + 1])
        if not wanted:
            return
        # The (service, version) pairs are matched as one "id:version" key each, a single IN
        # list that PostgreSQL hashes, where one condition per service made it test every
        # row against each in turn.
        rows = placed.annotate(pair=_key("service_id", "version")).filter(pair__in=sorted(wanted))
        # place -> (rank, row id, the row's columns): a `_Row` is made only of each place's oldest,
        # once all its rows are read (thousands of rows, a frozen dataclass each cost more than the SQL).
        oldest: dict[tuple[bool, int, int], tuple[int, int, tuple[int, int, int | None, int | None, str]]] = {}
        for pk, app_id, workload_id, service_id, cluster_id, version in rows.values_list(
                "pk", "app_id", "workload_id", "service_id", "cluster_id", "version"):
            where = (True, app_id, service_id) if app_id is not None else (False, workload_id, service_id)
            position = rank[service_id][version]
            known = oldest.get(where)
            if known is None or (position, pk) < known[:2]:
                oldest[where] = (position, pk, (service_id, cluster_id, app_id, workload_id, version))
        found = [_Row(*columns) for _, _, columns in oldest.values() if (columns[0], columns[4]) in movable]
        if not found:
            return
        clusters = with_ids(Cluster.objects.all(), {row.cluster_id for row in found}).values_list(
            "pk", "name", "environment__order", "environment__name")
        for pk, name, order, environment in clusters:
            self._clusters[pk] = (name, order)
            self._environments[pk] = environment
        # A workload outside GitOps is a line only where its cluster is in an environment, the
        # one its pull request is for (an application's line names its destination's). A line is
        # judged again in its environment, where the version it would move to may be held.
        self._rows = [
            row for row in found
            if (row.app_id is not None or self._clusters[row.cluster_id][1] is not None)
            and targets.target(row.service_id, row.version, self._environments[row.cluster_id]) is not None
        ]
        self._services = {row.service_id for row in self._rows}

    def load(self, start: int = 0, stop: int | None = None, *,
             apps: Mapping[int, GitOpsApp] | None = None, lines: list[_Line] | None = None) -> list[Behind]:
        """The lines from `start` to `stop` (or `lines`, a page read already) as `Behind`,
        with their applications (two queries); `apps`: applications the caller has loaded
        already (with their cluster and environment), used as they are rather than read again."""
        chosen = self.page(start, stop) if lines is None else lines
        if not chosen or self.targets is None:
            return []
        targets = self.targets
        ids = {line.app_id for line in chosen if line.app_id is not None}
        known = dict(apps or {})
        missing = ids - set(known)
        if missing:
            known.update(GitOpsApp.objects.select_related("cluster__environment").defer(*UNSHOWN_APP_FIELDS)
                         .in_bulk(missing))
        apps = known
        outside_ids = {line.workload_id for line in chosen if line.workload_id is not None}
        workloads = (Workload.objects.select_related("cluster__environment").defer("containers")
                     .in_bulk(outside_ids)) if outside_ids else {}
        pins = pinned_versions(ids)
        no_pr = no_pr_reasons(ids)
        found = []
        for line in chosen:
            app = apps.get(line.app_id) if line.app_id is not None else None
            workload = workloads.get(line.workload_id) if line.workload_id is not None else None
            if app is None and workload is None:  # removed since the lines were found
                continue
            environment = (app or workload).cluster.environment  # type: ignore[union-attr]
            if environment is None:  # its cluster left its environment since
                continue
            found.append(Behind(
                app=app,
                workload=workload,
                service=line.service,
                running=line.running,
                target=line.target,
                jump=jump(line.running, line.target) or "patch",
                pinned=pins.get((app.pk, line.service.name), []) if app is not None else [],
                open_pr=targets.open_pr(line.service.name, environment.name, line.target),
                past_pr=targets.past_pr(line.service.name, environment.name, line.target),
                notes_url=targets.notes.get((line.service.pk, line.target)),
                no_pr=no_pr.get(app.pk, "") if app is not None else no_pr_reason(workload),  # type: ignore[arg-type]
            ))
        return found


def behind(
    *,
    service: Service | None = None,
    environment: str | None = None,
    app_ids: list[int] | None = None,
    today: date | None = None,
) -> list[Behind]:
    """Every (application, service) that runs older than its newest acceptable release.

    Ordered by service, environment order, cluster and application (see `BehindLines`)."""
    return BehindLines(service=service, environment=environment, app_ids=app_ids, today=today).load()


def put_off(service: Service, version: str, until: date, today: date | None = None) -> ServicePolicy:
    """Snooze `version` of `service` until `until` (it counts again from that day)."""
    today = today or timezone.now().date()
    if until <= today:
        raise ValueError("Put off until a day after today.")
    if until > today + timedelta(days=MAX_PUT_OFF_DAYS):
        raise ValueError("Put off for at most a year.")
    if parse_tag(version) is None:
        raise ValueError(f"{version!r} is not a version")
    row, _ = ServicePolicy.objects.get_or_create(service=service)
    entries = [e for e in row.put_off or [] if isinstance(e, dict) and e.get("version") != version]
    entries.append({"version": version, "until": until.isoformat()})
    row.put_off = entries
    row.save(update_fields=["put_off", "updated_at"])
    return row
