"""Store (writes only): one cluster's poll in one transaction, only what changed.

What to write was decided before: `gitops.store.read` reads what the store holds of the
cluster (one query per table) and `gitops.derive` (pure) compares the poll's rows with
it. Only kinds that were listed successfully are touched: an API error on Flux leaves
the Flux rows exactly as they were (never read as "the apps disappeared"), while the
Argo CD rows from the same poll are updated. State changes become StateChange rows (the
"since when" of the pages and the episode unit of notifications); a service's running
version replaced by another on a workload becomes a VersionChange. Wide rows go through
the bulk paths of `gitops.store.bulk` (COPY and UPDATE … FROM on PostgreSQL).

The rows a poll replaces are those read from the cluster, wherever they deploy: a hub's
apps are filed under their destinations, a destination no catalog cluster matches under
a discovered cluster written here first, and every destination whose running versions
changed is announced as well as the polled cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction

from gitops import app_order
from gitops.derive.app_changes import APP_FIELDS
from gitops.derive.cluster_changes import Changes
from gitops.derive.topology import Unregistered
from gitops.derive.workload_changes import WORKLOAD_FIELDS
from gitops.models import AppProject, GitOpsApp, RunningVersion, StateChange, VersionChange, Workload
from gitops.rows import app_key
from gitops.signals import cluster_stored
from gitops.store.bulk import bulk_insert_rows, bulk_update_rows, copy_rows
from portal.kernel.catalog.models import Cluster


@dataclass
class StoreResult:
    apps: int = 0
    created: int = 0
    updated: int = 0
    removed: int = 0
    workloads: int = 0
    projects: int = 0
    state_changes: int = 0
    version_changes: int = 0


def write(changes: Changes) -> StoreResult:
    """Write one cluster's changes in one transaction, and announce them inside it."""
    cluster = changes.state.cluster
    apps = changes.apps
    with transaction.atomic():
        if apps.projects is not None:
            AppProject.objects.filter(cluster=cluster).delete()
            AppProject.objects.bulk_create(apps.projects)
        _file_unregistered(apps.unregistered)
        _write_apps(changes)
        if changes.workloads is not None:
            _write_workloads(changes)
        read = {app.pk for app in apps.created + apps.kept}
        if changes.workloads is not None:
            # An app whose workloads changed (a hand apply, new limits) is judged again with them.
            touched = changes.workloads.created + changes.workloads.updated
            read |= {app.pk for _, app in touched if app is not None and app.pk is not None}
        cluster_stored.send(sender=Cluster, cluster=cluster, read=sorted(read), at=changes.at,
                            every_app=not changes.state.some_apps, running_moved=_running_moved(changes))
        destinations = Cluster.objects.filter(pk__in=apps.destinations_touched, environment__isnull=False)
        for destination in destinations.order_by("pk"):
            cluster_stored.send(sender=Cluster, cluster=destination, read=[], at=changes.at, every_app=False,
                                running_moved=True)
    workloads = changes.workloads
    return StoreResult(
        apps=apps.seen, created=len(apps.created), updated=len(apps.updated), removed=len(apps.gone),
        workloads=changes.workload_rows, projects=len(apps.projects or []), state_changes=len(apps.state_changes),
        version_changes=len(workloads.version_changes) if workloads else 0,
    )


def _running_moved(changes: Changes) -> bool:
    """Whether this write may have moved the cluster's running versions (RunningVersion rows, what
    the layers above place services by). Only a full poll writes workloads and removes apps; a
    partial one moves running versions through the images Argo CD reports and the service links
    of its apps alone."""
    apps = changes.apps
    return (not changes.state.some_apps or changes.workloads is not None or bool(
        apps.gone or apps.image_versions_added or apps.image_versions_stale or apps.relinked or apps.links))


