"""A poll's workloads against the stored ones: which rows to write, which running versions
appeared or went, and which services' versions were replaced (VersionChange). Pure.

Rows that point at a workload or an app carry the model instance under "workload" /
"app": new ones have their ids only once the store has inserted them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitops.collectors.mapping import resource_keys
from gitops.derive.app_changes import plain
from gitops.models import GitOpsApp, RunningVersion, VersionChange, Workload
from gitops.rows import Snapshot, WorkloadRow, app_key
from gitops.store.column_limits import fitted
from gitops.store.read import ClusterState, StoredWorkload, WorkloadKey

# Every Workload column a poll writes for a workload it has seen before.
WORKLOAD_FIELDS = [
    "app", "uid", "containers", "replicas_desired", "replicas_ready", "replicas_updated", "replicas_available",
    "health_status", "health_message", "spec_facts", "updated_at", "git_repo", "git_path", "git_branch",
]

# One RunningVersion as compared across polls: (service id, workload, container, version, app key, image).
_VersionKey = tuple[int, WorkloadKey, str, str, str | None, str]


@dataclass
class WorkloadChanges:
    created: list[tuple[Workload, GitOpsApp | None]] = field(default_factory=list)
    updated: list[tuple[Workload, GitOpsApp | None]] = field(default_factory=list)
    gone: list[int] = field(default_factory=list)  # Workload ids
    running_added: list[dict[str, Any]] = field(default_factory=list)  # RunningVersion rows
    running_stale: list[int] = field(default_factory=list)  # RunningVersion ids
    version_changes: list[dict[str, Any]] = field(default_factory=list)  # VersionChange rows


def derive_workloads(state: ClusterState, snapshot: Snapshot, apps_now: dict[str, GitOpsApp],
                     gone_app_ids: set[int], at: datetime) -> WorkloadChanges:
    """`apps_now`: the cluster's apps after the poll; `gone_app_ids`: apps it removes, whose
    references the database clears (SET_NULL) when they are deleted.

    A workload no app read here claims belongs to an app another cluster's poll placed
    here (a hub's Application listing it in status.resources): its replicas and exact
    versions refine what that Argo CD reports."""
    out = WorkloadChanges()
    stored_app_keys = {a.id: key for key, a in state.apps.items() if a.id not in gone_app_ids}
    stored_app_keys.update({a.id: _identity(state, a) for a in state.foreign_resources.values()})
    seen: dict[WorkloadKey, tuple[WorkloadRow, GitOpsApp | None]] = {}
    for row in snapshot.workloads:
        if row.kind not in state.workload_kinds or row.key in seen:
            continue
        app = apps_now.get(app_key(*row.app_key)) if row.app_key else None
        if app is None and state.foreign_resources:
            app = next((state.foreign_resources[k] for k in resource_keys(row) if k in state.foreign_resources), None)
        seen[row.key] = (row, app)
        _compare(out, state, row, app, stored_app_keys, at)
    out.gone = [w.id for key, w in state.workloads.items() if key not in seen]
    _running_versions(out, state, seen, stored_app_keys, at)
    return out


def _identity(state: ClusterState, app: GitOpsApp) -> str:
    """An app's key among this poll's: apps read from elsewhere are qualified by that cluster."""
    key = app_key(app.tool, app.kind, app.namespace, app.name)
    return key if app.read_from_id in (None, state.cluster.pk) else f"{app.read_from_id}:{key}"


def _compare(out: WorkloadChanges, state: ClusterState, row: WorkloadRow, app: GitOpsApp | None,
             stored_app_keys: dict[int, str], at: datetime) -> None:
    values = {
        "uid": row.uid,
        "containers": [plain(c) for c in row.containers],
        "replicas_desired": row.replicas_desired,
        "replicas_ready": row.replicas_ready,
        "replicas_updated": row.replicas_updated,
        "replicas_available": row.replicas_available,
        "health_status": row.health_status,
        "health_message": row.health_message[:2000],
        "spec_facts": row.spec_facts,
        "updated_at": at,
        "git_repo": row.git_repo,
        "git_path": row.git_path,
        "git_branch": row.git_branch,
    }
    fitted(Workload, values)
    workload = state.workloads.get(row.key)
    if workload is None:
        out.created.append(
            (Workload(cluster=state.cluster, kind=row.kind, namespace=row.namespace, name=row.name, **values), app)
        )
        return
    stored_app = stored_app_keys.get(workload.app_id) if workload.app_id is not None else None
    same_app = stored_app == (_identity(state, app) if app else None)
    if same_app and not any(getattr(workload, name) != value for name, value in values.items()
                            if name != "updated_at"):
        return
    out.updated.append((Workload(id=workload.id, cluster=state.cluster, kind=row.kind, namespace=row.namespace,
                                 name=row.name, **values), app))


def _running_versions(out: WorkloadChanges, state: ClusterState,
                      seen: dict[WorkloadKey, tuple[WorkloadRow, GitOpsApp | None]],
                      stored_app_keys: dict[int, str], at: datetime) -> None:
    """RunningVersion rows to add and remove, and a VersionChange per replaced version set."""
    before: dict[tuple[int, WorkloadKey], set[str]] = defaultdict(set)
    have: dict[_VersionKey, int] = {}
    for stored in state.running:
        before[(stored.service_id, stored.workload)].add(stored.version)
        app = stored_app_keys.get(stored.app_id) if stored.app_id is not None else None
        have[(stored.service_id, stored.workload, stored.container, stored.version, app, stored.image)] = stored.id
    instances: dict[WorkloadKey, Workload | StoredWorkload] = {
        (w.kind, w.namespace, w.name): w for w, _ in out.created + out.updated}
    wanted: dict[_VersionKey, dict[str, Any]] = {}
    after: dict[tuple[int, WorkloadKey], set[str]] = defaultdict(set)
    for key, (row, app) in seen.items():
        workload = instances.get(key) or state.workloads[key]
        app_name = _identity(state, app) if app else None
        for container in row.containers:
            service = state.service_index.get(f"{container.registry}/{container.repository}")
            version = container.tag or container.digest
            if not service or not version:
                continue
            service_id = state.service_ids[service]
            fields = fitted(RunningVersion, {"container": container.container, "image": container.image,
                                             "version": version})
            version, image = fields["version"], fields["image"]
            wanted[(service_id, key, fields["container"], version, app_name, image)] = {
                "cluster_id": state.cluster.id, "workload": workload, "app": app, "service_id": service_id, **fields,
            }
            after[(service_id, key)].add(version)
    out.running_stale = [rid for key, rid in have.items() if key not in wanted]
    out.running_added = [rv for key, rv in wanted.items() if key not in have]
    for (service_id, workload_key), new_versions in after.items():
        old_versions = before.get((service_id, workload_key))
        if not old_versions or old_versions == new_versions:
            continue  # first sight is not a change
        out.version_changes.append(fitted(VersionChange, {
            "service_id": service_id, "environment_id": state.cluster.environment_id,
            "cluster_id": state.cluster.id, "app": seen[workload_key][1],
            "from_version": ", ".join(sorted(old_versions)), "to_version": ", ".join(sorted(new_versions)), "at": at,
        }))
