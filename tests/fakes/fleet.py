"""The synthetic fleet that benchmarks poll and tests check them by: Argo CD Applications and
Deployments the size real ones are (`application`, `deployment`), and whole clusters of them as
Kubernetes API list answers (`build_fleet`), optionally spread over the repositories of a forge
fake (`forge_repositories`, `ForgeFleet`). Shared by bench/ and tests/ (tests never import bench/).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field

SERVICES = 40


def application(i: int, cluster: str, reconciled_at: str = "2026-11-29T09:00:00Z",
                server: str = "https://kubernetes.default.svc") -> dict:
    """An Argo CD Application the size real ones are (history, resources, images, operation),
    deploying to `server` (in-cluster unless a hub's destination is given)."""
    service = f"svc{i % SERVICES:02d}"
    name = f"{service}-{i:04d}"
    sha = uuid.uuid5(uuid.NAMESPACE_URL, f"{cluster}/{name}").hex + "abcdef01"
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name, "namespace": "argocd", "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name)), "generation": 7,
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"team": f"team-{i % 12}", "app.kubernetes.io/part-of": service},
            "annotations": {"notifications.argoproj.io/subscribe.on-sync-failed.slack": "deploys"},
        },
        "spec": {
            "project": f"project-{i % 6}",
            "source": {"repoURL": "https://github.com/acme/gitops.git", "path": f"apps/{service}/overlays/prod",
                       "targetRevision": "main"},
            "destination": {"server": server, "namespace": name},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, "syncOptions": ["CreateNamespace=true"]},
        },
        "status": {
            "sync": {"status": "OutOfSync" if i % 17 == 0 else "Synced", "revision": sha,
                     "comparedTo": {"source": {"repoURL": "https://github.com/acme/gitops.git",
                                               "path": f"apps/{service}/overlays/prod", "targetRevision": "main"},
                                    "destination": {"server": server, "namespace": name}}},
            "health": {"status": "Degraded" if i % 23 == 0 else "Healthy",
                       "lastTransitionTime": "2026-11-29T08:00:00Z"},
            "history": [{"id": h, "revision": sha, "deployedAt": f"2026-11-{10 + h:02d}T10:00:00Z",
                         "deployStartedAt": f"2026-11-{10 + h:02d}T09:59:40Z",
                         "source": {"repoURL": "https://github.com/acme/gitops.git",
                                    "path": f"apps/{service}/overlays/prod", "targetRevision": "main"},
                         "initiatedBy": {"automated": True}} for h in range(10)],
            "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)",
                               "startedAt": "2026-11-19T09:59:40Z", "finishedAt": "2026-11-19T10:00:00Z",
                               "operation": {"sync": {"revision": sha}, "initiatedBy": {"automated": True}},
                               "syncResult": {"revision": sha, "resources": [
                                   {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": name,
                                    "name": service, "status": "Synced", "message": "deployment.apps configured",
                                    "syncPhase": "Sync"}]}},
            "reconciledAt": reconciled_at,
            "resources": [
                {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": name, "name": service,
                 "status": "Synced"},
                {"version": "v1", "kind": "Service", "namespace": name, "name": service, "status": "Synced"},
                {"version": "v1", "kind": "ConfigMap", "namespace": name, "name": f"{service}-config",
                 "status": "Synced"},
            ],
            "summary": {"images": [f"ghcr.io/acme/{service}:1.{i % 5}.0"]},
            "sourceType": "Kustomize",
        },
    }


def deployment(i: int) -> dict:
    service = f"svc{i % SERVICES:02d}"
    name = f"{service}-{i:04d}"
    return {
        "metadata": {"name": service, "namespace": name, "uid": str(uuid.uuid4()), "generation": 3,
                     "labels": {"app": service, "app.kubernetes.io/instance": name},
                     "annotations": {"deployment.kubernetes.io/revision": "3"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": service}},
                 "template": {"metadata": {"labels": {"app": service}},
                              "spec": {"containers": [
                                  {"name": service, "image": f"ghcr.io/acme/{service}:1.{i % 5}.0",
                                   "ports": [{"containerPort": 8080}],
                                   "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                   "env": [{"name": "LOG_LEVEL", "value": "info"}]},
                                  {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.22.0"}]}}},
        "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3,
                   "availableReplicas": 3,
                   "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                                  {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]},
        "apiVersion": "apps/v1", "kind": "Deployment",
    }



FLEET_SERVICES = 200  # the services of build_fleet
EMPTY = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}


# --- the fleet as files ---------------------------------------------------------------------


def _project(name: str) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
        "metadata": {"name": name, "namespace": "argocd", "uid": str(uuid.uuid4()), "resourceVersion": "1"},
        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                 "syncWindows": [{"kind": "deny", "schedule": "0 22 * * *", "duration": "8h",
                                  "applications": ["*"], "manualSync": True}]},
    }


def _kustomization(i: int, cluster: str, source: str = "fleet") -> dict:
    service = f"svc{i % FLEET_SERVICES:03d}"
    name = f"{service}-{i:04d}"
    sha = uuid.uuid5(uuid.NAMESPACE_URL, f"{cluster}/{name}").hex[:40]
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system", "uid": str(uuid.uuid4()), "resourceVersion": "1",
                     "generation": 2},
        "spec": {"interval": "10m", "path": f"./apps/{service}/prod", "prune": True,
                 "sourceRef": {"kind": "GitRepository", "name": source}},
        "status": {"observedGeneration": 2, "lastAppliedRevision": f"main@sha1:{sha}",
                   "lastAttemptedRevision": f"main@sha1:{sha}",
                   "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                                   "message": f"Applied revision: main@sha1:{sha}",
                                   "lastTransitionTime": "2026-11-29T08:00:00Z"}],
                   "inventory": {"entries": [{"id": f"{name}_{service}_apps_Deployment", "v": "v1"}]}},
    }


