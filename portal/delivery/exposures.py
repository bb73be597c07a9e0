"""Services × environments running versions with known vulnerabilities, worst first, each with
the newest acceptable release (the version policy's, as on Updates) and what moving there fixes.
The one source of the /security page and /api/v1/security. Reads the store only: SBOMs, OSV
answers and KEV were read on the registry queue (portal.releases.sbom_reading).

A version whose packages were never matched (no SBOM, a malformed or too large one, OSV not
reached yet) is not "clean": it is listed apart as not checked, with the reason."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from django.utils import timezone

from gitops.models import RunningVersion
from portal.delivery.upgrades import UpgradeTargets
from portal.kernel.catalog.models import Service
from portal.releases.models import FeedStatus
from portal.releases.osv import SEVERITIES
from portal.releases.vulns import Finding, ImageFacts, diff, facts_many, unknown_because

FILTER_SEVERITIES = ("critical", "high", "moderate", "low")


@dataclass
class Exposure:
    service: Service
    environment: str
    version: str
    facts: ImageFacts
    findings: list[Finding]  # after the filters
    clusters: list[str] = field(default_factory=list)
    apps: list[tuple[int, str]] = field(default_factory=list)  # (app id, app name) running it
    target: str | None = None
    fixes: list[str] = field(default_factory=list)  # keys of the findings the target fixes
    target_checked: bool = False  # the target's SBOM was read and matched
    # Why what the target fixes is not known (its SBOM not read, OSV not reached); "" when known.
    fixes_unknown: str = ""

    @property
    def exploited(self) -> int:
        return sum(1 for f in self.findings if f.exploited)

    @property
    def rank(self) -> tuple:
        worst = min((f.rank for f in self.findings), default=(2, len(SEVERITIES), ""))
        return (worst[0], worst[1], -len(self.findings), self.service.name, self.environment)


@dataclass
class Unchecked:
    service: Service
    environment: str
    version: str
    reason: str


@dataclass
class SecurityReport:
    exposures: list[Exposure]
    unchecked: list[Unchecked]
    osv: FeedStatus | None
    kev: FeedStatus | None


def security_report(
    *,
    severity: str = "",
    exploited: bool = False,
    team: str = "",
    environment: str = "",
    today: date | None = None,
) -> SecurityReport:
    placed = RunningVersion.objects.select_related("cluster__environment", "service")
    if team:
        placed = placed.filter(service__team=team)
    if environment:
        placed = placed.filter(cluster__environment__name=environment)
    groups: dict[tuple[int, str, str], dict] = defaultdict(lambda: {"clusters": set(), "apps": {}})
    services: dict[int, Service] = {}
    for row in placed.exclude(cluster__environment=None).only(
        "version", "app_id", "service", "cluster__name", "cluster__environment__name"
    ):
        if not row.version or row.version.startswith("sha256:"):
            continue
        services[row.service_id] = row.service
        env = row.cluster.environment.name if row.cluster.environment else ""
        group = groups[(row.service_id, env, row.version)]
        group["clusters"].add(row.cluster.name)
        if row.app_id:
            group["apps"][row.app_id] = None
    targets = UpgradeTargets(list(services.values()), today or timezone.now().date())
    wanted = {(sid, version) for sid, _env, version in groups}
    wanted |= {(sid, t) for sid, version in list(wanted) if (t := targets.target(sid, version))}
    # Every version and every target in one read of each table, whatever the fleet's size.
    known = facts_many([(services[sid], version) for sid, version in wanted])

    def facts(service: Service, version: str) -> ImageFacts:
        return known[(service.pk, version)]

    app_names = _app_names({a for g in groups.values() for a in g["apps"]})
    exposures, unchecked = [], []
    floor = SEVERITIES.index(severity) if severity in FILTER_SEVERITIES else len(SEVERITIES) - 1
    for (service_id, env, version), group in groups.items():
        service = services[service_id]
        found = facts(service, version)
        if not found.checked:
            unchecked.append(Unchecked(service, env, version, _why_unchecked(found)))
            continue
        findings = [
            f for f in found.findings if SEVERITIES.index(f.severity) <= floor and (f.exploited or not exploited)
        ]
        if not findings:
            continue
        exposure = Exposure(
            service=service,
            environment=env,
            version=version,
            facts=found,
            findings=findings,
            clusters=sorted(group["clusters"]),
            apps=sorted((a, app_names.get(a, str(a))) for a in group["apps"]),
        )
        exposure.target = targets.target(service_id, version)
        if exposure.target:
            moved = diff(found, facts(service, exposure.target))
            exposure.target_checked = moved.new.checked
            exposure.fixes_unknown = "" if moved.new.checked else _why_unchecked(moved.new)
            keys = {f.key for f in findings}
            exposure.fixes = [f.key for f in moved.fixed if f.key in keys]
        exposures.append(exposure)
    exposures.sort(key=lambda e: e.rank)
    unchecked.sort(key=lambda u: (u.service.name, u.environment, u.version))
    feeds = {f.name: f for f in FeedStatus.objects.filter(name__in=("osv", "kev"))}
    return SecurityReport(exposures=exposures, unchecked=unchecked, osv=feeds.get("osv"), kev=feeds.get("kev"))


def _app_names(ids: set[int]) -> dict[int, str]:
    from gitops.models import GitOpsApp

    return dict(GitOpsApp.objects.filter(pk__in=sorted(ids)).values_list("pk", "name"))


def _why_unchecked(facts: ImageFacts) -> str:
    if not facts.has_sbom:
        return facts.reason or "no SBOM"
    return unknown_because(facts) or "not matched against OSV yet"
