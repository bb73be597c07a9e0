"""An app's stored values from its row: the cluster it deploys to, services it runs,
sync-window verdict, problem rank, fingerprint, and the state changes since the previous
poll. Pure: rows and the stored state in, unsaved model instances and row dicts out.

An app placed on a cluster the portal does not read runs what Argo CD reports
(`status.summary.images`): those versions become RunningVersion rows without a workload,
so the matrix and the service pages show them like any other.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from gitops.derive.destinations import Placement, Placer, VersionSets, image_version_changes
from gitops.derive.topology import Unregistered
from gitops.derive.unchanged import without_stamps
from gitops.models import PROBLEM_RANK, RANK_OK, AppProject, GitOpsApp, VersionChange, problem_rank
from gitops.rawobjects import json_safe
from gitops.rows import ARGO, HISTORY_KEPT, AppRow, Snapshot, WorkloadRow, app_key
from gitops.store.column_limits import fitted
from gitops.store.read import ClusterState
from gitops.windowstate import ProjectWindows, window_state
from portal.kernel.catalog.images import parse_image

# Every GitOpsApp column a poll writes for an app it has seen before.
APP_FIELDS = [
    "uid", "project", "repo_url", "path", "chart", "target_revision", "sources", "destination_server",
    "destination_name", "destination_namespace", "sync_status", "sync_since", "sync_since_exact", "synced_revision",
    "synced_revisions", "previous_synced_revision", "revision_changed_at", "source_revision", "health_status",
    "health_since", "health_since_exact", "health_message", "ready_reason", "suspended", "automated", "manual_sync",
    "operation_phase",
    "operation_message", "operation_started_at", "operation_finished_at", "reconciled_at", "history", "images",
    "conditions", "interval", "warnings", "sync_blocked", "sync_blocked_until", "sync_window", "window_next_edge",
    "problem_rank", "running", "raw", "fingerprint", "updated_at", "cluster", "argocd_instance",
    "rule_health", "health_disagreement", "health_disagreement_since", "health_unchecked", "health_rules",
    "flux_alerts",
]


@dataclass
class AppChanges:
    """What a poll changes in a cluster's apps and the rows that hang off them.

    Rows that point at an app carry the GitOpsApp itself under "app": a new app has its
    id only once the store has inserted it.
    """

    projects: list[AppProject] | None = None  # the cluster's AppProjects now; None: leave them
    created: list[GitOpsApp] = field(default_factory=list)
    updated: list[GitOpsApp] = field(default_factory=list)  # seen again and changed
    kept: list[GitOpsApp] = field(default_factory=list)  # seen again, changed or not
    gone: list[GitOpsApp] = field(default_factory=list)
    state_changes: list[dict[str, Any]] = field(default_factory=list)
    relinked: list[GitOpsApp] = field(default_factory=list)  # apps whose service links are rewritten
    links: list[tuple[GitOpsApp, int]] = field(default_factory=list)  # (app, service id)
    seen: int = 0
    # Apps whose destination matched no catalog cluster, with the discovered cluster to file them under.
    unregistered: list[tuple[GitOpsApp, Unregistered]] = field(default_factory=list)
    # Versions as Argo CD reports them (RunningVersion rows without a workload), and stale ones' ids.
    image_versions_added: list[dict[str, Any]] = field(default_factory=list)
    image_versions_stale: list[int] = field(default_factory=list)
    # Clusters other than the polled one whose running versions this poll changed.
    destinations_touched: set[int] = field(default_factory=set)
    # VersionChange rows for versions as Argo CD reports them (gitops.derive.destinations).
    version_changes: list[dict[str, Any]] = field(default_factory=list)

    def now(self) -> dict[str, GitOpsApp]:
        """The cluster's apps after the poll, by app key."""
        return {app_key(a.tool, a.kind, a.namespace, a.name): a for a in self.created + self.kept}


