"""Where each app a poll read belongs (pure): its destination cluster in the catalog.

The rules are gitops.derive.topology's (Argo CD's own); this module applies them to one poll:
which catalog cluster each app lands on, which destinations need a discovered cluster,
whose versions come from Argo CD's `status.summary.images` rather than from workloads,
and which argocd-agent copies to leave to the agent's own poll.

One app is never counted twice: with argocd-agent the principal (hub) holds a copy of
every agent's apps. When the portal reads the agent's cluster too, the agent's copy wins:
its controller wrote that status (the principal's is a mirror, one event hop later) and
that cluster's workloads are read in the same poll. The principal's copy is kept only for
an agent cluster the portal does not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from gitops.derive.topology import (
    AgentMapping,
    CatalogIndex,
    Destination,
    Unregistered,
    resolve_destination,
    unregistered,
)
from gitops.rows import ARGO, AppRow, Snapshot
from gitops.store.read import ClusterState
from portal.kernel.catalog.models import Cluster


@dataclass(frozen=True)
class Placement:
    """Where one app belongs."""

    cluster: Cluster | None  # the catalog cluster; None: `new` is to be discovered
    new: Unregistered | None = None
    destination: Destination | None = None
    # The destination is not read by the portal: its versions are as Argo CD reports them.
    by_argocd: bool = False
    # An argocd-agent principal's copy of an app the agent's own poll reports.
    duplicate: bool = False

    @property
    def has_environment(self) -> bool:
        return self.cluster is not None and self.cluster.environment_id is not None


def reads_workloads(cluster: Cluster) -> bool:
    """Whether the portal reads this cluster's own API (and so its workloads)."""
    return cluster.enabled and not cluster.discovered and cluster.connection != Cluster.Connection.NONE


class Placer:
    """Places the apps of one poll (`state.cluster`) on catalog clusters."""

    def __init__(self, state: ClusterState, snapshot: Snapshot) -> None:
        self.home = state.cluster
        self.catalog = state.catalog
        self.clusters = snapshot.argocd_clusters
        instance = state.instance
        self.agents = AgentMapping(instance.agent_mapping, instance.namespace) if instance else AgentMapping()

    @cached_property
    def index(self) -> CatalogIndex:
        """Built when an app deploys elsewhere than in-cluster: the catalog is read only then."""
        return CatalogIndex(self.catalog.clusters())

    def place(self, row: AppRow) -> Placement:
        if row.tool != ARGO:
            return Placement(cluster=self.home)
        destination = resolve_destination(row.destination_server, row.destination_name, self.clusters,
                                          namespace=row.namespace, agents=self.agents)
        if destination.error:
            # Argo CD cannot place it either (InvalidSpecError): it stays with the instance, saying why.
            row.warnings.append(f"destination: {destination.error}")
            return Placement(cluster=self.home, destination=destination)
        matched = self.home if destination.in_cluster else self.index.match(destination, self.home)
        if matched is None:
            new = unregistered(destination)
            if new is None:
                return Placement(cluster=self.home, destination=destination)
            return Placement(cluster=None, new=new, destination=destination, by_argocd=True)
        assert isinstance(matched, Cluster)
        elsewhere = matched.pk != self.home.pk
        read_there = reads_workloads(matched)
        return Placement(
            cluster=matched,
            destination=destination,
            by_argocd=elsewhere and not read_there,
            duplicate=bool(destination.agent) and elsewhere and read_there,
        )


# (app id, destination cluster id, service id) -> the versions Argo CD reports the app running there
VersionSets = dict[tuple[int, int, int], set[str]]


def image_version_changes(before: VersionSets, after: VersionSets) -> list[tuple[tuple[int, int, int], str, str]]:
    """Which services' versions Argo CD's `status.summary.images` says were replaced on a
    destination the portal does not read: (key, from, to) per replacement, as
    gitops.derive.workload_changes records them for a workload it reads (a VersionChange; rollback
    offers and deployment tracking read those).

    `summary.images` is the union over the app's Pods (reference/argocd-topology.md §3.6), so
    a rollout shows old and new versions together for a while. A set that only gained versions
    is a rollout under way, not yet a change; when the old versions have left, the change is
    from those that left to what runs now, whether or not a poll saw the rollout midway. First
    sight (nothing before) is not a change, and neither is an app whose images are gone (no Pod)."""
    changes = []
    for key, new in after.items():
        old = before.get(key)
        if not old or not new or old <= new:
            continue
        left = old - new
        changes.append((key, ", ".join(sorted(left)), ", ".join(sorted(new))))
    return changes
