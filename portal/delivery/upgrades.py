"""Who is behind: per application and service, the newest release the service's policy accepts.

Read from the store only (running versions, `Release` rows, policies, Git pins, open
pull requests), in a constant number of queries whatever the fleet size, so the
Updates page, the service panel and the automatic-PR task share one answer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.utils import timezone

from gitops.models import GitOpsApp
from portal.catalog.models import Service
from portal.delivery.gitpins import pinned_versions
from portal.delivery.models import PullRequest, ServicePolicy
from portal.delivery.policy import PolicyError, VersionPolicy, newest_acceptable
from portal.links import safe_http_url
from portal.releases.models import Release
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
    notes_url: str | None = None  # the target's release notes on the forge, when known

    @property
    def environment(self) -> str:
        return self.app.cluster.environment.name

    @property
    def pinned_at_target(self) -> bool:
        """Git already pins the target: the change is merged and waits to deploy, no PR needed."""
        return self.target in self.pinned

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
            found[row.service_id] = VersionPolicy(accept="patch", allow_tags=r"^$")
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
        self._judged: dict[tuple[int, str], str | None] = {}

    @staticmethod
    def current(versions: list[str]) -> str | None:
        """The oldest version that reads as one: the one a pull request moves away from."""
        readable = [v for v in versions if parse_tag(v) is not None]
        return sort_tags(readable)[0] if readable else None

    def target(self, service_id: int, current: str) -> str | None:
        key = (service_id, current)
        if key not in self._judged:
            policy = self.policies.get(service_id, VersionPolicy())
            self._judged[key] = newest_acceptable(current, self.tags.get(service_id, []), policy, self.today)
        return self._judged[key]

    def open_pr(self, service: str, environment: str, target: str) -> PullRequest | None:
        return _matching_pr(self.prs, service, environment, target)


def behind(
    *,
    service: Service | None = None,
    environment: str | None = None,
    app_ids: list[int] | None = None,
    today: date | None = None,
) -> list[Behind]:
    """Every (application, service) that runs older than its newest acceptable release.

    Ordered by service, environment order, cluster and application."""
    today = today or timezone.now().date()
    apps_query = GitOpsApp.objects.select_related("cluster__environment").prefetch_related("services")
    if service is not None:
        apps_query = apps_query.filter(services=service)
    if environment is not None:
        apps_query = apps_query.filter(cluster__environment__name=environment)
    if app_ids is not None:
        apps_query = apps_query.filter(pk__in=app_ids)
    apps = list(apps_query.order_by("cluster__environment__order", "cluster__name", "namespace", "name"))
    services = list({s.pk: s for app in apps for s in app.services.all()}.values())
    if service is not None:
        services = [s for s in services if s.pk == service.pk]
    if not services:
        return []
    targets = UpgradeTargets(services, today)
    pins = pinned_versions([a.pk for a in apps])
    found: list[Behind] = []
    wanted = {s.pk for s in services}
    for app in apps:
        for svc in app.services.all():
            if svc.pk not in wanted:
                continue
            current = targets.current((app.running or {}).get(svc.name) or [])
            target = targets.target(svc.pk, current) if current else None
            if current is None or target is None:
                continue
            found.append(
                Behind(
                    app=app,
                    service=svc,
                    running=current,
                    target=target,
                    jump=jump(current, target) or "patch",
                    pinned=pins.get((app.pk, svc.name), []),
                    open_pr=targets.open_pr(svc.name, app.cluster.environment.name, target),
                    notes_url=targets.notes.get((svc.pk, target)),
                )
            )
    found.sort(key=lambda b: (b.service.name, b.app.cluster.environment.order, b.app.cluster.name, b.app.name))
    return found


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
