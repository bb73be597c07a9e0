"""Argo CD Applications and AppProjects as rows.

Field meanings follow Argo CD's `v1alpha1` types: an Application in any namespace,
with one `spec.source`, several `spec.sources`, or a source hydrator. Objects returned by
the Argo CD API server carry no apiVersion/kind, so nothing here reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gitops.rawobjects import (
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    conditions,
    dig,
    json_safe,
    metadata,
    str_list,
    trimmed,
)
from gitops.rows import (
    ARGO,
    HEALTH_ORDER,
    HISTORY_KEPT,
    OUT_OF_SYNC,
    SYNCED,
    UNKNOWN,
    AppRow,
    ProjectRow,
    ResourceKey,
    SourceSpec,
)
from portal.kernel.timestamps import parse_time, rfc3339

SYNC_STATUSES = (SYNCED, OUT_OF_SYNC, UNKNOWN)


def application_row(obj: Mapping[str, Any]) -> AppRow:
    namespace, name, uid = metadata(obj)
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    row = AppRow(tool=ARGO, kind="Application", namespace=namespace, name=name, uid=uid)
    # Argo CD reads an empty project as "default" (Application.Spec.GetProject).
    row.project = as_str(spec.get("project")) or "default"
    row.sources = _sources(spec)
    if not row.sources:
        row.warnings.append("no source in spec")

    destination = as_dict(spec.get("destination"))
    row.destination_server = as_str(destination.get("server"))
    row.destination_name = as_str(destination.get("name"))
    row.destination_namespace = as_str(destination.get("namespace"))

    sync = as_dict(status.get("sync"))
    sync_status = as_str(sync.get("status"))
    row.sync_status = sync_status if sync_status in SYNC_STATUSES else UNKNOWN
    row.synced_revisions = _revisions(sync)
    row.synced_revision = row.synced_revisions[0] if row.synced_revisions else ""

    health = as_dict(status.get("health"))
    health_status = as_str(health.get("status"))
    row.health_status = health_status if health_status in HEALTH_ORDER else UNKNOWN
    row.health_message = as_str(health.get("message"))

    _read_operation(row, as_dict(status.get("operationState")))
    row.automated = automated_sync(spec)
    row.manual_sync = not row.automated
    row.reconciled_at = parse_time(status.get("reconciledAt"))
    row.history = _history(as_list(status.get("history"))[-HISTORY_KEPT:])
    row.sync_since = synced_since(row)
    row.images = str_list(dig(status, "summary", "images"))
    row.resources = _resources(as_list(status.get("resources")))
    row.conditions = conditions(obj)
    row.health_since = parse_time(health.get("lastTransitionTime")) or _comparison_error_since(row)
    row.generation = as_int(dig(obj, "metadata", "generation"))
    if not status:
        row.warnings.append("no status yet: the controller has not reconciled this app")
    row.raw = trimmed(obj)
    return row


def synced_since(row: AppRow) -> datetime | None:
    """When a Synced app was last made Synced, as Argo CD records it; None otherwise.

    Argo CD keeps no time for the sync status itself, but every successful sync of the whole app
    leaves `operationState.finishedAt` and a `status.history` entry whose `deployedAt` is when it
    finished; the newest of those is when the app was last synced. It has been Synced since: a
    commit that changes what the app renders makes it OutOfSync until the next sync records
    itself, and one that does not (most commits to a monorepo) only moves `sync.revision` on,
    which is why the newest sync rather than one at the revision now reported dates it.
    OutOfSync is recorded nowhere (the controller only compares), so it gets None, and the
    portal's own sight dates it.
    """
    if row.sync_status != SYNCED:
        return None
    times = [parse_time(entry["deployed_at"]) for entry in row.history]
    if row.operation_phase == "Succeeded":
        times.append(row.operation_finished_at)
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _comparison_error_since(row: AppRow) -> datetime | None:
    """Argo CD before 2.14 writes no health time; an app whose health is Unknown because its
    manifests cannot be rendered or compared has been so since its ComparisonError condition
    appeared (conditions keep the time they were first set)."""
    if row.health_status != UNKNOWN:
        return None
    failing = next((c for c in row.conditions if c["type"] == "ComparisonError"), None)
    return parse_time(failing["last_transition_time"]) if failing else None


def automated_sync(spec: Mapping[str, Any]) -> bool:
    """Auto-sync is on iff `syncPolicy.automated` is present and `enabled` is not false.

    An operation initiated by the controller (`initiatedBy.automated`) does not count:
    it may predate a policy change, so only the spec says how the app deploys now.
    """
    automated = dig(spec, "syncPolicy", "automated")
    if not isinstance(automated, Mapping):
        return False
    enabled = automated.get("enabled")
    return enabled is None or as_bool(enabled)


def project_row(obj: Mapping[str, Any]) -> ProjectRow:
    namespace, name, _uid = metadata(obj)
    spec = as_dict(obj.get("spec"))
    return ProjectRow(
        namespace=namespace,
        name=name,
        sync_windows=[json_safe(w) for w in as_list(spec.get("syncWindows")) if isinstance(w, Mapping)],
        destinations=[json_safe(d) for d in as_list(spec.get("destinations")) if isinstance(d, Mapping)],
        source_repos=str_list(spec.get("sourceRepos")),
        source_namespaces=str_list(spec.get("sourceNamespaces")),
        raw=trimmed(obj),
    )


def _sources(spec: Mapping[str, Any]) -> list[SourceSpec]:
    # Same precedence as Argo CD's GetSource/HasMultipleSources: the hydrator's sync
    # source, then `sources` when non-empty, then `source`.
    hydrator = as_dict(spec.get("sourceHydrator"))
    if hydrator:
        dry = as_dict(hydrator.get("drySource"))
        sync_source = as_dict(hydrator.get("syncSource"))
        return [
            SourceSpec(
                repo_url=as_str(sync_source.get("repoURL")) or as_str(dry.get("repoURL")),
                path=as_str(sync_source.get("path")),
                target_revision=as_str(sync_source.get("targetBranch")),
            )
        ]
    many = [s for s in as_list(spec.get("sources")) if isinstance(s, Mapping)]
    if many:
        return [_source(s) for s in many]
    single = spec.get("source")
    if isinstance(single, Mapping) and single:
        return [_source(single)]
    return []


def _source(src: Mapping[str, Any]) -> SourceSpec:
    return SourceSpec(
        repo_url=as_str(src.get("repoURL")),
        path=as_str(src.get("path")),
        chart=as_str(src.get("chart")),
        target_revision=as_str(src.get("targetRevision")),
        ref=as_str(src.get("ref")),
    )


def _revisions(holder: Mapping[str, Any]) -> list[str]:
    """`revisions` when non-empty (multi-source), else `[revision]` (status.GetRevisions)."""
    many = [as_str(r) for r in as_list(holder.get("revisions"))]
    if any(many):
        return many
    single = as_str(holder.get("revision"))
    return [single] if single else []


def _read_operation(row: AppRow, state: Mapping[str, Any]) -> None:
    if not state:
        return
    row.operation_phase = as_str(state.get("phase"))
    row.operation_message = as_str(state.get("message"))
    row.operation_started_at = parse_time(state.get("startedAt"))
    row.operation_finished_at = parse_time(state.get("finishedAt"))
    # The result says what was synced; a running operation has none yet, so fall back
    # to what the operation asked for.
    revisions = _revisions(as_dict(state.get("syncResult"))) or _revisions(as_dict(dig(state, "operation", "sync")))
    row.operation_revisions = revisions
    row.operation_revision = revisions[0] if revisions else ""
    row.operation_initiated_by = _initiated_by(dig(state, "operation", "initiatedBy"))


def _initiated_by(value: Any) -> str:
    initiated = as_dict(value)
    if as_bool(initiated.get("automated")):
        return "automated"
    return as_str(initiated.get("username"))


def _history(entries: list[Any]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        revisions = _revisions(entry)
        out.append(
            {
                "id": as_int(entry.get("id")),
                "revision": revisions[0] if revisions else "",
                "revisions": revisions,
                "deployed_at": rfc3339(parse_time(entry.get("deployedAt"))),
                "started_at": rfc3339(parse_time(entry.get("deployStartedAt"))),
                "initiated_by": _initiated_by(entry.get("initiatedBy")),
            }
        )
    # Argo CD appends, so this is already oldest first, the order rows use.
    return out


def _resources(entries: list[Any]) -> list[ResourceKey]:
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not as_str(entry.get("kind")) or not as_str(entry.get("name")):
            continue
        out.append(
            ResourceKey(
                group=as_str(entry.get("group")),
                kind=as_str(entry.get("kind")),
                namespace=as_str(entry.get("namespace")),
                name=as_str(entry.get("name")),
            )
        )
    return out
