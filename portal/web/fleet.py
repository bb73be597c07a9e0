"""Read side for the matrix (and the counts atop the overview): a fixed handful of queries,
whatever the fleet size.

Everything here reads the store only; nothing reaches a cluster or a forge.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import connection
from django.db.models import Count, FloatField, Func, Q
from django.utils import timezone

from gitops.models import ATTENTION_HEALTH, GitOpsApp, RunningVersion, grace_cutoff
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
    """One line of a matrix cell: a set of versions on one or more clusters. Clusters that run
    the same versions with nothing wrong share a line, so an environment of ten healthy
    clusters is one line, not ten; clusters with the same versions and the same problems
    share another, whose flags keep each cluster's app and since."""

    versions: list[str]
    clusters: list[str] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)  # what Git pins for it there, when read
    cluster_ids: list[int | str] = field(default_factory=list)  # as read: ints or their text

    @property
    def pins(self) -> str:
        """"Git pins 1.7.0, runs 1.6.0": why a change in Git has not gone out."""
        return pin_summary(self.pinned, self.versions)


@dataclass
class Cell:
    environment: Environment
    lines: list[CellLine] = field(default_factory=list)
    rendered: str = ""  # its HTML, set by portal.web.cells.render_matrix

    @property
    def attention(self) -> bool:
        return any(line.flags for line in self.lines)


@dataclass
class ServiceRow:
    service: Service
    cells: list[Cell]


