"""Who is behind: per application and service, the newest release the service's policy accepts.

Read from the store only (running versions, `Release` rows, policies, Git pins, open
pull requests), in a constant number of queries whatever the fleet size, so the
Updates page, the service panel and the automatic-PR task share one answer. A line whose
application has no known Git location carries the reason (`changes.no_pr_reasons`) for the
pages to show instead of a button.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.db.models import CharField, Exists, OuterRef, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion
from portal.catalog.models import Service
from portal.delivery.changes import no_pr_reasons
from portal.delivery.gitpins import pinned_versions
from portal.delivery.models import PullRequest, ServicePolicy
from portal.delivery.policy import PolicyError, VersionPolicy, newest_acceptable
from portal.links import safe_http_url
from portal.releases.charts import ChartPin, ChartRef, chart_pin, may_install_a_chart, versions_of
from portal.releases.models import ChartVersion, Release
from portal.releases.versions import jump, parse_tag, sort_tags

MAX_PUT_OFF_DAYS = 366


@dataclass
class Behind:
    """One service in one application that runs older than its newest acceptable release."""

    app: GitOpsApp
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

    @property
    def environment(self) -> str:
        return self.app.cluster.environment.name

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
        """How a tick on the Updates page names this line: `app id:service:version`."""
        return f"{self.app.pk}:{self.service.name}:{self.target}"


def _policies(services: list[Service]) -> dict[int, VersionPolicy]:
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


def _open_prs() -> list[PullRequest]:
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

    def __init__(self, services: list[Service], today: date | None = None) -> None:
        self.today = today or timezone.now().date()
        self.policies = _policies(services)
        self.tags, self.notes = _tags(services)
        self.prs = _open_prs()
        self.past = _past_prs()
        self._judged: dict[tuple[int, str], str | None] = {}
        self._newest_keys: dict[int, dict[tuple, tuple]] = {}

    @staticmethod
    def current(versions: list[str]) -> str | None:
        """The oldest version that reads as one: the one a pull request moves away from."""
        readable = [v for v in versions if parse_tag(v) is not None]
        return sort_tags(readable)[0] if readable else None

    def target(self, service_id: int, current: str) -> str | None:
        key = (service_id, current)
        if key not in self._judged:
            self._judged[key] = self._judge(service_id, current)
        return self._judged[key]

    def _judge(self, service_id: int, current: str) -> str | None:
        now = parse_tag(current)
        newest = self._newest(service_id).get(now.family) if now is not None else None
        if newest is None or newest <= now.key:  # type: ignore[union-attr]
            # Nothing newer of its family was released (the usual case: it runs the newest):
            # no tag can be accepted, so the policy need not look at each one.
            return None
        policy = self.policies.get(service_id, VersionPolicy())
        return newest_acceptable(current, self.tags.get(service_id, []), policy, self.today)

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
    """A line behind before its application is loaded: what orders and counts it."""

    service: Service
    environment_order: int | None
    cluster: str
    app: str
    app_id: int
    running: str
    target: str

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


class BehindLines:
    """Every (application, service) that runs older than its newest acceptable release,
    found in SQL from light rows (which versions run where) and ordered there by service,
    environment order, cluster and application: `len()` counts them and `page` reads one
    slice of them (LIMIT/OFFSET), so a page of the Updates list reads fifty lines however
    many are behind, and never an application's JSON columns; `load` turns a slice into
    `Behind` lines with their applications, pins and pull requests. The queries are a
    fixed handful, whatever the fleet size.

    Only the versions that have a newer acceptable release select applications, so a
    fleet where nothing is behind reads no application at all. The version a line moves
    away from is the oldest readable one its application runs of the service (two
    containers may run two): a row of a moving version is a line unless the same
    application runs an older readable version of the service, which SQL is told as the
    list of "service:version:older version" keys."""

    def __init__(
        self,
        *,
        service: Service | None = None,
        environment: str | None = None,
        app_ids: list[int] | None = None,
        today: date | None = None,
    ) -> None:
        self.targets: UpgradeTargets | None = None
        self._by_id: dict[int, Service] = {}
        self._ids: list[int] = []  # a running-version row per line, unordered
        self._services: set[int] = set()
        self._find(service, environment, app_ids, today or timezone.now().date())

    def __len__(self) -> int:
        return len(self._ids)

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

    def page(self, start: int = 0, stop: int | None = None) -> list[_Line]:
        """The lines from `start` to `stop`, ordered and sliced in SQL (LIMIT/OFFSET) over
        the lines' own rows, whose number the planner then knows."""
        if not self._ids or self.targets is None or (stop is not None and stop <= start):
            return []
        rows = RunningVersion.objects.filter(pk__in=self._ids).values_list(
            "app_id", "service_id", "version", "app__name", "cluster__name", "cluster__environment__order"
        ).order_by("service__name", "service_id", "cluster__environment__order", "cluster__name", "app__name",
                   "app_id")
        rows = rows[start:stop] if stop is not None else rows[start:]
        targets, by_id = self.targets, self._by_id
        lines = []
        for app_id, service_id, version, app, cluster, order in rows:
            target = targets.target(service_id, version)
            if target is not None:  # moving: judged when the rows were chosen
                lines.append(_Line(by_id[service_id], order, cluster, app, app_id, version, target))
        return lines

    def _find(self, service: Service | None, environment: str | None, app_ids: list[int] | None,
              today: date) -> None:
        placed = RunningVersion.objects.exclude(app=None)
        if service is not None:
            placed = placed.filter(service=service)
        if environment is not None:
            placed = placed.filter(cluster__environment__name=environment)
        if app_ids is not None:
            placed = placed.filter(app_id__in=app_ids)
        versions: dict[int, set[str]] = defaultdict(set)
        for service_id, version in placed.values_list("service_id", "version").distinct():
            versions[service_id].add(version)
        if not versions:
            return
        services = list(Service.objects.filter(pk__in=versions))
        self.targets = targets = UpgradeTargets(services, today)
        self._by_id = {svc.pk: svc for svc in services}
        # The versions with somewhere to go: only applications running one of them can be behind;
        # and for each, the readable versions of its service that sort before it.
        moving: list[str] = []
        older: list[str] = []
        for svc in services:
            readable = sort_tags([v for v in versions[svc.pk] if parse_tag(v) is not None])
            for position, version in enumerate(readable):
                if targets.target(svc.pk, version):
                    moving.append(f"{svc.pk}:{version}")
                    older.extend(f"{svc.pk}:{version}:{before}" for before in readable[:position])
        if not moving:
            return
        # The (service, version) pairs are matched as one "id:version" key each, a single IN
        # list that PostgreSQL hashes, where one condition per service made it test every
        # row against each in turn.
        rows = placed.annotate(pair=_key("service_id", "version")).filter(pair__in=sorted(moving))
        if older:
            runs_older = RunningVersion.objects.filter(app_id=OuterRef("app_id"), service_id=OuterRef("service_id"))
            runs_older = runs_older.annotate(
                triple=_key("service_id", OuterRef("version"), "version")).filter(triple__in=sorted(older))
            rows = rows.exclude(Exists(runs_older))
        # A row per line: two containers of one app running the service at one version are one.
        # Only the keys are read here; a page reads its lines by these ids (`page`), as an IN
        # list: joined and ordered in this query, the planner, blind to how many pairs match,
        # chose nested loops that cost seconds at 50,000 apps.
        lines: dict[tuple[int, int], int] = {}
        for pk, app_id, service_id in rows.values_list("pk", "app_id", "service_id"):
            lines.setdefault((app_id, service_id), pk)
        self._ids = list(lines.values())
        self._services = {service_id for _, service_id in lines}

    def load(self, start: int = 0, stop: int | None = None, *,
             apps: Mapping[int, GitOpsApp] | None = None, lines: list[_Line] | None = None) -> list[Behind]:
        """The lines from `start` to `stop` (or `lines`, a page read already) as `Behind`,
        with their applications (two queries); `apps`: applications the caller has loaded
        already (with their cluster and environment), used as they are rather than read again."""
        chosen = self.page(start, stop) if lines is None else lines
        if not chosen or self.targets is None:
            return []
        targets = self.targets
        ids = {line.app_id for line in chosen}
        known = dict(apps or {})
        missing = ids - set(known)
        if missing:
            known.update(GitOpsApp.objects.select_related("cluster__environment").defer(*UNSHOWN_APP_FIELDS)
                         .in_bulk(missing))
        apps = known
        pins = pinned_versions(ids)
        no_pr = no_pr_reasons(ids)
        found = []
        for line in chosen:
            app = apps.get(line.app_id)
            if app is None:  # removed since the lines were found
                continue
            found.append(Behind(
                app=app,
                service=line.service,
                running=line.running,
                target=line.target,
                jump=jump(line.running, line.target) or "patch",
                pinned=pins.get((app.pk, line.service.name), []),
                open_pr=targets.open_pr(line.service.name, app.cluster.environment.name, line.target),
                past_pr=targets.past_pr(line.service.name, app.cluster.environment.name, line.target),
                notes_url=targets.notes.get((line.service.pk, line.target)),
                no_pr=no_pr.get(app.pk, ""),
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


@dataclass
class ChartBehind:
    """An application whose pinned chart version is older than the newest version of the
    chart its service's policy accepts (`target`), or that follows a range (`follows`, no
    target: nothing to change)."""

    app: GitOpsApp
    pin: ChartPin
    target: str | None
    jump: str = ""
    no_pr: str = ""  # why no pull request can be proposed (no Git location known), else ""
    service: Service | None = None  # the app's first service (by name), whose policy judged the target
    open_pr: PullRequest | None = None  # an open pull request already proposing the target

    @property
    def environment(self) -> str:
        return self.app.cluster.environment.name

    @property
    def open_pr_link(self) -> str | None:
        """The open pull request's page, when its URL is http(s)."""
        return safe_http_url(self.open_pr.url) if self.open_pr is not None else None

    @property
    def follows(self) -> str:
        return self.pin.follows


def charts_behind(*, app_ids: list[int] | None = None, today: date | None = None) -> list[ChartBehind]:
    """Applications installing a chart from a Helm or OCI repository: those pinned behind the
    newest acceptable version (`portal.releases.charts` keeps what each repository offers), and
    those following a range, of the charts whose versions were read. The policy is that of the
    application's first service (by name), the default policy when it has none. A fixed
    handful of queries."""
    today = today or timezone.now().date()
    # Only the charts whose repository was read: a fleet without charts reads no application.
    charts = set(ChartVersion.objects.values_list("chart", flat=True).distinct())
    if not charts:
        return []
    candidates = GitOpsApp.objects.filter(Q(chart__in=charts) | (may_install_a_chart() & Q(chart="")))
    apps = candidates.select_related("cluster__environment").defer(
        "raw", "history", "conditions", "synced_revisions", "images", "warnings"
    )
    if app_ids is not None:
        apps = apps.filter(pk__in=app_ids)
    pinned = [(app, pin) for app in apps.order_by("cluster__name", "name") if (pin := chart_pin(app)) is not None]
    if not pinned:
        return []
    offered = versions_of({pin.ref for _, pin in pinned})
    first_service: dict[int, Service] = {}
    for app_id, service in (
        (link.gitopsapp_id, link.service)
        for link in GitOpsApp.services.through.objects.filter(gitopsapp_id__in=[a.pk for a, _ in pinned])
        .select_related("service")
        .order_by("service__name")
    ):
        first_service.setdefault(app_id, service)
    policies = _policies(list({s.pk: s for s in first_service.values()}.values()))
    found: list[ChartBehind] = []
    for app, pin in pinned:
        if app.cluster.environment is None:
            continue
        if pin.is_range:
            found.append(ChartBehind(app, pin, None))
            continue
        service = first_service.get(app.pk)
        policy = policies.get(service.pk, VersionPolicy()) if service is not None else VersionPolicy()
        target = newest_acceptable(pin.version, offered.get(pin.ref, []), policy, today)
        if target and target != pin.version:
            found.append(ChartBehind(app, pin, target, jump(pin.version, target) or "patch", service=service))
    reasons = no_pr_reasons([line.app.pk for line in found if line.target])
    prs = _open_prs() if any(line.target for line in found) else []
    for line in found:
        line.no_pr = reasons.get(line.app.pk, "")
        if line.target:
            line.open_pr = _open_chart_pr(prs, line.pin.ref, line.environment, line.target)
    return found


def _open_chart_pr(prs: list[PullRequest], chart: ChartRef, environment: str, target: str) -> PullRequest | None:
    for pr in prs:
        if (pr.names_chart(chart.chart) and pr.image == chart.repository and pr.environment == environment
                and target in pr.to_version.split(",")):
            return pr
    return None
