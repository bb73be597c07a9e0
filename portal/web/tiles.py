"""Read side for the overview: a tile per service, its versions per environment and its
first few problems. Three queries that return a row per matrix line (the versions) and a
few rows per service (the problems), whatever the number of applications.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import BooleanField, Count, ExpressionWrapper, F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from gitops.derive.attention import Attention
from gitops.models import GitOpsApp
from gitops.queries import EpochSeconds, stamp
from portal.delivery.models import VersionLine
from portal.kernel.catalog.models import Environment, Service
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
    sync, then by environment and cluster) as flags, and how many such apps it has. Which
    half of the attention rule holds comes with each row, judged by the database."""
    rule = Attention.at(at)
    unhealthy, out_of_sync = rule.unhealthy_q("gitopsapp__"), rule.out_of_sync_q("gitopsapp__")
    order = [
        F("bad").desc(),
        F("gitopsapp__cluster__environment__order").asc(),
        F("gitopsapp__cluster__name").asc(),
        F("gitopsapp__name").asc(),
    ]
    rows = (
        GitOpsApp.services.through.objects.filter(unhealthy | out_of_sync, gitopsapp__cluster__enabled=True)
        .annotate(
            bad=ExpressionWrapper(unhealthy, output_field=BooleanField()),
            drifted=ExpressionWrapper(out_of_sync, output_field=BooleanField()),
        )
        .annotate(
            position=Window(RowNumber(), partition_by=[F("service_id")], order_by=order),
            total=Window(Count("id"), partition_by=[F("service_id")]),
            sync_at=EpochSeconds("gitopsapp__sync_since"),
            health_at=EpochSeconds("gitopsapp__health_since"),
        )
        .filter(position__lte=TILE_FLAGS)
        .values_list(
            "service_id", "total", "gitopsapp__cluster__name", "gitopsapp__tool", "gitopsapp__name",
            "bad", "drifted", "sync_at", "gitopsapp__health_status", "health_at",
            "gitopsapp__sync_since_exact", "gitopsapp__health_since_exact",
        )
        .order_by("service_id", "position")
    )
    flags: dict[int, list[Flag]] = defaultdict(list)
    totals: dict[int, int] = {}
    for (service_id, total, cluster, tool, name, bad, drifted, sync_at, health, health_at, sync_exact,
         health_exact) in rows:
        totals[service_id] = total
        label = TOOL_LABEL.get(tool, tool)
        if bad:
            flags[service_id].append(Flag(f"{label}: {health.lower()}", stamp(health_at), cluster, name, "bad",
                                          health_exact))
        if drifted:
            flags[service_id].append(Flag(f"{label}: out of sync", stamp(sync_at), cluster, name, "warn", sync_exact))
    return flags, totals


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
