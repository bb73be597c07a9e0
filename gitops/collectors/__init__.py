"""Collectors: raw cluster objects in, normalised rows out, no I/O.

`collect()` is what a poll calls with everything it listed from one cluster. One bad
object never costs the others: it is skipped with a warning that names it, and the
rest of the cluster is still reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitops.collectors.alerts import ALERT_KIND, mark_alerts
from gitops.collectors.argocd import application_row, project_row
from gitops.collectors.flux import SOURCE_KINDS, helmrelease_row, index_sources, kustomization_row
from gitops.collectors.mapping import map_workloads_to_apps
from gitops.collectors.workloads import WORKLOAD_KINDS, workload_row
from gitops.derive.topology import ArgoCluster, cluster_from_secret
from gitops.rawobjects import as_list, as_str, dig, json_safe
from gitops.rows import AppRow, ProjectRow, WorkloadRow

__all__ = [
    "KINDS",
    "Collected",
    "application_row",
    "collect",
    "collect_apps",
    "group_by_kind",
    "helmrelease_row",
    "kustomization_row",
    "map_workloads_to_apps",
    "project_row",
    "workload_row",
]

APP_KINDS = ("Application", "Kustomization", "HelmRelease")
# Argo CD cluster Secrets: read for their name and server only (gitops.derive.topology).
CLUSTER_SECRET_KIND = "Secret"
KINDS: tuple[str, ...] = (*APP_KINDS, "AppProject", *SOURCE_KINDS, *WORKLOAD_KINDS, CLUSTER_SECRET_KIND, ALERT_KIND)


@dataclass
class Collected:
    apps: list[AppRow] = field(default_factory=list)
    projects: list[ProjectRow] = field(default_factory=list)
    workloads: list[WorkloadRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # objects skipped, and why
    argocd_clusters: list[ArgoCluster] = field(default_factory=list)  # from cluster Secrets


def collect(objects_by_kind: Mapping[str, Any]) -> Collected:
    """Rows for every object, keyed by kind as listed ("Application", "Deployment", …).

    The key names the kind: items of an API list carry no `kind` of their own. Flux
    sources are only read to judge the apps that use them; workloads are mapped to the
    apps that deploy them.
    """
    out = Collected()
    lists: dict[str, list[Any]] = {}
    for kind, objects in objects_by_kind.items():
        if kind not in KINDS:
            out.warnings.append(f"{kind}: not a kind the collectors read; {len(as_list(objects))} object(s) ignored")
            continue
        if not isinstance(objects, list | tuple):
            out.warnings.append(f"{kind}: expected a list of objects, got {type(objects).__name__}")
            continue
        lists[kind] = [obj for obj in objects if _usable(kind, obj, out.warnings)]

    sources = index_sources(lists)
    builders: list[tuple[str, Callable[[Mapping[str, Any]], Any], list[Any]]] = [
        ("Application", application_row, out.apps),
        ("Kustomization", lambda obj: kustomization_row(obj, sources), out.apps),
        ("HelmRelease", lambda obj: helmrelease_row(obj, sources), out.apps),
        ("AppProject", _project_row, out.projects),
    ]
    for kind, build, sink in builders:
        for obj in lists.get(kind, []):
            row = _guarded(kind, obj, build, out.warnings)
            if row is not None:
                sink.append(row)

    # A Rollout with workloadRef reads its pod template from the workload it names.
    referenced = {
        (kind, as_str(dig(obj, "metadata", "namespace")), as_str(dig(obj, "metadata", "name"))): obj
        for kind in WORKLOAD_KINDS
        for obj in lists.get(kind, [])
    }
    for kind in WORKLOAD_KINDS:

        def build_workload(obj: Mapping[str, Any], kind: str = kind) -> WorkloadRow | None:
            return workload_row(obj, kind, referenced)

        for obj in lists.get(kind, []):
            row = _guarded(kind, obj, build_workload, out.warnings)
            if row is not None:
                out.workloads.append(row)

    map_workloads_to_apps(out.apps, out.workloads)
    # Flux Alerts are read only to say which apps' failures notify someone (portal.findings).
    mark_alerts(out.apps, lists.get(ALERT_KIND) if ALERT_KIND in lists else None)
    # Any other Secret is not ours to read; a cluster Secret gives its name and server only.
    out.argocd_clusters = [c for c in map(cluster_from_secret, lists.get(CLUSTER_SECRET_KIND, [])) if c]
    return out


def collect_apps(objects_by_kind: Mapping[str, Any], only: Mapping[str, set[str]]) -> Collected:
    """Rows for the app objects `only` names (kind -> uids), read as `collect` reads them: Flux
    apps against the listed sources, Alerts marked, the instance's cluster Secrets read. No
    workload is collected nor mapped: a poll calls this when no workload changed (gitops.derive.unchanged).
    """
    out = Collected()
    lists: dict[str, list[Any]] = {
        kind: [obj for obj in objects if _usable(kind, obj, out.warnings)]
        for kind, objects in objects_by_kind.items()
        if kind in (*only, *SOURCE_KINDS, ALERT_KIND, CLUSTER_SECRET_KIND) and isinstance(objects, list | tuple)
    }
    wanted = {kind: [obj for obj in lists.get(kind, []) if as_str(dig(obj, "metadata", "uid")) in uids]
              for kind, uids in only.items()}
    sources = index_sources(lists) if wanted.get("Kustomization") or wanted.get("HelmRelease") else {}
    builders: list[tuple[str, Callable[[Mapping[str, Any]], AppRow]]] = [
        ("Application", application_row),
        ("Kustomization", lambda obj: kustomization_row(obj, sources)),
        ("HelmRelease", lambda obj: helmrelease_row(obj, sources)),
    ]
    for kind, build in builders:
        for obj in wanted.get(kind, []):
            row = _guarded(kind, obj, build, out.warnings)
            if row is not None:
                out.apps.append(row)
    mark_alerts(out.apps, lists.get(ALERT_KIND) if ALERT_KIND in lists else None)
    out.argocd_clusters = [c for c in map(cluster_from_secret, lists.get(CLUSTER_SECRET_KIND, [])) if c]
    return out


def group_by_kind(objects: Iterable[Any], default_kind: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Objects (as loaded from files or an API) grouped by kind, ready for `collect`.

    `kind: List` and `<Kind>List` wrappers (what `kubectl get -o yaml` prints) are
    unwrapped; an object without a kind counts as `default_kind` (the Argo CD API
    returns Applications without one) or is dropped when there is none.
    """
    grouped: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        kind = as_str(obj.get("kind")) or (default_kind or "")
        if kind.endswith("List") and isinstance(obj.get("items"), list):
            item_kind = kind[: -len("List")] or default_kind
            for kind_name, items in group_by_kind(obj["items"], item_kind).items():
                grouped.setdefault(kind_name, []).extend(items)
            continue
        if kind:
            grouped.setdefault(kind, []).append(dict(obj))
    return grouped