def fingerprint(values: dict[str, Any]) -> str:
    """A digest of everything meaningful a poll writes for an app, to tell an unchanged app cheaply.

    Meaningful is all of it but the stamps of a reconciliation that changed nothing: Argo CD
    rewrites `status.reconciledAt` (and so `metadata.resourceVersion`) on every app about every
    3 minutes, and writing those rows again was most of a steady poll's database time. So the raw
    object is digested without those two, and the `reconciled_at` column is left out: it is
    as of the last poll that found the app changed in any other way. Everything derived from
    the object is digested as well, so a portal upgrade that reads objects differently rewrites
    the rows once. Keys are not sorted: the server writes fields in the same order every time,
    and a digest that differs by order alone costs one needless write, nothing more.
    """
    digested = {k: v for k, v in values.items() if k not in _NOT_DIGESTED}
    digested["raw"] = without_stamps(values.get("raw"))
    text = json.dumps(digested, cls=DjangoJSONEncoder, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


_NOT_DIGESTED = frozenset({"updated_at", "reconciled_at", "raw"})


def plain(obj: Any) -> dict[str, Any]:
    """A flat dataclass as a dict; dataclasses.asdict deep-copies, which a poll pays per row."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def derive_apps(state: ClusterState, snapshot: Snapshot, at: datetime) -> AppChanges:
    """Apps to create, rewrite and remove, with their state changes and service links."""
    out = AppChanges()
    listed = state.listed_kinds
    projects = state.projects
    if projects is None:  # this poll listed the AppProjects: they replace the stored ones
        out.projects = [
            AppProject(cluster=state.cluster, namespace=p.namespace, name=p.name,
                       sync_windows=json_safe(p.sync_windows), destinations=json_safe(p.destinations),
                       source_repos=p.source_repos, raw=json_safe(p.raw))
            for p in snapshot.projects
        ]
        projects = {p.name: p for p in snapshot.projects}
    windows = ProjectWindows(projects)
    workloads_by_app: dict[tuple, list[WorkloadRow]] = defaultdict(list)
    for workload in snapshot.workloads:
        if workload.app_key:
            workloads_by_app[workload.app_key].append(workload)
    names = set(state.service_ids)
    seen: set[str] = set()
    placer = Placer(state, snapshot)
    wanted_images: dict[tuple, dict[str, Any]] = {}
    for row in snapshot.apps:
        key = app_key(*row.key)
        if row.kind not in listed or key in seen:
            continue
        placement = placer.place(row)
        if placement.duplicate:
            continue  # the agent's own poll reports this app (gitops.derive.destinations)
        seen.add(key)
        if not placement.has_environment:
            running: dict[str, list[str]] = {}  # a discovered cluster runs no service until it is added
        elif placement.cluster is not None and placement.cluster.pk != state.cluster.pk:
            running = _services_from_images(row, state.service_index)
        else:
            running = _services_for_app(row, workloads_by_app.get(row.key, []), state.service_index, names)
        app = state.apps.get(key)
        values = _app_values(row, running, windows, at)
        values.update(_since_values(app, row, at))
        values["cluster_id"] = placement.cluster.pk if placement.cluster is not None else None
        values["argocd_instance_id"] = state.instance.pk if state.instance is not None and row.tool == ARGO else None
        values["fingerprint"] = fingerprint(values)
        if app is None:
            app = _new_app(state, row, values, at)
            out.created.append(app)
            out.state_changes.append(_state_change(state, app, key, "presence", "", "present", at))
            relink = True
        else:
            relink = set(app.running) != set(running)  # compared before the new values are set
            _follow(out, state, app, row, values, at)
        if relink:
            out.relinked.append(app)
            out.links.extend((app, state.service_ids[s]) for s in running if s in state.service_ids)
        if placement.new is not None:
            out.unregistered.append((app, placement.new))
        if placement.by_argocd and placement.has_environment:
            _want_images(wanted_images, app, placement, row, state)
    out.gone = [a for k, a in state.apps.items() if k not in seen and a.kind in listed]
    for app in out.gone:
        key = app_key(app.tool, app.kind, app.namespace, app.name)
        out.state_changes.append(_state_change(state, None, key, "presence", "present", "gone", at))
    out.seen = len(seen)
    if "Application" in listed:
        _compare_images(out, state, wanted_images, at)
    return out


def _want_images(wanted: dict[tuple, dict[str, Any]], app: GitOpsApp, placement: Placement, row: AppRow,
                 state: ClusterState) -> None:
    """The RunningVersion rows (no workload) for what Argo CD reports the app running."""
    assert placement.cluster is not None
    for image in row.images:
        parsed = parse_image(image)
        service = state.service_index.get(parsed.name) if parsed else None
        if parsed is None or service is None or not parsed.version:
            continue
        service_id = state.service_ids[service]
        identity = (id(app) if app.pk is None else app.pk, placement.cluster.pk, service_id, image[:500],
                    parsed.version[:200])
        wanted[identity] = {"cluster_id": placement.cluster.pk, "workload": None, "app": app,
                            "service_id": service_id, "container": "", "image": image[:500],
                            "version": parsed.version[:200]}


def _compare_images(out: AppChanges, state: ClusterState, wanted: dict[tuple, dict[str, Any]], at: datetime
                    ) -> None:
    have = {(v.app_id, v.cluster_id, v.service_id, v.image, v.version): v for v in state.image_versions}
    out.image_versions_added = [row for key, row in wanted.items() if key not in have]
    stale = [v for key, v in have.items() if key not in wanted]
    out.image_versions_stale = [v.id for v in stale]
    out.destinations_touched = {row["cluster_id"] for row in out.image_versions_added} | {
        v.cluster_id for v in stale}
    out.destinations_touched.discard(state.cluster.pk)
    before: VersionSets = defaultdict(set)
    for v in state.image_versions:
        before[(v.app_id, v.cluster_id, v.service_id)].add(v.version)
    after: VersionSets = defaultdict(set)
    apps: dict[int, GitOpsApp] = {}
    for row in wanted.values():
        app = row["app"]
        if app.pk is not None:  # a new app has no versions before
            apps[app.pk] = app
            after[(app.pk, row["cluster_id"], row["service_id"])].add(row["version"])
    changes = image_version_changes(before, after)
    environments = state.catalog.environments({cluster_id for (_, cluster_id, _), _, _ in changes}) if changes else {}
    for (app_id, cluster_id, service_id), from_version, to_version in changes:
        out.version_changes.append(fitted(VersionChange, {
            "service_id": service_id, "environment_id": environments.get(cluster_id), "cluster_id": cluster_id,
            "app": apps[app_id], "from_version": from_version, "to_version": to_version, "at": at,
        }))


def _follow(out: AppChanges, state: ClusterState, app: GitOpsApp, row: AppRow, values: dict[str, Any],
            at: datetime) -> None:
    """An app seen again: its state changes, its "since when" stamps, and its new values if any changed."""
    key = app_key(*row.key)
    for name, old, new in (
        ("sync", app.sync_status, row.sync_status),
        ("health", app.health_status, row.health_status),
        ("suspended", str(app.suspended), str(row.suspended)),
        ("revision", app.synced_revision, row.synced_revision),
        # The tool and what a custom resource reports disagree: an alert of its own (notifications).
        ("disagreement", app.health_disagreement, row.health_disagreement),
    ):
        if old != new:
            out.state_changes.append(_state_change(state, app, key, name, old, new, at))
    if app.health_disagreement != row.health_disagreement:
        app.health_disagreement_since = at if row.health_disagreement else None
    values["health_disagreement_since"] = app.health_disagreement_since
    if row.synced_revision and app.synced_revision != row.synced_revision:
        values["previous_synced_revision"] = app.synced_revision
        values["revision_changed_at"] = at
    out.kept.append(app)
    # Most apps are as they were: writing them again is most of a poll's database time.
    if app.fingerprint == values["fingerprint"]:
        return
    for name, value in values.items():
        setattr(app, name, value)
    out.updated.append(app)


def _state_change(state: ClusterState, app: GitOpsApp | None, key: str, field_name: str, old: str, new: str,
                  at: datetime) -> dict[str, Any]:
    """A StateChange row: the "since when" of the pages and the episode unit of notifications."""
    return {"cluster_id": state.cluster.id, "app": app, "object_key": key, "field": field_name,
            "old": old[:300], "new": new[:300], "at": at}


def _new_app(state: ClusterState, row: AppRow, values: dict[str, Any], at: datetime) -> GitOpsApp:
    app = GitOpsApp(read_from=state.cluster, tool=row.tool, kind=row.kind, namespace=row.namespace, name=row.name,
                    first_seen=at, **values)
    app.health_disagreement_since = at if row.health_disagreement else None
    app.revision_changed_at = at if row.synced_revision else None
    return app


def _since_values(app: GitOpsApp | None, row: AppRow, at: datetime) -> dict[str, Any]:
    """The app's sync and health "since when" columns after this poll (see `since_when`)."""
    sync_since, sync_exact = since_when(
        None if app is None else (app.sync_status, app.sync_since, app.sync_since_exact),
        row.sync_status, row.sync_since, at)
    health_since, health_exact = since_when(
        None if app is None else (app.health_status, app.health_since, app.health_since_exact),
        row.health_status, row.health_since, at)
    return {"sync_since": sync_since, "sync_since_exact": sync_exact,
            "health_since": health_since, "health_since_exact": health_exact}


def since_when(before: tuple[str, datetime | None, bool] | None, status: str, tool_since: datetime | None,
               at: datetime) -> tuple[datetime, bool]:
    """Since when a status has held, and whether that time is exact, as of a poll at `at`.

    `before` is what the previous poll stored (status, since, exact), None for an app seen for the
    first time; `tool_since` the tool's own time for the status now (None when it records none, and
    ignored when it lies ahead of the poll: a skewed clock dates nothing).

    - First sight: the tool's time, exact; without one the poll's time, "at least since".
    - A status the portal watched change: the tool's time when it falls after the previous status
      began (an older one dates an earlier spell of the same status, e.g. a sync before a drift),
      else the poll's time; exact either way, give or take a poll interval.
    - A status that held: the older of the stored time and the tool's. Both are true lower
      bounds; a tool time younger than the stored one dates a flap between two polls, or
      Argo CD before 3.1 rewriting health.lastTransitionTime without a change.
    """
    tool = tool_since if tool_since is not None and tool_since <= at else None
    if before is None:
        return (tool, True) if tool is not None else (at, False)
    old_status, old_since, old_exact = before
    if old_status != status:
        if tool is not None and (old_since is None or tool > old_since):
            return tool, True
        return at, True
    if old_since is None:
        return (tool, True) if tool is not None else (at, False)
    if tool is not None and tool < old_since:
        return tool, True
    return old_since, old_exact


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


def _services_from_images(row: AppRow, index: dict[str, str]) -> dict[str, list[str]]:
    """{service: [versions]} as Argo CD reports them (summary.images: tags or digests as written)."""
    running: dict[str, list[str]] = defaultdict(list)
    for image in row.images:
        parsed = parse_image(image)
        service = index.get(parsed.name) if parsed else None
        if parsed is not None and service is not None and parsed.version and parsed.version not in running[service]:
            running[service].append(parsed.version)
    return dict(running)


def _app_values(row: AppRow, running: dict[str, list[str]], windows: ProjectWindows,
                at: datetime) -> dict[str, Any]:
    """Every column a poll writes for the app from its row, its sync-window verdict included
    (the caller adds where it belongs and the fingerprint)."""
    primary = row.sources[0] if row.sources else None
    values = {
        "uid": row.uid,
        "project": row.project,
        "repo_url": primary.repo_url if primary else "",
        "path": primary.path if primary else "",
        "chart": primary.chart if primary else "",
        "target_revision": primary.target_revision if primary else "",
        "sources": [plain(s) for s in row.sources],
        "destination_server": row.destination_server,
        "destination_name": row.destination_name,
        "destination_namespace": row.destination_namespace,
        "sync_status": row.sync_status,
        "synced_revision": row.synced_revision,
        "synced_revisions": row.synced_revisions,
        "source_revision": row.source_revision,
        "health_status": row.health_status,
        "health_message": row.health_message[:4000],
        "ready_reason": row.ready_reason,
        "suspended": row.suspended,
        "automated": row.automated,
        "manual_sync": row.manual_sync,
        "operation_phase": row.operation_phase,
        "operation_message": row.operation_message[:4000],
        "operation_started_at": row.operation_started_at,
        "operation_finished_at": row.operation_finished_at,
        "reconciled_at": row.reconciled_at,
        "history": row.history[-HISTORY_KEPT:],
        "images": row.images,
        "conditions": row.conditions,
        "interval": row.interval,
        "warnings": row.warnings,
        # A health disagreement ranks with Degraded: the tool's word overstates the app.
        "problem_rank": min(problem_rank(row.sync_status, row.health_status, row.suspended),
                            PROBLEM_RANK["Degraded"] if row.health_disagreement else RANK_OK),
        "running": running,
        "raw": row.raw,
        "rule_health": row.rule_health,
        "health_disagreement": row.health_disagreement,
        "health_unchecked": row.health_unchecked,
        "health_rules": row.health_rules,
        "flux_alerts": row.flux_alerts,
        "updated_at": at,
    }
    window = window_state(row, windows, at)
    if window is not None:
        values.update(window)
    return fitted(GitOpsApp, values)