def _write_apps(changes: Changes) -> None:
    apps = changes.apps
    if apps.gone:
        GitOpsApp.objects.filter(id__in=[a.id for a in apps.gone]).delete()
    app_order.fill(apps.created + apps.updated)  # a hub's app may have moved to another destination
    bulk_insert_rows(GitOpsApp, apps.created)
    if apps.updated:
        bulk_update_rows(GitOpsApp, apps.updated, APP_FIELDS + app_order.FIELDS)
    _fill_ids(apps.created, GitOpsApp.objects.filter(read_from=changes.state.cluster),
              lambda a: app_key(a.tool, a.kind, a.namespace, a.name))
    copy_rows(StateChange, [_with_ids(change) for change in apps.state_changes])
    if apps.image_versions_stale:
        RunningVersion.objects.filter(id__in=apps.image_versions_stale).delete()
    copy_rows(RunningVersion, [_with_ids(row) for row in apps.image_versions_added])
    VersionChange.objects.bulk_create(VersionChange(**_with_ids(row)) for row in apps.version_changes)
    # Which services each app deploys (M2M), rewritten for new apps and those whose set changed.
    through = GitOpsApp.services.through
    through.objects.filter(gitopsapp_id__in=[a.id for a in apps.relinked]).delete()
    copy_rows(through, [{"gitopsapp_id": app.id, "service_id": service_id} for app, service_id in apps.links])


def _file_unregistered(placed: list[tuple[GitOpsApp, Unregistered]]) -> None:
    """A discovered cluster for each destination no catalog cluster matched (found again by
    its slug when another poll wrote it first), and its apps pointed at it."""
    clusters: dict[str, Cluster] = {}
    for app, found in placed:
        cluster = clusters.get(found.slug)
        if cluster is None:
            cluster = _discovered_cluster(found)
            clusters[found.slug] = cluster
        app.cluster = cluster


def _discovered_cluster(found: Unregistered) -> Cluster:
    existing = Cluster.objects.filter(name=found.slug).first()
    if existing is not None and (existing.discovered or set(found.aliases) & set(existing.argocd_aliases or [])):
        return existing
    name = found.slug if existing is None else _free_name(found.slug)
    return Cluster.objects.create(
        name=name, environment=None, discovered=True, enabled=False, connection=Cluster.Connection.NONE,
        api_url=found.api_url[:500], argocd_aliases=list(found.aliases),
    )


def _free_name(slug: str) -> str:
    """`slug`, made unique among the catalog's cluster names with a numeric suffix."""
    taken = set(Cluster.objects.filter(name__startswith=slug[:57]).values_list("name", flat=True))
    number = 2
    while f"{slug[:57]}-{number}" in taken:
        number += 1
    return f"{slug[:57]}-{number}"


def _write_workloads(changes: Changes) -> None:
    workloads = changes.workloads
    assert workloads is not None
    if workloads.gone:
        Workload.objects.filter(id__in=workloads.gone).delete()
    for workload, app in workloads.created + workloads.updated:
        workload.app_id = app.id if app is not None else None  # a new app's id is known only now
    created = [workload for workload, _ in workloads.created]
    bulk_insert_rows(Workload, created)
    if workloads.updated:
        bulk_update_rows(Workload, [workload for workload, _ in workloads.updated], WORKLOAD_FIELDS)
    _fill_ids(created, Workload.objects.filter(cluster=changes.state.cluster, kind__in=changes.state.workload_kinds),
              lambda w: (w.kind, w.namespace, w.name))
    if workloads.running_stale:
        RunningVersion.objects.filter(id__in=workloads.running_stale).delete()
    copy_rows(RunningVersion, [_with_ids(row) for row in workloads.running_added])
    VersionChange.objects.bulk_create(VersionChange(**_with_ids(row)) for row in workloads.version_changes)


def _fill_ids(created: Sequence[models.Model], stored: models.QuerySet, key: Callable[[Any], Any]) -> None:
    """Rows created in bulk have ids on PostgreSQL and SQLite ≥ 3.35; read them back when not."""
    if not any(obj.pk is None for obj in created):
        return
    ids = {key(obj): obj.pk for obj in stored}
    for obj in created:
        obj.pk = ids[key(obj)]


def _with_ids(row: dict[str, Any]) -> dict[str, Any]:
    """A derived row with the app / workload it points at replaced by their ids, known once written."""
    out = {name: value for name, value in row.items() if name not in ("app", "workload")}
    for name in ("app", "workload"):
        if name in row:
            out[f"{name}_id"] = row[name].pk if row[name] is not None else None
    return out
