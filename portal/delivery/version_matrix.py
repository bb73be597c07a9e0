"""Keep the matrix's read model equal to what RunningVersion and GitPin say:

- `Placement`: per (service, cluster), the versions that run and the versions Git pins;
- `VersionLine`: per (service, environment), the enabled clusters that share the same
  versions and pins, with their ids and names — a matrix cell's lines, ready to read.

Two writers touch the sources: the store, once per cluster poll (it sends
`gitops.signals.cluster_stored` inside its transaction), and the pin reader, once per
application. Each calls `refresh` inside its own transaction, so the derived rows commit
or roll back with the data they derive from. A cluster that is renamed, moved, enabled,
disabled or removed redraws its environments' lines (signal receivers below).

Lines span the clusters of an environment, so on PostgreSQL a transaction-scoped advisory
lock per environment orders two refreshes there: the second reads after the first commits
(READ COMMITTED takes a new snapshot per statement), so two polls, or a poll and a pin
read, that run at once cannot leave the older of two answers behind. SQLite runs one
writer at a time. Only differences are written: a poll that changes nothing writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction

from gitops.models import RunningVersion
from portal.delivery.models import GitPin, Placement, VersionLine
from portal.kernel.catalog.models import Cluster, Environment

# First key of the advisory lock (the second is the environment id): "plac" in ASCII.
_LOCK_NAMESPACE = 0x706C6163


def joined(versions: Iterable[str]) -> str:
    """Versions as the read model stores them: distinct, sorted by code point, comma-separated.
    One spelling per set, so that clusters running the same versions group together."""
    return ",".join(sorted(set(versions)))


def _lock(environment_ids: Iterable[int]) -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for environment_id in sorted(set(environment_ids)):  # one order everywhere: no deadlock
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, environment_id])


def refresh(cluster_id: int, service_ids: Iterable[int] | None = None) -> int:
    """Bring one cluster's placements (or only those of `service_ids`), and the lines of its
    environment they feed, up to date; returns how many placements changed."""
    selected = None if service_ids is None else sorted(set(service_ids))
    if selected == []:
        return 0
    with transaction.atomic():
        # The cluster's row first (a move in progress commits before this reads where the
        # cluster is), then its environment's lock; every writer takes them in that order.
        # (No ordering: the model's default would join its environment and lock that row too.)
        found = list(
            Cluster.objects.select_for_update(of=("self",)).filter(pk=cluster_id).order_by().values_list(
                "environment_id", flat=True
            )
        )
        if not found:
            return 0  # removed meanwhile: its rows went with it
        environment_id = found[0]
        _lock([environment_id])
        changed = _refresh_placements(cluster_id, selected)
        if changed:
            refresh_lines(environment_id, changed, locked=True)
    return len(changed)


def _refresh_placements(cluster_id: int, selected: list[int] | None) -> set[int]:
    """The services whose placement on the cluster was written or removed."""
    scope: dict[str, Any] = {} if selected is None else {"service_id__in": selected}
    running: dict[int, set[str]] = defaultdict(set)
    for service_id, version in RunningVersion.objects.filter(cluster_id=cluster_id, **scope).values_list(
        "service_id", "version"
    ):
        running[service_id].add(version)
    pinned: dict[int, set[str]] = defaultdict(set)
    for service_id, version in GitPin.objects.filter(app__cluster_id=cluster_id, **scope).values_list(
        "service_id", "version"
    ):
        pinned[service_id].add(version)
    wanted = {
        service_id: (joined(versions), joined(pinned.get(service_id, ()))) for service_id, versions in running.items()
    }
    stored = {
        row.service_id: row
        for row in Placement.objects.filter(cluster_id=cluster_id, **scope).only(
            "id", "service_id", "versions", "pinned"
        )
    }
    gone = {service_id: row.id for service_id, row in stored.items() if service_id not in wanted}
    if gone:
        Placement.objects.filter(id__in=gone.values()).delete()
    new = [
        Placement(service_id=service_id, cluster_id=cluster_id, versions=versions, pinned=pins)
        for service_id, (versions, pins) in wanted.items()
        if service_id not in stored
    ]
    Placement.objects.bulk_create(new)
    updated = []
    for service_id, (versions, pins) in wanted.items():
        row = stored.get(service_id)
        if row is not None and (row.versions, row.pinned) != (versions, pins):
            row.versions, row.pinned = versions, pins
            updated.append(row)
    if updated:
        Placement.objects.bulk_update(updated, ["versions", "pinned"])
    return set(gone) | {row.service_id for row in new} | {row.service_id for row in updated}


def refresh_lines(environment_id: int, service_ids: Iterable[int] | None = None, *, locked: bool = False) -> int:
    """Redraw an environment's lines (or only those of `service_ids`) from its placements;
    returns how many lines were written or removed."""
    selected = None if service_ids is None else sorted(set(service_ids))
    if selected == []:
        return 0
    with transaction.atomic():
        if not locked:
            _lock([environment_id])
        scope: dict[str, Any] = {} if selected is None else {"service_id__in": selected}
        clusters: dict[tuple[int, str, str], list[tuple[str, int]]] = defaultdict(list)
        for service_id, versions, pins, cluster_id, name in Placement.objects.filter(
            cluster__environment_id=environment_id, cluster__enabled=True, **scope
        ).values_list("service_id", "versions", "pinned", "cluster_id", "cluster__name"):
            clusters[(service_id, versions, pins)].append((name, cluster_id))
        wanted: dict[tuple[int, str, str], tuple[str, str]] = {}
        for key, found in clusters.items():
            found.sort()
            wanted[key] = (",".join(str(cluster_id) for _, cluster_id in found), ",".join(name for name, _ in found))
        stale, kept = [], set()
        for line in VersionLine.objects.filter(environment_id=environment_id, **scope):
            key = (line.service_id, line.versions, line.pinned)
            if wanted.get(key) == (line.cluster_ids, line.cluster_names) and key not in kept:
                kept.add(key)
            else:
                stale.append(line.id)
        if stale:
            VersionLine.objects.filter(id__in=stale).delete()
        new = [
            VersionLine(service_id=service_id, environment_id=environment_id, versions=versions, pinned=pins,
                        cluster_ids=ids, cluster_names=names)
            for (service_id, versions, pins), (ids, names) in wanted.items()
            if (service_id, versions, pins) not in kept
        ]
        VersionLine.objects.bulk_create(new)
    return len(stale) + len(new)


def refresh_all() -> int:
    """Every cluster's placements and every environment's lines. Run hourly as a safety net
    (`delivery.refresh_placements`): it writes nothing when all is in order, and mends what
    no writer announces, such as two people editing one cluster in the admin at once."""
    changed = sum(refresh(cluster_id) for cluster_id in Cluster.objects.values_list("id", flat=True))
    for environment_id in Environment.objects.values_list("id", flat=True):
        refresh_lines(environment_id)
    return changed


# --- receivers (connected in DeliveryConfig.ready) ----------------------------------------


def on_cluster_stored(sender: object, cluster: Any, running_moved: bool = True, **kwargs: object) -> None:
    """A poll may have changed any of the cluster's running versions, and removed
    applications take their pins with them; a write that moved none of them (a partial poll's
    changed health or sync, gitops.signals) changes no placement, and takes no lock."""
    if running_moved:
        refresh(cluster.id)


def remember_cluster(sender: object, instance: Cluster, **kwargs: object) -> None:
    """pre_save: what the lines show of the cluster, to tell afterwards whether to redraw them."""
    before = None
    if instance.pk is not None:
        before = Cluster.objects.filter(pk=instance.pk).values_list("environment_id", "name", "enabled").first()
    instance._lines_before = before  # type: ignore[attr-defined]


def on_cluster_saved(sender: object, instance: Cluster, created: bool, **kwargs: object) -> None:
    before = getattr(instance, "_lines_before", None)
    if created or before is None:
        return  # nothing of it is placed yet: its first poll places it
    if before == (instance.environment_id, instance.name, instance.enabled):
        return
    # A discovered cluster (an unregistered Argo CD destination) has no environment, nor lines.
    environments = {e for e in (before[0], instance.environment_id) if e is not None}
    with transaction.atomic():
        _lock(environments)
        for environment_id in environments:
            refresh_lines(environment_id, locked=True)


def on_cluster_deleted(sender: object, instance: Cluster, **kwargs: object) -> None:
    """Its placements went with it (cascade); its environment's lines still name it."""
    if instance.environment_id is not None:
        refresh_lines(instance.environment_id)
