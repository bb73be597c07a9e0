"""What the store holds of one cluster before a poll writes: read once, one query per table.

Deriving a poll's changes compares its rows with these; reading them up front keeps the
derive step pure and the number of queries per poll constant, whatever the fleet size.
Only what the poll listed is read: kinds it could not list are left alone by the write.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitops.collectors.workloads import WORKLOAD_KINDS
from gitops.models import AppProject, GitOpsApp, RunningVersion, Workload
from gitops.rows import ProjectRow, app_key
from portal.catalog.models import Cluster, Service, service_image_index

# Large JSON columns, always rewritten from the poll's values when a row changes: an
# unchanged app is recognised by its fingerprint, so they are never read back.
APP_DEFERRED = ["raw", "history", "conditions", "sources", "synced_revisions", "images", "warnings"]

WorkloadKey = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True)
class StoredVersion:
    """One RunningVersion row as stored: which service runs which version where."""

    id: int
    service_id: int
    workload: WorkloadKey
    container: str
    version: str
    app_id: int | None
    image: str


@dataclass
class ClusterState:
    """One cluster, and what the store held of it when the poll began."""

    cluster: Cluster
    listed_kinds: set[str]
    service_index: dict[str, str]  # normalised image name -> service name
    service_ids: dict[str, int]  # service name -> id
    apps: dict[str, GitOpsApp]  # by app_key, large JSON columns deferred
    # The stored sync windows, for a poll that could not list AppProjects (None when it could).
    projects: dict[str, ProjectRow] | None
    workload_kinds: set[str] = field(default_factory=set)  # workload kinds this poll listed
    workloads: dict[WorkloadKey, Workload] = field(default_factory=dict)
    running: list[StoredVersion] = field(default_factory=list)


def read_state(cluster: Cluster, listed_kinds: set[str]) -> ClusterState:
    """At most five queries: services, apps, AppProjects (when not listed), workloads, running versions."""
    services = list(Service.objects.all())
    projects = None
    if "AppProject" not in listed_kinds:
        projects = {
            p.name: ProjectRow(namespace=p.namespace, name=p.name, sync_windows=p.sync_windows)
            for p in AppProject.objects.filter(cluster=cluster)
        }
    state = ClusterState(
        cluster=cluster,
        listed_kinds=listed_kinds,
        service_index=service_image_index(services),
        service_ids={s.name: s.id for s in services},
        apps={
            app_key(a.tool, a.kind, a.namespace, a.name): a
            for a in GitOpsApp.objects.filter(cluster=cluster).defer(*APP_DEFERRED)
        },
        projects=projects,
        workload_kinds=listed_kinds & set(WORKLOAD_KINDS),
    )
    if state.workload_kinds:
        state.workloads = {
            (w.kind, w.namespace, w.name): w
            for w in Workload.objects.filter(cluster=cluster, kind__in=state.workload_kinds)
        }
        state.running = [
            StoredVersion(id=rid, service_id=sid, workload=(kind, namespace, name), container=container,
                          version=version, app_id=aid, image=image)
            for rid, sid, container, version, aid, image, kind, namespace, name in RunningVersion.objects.filter(
                cluster=cluster, workload__kind__in=state.workload_kinds
            ).values_list("id", "service_id", "container", "version", "app_id", "image",
                         "workload__kind", "workload__namespace", "workload__name")
        ]
    return state
