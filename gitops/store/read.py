"""What the store holds of one cluster before a poll writes: read once, one query per table.

Deriving a poll's changes compares its rows with these; reading them up front keeps the
derive step pure and the number of queries per poll constant, whatever the fleet size.
Only what the poll listed is read: kinds it could not list are left alone by the write.

A cluster's rows are the apps *read from* it (`GitOpsApp.read_from`), wherever they deploy;
the catalog's clusters are read too, when an app deploys elsewhere than where it is read, to
place it on its destination (gitops.derive.topology), and so are the apps other clusters' polls
placed here, whose workloads this poll may read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitops.collectors.workloads import WORKLOAD_KINDS
from gitops.models import AppProject, GitOpsApp, RunningVersion, Workload
from gitops.platforms import PLATFORM_KINDS
from gitops.rows import ProjectRow, ResourceKey, app_key
from portal.kernel.catalog import revision as catalog_revision
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Service, service_image_index

# Large JSON columns, always rewritten from the poll's values when a row changes: an
# unchanged app is recognised by its fingerprint, so they are never read back.
APP_DEFERRED = ["raw", "history", "conditions", "sources", "synced_revisions", "images", "warnings", "health_rules"]

WorkloadKey = tuple[str, str, str]  # (kind, namespace, name)
# What placing an app on its destination reads of every catalog cluster (gitops.derive.topology).
_CATALOG_FIELDS = ("id", "name", "api_url", "argocd_aliases", "discovered", "environment_id", "connection", "enabled")


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


# What a poll compares of a stored workload with its row (gitops.derive.workload_changes).
WORKLOAD_COMPARED = (
    "uid", "containers", "replicas_desired", "replicas_ready", "replicas_updated", "replicas_available",
    "health_status", "health_message", "spec_facts", "git_repo", "git_path", "git_branch",
)


@dataclass(frozen=True, slots=True)
class StoredWorkload:
    """One Workload row as stored, its columns a poll compares: read as values, not as a model
    instance (a cluster holds hundreds, and building model instances of them was a full poll's
    largest CPU cost after the services); a changed one is written through a Workload built
    from its row (gitops.derive.workload_changes)."""

    id: int
    kind: str
    namespace: str
    name: str
    app_id: int | None
    uid: str
    containers: list
    replicas_desired: int | None
    replicas_ready: int | None
    replicas_updated: int | None
    replicas_available: int | None
    health_status: str
    health_message: str
    spec_facts: dict
    git_repo: str
    git_path: str
    git_branch: str

    @property
    def pk(self) -> int:
        return self.id


@dataclass(frozen=True)
class StoredImageVersion:
    """A RunningVersion without a workload: a version as Argo CD reports it (summary.images)
    for an app this cluster's poll placed on a cluster the portal does not read."""

    id: int
    app_id: int
    cluster_id: int
    service_id: int
    image: str
    version: str


@dataclass(frozen=True)
class ServiceCatalog:
    """The catalog's services as a poll maps images to them, as of a catalog revision."""

    revision: int
    index: dict[str, str]  # normalised image name -> service name
    ids: dict[str, int]  # service name -> id


_services: ServiceCatalog | None = None


def catalog_services() -> ServiceCatalog:
    """The services, read again only when the catalog's revision moved (every save or delete of
    a service moves it: portal.kernel.catalog.revision): every poll used to read all of them (400
    at 1,000 clusters) to map a handful of images. The revision is read first, so services read
    after a change that lands in between are kept under the older revision and read again at
    the next poll, never the other way round."""
    global _services
    revision = catalog_revision.current()
    if _services is None or _services.revision != revision:
        services = list(Service.objects.only("id", "name", "image_repository", "image_aliases"))
        _services = ServiceCatalog(revision, service_image_index(services), {s.name: s.id for s in services})
    return _services


def forget_services() -> None:
    """Drop the services kept in this process (tests: a rolled-back test's catalog reuses its revisions)."""
    global _services
    _services = None


class Catalog:
    """The catalog's clusters as placing apps reads them, read on first use: an app deploying
    in-cluster lands on the cluster it is read from, known without reading anything, and the
    catalog grows with the fleet (at 1,000 clusters every poll of a standalone fleet read 1,000
    rows it never used)."""

    def __init__(self, clusters: list[Cluster] | None = None) -> None:
        self._clusters = clusters

    def clusters(self) -> list[Cluster]:
        if self._clusters is None:
            self._clusters = list(Cluster.objects.order_by("id").only(*_CATALOG_FIELDS))
        return self._clusters

    def environments(self, cluster_ids: set[int]) -> dict[int, int | None]:
        """Cluster id -> environment id, for these clusters only (read now unless loaded)."""
        if self._clusters is not None:
            return {c.pk: c.environment_id for c in self._clusters if c.pk in cluster_ids}
        return dict(Cluster.objects.filter(pk__in=sorted(cluster_ids)).values_list("pk", "environment_id"))


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
    workloads: dict[WorkloadKey, StoredWorkload] = field(default_factory=dict)
    running: list[StoredVersion] = field(default_factory=list)
    # Every catalog cluster (to place apps on their destinations), read when first needed, and
    # this cluster's Argo CD.
    catalog: Catalog = field(default_factory=Catalog)
    instance: ArgoCDInstance | None = None
    image_versions: list[StoredImageVersion] = field(default_factory=list)
    # Apps read elsewhere (a hub) that deploy here, by the resources they manage: this
    # poll's workloads are theirs when nothing read here claims them.
    foreign_resources: dict[ResourceKey, GitOpsApp] = field(default_factory=dict)
    # Only some of the cluster's apps were read (`read_apps_state`: a partial poll's changed apps).
    some_apps: bool = False


