"""Derive (pure): what a poll changes, from its rows and what the store held before it.

Sync-window verdicts, the services each app runs, problem ranks, fingerprints of what
changed, state changes and version changes are all decided here, before any write, so
that the store only writes (gitops.store) and every rule can be tested without a poll.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gitops.derive.apps import APP_FIELDS, AppChanges, derive_apps, fingerprint
from gitops.derive.workloads import WORKLOAD_FIELDS, WorkloadChanges, derive_workloads
from gitops.rows import Snapshot
from gitops.stored import ClusterState

__all__ = ["APP_FIELDS", "WORKLOAD_FIELDS", "AppChanges", "Changes", "WorkloadChanges", "derive", "fingerprint"]


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
