"""Normalised rows: what collectors make of raw cluster objects, and what the store keeps.

Collectors are pure functions from raw dicts (as the Kubernetes API returns them) to
these rows; the store upserts them. Nothing here does I/O or touches the database.
Words are Argo CD's: sync Synced/OutOfSync/Unknown; health Healthy/Progressing/
Degraded/Suspended/Missing/Unknown, used for Flux objects too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ARGO = "argo"
FLUX = "flux"

SYNCED = "Synced"
OUT_OF_SYNC = "OutOfSync"
UNKNOWN = "Unknown"

HEALTHY = "Healthy"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
SUSPENDED = "Suspended"
MISSING = "Missing"

# Argo CD's order of severity (gitops-engine health.IsWorse): later is worse.
HEALTH_ORDER = [HEALTHY, SUSPENDED, PROGRESSING, MISSING, DEGRADED, UNKNOWN]

# Deployments kept per app, newest last (Argo CD's default revisionHistoryLimit); collectors
# read no more than this, the store keeps no more.
HISTORY_KEPT = 10


@dataclass(frozen=True)
class SourceSpec:
    """One source an app follows: a Git path or a Helm chart, at a revision."""

    repo_url: str
    path: str = ""
    chart: str = ""
    target_revision: str = ""  # branch, tag, semver range, commit, chart version
    ref: str = ""  # Argo CD multi-source `ref` name; Flux source kind/name for Flux


@dataclass(frozen=True)
class ResourceKey:
    """A Kubernetes object an app manages (Argo CD status.resources)."""

    group: str
    kind: str
    namespace: str
    name: str


@dataclass
class AppRow:
    tool: str  # ARGO | FLUX
    kind: str  # Application | Kustomization | HelmRelease
    namespace: str
    name: str
    uid: str = ""
    project: str = ""  # Argo CD AppProject; "" for Flux
    sources: list[SourceSpec] = field(default_factory=list)  # first is the primary
    destination_server: str = ""
    destination_name: str = ""
    destination_namespace: str = ""
    sync_status: str = UNKNOWN
    # When the current sync status began, as the tool records it (Argo CD: the sync that reached
    # the synced revision; Flux: the revision's first reconcile, or the source's new artifact
    # for OutOfSync); None where the tool records nothing (Argo CD's OutOfSync).
    sync_since: datetime | None = None
    synced_revision: str = ""  # primary source's revision as the tool wrote it
    synced_revisions: list[str] = field(default_factory=list)  # one per source
    source_revision: str = ""  # Flux: the source artifact's revision (what Git has now)
    attempted_revision: str = ""  # Flux lastAttemptedRevision
    health_status: str = UNKNOWN
    health_message: str = ""
    # When the current health began, as the tool records it: Argo CD health.lastTransitionTime
    # (v2.14+), Flux's deciding condition's lastTransitionTime; None where the tool says nothing.
    health_since: datetime | None = None
    ready_reason: str = ""  # Flux Ready condition reason
    suspended: bool = False  # Flux spec.suspend
    automated: bool = False  # Argo CD automated sync on
    manual_sync: bool = False  # deploys only when someone syncs it
    operation_phase: str = ""
    operation_message: str = ""
    operation_started_at: datetime | None = None
    operation_finished_at: datetime | None = None
    operation_revision: str = ""  # Argo CD syncResult revision (primary source)
    operation_revisions: list[str] = field(default_factory=list)  # syncResult revisions, multi-source
    operation_initiated_by: str = ""  # "automated", or the user who started the sync
    reconciled_at: datetime | None = None
    # Oldest first (Argo CD's order; the latest is last) for both tools, JSON-safe (times as
    # RFC 3339 text): {revision, deployed_at, …}
    history: list[dict[str, Any]] = field(default_factory=list)
    images: list[str] = field(default_factory=list)  # Argo CD summary.images
    resources: list[ResourceKey] = field(default_factory=list)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    interval: str = ""  # Flux spec.interval
    generation: int | None = None  # metadata.generation
    observed_generation: int | None = None  # status.observedGeneration (Flux: -1 until first success)
    source_ready: bool | None = None  # Flux source Ready; None when the source is not known
    source_message: str = ""  # Flux source Ready message, or why the source is unknown
    warnings: list[str] = field(default_factory=list)  # fields we could not read
    raw: dict[str, Any] = field(default_factory=dict)
    # Custom-resource health rules (gitops.collectors.custom_health): the worst verdict of the rules
    # over the app's custom objects ("" when none judged), the tool-vs-rule disagreements as
    # sentences, "No health check for <kind>", and per-object details (JSON-safe).
    rule_health: str = ""
    health_disagreement: str = ""
    health_unchecked: str = ""
    health_rules: dict[str, Any] = field(default_factory=dict)
    # Flux: the Alerts that forward this object's failures ("namespace/name"); None when the
    # Alerts could not be read (gitops.collectors.alerts).
    flux_alerts: list[str] | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.tool, self.kind, self.namespace, self.name)


@dataclass
class ProjectRow:
    """An Argo CD AppProject: its sync windows and allowed destinations."""

    namespace: str
    name: str
    sync_windows: list[dict[str, Any]] = field(default_factory=list)
    destinations: list[dict[str, Any]] = field(default_factory=list)
    source_repos: list[str] = field(default_factory=list)
    source_namespaces: list[str] = field(default_factory=list)  # apps-in-any-namespace
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerImage:
    container: str
    image: str  # as written in the pod spec
    registry: str
    repository: str
    tag: str
    digest: str
    init: bool = False
    # The resources this container has a limit for ("cpu", "memory", …), sorted; None where the
    # object says nothing about resources (a platform's task, a row stored before they were read).
    limits: list[str] | None = None

    @property
    def version(self) -> str:
        return self.tag or self.digest


@dataclass
class WorkloadRow:
    kind: str  # Deployment | StatefulSet | DaemonSet | CronJob | Rollout
    namespace: str
    name: str
    uid: str = ""
    containers: list[ContainerImage] = field(default_factory=list)
    replicas_desired: int | None = None
    replicas_ready: int | None = None
    replicas_updated: int | None = None
    replicas_available: int | None = None
    health_status: str = "Unknown"  # kstatus: Current | InProgress | Failed | Terminating | Unknown
    health_message: str = ""
    paused: bool = False  # Deployment spec.paused, paused Rollout, suspended CronJob
    # The GitOps app that deploys it: (tool, kind, namespace, name), when known.
    app_key: tuple[str, str, str, str] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what could not be read, and why
    raw: dict[str, Any] = field(default_factory=dict)
    # What portal.findings judges of the object beyond its images (gitops.collectors.workloads.spec_facts).
    spec_facts: dict[str, Any] = field(default_factory=dict)
    # Where the image is pinned in Git, for a workload no GitOps tool deploys (gitops.platforms:
    # the portal.git.* labels of a Nomad job, a container, an ECS service); blank otherwise.
    git_repo: str = ""
    git_path: str = ""
    git_branch: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


def app_key(tool: str, kind: str, namespace: str, name: str) -> str:
    """How an app is named across polls and in StateChange.object_key."""
    return f"{tool}/{kind}/{namespace}/{name}"


@dataclass
class Snapshot:
    """What one poll read: rows, and which kinds were listed completely."""

    apps: list[AppRow] = field(default_factory=list)
    projects: list[ProjectRow] = field(default_factory=list)
    workloads: list[WorkloadRow] = field(default_factory=list)
    listed_kinds: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    # The Argo CD instance's cluster list (gitops.derive.topology.ArgoCluster: name, server, agent;
    # never credentials), from its cluster Secrets or its API; None when it was not read.
    argocd_clusters: list[Any] | None = None
