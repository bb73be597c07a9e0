"""Which GitOps app deploys each workload.

(Which catalog service an image belongs to is the store's: `gitops.store.write` writes a
RunningVersion per service image, through `portal.kernel.catalog.models.service_image_index`.)

A workload is claimed, in this order (the first claim to an app we collected wins):

1. an Argo CD Application listing it in `status.resources` (group, kind, namespace,
   name). This is the controller's own, current record, while labels stay on an object
   after a migration from Flux to Argo CD;
2. a HelmRelease named by its `helm.toolkit.fluxcd.io/name|namespace` labels, then one
   listing it in `status.inventory` (helm-controller ≥ 1.5);
3. a Kustomization named by its `kustomize.toolkit.fluxcd.io/name|namespace` labels,
   then one listing it in `status.inventory`.

A HelmRelease beats a Kustomization because the Kustomization applied the HelmRelease
object, not the Deployment helm-controller rendered: the HelmRelease is the direct owner.
Labels naming an app we did not collect are ignored, so the next rule can still match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitops.rows import ARGO, FLUX, AppRow, ResourceKey, WorkloadRow

AppKey = tuple[str, str, str, str]

# Groups a workload kind may be listed under (old Deployments were in `extensions`).
_GROUPS = {
    "Deployment": ("apps", "extensions"),
    "StatefulSet": ("apps",),
    "DaemonSet": ("apps", "extensions"),
    "CronJob": ("batch",),
    "Rollout": ("argoproj.io",),
}

HELM_NAME = "helm.toolkit.fluxcd.io/name"
HELM_NAMESPACE = "helm.toolkit.fluxcd.io/namespace"
KUSTOMIZE_NAME = "kustomize.toolkit.fluxcd.io/name"
KUSTOMIZE_NAMESPACE = "kustomize.toolkit.fluxcd.io/namespace"


def map_workloads_to_apps(apps: list[AppRow], workloads: list[WorkloadRow]) -> None:
    """Set `app_key` on every workload some collected app deploys (None for the rest)."""
    known = {app.key for app in apps}
    argo = _resource_index(app for app in apps if app.tool == ARGO)
    helm = _resource_index(app for app in apps if app.tool == FLUX and app.kind == "HelmRelease")
    kustomize = _resource_index(app for app in apps if app.tool == FLUX and app.kind == "Kustomization")
    for workload in workloads:
        keys = _resource_keys(workload)
        candidates = [
            _first_claim(argo, keys),
            _label_claim(workload, "HelmRelease", HELM_NAME, HELM_NAMESPACE),
            _first_claim(helm, keys),
            _label_claim(workload, "Kustomization", KUSTOMIZE_NAME, KUSTOMIZE_NAMESPACE),
            _first_claim(kustomize, keys),
        ]
        workload.app_key = next((c for c in candidates if c is not None and c in known), None)


def _resource_index(apps: Iterable[AppRow]) -> dict[ResourceKey, AppKey]:
    index: dict[ResourceKey, AppKey] = {}
    for app in apps:
        for resource in app.resources:
            # Two apps claiming one object is a conflict Argo CD itself warns about
            # (SharedResourceWarning); the first app in list order keeps it.
            index.setdefault(resource, app.key)
    return index


def resource_keys(workload: WorkloadRow) -> list[ResourceKey]:
    """The keys an Argo CD Application's status.resources may list this workload under."""
    return _resource_keys(workload)


def _resource_keys(workload: WorkloadRow) -> list[ResourceKey]:
    groups = _GROUPS.get(workload.kind, ("",))
    return [ResourceKey(group, workload.kind, workload.namespace, workload.name) for group in groups]


def _first_claim(index: Mapping[ResourceKey, AppKey], keys: list[ResourceKey]) -> AppKey | None:
    for key in keys:
        if key in index:
            return index[key]
    return None


def _label_claim(workload: WorkloadRow, kind: str, name_label: str, namespace_label: str) -> AppKey | None:
    name = workload.labels.get(name_label, "")
    if not name:
        return None
    # Both controllers always write the namespace label; a hand-copied name alone most
    # likely means the app's own namespace.
    namespace = workload.labels.get(namespace_label) or workload.namespace
    return (FLUX, kind, namespace, name)
