"""What one poll changes for one cluster: its rows against what the store held before it.

The derive steps run in turn (gitops.derive.app_changes, gitops.derive.workload_changes);
`Changes` is everything the store then writes (gitops.store.write), decided before any
write so every rule can be tested without a poll.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gitops.derive.app_changes import AppChanges, derive_apps
from gitops.derive.workload_changes import WorkloadChanges, derive_workloads
from gitops.rows import Snapshot
from gitops.store.read import ClusterState


@dataclass
class Changes:
    """Everything one poll writes for one cluster (`state.cluster`)."""

    state: ClusterState
    apps: AppChanges
    workloads: WorkloadChanges | None  # None: no workload kind was listed, leave them all
    workload_rows: int  # workloads the poll read
    at: datetime | None = None  # the poll's time

    def write_nothing(self) -> bool:
        """Nothing to write: no row, link, version or state change, AppProjects and workloads left."""
        apps = self.apps
        return (apps.projects is None and self.workloads is None and not (
            apps.created or apps.updated or apps.gone or apps.state_changes or apps.relinked or apps.links
            or apps.unregistered or apps.image_versions_added or apps.image_versions_stale or apps.version_changes))


def derive(state: ClusterState, snapshot: Snapshot, at: datetime) -> Changes:
    apps = derive_apps(state, snapshot, at)
    workloads = None
    if state.workload_kinds:
        gone = {a.id for a in apps.gone}
        workloads = derive_workloads(state, snapshot, apps.now(), gone, at)
    return Changes(state=state, apps=apps, workloads=workloads, workload_rows=len(snapshot.workloads), at=at)