class EpochSeconds(Func):
    """A timestamp as seconds since 1970 (a float): the driver reads a float in C, where
    Django reads each timestamptz through Python, which made a thousand problems cost
    more than the query that found them."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):  # type: ignore[no-untyped-def]
        template = "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS double precision)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):  # type: ignore[no-untyped-def]
        template = "((julianday(%(expressions)s) - 2440587.5) * 86400.0)"
        return self.as_sql(compiler, connection, template=template, **extra)


def stamp(seconds: float | None) -> datetime | None:
    """An `EpochSeconds` value back as an aware datetime."""
    return None if seconds is None else datetime.fromtimestamp(round(seconds, 6), UTC)


def attention_flags(at: datetime | None = None) -> dict[tuple[int, int], list[Flag]]:
    """(service id, cluster id) -> flags of the apps deploying it that need attention.
    One query, over the few apps that need attention, whatever the fleet size."""
    at = at or timezone.now()
    cutoff = grace_cutoff(at)
    rows = (
        GitOpsApp.services.through.objects.filter(
            Q(gitopsapp__sync_status="OutOfSync", gitopsapp__sync_since__lte=cutoff)
            | Q(gitopsapp__health_status__in=ATTENTION_HEALTH, gitopsapp__health_since__lte=cutoff)
        )
        .annotate(sync_at=EpochSeconds("gitopsapp__sync_since"), health_at=EpochSeconds("gitopsapp__health_since"))
        .values_list(
            "service_id", "gitopsapp__cluster_id", "gitopsapp__cluster__name", "gitopsapp__tool", "gitopsapp__name",
            "gitopsapp__sync_status", "sync_at", "gitopsapp__health_status", "health_at",
        )
        .order_by("gitopsapp__cluster__name", "gitopsapp__name")
    )
    limit = cutoff.timestamp()
    flags: dict[tuple[int, int], list[Flag]] = defaultdict(list)
    for service_id, cluster_id, cluster, tool, name, sync, sync_at, health, health_at in rows:
        tool = TOOL_LABEL.get(tool, tool)
        found = flags[(service_id, cluster_id)]
        if health in ATTENTION_HEALTH and health_at is not None and health_at <= limit:
            found.append(Flag(f"{tool}: {health.lower()}", stamp(health_at), cluster, name, "bad"))
        if sync == "OutOfSync" and sync_at is not None and sync_at <= limit:
            found.append(Flag(f"{tool}: out of sync", stamp(sync_at), cluster, name, "warn"))
    return flags


def _running_groups(service_ids: list[int] | None) -> list[tuple[int, int, str, str, str, str]]:
    """What runs, grouped in the database: one row per (service, environment, versions,
    pinned versions) with the ids and names of its clusters. A fleet of 10,000 applications on 40
    clusters comes back as a row per cell line, not a row per application.

    The lists are comma-joined in no particular order and may repeat a version (an ordered
    or distinct aggregate costs a sort per group, most of this query's time); the caller
    sorts and de-duplicates them and merges lines that differ only by order."""
    join = "STRING_AGG({}, ',')" if connection.vendor == "postgresql" else "GROUP_CONCAT({}, ',')"
    where = ""
    params: list[int] = []
    if service_ids is not None:
        if not service_ids:
            return []
        where = f"WHERE service_id IN ({', '.join(['%s'] * len(service_ids))})"
        params = list(service_ids)
    # Byte order is enough for grouping; a locale's collation costs several times more.
    text = ' COLLATE "C"' if connection.vendor == "postgresql" else ""
    sql = f"""
        WITH pair AS (
            SELECT service_id, cluster_id, {join.format("version")}{text} AS versions
            FROM {RunningVersion._meta.db_table} {where}
            GROUP BY service_id, cluster_id
        ), pin AS (
            SELECT p.service_id, a.cluster_id, {join.format("p.version")}{text} AS versions
            FROM {GitPin._meta.db_table} p JOIN {GitOpsApp._meta.db_table} a ON a.id = p.app_id
            GROUP BY p.service_id, a.cluster_id
        )
        SELECT pair.service_id, c.environment_id, pair.versions, COALESCE(pin.versions, '') AS pins,
               {join.format("CAST(c.id AS TEXT)")} AS cluster_ids, {join.format("c.name")} AS cluster_names
        FROM pair
        JOIN {Cluster._meta.db_table} c ON c.id = pair.cluster_id AND c.enabled
        LEFT JOIN pin ON pin.service_id = pair.service_id AND pin.cluster_id = pair.cluster_id
        GROUP BY pair.service_id, c.environment_id, pair.versions, COALESCE(pin.versions, '')
    """  # noqa: S608 - table names from the models, values as parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _split(joined: str | None) -> list[str]:
    return sorted(set(joined.split(","))) if joined else []


def service_rows(services: list[Service] | None = None, at: datetime | None = None) -> tuple[
    list[Environment], list[ServiceRow]
]:
    """Services × environments, each cell the lines described on `CellLine`.

    The database groups quiet clusters into lines, so the work here follows the number of
    lines and of problems, not of applications: 10,000 applications on 40 clusters cost
    little more than 100 on 4."""
    environments = list(Environment.objects.all())
    names = dict(Cluster.objects.filter(enabled=True).values_list("id", "name"))
    selected = [s.id for s in services] if services is not None else None
    if services is None:
        # Rows show a service's name and team; its image aliases (JSON) are not read.
        services = list(Service.objects.only("id", "name", "team"))
    flags = attention_flags(at)
    env_index = {env.id: index for index, env in enumerate(environments)}
    env_of = dict(Cluster.objects.filter(enabled=True).values_list("id", "environment_id")) if flags else {}

    lines: dict[tuple[int, int], list[CellLine]] = defaultdict(list)
    quiet: dict[tuple[int, int, tuple[str, ...], tuple[str, ...]], CellLine] = {}
    flagged_lines: dict[tuple[int, int], CellLine] = {}
    flagged_services = {service_id for service_id, _ in flags}
    for service_id, env_id, versions_text, pinned_text, cluster_ids, cluster_names in _running_groups(selected):
        index = env_index.get(env_id)
        if index is None:
            continue
        versions, pinned = _split(versions_text), _split(pinned_text)
        key = (service_id, index, tuple(versions), tuple(pinned))
        ids: list[int | str]
        if service_id in flagged_services:
            parsed = [int(i) for i in cluster_ids.split(",")]
            # A cluster with a problem is kept out of the quiet lines, to say where and since when.
            for cluster_id in [i for i in parsed if (service_id, i) in flags]:
                flagged_lines[(service_id, cluster_id)] = CellLine(
                    versions, [names[cluster_id]], flags[(service_id, cluster_id)], pinned, [cluster_id]
                )
            parsed = [i for i in parsed if (service_id, i) not in flags]
            ids, quiet_names = list(parsed), [names[i] for i in parsed]
        else:
            # Ids are read only when an action needs them (`CellLine.cluster_ids`).
            ids, quiet_names = list(cluster_ids.split(",")), cluster_names.split(",")
        if not ids:
            continue
        line = quiet.get(key)
        if line is None:
            line = quiet[key] = CellLine(versions, [], [], pinned, [])
            lines[(service_id, index)].append(line)
        line.clusters.extend(quiet_names)
        line.cluster_ids.extend(ids)
    for line in quiet.values():
        line.clusters.sort()
    # Problems where nothing runs (a Missing app) still get their line.
    for (service_id, cluster_id), found in flags.items():
        if cluster_id in names and (service_id, cluster_id) not in flagged_lines:
            flagged_lines[(service_id, cluster_id)] = CellLine([], [names[cluster_id]], found, [], [cluster_id])
    # What is wrong comes first in its cell, by cluster name; then the quiet lines. Clusters
    # with the same versions and the same problems share a line (a bad release degraded on
    # every prod cluster reads "3 clusters · Argo: degraded"; the title has each one's since).
    problems: dict[tuple[int, int], list[CellLine]] = defaultdict(list)
    alike: dict[tuple, CellLine] = {}
    for (service_id, cluster_id), line in sorted(flagged_lines.items(), key=lambda item: item[1].clusters[0]):
        index = env_index.get(env_of.get(cluster_id))
        if index is None:
            continue
        labels = tuple(sorted({f.label for f in line.flags}))
        same_key = (service_id, index, tuple(line.versions), tuple(line.pinned), labels)
        same = alike.get(same_key)
        if same is None:
            alike[same_key] = line
            problems[(service_id, index)].append(line)
            continue
        same.clusters.extend(line.clusters)
        same.cluster_ids.extend(line.cluster_ids)
        same.flags = same.flags + line.flags
    for cell_key, first in problems.items():
        lines[cell_key] = first + lines.get(cell_key, [])

    rows = []
    for service in services:
        cells = [Cell(env, lines.get((service.id, index), [])) for index, env in enumerate(environments)]
        rows.append(ServiceRow(service, cells))
    return environments, rows


def fleet_counts(at: datetime | None = None) -> dict[str, int]:
    """The numbers at the top of the overview, in one pass over the apps (plus one query for clusters)."""
    at = at or timezone.now()
    cutoff = grace_cutoff(at)
    degraded = Q(health_status__in=ATTENTION_HEALTH, health_since__lte=cutoff)
    out_of_sync = Q(sync_status="OutOfSync", sync_since__lte=cutoff)
    counts = GitOpsApp.objects.aggregate(
        apps=Count("id"),
        attention=Count("id", filter=degraded | out_of_sync),  # as GitOpsApp.objects.needing_attention
        degraded=Count("id", filter=degraded),
        out_of_sync=Count("id", filter=out_of_sync),
        blocked=Count(
            "id", filter=Q(sync_blocked=True) & (Q(sync_blocked_until__isnull=True) | Q(sync_blocked_until__gt=at))
        ),
        suspended=Count("id", filter=Q(suspended=True)),
    )
    counts["stale_clusters"] = Cluster.objects.filter(enabled=True, stale_since__isnull=False).count()
    return counts
