"""Write one cluster's poll into the store: one transaction, bulk upserts, state changes.

Only kinds that were listed successfully are touched: an API error on Flux leaves the
Flux rows exactly as they were (never read as "the apps disappeared"), while the
Argo CD rows from the same poll are updated. Every change of sync, health, synced
revision, suspension or presence writes a StateChange row: the "since when" of the
pages and the episode unit of notifications. A service's running version replaced by
another on a workload writes a VersionChange.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field, fields
from datetime import date, datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from gitops.bulkwrite import bulk_insert_rows, bulk_update_rows, copy_rows
from gitops.models import (
    AppProject,
    GitOpsApp,
    RunningVersion,
    StateChange,
    VersionChange,
    Workload,
    problem_rank,
)
from gitops.rows import AppRow, ProjectRow, WorkloadRow
from gitops.signals import cluster_stored
from gitops.windowstate import window_state
from portal.catalog.models import Cluster, Service, service_image_index

APP_FIELDS = [
    "uid", "project", "repo_url", "path", "chart", "target_revision", "sources", "destination_server",
    "destination_name", "destination_namespace", "sync_status", "sync_since", "synced_revision",
    "synced_revisions", "previous_synced_revision", "revision_changed_at", "source_revision", "health_status",
    "health_since", "health_message", "ready_reason", "suspended", "automated", "manual_sync", "operation_phase",
    "operation_message", "operation_started_at", "operation_finished_at", "reconciled_at", "history", "images",
    "conditions", "interval", "warnings", "sync_blocked", "sync_blocked_until", "sync_window", "window_next_edge",
    "problem_rank", "running", "raw", "fingerprint", "updated_at",
]
# Large JSON columns, always rewritten from the poll's values when a row changes: an
# unchanged app is recognised by its fingerprint, so they are never read back.
_APP_DEFERRED = ["raw", "history", "conditions", "sources", "synced_revisions", "images", "warnings"]
WORKLOAD_FIELDS = [
    "app", "uid", "containers", "replicas_desired", "replicas_ready", "replicas_updated", "replicas_available",
    "health_status", "health_message", "updated_at",
]


@dataclass
class Snapshot:
    """What one poll read: rows, and which kinds were listed completely."""

    apps: list[AppRow] = field(default_factory=list)
    projects: list[ProjectRow] = field(default_factory=list)
    workloads: list[WorkloadRow] = field(default_factory=list)
    listed_kinds: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)


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


def jsonable(value: Any) -> Any:
    """Raw objects may hold datetimes (YAML reads unquoted timestamps as such)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def fingerprint(values: dict[str, Any]) -> str:
    """A digest of everything a poll writes for an app, to tell an unchanged app cheaply.

    The raw object stands in by its resourceVersion, which the API server changes on
    every write to it (what informers compare too); only an object without one (a
    manifest file) is digested whole. Everything derived from it is digested as well,
    so a portal upgrade that reads objects differently rewrites the rows once. Keys are
    not sorted: the server writes fields in the same order every time, and a digest that
    differs by order alone costs one needless write, nothing more.
    """
    raw = values.get("raw") or {}
    version = (raw.get("metadata") or {}).get("resourceVersion") if isinstance(raw, dict) else None
    digested = {k: v for k, v in values.items() if k != "updated_at" and (k != "raw" or not version)}
    digested["resourceVersion"] = version or ""
    text = json.dumps(digested, cls=DjangoJSONEncoder, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _plain(obj: Any) -> dict[str, Any]:
    """A flat dataclass as a dict; dataclasses.asdict deep-copies, which a poll pays per row."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def app_key(tool: str, kind: str, namespace: str, name: str) -> str:
    return f"{tool}/{kind}/{namespace}/{name}"


def _health_since(row: AppRow, at: datetime) -> datetime:
    """When the current health began, as the tool says (Argo CD ≥ 2.14, Flux Ready), else now."""
    stamp = row.health_since
    return stamp if stamp is not None and stamp <= at else at


def _services_for_app(
    row: AppRow, workloads: list[WorkloadRow], index: dict[str, str], names: set[str]
) -> dict[str, list[str]]:
    """{service: [versions]} an app runs; with nothing running, the images it lists or its name."""
    running: dict[str, list[str]] = defaultdict(list)
    for workload in workloads:
        for container in workload.containers:
            service = index.get(f"{container.registry}/{container.repository}")
            if service and container.version and container.version not in running[service]:
                running[service].append(container.version)
    if running:
        return dict(running)
    from portal.catalog.images import parse_image

    for image in row.images:
        parsed = parse_image(image)
        if parsed and parsed.name in index:
            running.setdefault(index[parsed.name], [])
    if not running:
        # A Missing app runs nothing: fall back to a service named in the app's name
        # ("payments", "payments-prod", "prod-payments").
        for token in re.split(r"[-_.]", row.name):
            if token in names:
                running.setdefault(token, [])
        if row.name in names:
            running.setdefault(row.name, [])
    return dict(running)


def store_snapshot(cluster: Cluster, snapshot: Snapshot, at: datetime) -> StoreResult:
    result = StoreResult()
    services = list(Service.objects.all())
    index = service_image_index(services)
    service_ids = {s.name: s.id for s in services}
    listed = snapshot.listed_kinds

    with transaction.atomic():
        # -- AppProjects (sync windows) ------------------------------------------------
        projects_by_name: dict[str, ProjectRow] = {}
        if "AppProject" in listed:
            AppProject.objects.filter(cluster=cluster).delete()
            AppProject.objects.bulk_create(
                AppProject(
                    cluster=cluster, namespace=p.namespace, name=p.name, sync_windows=jsonable(p.sync_windows),
                    destinations=jsonable(p.destinations), source_repos=p.source_repos, raw=jsonable(p.raw),
                )
                for p in snapshot.projects
            )
            projects_by_name = {p.name: p for p in snapshot.projects}
            result.projects = len(snapshot.projects)
        windows_known = "AppProject" in listed
        if not windows_known:
            for project in AppProject.objects.filter(cluster=cluster):
                projects_by_name[project.name] = ProjectRow(
                    namespace=project.namespace, name=project.name, sync_windows=project.sync_windows
                )

        # -- Workloads --------------------------------------------------------------
        workloads_by_app: dict[tuple, list[WorkloadRow]] = defaultdict(list)
        for workload in snapshot.workloads:
            if workload.app_key:
                workloads_by_app[workload.app_key].append(workload)

        # -- Apps -------------------------------------------------------------------
        existing = {
            app_key(a.tool, a.kind, a.namespace, a.name): a
            for a in GitOpsApp.objects.filter(cluster=cluster).defer(*_APP_DEFERRED)
        }
        seen: set[str] = set()
        to_create: list[GitOpsApp] = []
        to_update: list[GitOpsApp] = []
        kept: list[GitOpsApp] = []  # existing apps seen again, changed or not
        services_changed: set[str] = set()
        changes: list[dict[str, Any]] = []  # StateChange rows
        app_services: dict[str, dict[str, list[str]]] = {}
        for row in snapshot.apps:
            if row.kind not in listed:
                continue
            key = app_key(*row.key)
            if key in seen:
                continue
            seen.add(key)
            running = _services_for_app(row, workloads_by_app.get(row.key, []), index, set(service_ids))
            app_services[key] = running
            values = _app_values(row, running)
            values["updated_at"] = at
            window = window_state(row, projects_by_name, at)
            if window is not None:
                values.update(window)
            values["fingerprint"] = fingerprint(values)
            app = existing.get(key)
            if app is None:
                app = GitOpsApp(cluster=cluster, tool=row.tool, kind=row.kind, namespace=row.namespace, name=row.name,
                                first_seen=at, **values)
                app.sync_since = at
                app.health_since = _health_since(row, at)
                app.revision_changed_at = at if row.synced_revision else None
                to_create.append(app)
                services_changed.add(key)
                changes.append(
                    {"cluster_id": cluster.id, "object_key": key, "field": "presence", "old": "", "new": "present",
                     "at": at}
                )
                continue
            for name, old, new in (
                ("sync", app.sync_status, row.sync_status),
                ("health", app.health_status, row.health_status),
                ("suspended", str(app.suspended), str(row.suspended)),
                ("revision", app.synced_revision, row.synced_revision),
            ):
                if old != new:
                    changes.append({"cluster_id": cluster.id, "app_id": app.id, "object_key": key, "field": name,
                                    "old": old[:300], "new": new[:300], "at": at})
            if app.sync_status != row.sync_status:
                app.sync_since = at
            if app.health_status != row.health_status:
                app.health_since = _health_since(row, at)
            if row.synced_revision and app.synced_revision != row.synced_revision:
                values["previous_synced_revision"] = app.synced_revision
                values["revision_changed_at"] = at
            kept.append(app)
            if set(app.running) != set(running):
                services_changed.add(key)
            # Most apps are as they were: writing them again is most of a poll's database time.
            if app.fingerprint == values["fingerprint"]:
                continue
            for name, value in values.items():
                setattr(app, name, value)
            to_update.append(app)

        gone = [a for k, a in existing.items() if k not in seen and a.kind in listed]
        for app in gone:
            key = app_key(app.tool, app.kind, app.namespace, app.name)
            changes.append({"cluster_id": cluster.id, "object_key": key, "field": "presence", "old": "present",
                            "new": "gone", "at": at})
        if gone:
            GitOpsApp.objects.filter(id__in=[a.id for a in gone]).delete()
        bulk_insert_rows(GitOpsApp, to_create)
        if to_update:
            bulk_update_rows(GitOpsApp, to_update, APP_FIELDS)
        result.created, result.updated, result.removed = len(to_create), len(to_update), len(gone)

        apps_now = {app_key(a.tool, a.kind, a.namespace, a.name): a for a in to_create + kept}
        # Rows created in bulk have ids on PostgreSQL and SQLite ≥ 3.35; fetch them when not.
        if any(a.id is None for a in to_create):
            apps_now = {
                app_key(a.tool, a.kind, a.namespace, a.name): a for a in GitOpsApp.objects.filter(cluster=cluster)
            }
        for change in changes:
            if change["new"] == "present" and change["field"] == "presence":
                new_app = apps_now.get(change["object_key"])
                change["app_id"] = new_app.id if new_app else None
        copy_rows(StateChange, changes)
        result.state_changes = len(changes)

        # Which services each app deploys (M2M), rewritten for new apps and those whose set changed.
        through = GitOpsApp.services.through
        through.objects.filter(gitopsapp_id__in=[apps_now[key].id for key in services_changed]).delete()
        copy_rows(
            through,
            [
                {"gitopsapp_id": apps_now[key].id, "service_id": service_ids[service]}
                for key in services_changed
                for service in app_services[key]
                if service in service_ids
            ],
        )

        # -- Workloads and running versions ---------------------------------------------
        if any(kind in listed for kind in {w.kind for w in snapshot.workloads} | _WORKLOAD_KINDS):
            result.version_changes = _store_workloads(cluster, snapshot, listed, apps_now, index, service_ids, at)
        result.apps = len(seen)
        result.workloads = len(snapshot.workloads)
        cluster_stored.send(sender=Cluster, cluster=cluster)
    return result


_WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Rollout"}


def _store_workloads(
    cluster: Cluster,
    snapshot: Snapshot,
    listed: set[str],
    apps_now: dict[str, GitOpsApp],
    index: dict[str, str],
    service_ids: dict[str, int],
    at: datetime,
) -> int:
    listed_workload_kinds = listed & _WORKLOAD_KINDS
    existing = {
        (w.kind, w.namespace, w.name): w
        for w in Workload.objects.filter(cluster=cluster, kind__in=listed_workload_kinds)
    }
    # What runs now, as stored: compared below, so that only differences are written.
    stored_running = list(
        RunningVersion.objects.filter(cluster=cluster, workload__kind__in=listed_workload_kinds).values_list(
            "id", "service_id", "workload_id", "container", "version", "app_id", "image",
            "workload__kind", "workload__namespace", "workload__name",
        )
    )
    before: dict[tuple, set[str]] = defaultdict(set)  # (service id, workload key) -> versions
    for _, service_id, _, _, version, _, _, kind, namespace, name in stored_running:
        before[(service_id, (kind, namespace, name))].add(version)

    to_create, to_update, kept, seen = [], [], [], set()
    for row in snapshot.workloads:
        if row.kind not in listed_workload_kinds:
            continue
        key = (row.kind, row.namespace, row.name)
        if key in seen:
            continue
        seen.add(key)
        app = apps_now.get(app_key(*row.app_key)) if row.app_key else None
        values = {
            "app": app,
            "uid": row.uid,
            "containers": [_plain(c) for c in row.containers],
            "replicas_desired": row.replicas_desired,
            "replicas_ready": row.replicas_ready,
            "replicas_updated": row.replicas_updated,
            "replicas_available": row.replicas_available,
            "health_status": row.health_status,
            "health_message": row.health_message[:2000],
            "updated_at": at,
        }
        workload = existing.get(key)
        if workload is None:
            to_create.append(Workload(cluster=cluster, kind=row.kind, namespace=row.namespace, name=row.name, **values))
            continue
        kept.append(workload)
        unchanged = workload.app_id == (app.id if app else None) and not any(
            getattr(workload, name) != value for name, value in values.items() if name not in ("app", "updated_at")
        )
        if unchanged:
            continue
        for name, value in values.items():
            setattr(workload, name, value)
        to_update.append(workload)
    gone = [w.id for k, w in existing.items() if k not in seen]
    if gone:
        Workload.objects.filter(id__in=gone).delete()
    bulk_insert_rows(Workload, to_create)
    if to_update:
        bulk_update_rows(Workload, to_update, WORKLOAD_FIELDS)
    saved = to_create + kept
    if any(w.id is None for w in to_create):
        saved = list(Workload.objects.filter(cluster=cluster, kind__in=listed_workload_kinds))

    wanted: dict[tuple, dict[str, Any]] = {}  # RunningVersion rows
    after: dict[tuple, set[str]] = defaultdict(set)
    for workload in saved:
        for container in workload.containers:
            service = index.get(f"{container['registry']}/{container['repository']}")
            version = (container["tag"] or container["digest"])[:200]
            if not service or not version:
                continue
            service_id = service_ids[service]
            image = container["image"][:500]
            wanted[(service_id, workload.id, container["container"], version, workload.app_id, image)] = {
                "cluster_id": cluster.id, "workload_id": workload.id, "app_id": workload.app_id,
                "service_id": service_id, "container": container["container"], "image": image, "version": version,
            }
            after[(service_id, (workload.kind, workload.namespace, workload.name))].add(version)
    have = {(sid, wid, c, v, aid, img): rid for rid, sid, wid, c, v, aid, img, *_ in stored_running}
    stale = [rid for key, rid in have.items() if key not in wanted]
    if stale:
        RunningVersion.objects.filter(id__in=stale).delete()
    copy_rows(RunningVersion, [rv for key, rv in wanted.items() if key not in have])

    apps_by_workload = {(w.kind, w.namespace, w.name): w.app_id for w in saved}
    version_changes = []
    for (service_id, workload_key), new_versions in after.items():
        old_versions = before.get((service_id, workload_key))
        if not old_versions or old_versions == new_versions:
            continue  # first sight is not a change
        version_changes.append(
            VersionChange(service_id=service_id, environment_id=cluster.environment_id, cluster=cluster,
                          app_id=apps_by_workload.get(workload_key), from_version=", ".join(sorted(old_versions)),
                          to_version=", ".join(sorted(new_versions)), at=at)
        )
    VersionChange.objects.bulk_create(version_changes)
    return len(version_changes)


def _app_values(row: AppRow, running: dict[str, list[str]]) -> dict[str, Any]:
    primary = row.sources[0] if row.sources else None
    return {
        "uid": row.uid,
        "project": row.project,
        "repo_url": (primary.repo_url if primary else "")[:500],
        "path": (primary.path if primary else "")[:500],
        "chart": (primary.chart if primary else "")[:253],
        "target_revision": (primary.target_revision if primary else "")[:253],
        "sources": [_plain(s) for s in row.sources],
        "destination_server": row.destination_server[:500],
        "destination_name": row.destination_name[:253],
        "destination_namespace": row.destination_namespace[:253],
        "sync_status": row.sync_status,
        "synced_revision": row.synced_revision[:300],
        "synced_revisions": row.synced_revisions,
        "source_revision": row.source_revision[:300],
        "health_status": row.health_status,
        "health_message": row.health_message[:4000],
        "ready_reason": row.ready_reason[:100],
        "suspended": row.suspended,
        "automated": row.automated,
        "manual_sync": row.manual_sync,
        "operation_phase": row.operation_phase[:32],
        "operation_message": row.operation_message[:4000],
        "operation_started_at": row.operation_started_at,
        "operation_finished_at": row.operation_finished_at,
        "reconciled_at": row.reconciled_at,
        "history": row.history[-10:],
        "images": row.images,
        "conditions": row.conditions,
        "interval": row.interval[:32],
        "warnings": row.warnings,
        "problem_rank": problem_rank(row.sync_status, row.health_status, row.suspended),
        "running": running,
        "raw": row.raw,
    }
