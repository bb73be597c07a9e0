"""Read side for the overview and the matrix: a fixed handful of queries, whatever the fleet size.

Everything here reads the store only; nothing reaches a cluster or a forge.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from gitops.models import GitOpsApp, RunningVersion, grace_cutoff
from portal.catalog.models import Cluster, Environment, Service
from portal.delivery.models import GitPin
from portal.delivery.pins import pin_summary

TOOL_LABEL = {"argo": "Argo", "flux": "Flux"}


@dataclass
class Flag:
    """A state that has lasted past the grace period: "Argo: degraded" on prod-eu-1 since …"""

    label: str
    since: datetime | None
    cluster: str
    app: str
    severity: str  # bad | warn


@dataclass
class CellLine:
    cluster: Cluster
    versions: list[str] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)  # what Git pins for it there, when read


@dataclass
class ShownLine:
    """One line of a cell: a version set on one or more clusters, or one cluster with flags."""

    versions: list[str]
    clusters: list[str]
    flags: list[Flag]
    pinned: list[str] = field(default_factory=list)

    @property
    def pins(self) -> str:
        """"Git pins 1.7.0, runs 1.6.0": why a change in Git has not gone out."""
        return pin_summary(self.pinned, self.versions)

    @property
    def title(self) -> str:
        parts = [", ".join(self.clusters)]
        if self.pins:
            parts.append(self.pins)
        for flag in self.flags:
            if flag.since:
                parts.append(f"{flag.label} since {timezone.localtime(flag.since):%a %Y-%m-%d %H:%M %Z} ({flag.app})")
        return " · ".join(parts)


@dataclass
class Cell:
    environment: Environment
    lines: list[CellLine] = field(default_factory=list)

    @property
    def shown(self) -> list[ShownLine]:
        """Clusters that run the same versions with nothing wrong share a line, so an
        environment of ten healthy clusters is one line, not ten; a cluster with a
        problem always gets its own line saying where and since when."""
        shown: list[ShownLine] = []
        quiet: dict[tuple[tuple[str, ...], tuple[str, ...]], ShownLine] = {}
        for line in self.lines:
            if line.flags:
                shown.append(ShownLine(line.versions, [line.cluster.name], line.flags, line.pinned))
                continue
            key = (tuple(line.versions), tuple(line.pinned))
            if key not in quiet:
                quiet[key] = ShownLine(line.versions, [], [], line.pinned)
                shown.append(quiet[key])
            quiet[key].clusters.append(line.cluster.name)
        return shown

    @property
    def attention(self) -> bool:
        return any(line.flags for line in self.lines)

    @property
    def html(self) -> str:
        from portal.web.cells import cell_html

        return cell_html(self)

    @property
    def versions(self) -> list[str]:
        seen: list[str] = []
        for line in self.lines:
            for version in line.versions:
                if version not in seen:
                    seen.append(version)
        return seen


@dataclass
class ServiceRow:
    service: Service
    cells: list[Cell]

    @property
    def attention(self) -> bool:
        return any(cell.attention for cell in self.cells)

    @property
    def flags(self) -> list[Flag]:
        return [flag for cell in self.cells for line in cell.lines for flag in line.flags]

    @property
    def tile(self) -> str:
        from portal.web.cells import tile_html

        return tile_html(self)


def attention_flags(at: datetime | None = None) -> dict[tuple[int, int], list[Flag]]:
    """(service id, cluster id) -> flags of the apps deploying it that need attention."""
    at = at or timezone.now()
    cutoff = grace_cutoff(at)
    apps = list(
        GitOpsApp.objects.needing_attention(at).values(
            "id", "tool", "name", "cluster_id", "cluster__name", "sync_status", "sync_since",
            "health_status", "health_since",
        )
    )
    if not apps:
        return {}
    links = GitOpsApp.services.through.objects.filter(gitopsapp_id__in=[a["id"] for a in apps]).values_list(
        "gitopsapp_id", "service_id"
    )
    services_of: dict[int, list[int]] = defaultdict(list)
    for app_id, service_id in links:
        services_of[app_id].append(service_id)
    flags: dict[tuple[int, int], list[Flag]] = defaultdict(list)
    for app in apps:
        tool = TOOL_LABEL.get(app["tool"], app["tool"])
        found: list[Flag] = []
        if app["health_status"] in ("Degraded", "Missing") and app["health_since"] and app["health_since"] <= cutoff:
            found.append(
                Flag(f"{tool}: {app['health_status'].lower()}", app["health_since"], app["cluster__name"],
                     app["name"], "bad")
            )
        if app["sync_status"] == "OutOfSync" and app["sync_since"] and app["sync_since"] <= cutoff:
            found.append(Flag(f"{tool}: out of sync", app["sync_since"], app["cluster__name"], app["name"], "warn"))
        for service_id in services_of.get(app["id"], []):
            flags[(service_id, app["cluster_id"])].extend(found)
    return flags


def service_rows(services: list[Service] | None = None, at: datetime | None = None) -> tuple[
    list[Environment], list[ServiceRow]
]:
    environments = list(Environment.objects.all())
    clusters = list(Cluster.objects.select_related("environment").filter(enabled=True))
    if services is None:
        services = list(Service.objects.all())
    versions: dict[tuple[int, int], list[str]] = defaultdict(list)
    for service_id, cluster_id, version in (
        RunningVersion.objects.filter(service__in=services)
        .values_list("service_id", "cluster_id", "version")
        .distinct()
        .order_by("service_id", "cluster_id", "version")
    ):
        versions[(service_id, cluster_id)].append(version)
    pinned: dict[tuple[int, int], list[str]] = defaultdict(list)
    for service_id, cluster_id, version in (
        GitPin.objects.filter(service__in=services)
        .values_list("service_id", "app__cluster_id", "version")
        .distinct()
        .order_by("service_id", "app__cluster_id", "version")
    ):
        pinned[(service_id, cluster_id)].append(version)
    flags = attention_flags(at)
    clusters_by_env: dict[int, list[Cluster]] = defaultdict(list)
    for cluster in clusters:
        clusters_by_env[cluster.environment_id].append(cluster)
    rows = []
    for service in services:
        cells = []
        for env in environments:
            cell = Cell(env)
            for cluster in clusters_by_env.get(env.id, []):
                key = (service.id, cluster.id)
                if key in versions or key in flags:
                    cell.lines.append(CellLine(cluster, versions.get(key, []), flags.get(key, []), pinned.get(key, [])))
            cells.append(cell)
        rows.append(ServiceRow(service, cells))
    return environments, rows


def fleet_counts(at: datetime | None = None) -> dict[str, int]:
    """The numbers at the top of the overview, in one query (plus one for clusters)."""
    at = at or timezone.now()
    cutoff = grace_cutoff(at)
    counts = GitOpsApp.objects.aggregate(
        apps=Count("id"),
        degraded=Count("id", filter=Q(health_status__in=("Degraded", "Missing"), health_since__lte=cutoff)),
        out_of_sync=Count("id", filter=Q(sync_status="OutOfSync", sync_since__lte=cutoff)),
        blocked=Count(
            "id", filter=Q(sync_blocked=True) & (Q(sync_blocked_until__isnull=True) | Q(sync_blocked_until__gt=at))
        ),
        suspended=Count("id", filter=Q(suspended=True)),
    )
    counts["attention"] = GitOpsApp.objects.needing_attention(at).count()
    counts["stale_clusters"] = Cluster.objects.filter(enabled=True, stale_since__isnull=False).count()
    return counts