def read_state(cluster: Cluster, listed_kinds: set[str]) -> ClusterState:
    """A query per table: services, apps, AppProjects (when not listed), the Argo CD instance,
    versions from Argo CD, workloads, running versions, foreign apps."""
    services = catalog_services()
    projects = None
    if "AppProject" not in listed_kinds:
        projects = {
            p.name: ProjectRow(namespace=p.namespace, name=p.name, sync_windows=p.sync_windows)
            for p in AppProject.objects.filter(cluster=cluster)
        }
    state = ClusterState(
        cluster=cluster,
        listed_kinds=listed_kinds,
        service_index=services.index,
        service_ids=services.ids,
        apps={
            app_key(a.tool, a.kind, a.namespace, a.name): a
            for a in GitOpsApp.objects.filter(read_from=cluster).defer(*APP_DEFERRED)
        },
        projects=projects,
        workload_kinds=listed_kinds & (set(WORKLOAD_KINDS) | PLATFORM_KINDS),
    )
    if "Application" in listed_kinds:
        state.instance = instance_of(cluster)
        state.image_versions = [
            StoredImageVersion(*values) for values in RunningVersion.objects.filter(
                app__read_from=cluster, workload__isnull=True
            ).values_list("id", "app_id", "cluster_id", "service_id", "image", "version")
        ]
    if state.workload_kinds:
        stored = Workload.objects.filter(cluster=cluster, kind__in=state.workload_kinds).values_list(
            "id", "kind", "namespace", "name", "app_id", *WORKLOAD_COMPARED)
        state.workloads = {(w.kind, w.namespace, w.name): w for w in (StoredWorkload(*values) for values in stored)}
        state.running = [
            StoredVersion(id=rid, service_id=sid, workload=(kind, namespace, name), container=container,
                          version=version, app_id=aid, image=image)
            for rid, sid, container, version, aid, image, kind, namespace, name in RunningVersion.objects.filter(
                cluster=cluster, workload__kind__in=state.workload_kinds
            ).values_list("id", "service_id", "container", "version", "app_id", "image",
                         "workload__kind", "workload__namespace", "workload__name")
        ]
        state.foreign_resources = _foreign_resources(cluster)
    return state


def read_apps_state(cluster: Cluster, listed_kinds: set[str], uids: set[str]) -> ClusterState:
    """What the store holds of some of a cluster's apps only, those a poll collected again because
    their objects changed while nothing they depend on did (gitops.derive.unchanged): the apps with these
    uids, their versions as Argo CD reports them, and the stored sync windows (so the AppProjects
    are left as they are). No workload kind counts as listed: workloads are left as stored.
    A query per table, as `read_state`."""
    services = catalog_services()
    apps = {
        app_key(a.tool, a.kind, a.namespace, a.name): a
        for a in GitOpsApp.objects.filter(read_from=cluster, uid__in=sorted(uids)).defer(*APP_DEFERRED)
    }
    state = ClusterState(
        cluster=cluster,
        listed_kinds=set(listed_kinds),
        service_index=services.index,
        service_ids=services.ids,
        apps=apps,
        projects={p.name: ProjectRow(namespace=p.namespace, name=p.name, sync_windows=p.sync_windows)
                  for p in AppProject.objects.filter(cluster=cluster)},
        some_apps=True,
    )
    if "Application" in listed_kinds:
        state.instance = instance_of(cluster)
        state.image_versions = [
            StoredImageVersion(*values) for values in RunningVersion.objects.filter(
                app_id__in=[a.id for a in apps.values()], workload__isnull=True
            ).values_list("id", "app_id", "cluster_id", "service_id", "image", "version")
        ]
    return state


def claimed_workloads(cluster: Cluster, app_ids: list[int]) -> list[tuple[str, str, str, int]]:
    """(kind, namespace, name, app id) of the workloads stored as deployed by these apps."""
    return list(Workload.objects.filter(cluster=cluster, app_id__in=app_ids).values_list(
        "kind", "namespace", "name", "app_id"))


def instance_of(cluster: Cluster) -> ArgoCDInstance:
    """The Argo CD instance whose Applications are read from `cluster`; one is recorded
    (named after the cluster, its UI the portal's default) the first time they are."""
    instance = ArgoCDInstance.objects.filter(cluster=cluster).order_by("id").first()
    if instance is not None:
        return instance
    name = cluster.name
    if ArgoCDInstance.objects.filter(name=name).exists():
        name = f"{cluster.name[:50]}-{cluster.pk}"
    instance, _ = ArgoCDInstance.objects.get_or_create(name=name, defaults={"cluster": cluster})
    return instance


def _foreign_resources(cluster: Cluster) -> dict[ResourceKey, GitOpsApp]:
    """The resources (Argo CD status.resources) of apps placed here by another cluster's poll."""
    index: dict[ResourceKey, GitOpsApp] = {}
    foreign = GitOpsApp.objects.filter(cluster=cluster, tool="argo").exclude(read_from=cluster)
    for app in foreign.only("id", "tool", "kind", "namespace", "name", "cluster_id", "read_from_id", "raw"):
        resources = ((app.raw or {}).get("status") or {}).get("resources") or []
        for entry in resources if isinstance(resources, list) else []:
            if isinstance(entry, dict) and entry.get("kind") and entry.get("name"):
                key = ResourceKey(str(entry.get("group") or ""), str(entry["kind"]),
                                  str(entry.get("namespace") or ""), str(entry["name"]))
                index.setdefault(key, app)
    return index
