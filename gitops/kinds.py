"""The Kubernetes resource kinds the portal reads, grouped by the capability each serves.

A cluster rarely has every GitOps tool installed, and RBAC may hide some of them, so a
poll treats each capability on its own: a 403 or 404 for one capability (say Argo
Rollouts missing) disables only that panel, never the whole cluster.

Versions are listed newest first. A source tries them in order and falls back to the
next one on 404, because older Flux and Argo installations still serve only the beta
versions (Flux 2.2 served HelmRelease only as v2beta2/v2beta1, Flux 2.8 removed every
beta).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitops.derive.topology import SECRET_TYPE_LABEL

ARGOCD = "argocd"
ARGOCD_PROJECTS = "argocd-projects"  # AppProjects: the sync windows live there
# Argo CD's cluster Secrets, in its control-plane namespace only: destination name <-> server.
ARGOCD_CLUSTERS = "argocd-clusters"
FLUX_KUSTOMIZE = "flux-kustomize"
FLUX_HELM = "flux-helm"
FLUX_SOURCES = "flux-sources"
WORKLOADS = "workloads"
ROLLOUTS = "rollouts"
FLUX_NOTIFICATIONS = "flux-notifications"  # Flux Alerts: which apps a failure notifies (portal.findings)

CAPABILITIES: tuple[str, ...] = (
    ARGOCD,
    ARGOCD_PROJECTS,
    ARGOCD_CLUSTERS,
    FLUX_KUSTOMIZE,
    FLUX_HELM,
    FLUX_SOURCES,
    WORKLOADS,
    ROLLOUTS,
    FLUX_NOTIFICATIONS,
)


@dataclass(frozen=True)
class KindSpec:
    """One listable resource: where it lives in the API and which versions to try."""

    group: str  # "" for the core group (served under /api/v1)
    kind: str
    plural: str
    versions: tuple[str, ...]  # preferred first
    capability: str
    namespaced: bool = True
    # Sent as `labelSelector` (and applied to manifest folders): only these objects are listed.
    label_selector: str = ""
    # When set, only these keys of `data`/`stringData` survive the source that decoded the
    # list; everything else of them (credentials) is dropped there, before anyone keeps it.
    kept_data: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.versions:
            raise ValueError(f"{self.kind}: at least one version is required")

    @property
    def resource(self) -> str:
        """`plural.group`, the name RBAC messages and kubectl use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def list_path(self, version: str, namespace: str | None = None) -> str:
        """The URL path that lists this kind, cluster-wide or in one namespace."""
        base = f"/apis/{self.group}/{version}" if self.group else f"/api/{version}"
        if namespace is not None and self.namespaced:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def matches(self, api_version: str, kind: str) -> bool:
        """True when an object's apiVersion/kind is this kind in any version."""
        return kind == self.kind and split_api_version(api_version)[0] == self.group


def selector_matches(selector: str, labels: Mapping[str, object]) -> bool:
    """Whether `labels` satisfy an equality-based label selector ("a=b,c!=d,e,!f"), as the
    API server evaluates `labelSelector` (set-based `in`/`notin` are not used here)."""
    for term in (t.strip() for t in selector.split(",")):
        if not term:
            continue
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); `v1` -> ("", "v1")."""
    group, sep, version = api_version.rpartition("/")
    return (group, version) if sep else ("", api_version)


_SOURCE_VERSIONS = ("v1", "v1beta2")

KINDS: tuple[KindSpec, ...] = (
    KindSpec("argoproj.io", "Application", "applications", ("v1alpha1",), ARGOCD),
    KindSpec("argoproj.io", "AppProject", "appprojects", ("v1alpha1",), ARGOCD_PROJECTS),
    # What Argo CD itself watches (util/settings/cluster_informer.go): this label, its own
    # namespace. `config` holds the cluster's credentials: never kept (kept_data).
    KindSpec("", "Secret", "secrets", ("v1",), ARGOCD_CLUSTERS,
             label_selector=f"{SECRET_TYPE_LABEL}=cluster", kept_data=("name", "server", "project")),
    KindSpec("kustomize.toolkit.fluxcd.io", "Kustomization", "kustomizations", ("v1", "v1beta2"),
             FLUX_KUSTOMIZE),
    KindSpec("helm.toolkit.fluxcd.io", "HelmRelease", "helmreleases", ("v2", "v2beta2", "v2beta1"),
             FLUX_HELM),
    KindSpec("source.toolkit.fluxcd.io", "GitRepository", "gitrepositories", _SOURCE_VERSIONS,
             FLUX_SOURCES),
    KindSpec("source.toolkit.fluxcd.io", "HelmRepository", "helmrepositories", _SOURCE_VERSIONS,
             FLUX_SOURCES),
    KindSpec("source.toolkit.fluxcd.io", "HelmChart", "helmcharts", _SOURCE_VERSIONS, FLUX_SOURCES),
    KindSpec("source.toolkit.fluxcd.io", "Bucket", "buckets", _SOURCE_VERSIONS, FLUX_SOURCES),
    KindSpec("source.toolkit.fluxcd.io", "OCIRepository", "ocirepositories", _SOURCE_VERSIONS,
             FLUX_SOURCES),
    KindSpec("apps", "Deployment", "deployments", ("v1",), WORKLOADS),
    KindSpec("apps", "StatefulSet", "statefulsets", ("v1",), WORKLOADS),
    KindSpec("apps", "DaemonSet", "daemonsets", ("v1",), WORKLOADS),
    KindSpec("batch", "CronJob", "cronjobs", ("v1",), WORKLOADS),
    KindSpec("argoproj.io", "Rollout", "rollouts", ("v1alpha1",), ROLLOUTS),
    KindSpec("notification.toolkit.fluxcd.io", "Alert", "alerts", ("v1beta3", "v1beta2"), FLUX_NOTIFICATIONS),
)

BY_CAPABILITY: dict[str, tuple[KindSpec, ...]] = {
    capability: tuple(k for k in KINDS if k.capability == capability) for capability in CAPABILITIES
}


def kinds_for(capability: str) -> tuple[KindSpec, ...]:
    try:
        return BY_CAPABILITY[capability]
    except KeyError:
        raise ValueError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