def _project_row(obj: Mapping[str, Any]) -> ProjectRow:
    row = project_row(obj)
    # The store keeps the project as json_safe(raw); a raw object too deep for that is
    # this project's problem (skipped here, by name), not the whole poll's.
    json_safe(row.raw)
    return row


# The longest name or namespace a Kubernetes API server accepts (a DNS subdomain), and
# what the store's columns hold. Longer ones come only from hand-written manifests or a
# broken source; on PostgreSQL one of them failed the whole cluster's store.
MAX_NAME = 253
MAX_UID = 64  # an API server's uids are UUIDs (36); the store's column holds 64


def _usable(kind: str, obj: Any, warnings: list[str]) -> bool:
    if not isinstance(obj, Mapping):
        warnings.append(f"{kind}: skipped an entry that is not an object ({type(obj).__name__})")
        return False
    namespace = as_str(dig(obj, "metadata", "namespace"))
    name = as_str(dig(obj, "metadata", "name"))
    if len(name) > MAX_NAME or len(namespace) > MAX_NAME:
        where = f"{namespace[:60]}/{name[:60]}" if namespace else name[:60]
        warnings.append(f"{kind} {where}: skipped: name or namespace longer than {MAX_NAME} characters")
        return False
    if len(as_str(dig(obj, "metadata", "uid"))) > MAX_UID:
        where = f"{namespace}/{name}" if namespace else name
        warnings.append(f"{kind} {where}: skipped: metadata.uid longer than {MAX_UID} characters")
        return False
    return True


def _guarded(kind: str, obj: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Any], warnings: list[str]) -> Any:
    # Any exception from one object's rows is that object's problem alone: report it by
    # name and carry on with the rest of the cluster.
    try:
        return build(obj)
    except Exception as exc:  # noqa: BLE001 - deliberately broad, see above
        namespace = as_str(dig(obj, "metadata", "namespace"))
        name = as_str(dig(obj, "metadata", "name")) or "<no name>"
        where = f"{namespace}/{name}" if namespace else name
        warnings.append(f"{kind} {where}: skipped: {type(exc).__name__}: {exc}")
        return None