def _git_repository(name: str = "fleet", url: str = "https://github.com/acme/fleet") -> dict:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": name, "namespace": "flux-system", "uid": str(uuid.uuid4()), "resourceVersion": "1"},
        "spec": {"url": url, "ref": {"branch": "main"}, "interval": "1m"},
        "status": {"artifact": {"revision": "main@sha1:" + "a" * 40},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                                   "lastTransitionTime": "2026-11-29T08:00:00Z"}]},
    }


@dataclass
class FleetCluster:
    name: str
    argo: bool
    lists: dict[str, dict] = field(default_factory=dict)  # list path -> list object
    version: int = 1

    def apps(self) -> list[dict]:
        path = "/apis/argoproj.io/v1alpha1/applications" if self.argo else \
            "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"
        return self.lists[path]["items"]


# --- forge mode: the apps spread over repositories on the forge fake -------------------------


def repository_of(service: int, repositories: int) -> str:
    """The repository a service's manifests live in: services spread evenly over the repositories,
    so each repository holds apps of every cluster (a team's repository, deployed everywhere)."""
    return f"fleet-{service % repositories:02d}"


def forge_repositories(repositories: int) -> dict[str, dict[str, str]]:
    """Every repository's files on its `main` branch: per service a Kustomize overlay pinning its
    image tag (what the portal's pin reader finds) over a base Deployment."""
    files: dict[str, dict[str, str]] = {f"acme/{repository_of(r, repositories)}": {"README.md": "fleet\n"}
                                        for r in range(repositories)}
    for s in range(FLEET_SERVICES):
        service = f"svc{s:03d}"
        repo = files[f"acme/{repository_of(s, repositories)}"]
        repo[f"apps/{service}/prod/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n"
            f"images:\n  - name: ghcr.io/acme/{service}\n    newTag: 1.{s % 5}.0\n")
        repo[f"apps/{service}/base/deployment.yaml"] = (
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {service}\nspec:\n  template:\n"
            f"    spec:\n      containers:\n        - name: {service}\n          image: ghcr.io/acme/{service}\n")
    return files


@dataclass(frozen=True)
class ForgeFleet:
    """Where the fleet's apps keep their manifests in forge mode."""

    web: str  # the forge's web root: repository URLs are `{web}/acme/fleet-07.git`
    repositories: int

    def url(self, service: int) -> str:
        return f"{self.web}/acme/{repository_of(service, self.repositories)}.git"


def _point_at_forge(app: dict, forge: ForgeFleet) -> None:
    """An Argo CD Application's sources (spec, compared-to, history) moved to its service's repository."""
    service = int(app["status"]["summary"]["images"][0].rsplit("/", 1)[1].split(":")[0][3:])
    place = {"repoURL": forge.url(service), "path": f"apps/svc{service:03d}/prod", "targetRevision": "main"}
    app["spec"]["source"] = dict(place)
    app["status"]["sync"]["comparedTo"]["source"] = dict(place)
    for entry in app["status"]["history"]:
        entry["source"] = dict(place)


def build_fleet(clusters: int, apps: int, forge: ForgeFleet | None = None) -> list[FleetCluster]:
    from gitops import kinds

    fleet = []
    argo_clusters = clusters * 4 // 5
    for n in range(clusters):
        cluster = FleetCluster(name=f"c{n:03d}", argo=n < argo_clusters)
        for spec in kinds.KINDS:
            cluster.lists[spec.list_path(spec.versions[0])] = copy.deepcopy(EMPTY)
        first = n * apps
        if cluster.argo:
            items = [application(first + i, cluster.name) for i in range(apps)]
            for item in items:  # bench/collect.py's shapes, with this fleet's service count
                service = item["metadata"]["labels"]["app.kubernetes.io/part-of"]
                item["metadata"]["resourceVersion"] = "1"
                item["status"]["summary"]["images"] = [i.replace(service, f"svc{int(service[3:]) % FLEET_SERVICES:03d}")
                                                       for i in item["status"]["summary"]["images"]]
                if forge is not None:
                    _point_at_forge(item, forge)
            cluster.lists["/apis/argoproj.io/v1alpha1/applications"]["items"] = items
            cluster.lists["/apis/argoproj.io/v1alpha1/appprojects"]["items"] = [
                _project(f"project-{p}") for p in range(6)]
        elif forge is None:
            cluster.lists["/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"]["items"] = [
                _kustomization(first + i, cluster.name) for i in range(apps)]
            cluster.lists["/apis/source.toolkit.fluxcd.io/v1/gitrepositories"]["items"] = [_git_repository()]
        else:  # one GitRepository per repository the cluster's Kustomizations use
            used = sorted({repository_of((first + i) % FLEET_SERVICES, forge.repositories) for i in range(apps)})
            cluster.lists["/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"]["items"] = [
                _kustomization(first + i, cluster.name, repository_of((first + i) % FLEET_SERVICES, forge.repositories))
                for i in range(apps)]
            cluster.lists["/apis/source.toolkit.fluxcd.io/v1/gitrepositories"]["items"] = [
                _git_repository(name, f"{forge.web}/acme/{name}") for name in used]
        workloads = [deployment(first + i) for i in range(apps)]
        for w in workloads:
            w["metadata"]["resourceVersion"] = "1"
        cluster.lists["/apis/apps/v1/deployments"]["items"] = workloads
        fleet.append(cluster)
    return fleet


