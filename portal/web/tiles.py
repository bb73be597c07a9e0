"""Read side for the overview: a tile per service, its versions per environment and its
first few problems. A fixed handful of queries that return a row per matrix line (the versions)
and a row per application in trouble (the problems), whatever the number of applications.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from gitops.derive.attention import Attention
from gitops.models import GitOpsApp
from gitops.queries import ProblemRow, problem_rows, with_ids
from portal.delivery.models import VersionLine
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.web.fleet import TOOL_LABEL, Flag

TILE_FLAGS = 4  # a tile shows the first few problems; the service page has them all


@dataclass
class Tile:
    service: Service
    versions: list[tuple[Environment, list[str]]]  # every environment, in order
    flags: list[Flag] = field(default_factory=list)  # the first TILE_FLAGS problems
    problem_apps: int = 0  # applications needing attention in all
    rendered: str = ""  # its HTML, set by portal.web.hotpath.render_tiles

    @property
    def attention(self) -> bool:
        return self.problem_apps > 0

    @property
    def more(self) -> int:
        """How many applications with problems the tile does not show."""
        return self.problem_apps - len({(flag.cluster, flag.app) for flag in self.flags})


def _versions_by_environment() -> dict[tuple[int, int], list[str]]:
    """(service id, environment id) -> what runs there, from the matrix's lines (a row per
    line, kept when the store is written: portal.delivery.version_matrix)."""
    found: dict[tuple[int, int], set[str]] = defaultdict(set)
    for service_id, env_id, versions in VersionLine.objects.values_list("service_id", "environment_id", "versions"):
        found[(service_id, env_id)].update(versions.split(","))
    return {key: sorted(versions) for key, versions in found.items()}


def _first_problems(at: datetime) -> tuple[dict[int, list[Flag]], dict[int, int]]:
    """Each service's first few apps needing attention (degraded or missing before out of
    sync, then by environment, cluster and app name) as flags, and how many such apps it has.

    Two reads: every (service, app) in trouble as six small columns (`problem_rows`, which says
    which half of the rule holds), ranked here, then what the flags of the few that show say.
    Ranking in SQL read the links in service order and, on tables not analyzed yet, compared each
    of 100,000 of them with every app in trouble (46 s at 100,000 apps); reading every troubled
    app whole was three quarters of the page where a third of a fleet drifts out of sync
    (bench/pages.py --polled)."""
    clusters = Cluster.objects.filter(enabled=True).values_list("id", "name", "environment__order")
    place = {cluster_id: (*_last_if_none(order), name) for cluster_id, name, order in clusters}
    found: dict[int, list[ProblemRow]] = defaultdict(list)
    for problem in problem_rows(Attention.at(at)):
        if problem[1] in place:
            found[problem[0]].append(problem)

    def rank(problem: ProblemRow) -> tuple:
        _, cluster_id, app_id, name, unhealthy, _ = problem
        # A cluster in no environment (discovered) comes last.
        return (not unhealthy, *place[cluster_id], name, app_id)

    first = {service_id: heapq.nsmallest(TILE_FLAGS, rows, key=rank) for service_id, rows in found.items()}
    shown = {app_id: said for app_id, *said in with_ids(GitOpsApp.objects.all(), sorted(
        {problem[2] for rows in first.values() for problem in rows})).values_list(
            "id", "tool", "health_status", "health_since", "health_since_exact", "sync_since", "sync_since_exact")}
    flags: dict[int, list[Flag]] = defaultdict(list)
    for service_id, rows in first.items():
        for _, cluster_id, app_id, name, unhealthy, out_of_sync in rows:
            if app_id not in shown:  # deleted by a poll between the two reads
                continue
            tool, health, health_since, health_exact, sync_since, sync_exact = shown[app_id]
            label, cluster = TOOL_LABEL.get(tool, tool), place[cluster_id][2]
            if unhealthy:
                flags[service_id].append(Flag(f"{label}: {health.lower()}", health_since, cluster, name, "bad",
                                              bool(health_exact)))
            if out_of_sync:
                flags[service_id].append(Flag(f"{label}: out of sync", sync_since, cluster, name, "warn",
                                              bool(sync_exact)))
    return flags, {service_id: len(rows) for service_id, rows in found.items()}


def _last_if_none(order: int | None) -> tuple[bool, int]:
    return order is None, order or 0


def service_tiles(at: datetime | None = None) -> list[Tile]:
    """A tile per service: those needing attention first, then by name."""
    at = at or timezone.now()
    environments = list(Environment.objects.all())
    versions = _versions_by_environment()
    flags, totals = _first_problems(at)
    tiles = [
        Tile(
            service,
            [(env, versions.get((service.id, env.id), [])) for env in environments],
            flags.get(service.id, [])[:TILE_FLAGS],
            totals.get(service.id, 0),
        )
        # Tiles show a service's name and team; its image aliases (JSON) are not read.
        for service in Service.objects.only("id", "name", "team")
    ]
    tiles.sort(key=lambda tile: (not tile.attention, tile.service.name))
    return tiles
