"""Regenerate the demo fleet: examples/clusters/** and examples/gitops-repo/**.

    .venv/bin/python examples/generate_fleet.py

The catalog (examples/fleet.yaml) is hand-written; everything else is written here so that
uids, SHAs, revisions, timestamps and versions stay consistent with each other. Output is
deterministic (no clock, no randomness): running it twice gives the same bytes.

Objects are shaped the way `kubectl get -o yaml` prints what Argo CD 3.x, Flux 2.7 and
the Kubernetes API write: keys sorted, server-filled defaults present, revisions in each
tool's own format. The stories the fleet tells are listed in examples/README.md.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CLUSTERS_DIR = HERE / "clusters"
REPO_DIR = HERE / "gitops-repo"

REPO_URL = "https://github.com/acme-shop/gitops.git"
CHART_REPO = "https://charts.acme-shop.io"  # Argo CD Helm source
OCI_CHARTS = "oci://ghcr.io/acme-shop/charts"  # Flux OCI HelmRepository
MIRROR = "asia-southeast1-docker.pkg.dev/acme-shop/mirror"
IN_CLUSTER = "https://kubernetes.default.svc"

# ---------------------------------------------------------------------------------------
# What Git pins (apps/<service>/overlays/<overlay>), per overlay.
PINS: dict[str, dict[str, str]] = {
    "dev": {
        "checkout": "3.4.0", "payments": "2.5.0", "catalog": "1.13.0", "cart": "1.9.0",
        "search": "1.8.0", "notifications": "0.9.0", "auth": "4.2.0", "orders": "3.3.0",
        "inventory": "2.0.0", "shipping": "1.4.0", "recommendations": "0.7.0", "frontend": "5.0.0",
    },
    "staging": {
        "checkout": "3.3.1", "payments": "2.5.0", "catalog": "1.12.2", "cart": "1.8.3",
        "search": "1.7.0", "notifications": "0.9.0", "auth": "4.1.0", "orders": "3.2.0",
        "inventory": "1.15.0", "shipping": "1.4.0", "recommendations": "0.6.1", "frontend": "4.9.2",
    },
    "prod": {
        "checkout": "3.3.1", "payments": "2.4.1", "catalog": "1.12.2", "cart": "1.8.3",
        "search": "1.7.0", "notifications": "0.8.4", "auth": "4.1.0", "orders": "3.2.0",
        "inventory": "1.15.0", "shipping": "1.3.2", "recommendations": "0.6.1", "frontend": "4.9.2",
    },
    "prod-ap": {
        "checkout": "3.3.0", "catalog": "1.12.2", "cart": "1.8.3", "auth": "4.1.0",
        "inventory": "1.15.0", "recommendations": "0.6.1", "frontend": "4.9.1",
    },
}
# The two places where what runs is older than what Git pins.
RUNS_OVERRIDE = {
    ("prod-eu-1", "payments"): "2.4.0",  # change freeze (deny window) blocks the 2.4.1 hotfix
    ("prod-eu-1", "search"): "1.6.0",  # manual sync app, nobody has synced 1.7.0 yet
}
# Helm-based services: chart name = service; chart version and the chart's appVersion.
HELM = {
    "frontend": ("1.4.2", "4.9.2"),
    "search": ("0.9.3", "1.7.0"),
    "notifications": ("0.3.1", "0.8.4"),
}
PREVIOUS_CHART = {"frontend": "1.4.1", "search": "0.9.2", "notifications": "0.3.0"}
# Where a cluster pins another chart version than HELM's: staging got notifications' chart
# 0.3.2 (with 0.9.0) while prod still pins 0.3.1, so Delivery offers the chart promotion.
CHART_OVERRIDE = {("staging-eu-1", "notifications"): "0.3.2"}


def chart_of(cluster: str, service: str) -> str:
    """The chart version `cluster` pins for the Helm-based `service`."""
    return CHART_OVERRIDE.get((cluster, service), HELM[service][0])


def previous_chart_of(cluster: str, service: str) -> str:
    """The chart version `cluster` ran before the one it pins."""
    return HELM[service][0] if (cluster, service) in CHART_OVERRIDE else PREVIOUS_CHART[service]
STATEFUL = {"inventory"}
PORTS = {"frontend": 3000, "auth": 8443}
TEAMS = {}  # filled from fleet.yaml

CLUSTERS = {
    # name: (tool, environment, overlay, services, day the cluster was bootstrapped)
    "dev-eu-1": ("flux", "dev", "dev", list(PINS["dev"]), 2),
    "staging-eu-1": ("argo", "staging", "staging", list(PINS["staging"]), 3),
    "prod-eu-1": ("argo", "prod", "prod", list(PINS["prod"]), 4),
    "prod-us-1": ("flux", "prod", "prod", [s for s in PINS["prod"] if s != "recommendations"], 5),
    "prod-ap-1": ("argo", "prod", "prod-ap", list(PINS["prod-ap"]), 9),
    # tool "hub": no Argo CD of its own; mgmt-hub's Argo CD deploys to it (see HUB below).
    "prod-eu-2": ("hub", "prod", "prod", ["checkout", "cart", "catalog", "loyalty"], 20),
    "prod-sa-1": ("hub", "prod", "prod", ["checkout", "catalog", "frontend", "loyalty"], 21),
    "dev-eu-2": ("hub", "dev", "dev", ["checkout", "loyalty"], 22),
}
# A service only the new regions run, and nobody has added to fleet.yaml yet: what the
# Discovery page offers to add (its team comes from here, not from the catalog).
NEW_SERVICES = {"loyalty": ("growth", {"dev": "0.4.0", "prod": "0.3.2"})}
for _service, (_team, _pins) in NEW_SERVICES.items():
    for _overlay, _version in _pins.items():
        PINS[_overlay][_service] = _version

# The hub: one Argo CD on the management cluster mgmt-hub, deploying to the "hub" clusters
# above from outside, each known to it by a cluster Secret (name + server). The portal reads
# mgmt-hub and prod-eu-2 (folders); prod-sa-1 is in the catalog but not read (versions as
# Argo CD reports them); dev-eu-2 is in no catalog at all (an unregistered destination).
HUB = "mgmt-hub"
HUB_DAY = 18
HUB_SERVERS = {
    "prod-eu-2": "https://prod-eu-2.k8s.acme-shop.internal:6443",
    "prod-sa-1": "https://prod-sa-1.k8s.acme-shop.internal:6443",
    "dev-eu-2": "https://dev-eu-2.k8s.acme-shop.internal:6443",
}
HUB_BY_NAME = {"dev-eu-2"}  # apps that name their destination instead of giving its server
HUB_READ = {"prod-eu-2"}  # destinations whose folder (workloads) the portal reads

HEAD_AT = "2026-11-29T14:48:12Z"  # the last commit on main
SNAPSHOT_AT = datetime(2026, 11, 29, 15, 41, 7, tzinfo=UTC)  # when the dump was taken


# ---------------------------------------------------------------------------------------
# Deterministic identifiers.
def _h(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


def sha1(*parts: object) -> str:
    return hashlib.sha1("\x1f".join(str(p) for p in parts).encode()).hexdigest()  # noqa: S324


def sha256(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def uid(*parts: object) -> str:
    return str(uuid.UUID(bytes=_h("uid", *parts)[:16], version=4))


def rv(*parts: object) -> str:
    return str(10_000_000 + int.from_bytes(_h("rv", *parts)[:4], "big") % 90_000_000)


def short(*parts: object, n: int = 10) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    raw = _h("pod-hash", *parts)
    return "".join(alphabet[b % len(alphabet)] for b in raw[:n])


def ts(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def jitter(*parts: object, minutes: int = 600) -> timedelta:
    return timedelta(seconds=int.from_bytes(_h("jit", *parts)[:4], "big") % (minutes * 60))


HEAD = sha1("acme-shop/gitops", "main", HEAD_AT)
PREV_HEAD = sha1("acme-shop/gitops", "main", "orders prod 3.2.0^")  # before the orders prod bump


def commit_for(service: str, overlay: str, version: str) -> str:
    """The commit that set this pin (a sha that history entries point at)."""
    return sha1("pin", service, overlay, version)


def previous(version: str, steps: int = 1) -> str:
    major, minor, patch = (int(x) for x in version.split("."))
    for _ in range(steps):
        if patch > 0:
            patch -= 1
        elif minor > 0:
            minor, patch = minor - 1, 2
        else:
            major, minor, patch = major - 1, 9, 0
    return f"{major}.{minor}.{patch}"


# Older versions each service went through, to build histories.
HISTORY_STEPS = {
    ("staging", "payments"): ["2.3.2", "2.4.0", "2.5.0"],
    ("prod", "payments"): ["2.3.2", "2.4.0"],
    ("prod", "search"): ["1.5.3", "1.6.0"],
}


def versions_history(overlay: str, service: str, current: str) -> list[str]:
    env = "prod" if overlay.startswith("prod") else overlay
    if (env, service) in HISTORY_STEPS:
        return HISTORY_STEPS[(env, service)]
    return [previous(current, 2), previous(current, 1), current]


def image_for(cluster: str, service: str, version: str) -> str:
    repo = f"{MIRROR}/{service}" if cluster == "prod-ap-1" else f"ghcr.io/acme-shop/{service}"
    return f"{repo}:{version}"


def runs(cluster: str, service: str) -> str:
    overlay = CLUSTERS[cluster][2]
    return RUNS_OVERRIDE.get((cluster, service), PINS[overlay][service])


def replicas_for(env: str, service: str) -> int:
    if service in STATEFUL:
        return 3
    base = {"dev": 1, "staging": 2, "prod": 3}[env]
    return base + (1 if service == "frontend" and env == "prod" else 0)


# ---------------------------------------------------------------------------------------
# YAML output the way kubectl prints it: sorted keys, block style, double quotes only where
# a plain scalar would read as something else.
class KubeDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # kubectl never writes anchors
        return True


_resolver = yaml.resolver.Resolver()


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    tag = _resolver.resolve(yaml.ScalarNode, value, (True, False))
    if tag != "tag:yaml.org,2002:str" or value == "":
        # "true", "1", "2026-11-29T…Z", "": quoted, as kubectl prints them.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)  # PyYAML quotes the rest if needed


KubeDumper.add_representer(str, _str)


def dump_all(path: Path, docs: list[dict[str, Any]], header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.dump_all(docs, Dumper=KubeDumper, sort_keys=True, default_flow_style=False, width=4096)
    note = "# Generated by examples/generate_fleet.py; edit the generator, not this file.\n"
    path.write_text(f"# {header}\n{note}{body}")


def meta(cluster: str, kind: str, namespace: str | None, name: str, created: datetime, *,
         generation: int | None = 1, labels: dict | None = None, annotations: dict | None = None,
         finalizers: list | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {
        "name": name,
        "creationTimestamp": ts(created),
        "resourceVersion": rv(cluster, kind, namespace, name),
        "uid": uid(cluster, kind, namespace, name),
    }
    if namespace is not None:
        m["namespace"] = namespace
    if generation is not None:
        m["generation"] = generation
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    if finalizers:
        m["finalizers"] = finalizers
    return m


# ---------------------------------------------------------------------------------------
# Workloads (Deployment / StatefulSet / Service), as the API server stores them.
def container(service: str, image: str) -> dict[str, Any]:
    port = PORTS.get(service, 8080)
    return {
        "name": service,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [
            {"containerPort": port, "name": "http", "protocol": "TCP"},
            {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
        ],
        "env": [
            {"name": "OTEL_SERVICE_NAME", "value": service},
            {"name": "LOG_FORMAT", "value": "json"},
        ],
        "readinessProbe": {
            "failureThreshold": 3,
            "httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"},
            "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1,
        },
        "livenessProbe": {
            "failureThreshold": 3,
            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1,
        },
        "resources": {
            "limits": {"memory": "512Mi"},
            "requests": {"cpu": "100m", "memory": "256Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod_spec(service: str, image: str) -> dict[str, Any]:
    return {
        "containers": [container(service, image)],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {"fsGroup": 65532, "runAsUser": 65532},
        "serviceAccount": service,
        "serviceAccountName": service,
        "terminationGracePeriodSeconds": 30,
    }


def workload_labels(cluster: str, service: str, owner: dict[str, str], version: str,
                    helm_chart: str | None) -> tuple[dict, dict]:
    """(labels, annotations) the GitOps tool leaves on an object it applied."""
    labels = {"app.kubernetes.io/name": service, "app.kubernetes.io/part-of": "acme-shop"}
    annotations: dict[str, str] = {}
    if helm_chart:
        labels.update({
            "app.kubernetes.io/instance": service,
            "app.kubernetes.io/managed-by": "Helm",
            "app.kubernetes.io/version": version,
            "helm.sh/chart": f"{service}-{helm_chart}",
        })
    if owner["tool"] == "flux-ks":
        labels["kustomize.toolkit.fluxcd.io/name"] = owner["name"]
        labels["kustomize.toolkit.fluxcd.io/namespace"] = owner["namespace"]
    elif owner["tool"] == "flux-hr":
        labels["helm.toolkit.fluxcd.io/name"] = owner["name"]
        labels["helm.toolkit.fluxcd.io/namespace"] = owner["namespace"]
        annotations["meta.helm.sh/release-name"] = owner["name"]
        annotations["meta.helm.sh/release-namespace"] = owner["namespace"]
    elif owner["tool"] == "argo":
        annotations["argocd.argoproj.io/tracking-id"] = owner["tracking"]
    return labels, annotations


def make_service(cluster: str, service: str, created: datetime, owner: dict[str, str],
                 version: str, helm_chart: str | None) -> dict[str, Any]:
    labels, annotations = workload_labels(cluster, service, owner, version, helm_chart)
    if owner["tool"] == "argo":
        annotations = {"argocd.argoproj.io/tracking-id": owner["tracking"].replace("apps/Deployment", "/Service")
                       .replace("apps/StatefulSet", "/Service")}
    ip = "10.{}.{}.{}".format(*(_h("ip", cluster, service)[:3]))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(cluster, "Service", service, service, created, generation=None,
                         labels=labels, annotations=annotations or None),
        "spec": {
            "clusterIP": ip,
            "clusterIPs": [ip],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
            "selector": {"app.kubernetes.io/name": service},
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    }


def make_workload(cluster: str, service: str, owner: dict[str, str], created: datetime,
                  generation: int, helm_chart: str | None = None,
                  state: str = "healthy", previous_image: str | None = None) -> dict[str, Any]:
    env = CLUSTERS[cluster][1]
    version = runs(cluster, service)
    image = image_for(cluster, service, version)
    labels, annotations = workload_labels(cluster, service, owner, version, helm_chart)
    replicas = replicas_for(env, service)
    template_labels = {"app.kubernetes.io/name": service}
    if helm_chart:
        template_labels["app.kubernetes.io/instance"] = service
    template = {
        "metadata": {
            "annotations": {"prometheus.io/port": "9090", "prometheus.io/scrape": "true"},
            "creationTimestamp": None,
            "labels": template_labels,
        },
        "spec": pod_spec(service, image),
    }
    changed = created + timedelta(days=min(generation, 20) % 17, hours=3)
    if service in STATEFUL:
        revision = f"{service}-{short(cluster, service, version, n=10)}"
        annotations = annotations or None
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": meta(cluster, "StatefulSet", service, service, created, generation=generation,
                             labels=labels, annotations=annotations),
            "spec": {
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "podManagementPolicy": "OrderedReady",
                "replicas": replicas,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app.kubernetes.io/name": service}},
                "serviceName": service,
                "template": template,
                "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"},
                "volumeClaimTemplates": [{
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"creationTimestamp": None, "name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "20Gi"}},
                        "storageClassName": "premium-rwo",
                        "volumeMode": "Filesystem",
                    },
                    "status": {"phase": "Pending"},
                }],
            },
            "status": {
                "availableReplicas": replicas,
                "collisionCount": 0,
                "currentReplicas": replicas,
                "currentRevision": revision,
                "observedGeneration": generation,
                "readyReplicas": replicas,
                "replicas": replicas,
                "updateRevision": revision,
                "updatedReplicas": replicas,
            },
        }

    rs_hash = short(cluster, service, version)
    annotations = {"deployment.kubernetes.io/revision": str(max(1, generation - 1)), **annotations}
    spec = {
        "progressDeadlineSeconds": 600,
        "replicas": replicas,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app.kubernetes.io/name": service}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": template,
    }
    available = {
        "lastTransitionTime": ts(created + timedelta(minutes=2)),
        "lastUpdateTime": ts(created + timedelta(minutes=2)),
        "message": "Deployment has minimum availability.",
        "reason": "MinimumReplicasAvailable",
        "status": "True",
        "type": "Available",
    }
    if state == "healthy":
        status = {
            "availableReplicas": replicas,
            "conditions": [available, {
                "lastTransitionTime": ts(created),
                "lastUpdateTime": ts(changed),
                "message": f'ReplicaSet "{service}-{rs_hash}" has successfully progressed.',
                "reason": "NewReplicaSetAvailable",
                "status": "True",
                "type": "Progressing",
            }],
            "observedGeneration": generation,
            "readyReplicas": replicas,
            "replicas": replicas,
            "updatedReplicas": replicas,
        }
    elif state == "deadline-exceeded":  # new ReplicaSet crash-loops; old pods keep serving
        spec["strategy"] = {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}, "type": "RollingUpdate"}
        status = {
            "availableReplicas": replicas,
            "conditions": [available, {
                "lastTransitionTime": ts(owner["failed_at"]),
                "lastUpdateTime": ts(owner["failed_at"]),
                "message": f'ReplicaSet "{service}-{rs_hash}" has timed out progressing.',
                "reason": "ProgressDeadlineExceeded",
                "status": "False",
                "type": "Progressing",
            }],
            "observedGeneration": generation,
            "readyReplicas": replicas,
            "replicas": replicas + 1,
            "unavailableReplicas": 1,
            "updatedReplicas": 1,
        }
    elif state == "rolling-out":  # waiting for the new pods to become ready
        spec["progressDeadlineSeconds"] = 3600
        status = {
            "availableReplicas": replicas,
            "conditions": [available, {
                "lastTransitionTime": ts(created),
                "lastUpdateTime": ts(owner["rollout_at"]),
                "message": f'ReplicaSet "{service}-{rs_hash}" is progressing.',
                "reason": "ReplicaSetUpdated",
                "status": "True",
                "type": "Progressing",
            }],
            "observedGeneration": generation,
            "readyReplicas": replicas,
            "replicas": replicas + 1,
            "unavailableReplicas": 1,
            "updatedReplicas": 1,
        }
    else:
        raise ValueError(state)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(cluster, "Deployment", service, service, created, generation=generation,
                         labels=labels, annotations=annotations),
        "spec": spec,
        "status": status,
    }


# ---------------------------------------------------------------------------------------
# Argo CD
PROJECT_OF = {
    "payments": "payments", "auth": "platform", "notifications": "platform",
}
APP_NAMESPACE = {"checkout": "team-checkout", "cart": "team-checkout"}


def argo_projects(cluster: str, day: int) -> list[dict[str, Any]]:
    created = at(day, 9, 12, 40)
    default = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta(cluster, "AppProject", "argocd", "default", created, generation=1),
        "spec": {
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            "destinations": [{"namespace": "*", "server": "*"}],
            "sourceRepos": ["*"],
        },
        "status": {},
    }
    if cluster == "prod-ap-1":
        return [default]
    prod = cluster == "prod-eu-1"
    payments: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta(cluster, "AppProject", "argocd", "payments", created + timedelta(minutes=3),
                         generation=7 if prod else 2,
                         finalizers=["resources-finalizer.argocd.argoproj.io"]),
        "spec": {
            "description": "Payments team: card processing and refunds (PCI scope)",
            "destinations": [{"name": "in-cluster", "namespace": "payments", "server": IN_CLUSTER}],
            "namespaceResourceBlacklist": [{"group": "", "kind": "ResourceQuota"}],
            "roles": [{
                "description": "Payments engineers may sync their applications",
                "groups": ["acme-shop:payments"],
                "name": "deployer",
                "policies": ["p, proj:payments:deployer, applications, sync, payments/*, allow"],
            }],
            "sourceRepos": [REPO_URL],
        },
        "status": {},
    }
    platform: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta(cluster, "AppProject", "argocd", "platform", created + timedelta(minutes=4),
                         generation=4 if prod else 1,
                         finalizers=["resources-finalizer.argocd.argoproj.io"]),
        "spec": {
            "description": "Shared platform services (auth, notifications)",
            "destinations": [
                {"namespace": "auth", "server": IN_CLUSTER},
                {"namespace": "notifications", "server": IN_CLUSTER},
            ],
            "sourceRepos": [REPO_URL, CHART_REPO],
        },
        "status": {},
    }
    shop: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta(cluster, "AppProject", "argocd", "shop", created + timedelta(minutes=5),
                         generation=3, finalizers=["resources-finalizer.argocd.argoproj.io"]),
        "spec": {
            "description": "Storefront services; teams keep their Applications in team-* namespaces",
            "destinations": [{"namespace": "*", "server": IN_CLUSTER}],
            "orphanedResources": {"warn": False},
            "sourceNamespaces": ["team-*"],
            "sourceRepos": [REPO_URL, CHART_REPO],
        },
        "status": {},
    }
    if prod:
        payments["spec"]["syncWindows"] = [{
            "applications": ["payments-*"],
            "description": "Change freeze: Black Friday / Cyber Monday peak, no payments deploys (CHG-4821)",
            "duration": "24h",
            "kind": "deny",
            "manualSync": False,
            "schedule": "0 0 * * *",
            "timeZone": "UTC",
        }]
        platform["spec"]["syncWindows"] = [
            {
                "applications": ["*"],
                "description": "nightly maintenance",
                "duration": "1h",
                "kind": "allow",
                "manualSync": True,
                "schedule": "0 2 * * *",
                "timeZone": "Europe/Berlin",
            },
            {
                "description": "auth signing-key rotation slot (weekdays)",
                "duration": "30m",
                "kind": "allow",
                "namespaces": ["auth"],
                "schedule": "30 5 * * 1-5",
                "timeZone": "Europe/Berlin",
            },
        ]
    return [default, payments, platform, shop]


def argo_app(cluster: str, service: str, day: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(Application, owner info for its workloads or None when nothing runs)."""
    tool, env, overlay, _, _ = CLUSTERS[cluster]
    hub = tool == "hub"  # written on mgmt-hub, one app per (service, destination cluster)
    name = f"{service}-{cluster}" if hub else f"{service}-{env}"
    app_ns = "argocd" if cluster == "prod-ap-1" or hub else APP_NAMESPACE.get(service, "argocd")
    project = "regions" if hub else "default" if cluster == "prod-ap-1" else PROJECT_OF.get(service, "shop")
    instance = name if app_ns == "argocd" else f"{app_ns}_{name}"
    kind = "StatefulSet" if service in STATEFUL else "Deployment"
    created = at(day, 10) + jitter(cluster, service, minutes=300)
    version = runs(cluster, service)
    pinned = PINS[overlay][service]
    helm = HELM.get(service)
    path = f"apps/{service}/overlays/{overlay}"
    destination = ({"name": "in-cluster", "namespace": service} if cluster == "prod-ap-1"
                   else {"namespace": service, "server": IN_CLUSTER})
    if hub:
        destination = ({"name": cluster, "namespace": service} if cluster in HUB_BY_NAME
                       else {"namespace": service, "server": HUB_SERVERS[cluster]})

    if helm:
        chart_version = chart_of(cluster, service)
        sources = [
            {
                "chart": service,
                "helm": {"releaseName": service, "valueFiles": [f"$values/{path}/values.yaml"]},
                "repoURL": CHART_REPO,
                "targetRevision": chart_version,
            },
            {"ref": "values", "repoURL": REPO_URL, "targetRevision": "main"},
        ]
        spec_source: dict[str, Any] = {"sources": sources}
    else:
        source = {"path": path, "repoURL": REPO_URL, "targetRevision": "main"}
        spec_source = {"source": source}

    manual = (cluster == "prod-eu-1" and service in ("search", "inventory"))
    automated_disabled = (cluster == "prod-ap-1" and service == "inventory")
    sync_policy: dict[str, Any] = {
        "retry": {"backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m0s"}, "limit": 5},
        "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
    }
    if cluster == "prod-ap-1" and service == "recommendations":
        sync_policy["syncOptions"] = ["ServerSideApply=true"]  # forgot CreateNamespace: the sync fails
    if automated_disabled:
        sync_policy["automated"] = {"enabled": False, "prune": True, "selfHeal": True}
    elif not manual:
        sync_policy["automated"] = {"prune": True, "selfHeal": True}

    # History: one entry per version this app went through; the last is what runs.
    history_versions = versions_history(overlay, service, version)
    if version not in history_versions:
        history_versions = [*history_versions, version]
    history_versions = history_versions[: history_versions.index(version) + 1]
    missing = cluster == "prod-ap-1" and service == "recommendations"
    degraded = cluster == "staging-eu-1" and service == "payments"
    history = []
    t = created + timedelta(minutes=1)
    span = (SNAPSHOT_AT - timedelta(hours=30) - t) / max(1, len(history_versions))
    for i, v in enumerate(history_versions):
        if degraded and v == "2.5.0":
            started = at(29, 13, 12, 31)
        else:
            started = t + span * i + jitter(cluster, service, v, minutes=120)
            if cluster == "prod-eu-1" and project == "platform":
                # allow-only window 02:00-03:00 Europe/Berlin (01:00-02:00 UTC in November)
                started = started.replace(hour=1, minute=5 + 7 * i, second=12)
                if started < created:
                    started += timedelta(days=1)
            if cluster == "prod-eu-1" and service == "payments":
                started = min(started, at(25, 16, 2, 9) - timedelta(days=len(history_versions) - 1 - i))
        revision = commit_for(service, overlay, v)
        if overlay == "prod" and service == "orders" and i == len(history_versions) - 1:
            started, revision = at(29, 14, 49, 3), HEAD  # the last commit on main bumped orders in prod
        by = {"automated": True}
        if manual or automated_disabled:
            by = {"username": "k.novak@acme-shop.io" if service == "search" else "r.okafor@acme-shop.io"}
        entry: dict[str, Any] = {
            "deployStartedAt": ts(started),
            "deployedAt": ts(started + timedelta(seconds=3 + i)),
            "id": i + 1 if not helm else i + 4,
            "initiatedBy": by,
        }
        if helm:
            chart_v = chart_version if i == len(history_versions) - 1 else previous_chart_of(cluster, service)
            entry["revisions"] = [chart_v, revision]
            entry["sources"] = [dict(sources[0], targetRevision=chart_v), sources[1]]
        else:
            entry["revision"] = revision
            entry["source"] = {"path": path, "repoURL": REPO_URL, "targetRevision": "main"}
        history.append(entry)
    if missing:
        history = []

    out_of_sync = version != pinned or missing
    last = history[-1] if history else None
    sync_rev = HEAD
    images = sorted({image_for(cluster, service, version)})
    if degraded:
        images = sorted({image_for(cluster, service, "2.4.0"), image_for(cluster, service, "2.5.0")})

    resources = [
        {"kind": "Service", "name": service, "namespace": service, "status": "Synced", "version": "v1"},
        {"group": "apps", "kind": kind, "name": service, "namespace": service,
         "status": "OutOfSync" if out_of_sync else "Synced", "version": "v1"},
    ]
    if missing:
        resources[0]["status"] = "OutOfSync"
    app_tree = cluster == "prod-ap-1"
    if not app_tree:
        resources[0]["health"] = {"status": "Healthy"}
        resources[1]["health"] = {"status": "Healthy"}
        if degraded:
            resources[1]["health"] = {"message": 'Deployment "payments" exceeded its progress deadline',
                                      "status": "Degraded"}

    healthy_since = (datetime.fromisoformat(last["deployedAt"].replace("Z", "+00:00")) + timedelta(seconds=40)
                     if last else created + timedelta(seconds=20))
    status: dict[str, Any] = {
        "controllerNamespace": "argocd",
        "health": {"lastTransitionTime": ts(healthy_since), "status": "Healthy"},
        "history": history,
        "reconciledAt": ts(SNAPSHOT_AT - jitter(cluster, service, "reconcile", minutes=3)),
        "resources": resources,
        "summary": {"images": images} if not missing else {},
        "sync": {
            "comparedTo": {"destination": destination, **({"sources": sources} if helm else
                                                          {"source": spec_source["source"]})},
            "status": "OutOfSync" if out_of_sync else "Synced",
        },
    }
    if not history:
        del status["history"]
    if app_tree:
        status["resourceHealthSource"] = "appTree"
    if helm:
        status["sync"]["revisions"] = [helm[0], sync_rev]
        status["sourceTypes"] = ["Helm", "Directory"]
    else:
        status["sync"]["revision"] = sync_rev
        status["sourceType"] = "Kustomize"
    failed_at = at(29, 13, 22, 44)
    if degraded:
        status["health"] = {"lastTransitionTime": ts(failed_at), "status": "Degraded"}
    if missing:
        status["health"] = {"lastTransitionTime": ts(created + timedelta(seconds=12)), "status": "Missing"}

    if out_of_sync:
        # Its project warns about orphans (spec.orphanedResources.warn): a ConfigMap someone made by
        # hand while debugging is still there, in no Git path (portal.findings: orphaned resources).
        orphans = [{"lastTransitionTime": ts(failed_at), "message": "Application has 1 orphaned resources",
                    "type": "OrphanedResourceWarning"}]
    else:
        orphans = []

    # operationState: the last sync operation.
    if missing:
        started = created + timedelta(seconds=8)
        op_msg = ('one or more objects failed to apply, reason: namespaces "recommendations" not found '
                  "(retried 5 times).")
        status["operationState"] = {
            "finishedAt": ts(started + timedelta(minutes=4, seconds=12)),
            "message": op_msg,
            "operation": {
                "initiatedBy": {"automated": True},
                "retry": sync_policy["retry"],
                "sync": {"prune": True, "revision": HEAD, "syncOptions": sync_policy["syncOptions"]},
            },
            "phase": "Failed",
            "retryCount": 5,
            "startedAt": ts(started),
            "syncResult": {
                "resources": [{
                    "group": "apps", "hookPhase": "Failed", "kind": "Deployment",
                    "message": 'namespaces "recommendations" not found', "name": service,
                    "namespace": service, "status": "SyncFailed", "syncPhase": "Sync", "version": "v1",
                }],
                "revision": HEAD,
                "source": spec_source["source"],
            },
        }
        status["conditions"] = [{
            "lastTransitionTime": ts(started + timedelta(minutes=4, seconds=12)),
            "message": f"Failed sync attempt to {HEAD}: {op_msg}",
            "type": "SyncError",
        }]
    else:
        assert last is not None
        started_at = last["deployStartedAt"]
        op: dict[str, Any] = {
            "initiatedBy": last["initiatedBy"],
            "retry": sync_policy["retry"],
            "sync": {"prune": True, "syncOptions": sync_policy["syncOptions"]},
        }
        sync_result: dict[str, Any] = {
            "resources": [
                {"group": "", "hookPhase": "Running", "kind": "Service",
                 "message": f"service/{service} serverside-applied", "name": service, "namespace": service,
                 "status": "Synced", "syncPhase": "Sync", "version": "v1"},
                {"group": "apps", "hookPhase": "Running", "kind": kind,
                 "images": [image_for(cluster, service, version)],
                 "message": f"{kind.lower()}.apps/{service} serverside-applied", "name": service,
                 "namespace": service, "status": "Synced", "syncPhase": "Sync", "version": "v1"},
            ],
        }
        if helm:
            op["sync"]["revisions"] = last["revisions"]
            op["sync"]["sources"] = last["sources"]
            sync_result["revisions"] = last["revisions"]
            sync_result["sources"] = last["sources"]
        else:
            op["sync"]["revision"] = last["revision"]
            sync_result["revision"] = last["revision"]
            sync_result["source"] = last["source"]
        status["operationState"] = {
            "finishedAt": last["deployedAt"],
            "message": "successfully synced (all tasks run)",
            "operation": op,
            "phase": "Succeeded",
            "startedAt": started_at,
            "syncResult": sync_result,
        }

    if orphans:
        status["conditions"] = [*status.get("conditions", []), *orphans]

    annotations = {"notifications.argoproj.io/subscribe.on-health-degraded.slack": f"team-{TEAMS[service]}"}
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta(HUB if hub else cluster, "Application", app_ns, name, created,
                         generation=40 + int.from_bytes(_h("gen", cluster, service)[:1], "big") % 200,
                         labels={"acme-shop.io/team": TEAMS[service], "acme-shop.io/environment": env},
                         annotations=annotations,
                         finalizers=["resources-finalizer.argocd.argoproj.io"]),
        "spec": {
            "destination": destination,
            "project": project,
            **spec_source,
            "syncPolicy": sync_policy,
        },
        "status": status,
    }
    if missing:
        return app, None
    owner = {"tool": "argo", "tracking": f"{instance}:apps/{kind}:{service}/{service}", "failed_at": failed_at}
    return app, owner


# ---------------------------------------------------------------------------------------
# Flux
FLUX_VERSION = "v2.7.3"


def git_repository(cluster: str, day: int) -> dict[str, Any]:
    created = at(day, 8, 30)
    rev = f"main@sha1:{HEAD}"
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": meta(cluster, "GitRepository", "flux-system", "flux-system", created, generation=1,
                         labels={
                             "app.kubernetes.io/instance": "flux-system",
                             "app.kubernetes.io/part-of": "flux",
                             "app.kubernetes.io/version": FLUX_VERSION,
                             "kustomize.toolkit.fluxcd.io/name": "flux-system",
                             "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
                         },
                         finalizers=["source.toolkit.fluxcd.io"]),
        "spec": {
            "interval": "1m0s",
            "ref": {"branch": "main"},
            "secretRef": {"name": "flux-system"},
            "timeout": "60s",
            "url": REPO_URL,
        },
        "status": {
            "artifact": {
                "digest": f"sha256:{sha256('artifact', cluster, HEAD)}",
                "lastUpdateTime": ts(at(29, 14, 48, 51)),
                "path": f"gitrepository/flux-system/flux-system/{HEAD}.tar.gz",
                "revision": rev,
                "size": 48213,
                "url": f"http://source-controller.flux-system.svc.cluster.local./gitrepository/flux-system/flux-system/{HEAD}.tar.gz",
            },
            "conditions": [
                {"lastTransitionTime": ts(at(29, 14, 48, 51)), "message": f"stored artifact for revision '{rev}'",
                 "observedGeneration": 1, "reason": "Succeeded", "status": "True", "type": "Ready"},
                {"lastTransitionTime": ts(at(29, 14, 48, 51)), "message": f"stored artifact for revision '{rev}'",
                 "observedGeneration": 1, "reason": "Succeeded", "status": "True", "type": "ArtifactInStorage"},
            ],
            "observedGeneration": 1,
        },
    }


def helm_repositories(cluster: str, day: int) -> list[dict[str, Any]]:
    created = at(day, 8, 31)
    labels = {"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    repos = [{
        # An OCI HelmRepository is a static data container: no status at all.
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": meta(cluster, "HelmRepository", "flux-system", "acme-charts", created, generation=1, labels=labels),
        "spec": {"interval": "10m0s", "provider": "generic", "type": "oci", "url": OCI_CHARTS},
    }]
    if cluster == "prod-us-1":
        rev = f"sha256:{sha256('index', cluster)}"
        repos.append({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": meta(cluster, "HelmRepository", "flux-system", "acme-charts-legacy", created, generation=1,
                             labels=labels, finalizers=["finalizers.fluxcd.io"]),
            "spec": {"interval": "1h0m0s", "url": CHART_REPO},
            "status": {
                "artifact": {
                    "digest": rev,
                    "lastUpdateTime": ts(at(28, 22, 3, 10)),
                    "path": "helmrepository/flux-system/acme-charts-legacy/index-"
                            f"{rev.split(':')[1]}.yaml",
                    "revision": rev,
                    "size": 18544,
                    "url": "http://source-controller.flux-system.svc.cluster.local./helmrepository/flux-system/"
                           f"acme-charts-legacy/index-{rev.split(':')[1]}.yaml",
                },
                "conditions": [
                    {"lastTransitionTime": ts(at(28, 22, 3, 10)), "message": f"stored artifact: revision '{rev}'",
                     "observedGeneration": 1, "reason": "Succeeded", "status": "True", "type": "Ready"},
                    {"lastTransitionTime": ts(at(28, 22, 3, 10)), "message": f"stored artifact: revision '{rev}'",
                     "observedGeneration": 1, "reason": "Succeeded", "status": "True", "type": "ArtifactInStorage"},
                ],
                "observedGeneration": 1,
                "url": "http://source-controller.flux-system.svc.cluster.local./helmrepository/flux-system/"
                       "acme-charts-legacy/index.yaml",
            },
        })
    return repos


def ks_history(cluster: str, name: str, entries: list[tuple[str, str, datetime, datetime, int]]) -> list[dict]:
    out = []
    for revision, status, first, last, total in entries:
        out.append({
            "digest": f"sha256:{sha256('ks', cluster, name, revision)}",
            "firstReconciled": ts(first),
            "lastReconciled": ts(last),
            "lastReconciledDuration": f"{1 + total % 7}.{total * 7919 % 1000:03d}s" if status != "HealthCheckFailed"
            else "5m0.028471833s",
            "lastReconciledStatus": status,
            "metadata": {"revision": revision},
            "totalReconciliations": total,
        })
    return out


def flux_kustomization(cluster: str, service: str, day: int) -> dict[str, Any]:
    overlay = CLUSTERS[cluster][2]
    created = at(day, 8, 40) + jitter(cluster, service, minutes=50)
    helm = service in HELM
    rev = f"main@sha1:{HEAD}"
    failing = cluster == "prod-us-1" and service == "orders"
    applied = f"main@sha1:{PREV_HEAD}" if failing else rev
    ready_at = at(29, 14, 49, 30) + jitter(cluster, service, "ready", minutes=1)
    inventory = (
        [{"id": f"{service}_{service}-values__ConfigMap", "v": "v1"},
         {"id": f"{service}_{service}_helm.toolkit.fluxcd.io_HelmRelease", "v": "v2"}]
        if helm else
        [{"id": f"{service}_{service}__Service", "v": "v1"},
         {"id": f"{service}_{service}__ServiceAccount", "v": "v1"},
         {"id": f"{service}_{service}_apps_{'StatefulSet' if service in STATEFUL else 'Deployment'}", "v": "v1"}]
    )
    spec = {
        "interval": "5m0s",
        "path": f"./apps/{service}/overlays/{overlay}",
        "prune": True,
        "retryInterval": "2m0s",
        "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        "timeout": "5m0s",
        "wait": True,
    }
    if failing:
        check_msg = ("health check failed after 5m0.028471833s: timeout waiting for: "
                     "[Deployment/orders/orders status: 'InProgress']")
        first_fail = at(29, 14, 49, 31)
        conditions = [
            {"lastTransitionTime": ts(first_fail), "message":
             f"Running health checks for revision {rev} with a timeout of 5m0s",
             "observedGeneration": 1, "reason": "ProgressingWithRetry", "status": "True", "type": "Reconciling"},
            {"lastTransitionTime": ts(at(29, 14, 54, 31)), "message": check_msg, "observedGeneration": 1,
             "reason": "HealthCheckFailed", "status": "False", "type": "Ready"},
            {"lastTransitionTime": ts(at(29, 14, 54, 31)), "message": check_msg, "observedGeneration": 1,
             "reason": "HealthCheckFailed", "status": "False", "type": "Healthy"},
        ]
        history = ks_history(cluster, service, [
            (rev, "HealthCheckFailed", first_fail, at(29, 15, 36, 2), 7),
            (applied, "ReconciliationSucceeded", at(19, 10, 4, 12), at(29, 14, 45, 40), 2909),
        ])
    else:
        msg = f"Applied revision: {rev}"
        conditions = [
            {"lastTransitionTime": ts(ready_at), "message": msg, "observedGeneration": 1,
             "reason": "ReconciliationSucceeded", "status": "True", "type": "Ready"},
            {"lastTransitionTime": ts(ready_at),
             "message": f"Health check passed in {2 + len(service) % 5}.{len(service) * 37 % 1000:03d}s",
             "observedGeneration": 1, "reason": "Succeeded", "status": "True", "type": "Healthy"},
        ]
        history = ks_history(cluster, service, [
            (rev, "ReconciliationSucceeded", at(25, 11, 2, 8) + jitter(cluster, service, minutes=30),
             SNAPSHOT_AT - jitter(cluster, service, "last", minutes=5), 1211),
            (f"main@sha1:{commit_for(service, overlay, PINS[overlay][service])}", "ReconciliationSucceeded",
             created + timedelta(minutes=1), at(25, 11, 0, 0), 4380),
        ])
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": meta(cluster, "Kustomization", "flux-system", service, created, generation=1,
                         labels={"kustomize.toolkit.fluxcd.io/name": "flux-system",
                                 "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
                         finalizers=["finalizers.fluxcd.io"]),
        "spec": spec,
        "status": {
            "conditions": conditions,
            "history": history,
            "inventory": {"entries": inventory},
            "lastAppliedRevision": applied,
            "lastAttemptedRevision": rev,
            "observedGeneration": 1,
        },
    }


def flux_root_kustomization(cluster: str, services: list[str], day: int) -> dict[str, Any]:
    created = at(day, 8, 30)
    rev = f"main@sha1:{HEAD}"
    entries = [{"id": "flux-system_flux-system_source.toolkit.fluxcd.io_GitRepository", "v": "v1"},
               {"id": "flux-system_acme-charts_source.toolkit.fluxcd.io_HelmRepository", "v": "v1"}]
    if cluster == "prod-us-1":
        entries.append({"id": "flux-system_acme-charts-legacy_source.toolkit.fluxcd.io_HelmRepository", "v": "v1"})
    entries += [{"id": f"flux-system_{s}_kustomize.toolkit.fluxcd.io_Kustomization", "v": "v1"} for s in services]
    ready_at = at(29, 14, 49, 2)
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": meta(cluster, "Kustomization", "flux-system", "flux-system", created, generation=1,
                         labels={"kustomize.toolkit.fluxcd.io/name": "flux-system",
                                 "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
                         finalizers=["finalizers.fluxcd.io"]),
        "spec": {
            "interval": "10m0s",
            "path": f"./clusters/{cluster}",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        },
        "status": {
            "conditions": [{"lastTransitionTime": ts(ready_at), "message": f"Applied revision: {rev}",
                            "observedGeneration": 1, "reason": "ReconciliationSucceeded", "status": "True",
                            "type": "Ready"}],
            "history": ks_history(cluster, "flux-system", [
                (rev, "ReconciliationSucceeded", ready_at, SNAPSHOT_AT - timedelta(minutes=3, seconds=12), 6),
                (f"main@sha1:{PREV_HEAD}", "ReconciliationSucceeded", at(19, 10, 3, 40), at(29, 14, 44, 30), 1455),
            ]),
            "inventory": {"entries": entries},
            "lastAppliedRevision": rev,
            "lastAttemptedRevision": rev,
            "observedGeneration": 1,
        },
    }


def flux_helmrelease(cluster: str, service: str, day: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(HelmRelease + its HelmChart, owner info for the rendered workloads)."""
    overlay = CLUSTERS[cluster][2]
    chart_version, app_version = HELM[service]
    created = at(day, 8, 45) + jitter(cluster, service, "hr", minutes=50)
    suspended = cluster == "prod-us-1" and service == "notifications"
    legacy = cluster == "prod-us-1" and service == "notifications"
    repo_name = "acme-charts-legacy" if legacy else "acme-charts"
    install_only = cluster == "dev-eu-1" and service == "notifications"
    chart_name = f"{service}-{service}"
    releases = [1] if install_only else [3 + len(service) % 4, 2 + len(service) % 4]
    last_deployed = at(28 if cluster == "dev-eu-1" else 27, 9, 30) + jitter(cluster, service, "deployed", minutes=400)
    if suspended:
        last_deployed = at(18, 8, 12, 33)
    history = []
    for i, version in enumerate(releases):
        deployed = last_deployed - timedelta(days=6 * i)
        cv = chart_version if i == 0 else PREVIOUS_CHART[service]
        history.append({
            "appVersion": app_version if i == 0 else previous(app_version),
            "chartName": service,
            "chartVersion": cv,
            "configDigest": f"sha256:{sha256('cfg', cluster, service, version)}",
            "digest": f"sha256:{sha256('rel', cluster, service, version)}",
            "firstDeployed": ts(deployed if install_only else last_deployed - timedelta(days=6 * (len(releases) - 1))),
            "lastDeployed": ts(deployed),
            "name": service,
            "namespace": service,
            "status": "deployed" if i == 0 else "superseded",
            "version": version,
        })
    action = "install" if install_only else "upgrade"
    reason = "InstallSucceeded" if install_only else "UpgradeSucceeded"
    msg = (f"Helm {action} succeeded for release {service}/{service}.v{releases[0]} "
           f"with chart {service}@{chart_version}")
    generation = 1 if install_only else 2 + len(service) % 3
    if suspended:
        generation += 1  # `flux suspend` patched spec.suspend
    observed = generation
    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": meta(cluster, "HelmRelease", service, service, created, generation=generation,
                         labels={"kustomize.toolkit.fluxcd.io/name": service,
                                 "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
                         finalizers=["finalizers.fluxcd.io"]),
        "spec": {
            "chart": {"spec": {
                "chart": service,
                "reconcileStrategy": "ChartVersion",
                "sourceRef": {"kind": "HelmRepository", "name": repo_name, "namespace": "flux-system"},
                "version": chart_version,
            }},
            "install": {"remediation": {"retries": 3}},
            "interval": "10m0s",
            "upgrade": {"remediation": {"remediateLastFailure": True, "retries": 3}},
            "valuesFrom": [{"kind": "ConfigMap", "name": f"{service}-values"}],
        },
        "status": {
            "conditions": [
                {"lastTransitionTime": ts(last_deployed + timedelta(seconds=41)), "message": msg,
                 "observedGeneration": observed, "reason": reason, "status": "True", "type": "Ready"},
                {"lastTransitionTime": ts(last_deployed + timedelta(seconds=41)), "message": msg,
                 "observedGeneration": observed, "reason": reason, "status": "True", "type": "Released"},
            ],
            "helmChart": f"flux-system/{chart_name}",
            "history": history,
            "lastAttemptedConfigDigest": history[0]["configDigest"],
            "lastAttemptedGeneration": observed,
            "lastAttemptedReleaseAction": action,
            "lastAttemptedReleaseActionDuration": f"{20 + len(service)}.{len(service) * 131 % 1000:03d}s",
            "lastAttemptedRevision": chart_version,
            "observedGeneration": observed,
            "storageNamespace": service,
        },
    }
    if suspended:
        hr["spec"]["suspend"] = True
        hr["metadata"]["annotations"] = {
            "acme-shop.io/suspended-reason": "Paused during the SES to Postmark migration (INC-2291); "
                                             "resume after the cut-over",
        }
    chart_created = created + timedelta(seconds=2)
    chart_status: dict[str, Any] = {
        "artifact": {
            "digest": f"sha256:{sha256('chart', cluster, service, chart_version)}",
            "lastUpdateTime": ts(last_deployed - timedelta(seconds=20)),
            "path": f"helmchart/flux-system/{chart_name}/{service}-{chart_version}.tgz",
            "revision": chart_version,
            "size": 4100 + len(service) * 97,
            "url": f"http://source-controller.flux-system.svc.cluster.local./helmchart/flux-system/{chart_name}/"
                   f"{service}-{chart_version}.tgz",
        },
        "conditions": [
            {"lastTransitionTime": ts(last_deployed - timedelta(seconds=20)),
             "message": f"pulled '{service}' chart with version '{chart_version}'", "observedGeneration": 1,
             "reason": "ChartPullSucceeded", "status": "True", "type": "Ready"},
            {"lastTransitionTime": ts(last_deployed - timedelta(seconds=20)),
             "message": f"pulled '{service}' chart with version '{chart_version}'", "observedGeneration": 1,
             "reason": "ChartPullSucceeded", "status": "True", "type": "ArtifactInStorage"},
        ],
        "observedChartName": service,
        "observedGeneration": 1,
        "url": f"http://source-controller.flux-system.svc.cluster.local./helmchart/flux-system/{chart_name}/latest.tar.gz",
    }
    if legacy:
        chart_status["observedSourceArtifactRevision"] = f"sha256:{sha256('index', cluster)}"
    chart = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": meta(cluster, "HelmChart", "flux-system", chart_name, chart_created, generation=1,
                         labels={"helm.toolkit.fluxcd.io/name": service,
                                 "helm.toolkit.fluxcd.io/namespace": service},
                         finalizers=["finalizers.fluxcd.io"]),
        "spec": {
            "chart": service,
            "interval": "10m0s",
            "reconcileStrategy": "ChartVersion",
            "sourceRef": {"kind": "HelmRepository", "name": repo_name},
            "version": chart_version,
        },
        "status": chart_status,
    }
    owner = {"tool": "flux-hr", "name": service, "namespace": service}
    del overlay
    return [hr, chart], owner


# ---------------------------------------------------------------------------------------
# Cluster folders
def build_cluster(cluster: str) -> dict[str, list[dict[str, Any]]]:
    if cluster == HUB:
        return build_hub()
    tool, env, overlay, services, day = CLUSTERS[cluster]
    files: dict[str, list[dict[str, Any]]] = {}
    if tool == "hub":
        # Only the workloads: the Applications that put them there live on mgmt-hub.
        return {"workloads.yaml": hub_workloads(cluster)} if cluster in HUB_READ else {}
    workloads: list[dict[str, Any]] = []
    if tool == "argo":
        files["argocd/appprojects.yaml"] = argo_projects(cluster, day)
        apps: list[dict[str, Any]] = []
        for service in services:
            app, owner = argo_app(cluster, service, day)
            apps.append(app)
            if owner is None:
                continue
            created = at(day, 10) + jitter(cluster, service, minutes=300) + timedelta(minutes=1, seconds=5)
            n_versions = len(app["status"].get("history", []))
            state = "deadline-exceeded" if (cluster == "staging-eu-1" and service == "payments") else "healthy"
            chart = chart_of(cluster, service) if service in HELM else None
            workloads.append(make_service(cluster, service, created, owner, runs(cluster, service), chart))
            workloads.append(make_workload(cluster, service, owner, created, generation=1 + n_versions,
                                           helm_chart=chart, state=state))
        in_argocd = [a for a in apps if a["metadata"]["namespace"] == "argocd"]
        elsewhere = [a for a in apps if a["metadata"]["namespace"] != "argocd"]
        files["argocd/applications.yaml"] = in_argocd
        if elsewhere:
            files["team-checkout/applications.yaml"] = elsewhere
    else:
        sources = [git_repository(cluster, day), *helm_repositories(cluster, day)]
        files["flux-system/sources.yaml"] = sources
        files["flux-system/kustomizations.yaml"] = [flux_root_kustomization(cluster, services, day)] + [
            flux_kustomization(cluster, s, day) for s in services]
        releases: list[dict[str, Any]] = []
        for service in services:
            created = at(day, 8, 47) + jitter(cluster, service, "wl", minutes=50)
            if service in HELM:
                objs, owner = flux_helmrelease(cluster, service, day)
                releases.extend(objs)
                chart = HELM[service][0]
                generation = len(objs[0]["status"]["history"]) + 1
            else:
                owner = {"tool": "flux-ks", "name": service, "namespace": "flux-system",
                         "rollout_at": at(29, 14, 49, 29)}
                chart = None
                generation = 4 + len(service) % 5
            state = "rolling-out" if (cluster == "prod-us-1" and service == "orders") else "healthy"
            workloads.append(make_service(cluster, service, created, owner, runs(cluster, service), chart))
            workloads.append(make_workload(cluster, service, owner, created, generation=generation,
                                           helm_chart=chart, state=state))
        files["flux-system/helm.yaml"] = releases
    files["workloads.yaml"] = workloads
    return files


# ---------------------------------------------------------------------------------------
# The hub (mgmt-hub): Argo CD's own namespace as `kubectl get -n argocd -o yaml` prints it.
def hub_destinations() -> list[str]:
    return [c for c, (tool, *_rest) in CLUSTERS.items() if tool == "hub"]


def hub_apps() -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    return [argo_app(cluster, service, CLUSTERS[cluster][4])
            for cluster in hub_destinations() for service in CLUSTERS[cluster][3]]


def hub_workloads(cluster: str) -> list[dict[str, Any]]:
    """A destination's workloads, tracked by the hub's apps (tracking-id names the hub app)."""
    objects: list[dict[str, Any]] = []
    day = CLUSTERS[cluster][4]
    for service in CLUSTERS[cluster][3]:
        app, owner = argo_app(cluster, service, day)
        assert owner is not None
        created = at(day, 10) + jitter(cluster, service, minutes=300) + timedelta(minutes=1, seconds=5)
        chart = chart_of(cluster, service) if service in HELM else None
        objects.append(make_service(cluster, service, created, owner, runs(cluster, service), chart))
        objects.append(make_workload(cluster, service, owner, created,
                                     generation=1 + len(app["status"].get("history", [])), helm_chart=chart))
    return objects


def cluster_secret(cluster: str) -> dict[str, Any]:
    """A declarative cluster Secret with its name and server only. A real one also carries
    `config` (bearer token, TLS client key); the demo has none, and the portal never reads it."""
    data = {"name": cluster, "server": HUB_SERVERS[cluster]}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta(HUB, "Secret", "argocd", f"cluster-{cluster}", at(HUB_DAY, 9, 30) + jitter(cluster,
                         minutes=600), generation=None,
                         labels={"argocd.argoproj.io/secret-type": "cluster", "acme-shop.io/region": cluster[-4:]}),
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(data.items())},
    }


def hub_project() -> dict[str, Any]:
    """Project `regions`: the new regions, with a deny window (launch freeze) on prod-sa-1."""
    destinations = [{"namespace": "*", "server": HUB_SERVERS[c]} for c in hub_destinations()
                    if c not in HUB_BY_NAME]
    destinations += [{"name": c, "namespace": "*"} for c in sorted(HUB_BY_NAME)]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta(HUB, "AppProject", "argocd", "regions", at(HUB_DAY, 9, 12, 40), generation=3),
        "spec": {
            "clusterResourceWhitelist": [{"group": "", "kind": "Namespace"}],
            "description": "Regions rolled out from the management cluster",
            "destinations": destinations,
            "sourceRepos": [REPO_URL, CHART_REPO],
            # Argo CD applies a window to an app matching any of its lists: clusters only here.
            "syncWindows": [{
                "clusters": [HUB_SERVERS["prod-sa-1"]],
                "description": "Launch freeze: prod-sa-1 takes customer traffic from 2026-12-07; "
                               "changes only through the launch checklist",
                "duration": "24h",
                "kind": "deny",
                "manualSync": False,
                "schedule": "0 0 * * *",
                "timeZone": "America/Sao_Paulo",
            }],
        },
        "status": {},
    }


def build_hub() -> dict[str, list[dict[str, Any]]]:
    default = argo_projects(HUB, HUB_DAY)[0]
    return {
        "argocd/appprojects.yaml": [default, hub_project()],
        "argocd/applications.yaml": [app for app, _owner in hub_apps()],
        "argocd/cluster-secrets.yaml": [cluster_secret(c) for c in hub_destinations()],
    }


# ---------------------------------------------------------------------------------------
# The Git repository the apps point at.
legacy_repo = "acme-charts-legacy"  # prod-us-1 pulls notifications from the classic Helm repository
FLUX_OVERLAYS = {overlay for tool, _e, overlay, _s, _d in CLUSTERS.values() if tool == "flux"}


def repo_files() -> dict[str, str]:
    files: dict[str, str] = {}
    files["README.md"] = (
        "# acme-shop/gitops\n\n"
        "Demo GitOps repository (turned into a local Git repository by `make run`).\n\n"
        "- `apps/<service>/base/`: the Kubernetes manifests of a Kustomize-based service.\n"
        "- `apps/<service>/overlays/<env>/kustomization.yaml`: pins the image tag for that\n"
        "  environment with a kustomize `images:` entry.\n"
        "- Helm-based services (frontend, search, notifications) keep `values.yaml` in each\n"
        "  overlay (`image.repository`, `image.tag`); Argo CD reads it as a `$values` file,\n"
        "  Flux through a HelmRelease + ConfigMap generated from the same file.\n"
        "- `clusters/<cluster>/`: what each Flux cluster's `flux-system` Kustomization applies.\n"
        "- `overlays/prod-ap` is the prod overlay for prod-ap-1, which pulls from the regional mirror.\n"
    )
    for overlay, pins in PINS.items():
        env = "prod" if overlay.startswith("prod") else overlay
        for service, version in pins.items():
            team = TEAMS[service]
            d = f"apps/{service}/overlays/{overlay}"
            if service in HELM:
                chart_version = HELM[service][0]
                repo = f"{MIRROR}/{service}" if overlay == "prod-ap" else f"ghcr.io/acme-shop/{service}"
                files[f"{d}/values.yaml"] = (
                    f"# {service} in {overlay}: the image tag below is what this environment runs.\n"
                    f"replicaCount: {replicas_for(env, service)}\n\n"
                    "image:\n"
                    f"  repository: {repo}\n"
                    f"  tag: \"{version}\"\n"
                    "  pullPolicy: IfNotPresent\n\n"
                    "podLabels:\n"
                    f"  acme-shop.io/team: {team}\n\n"
                    "resources:\n  requests:\n    cpu: 100m\n    memory: 256Mi\n  limits:\n    memory: 512Mi\n"
                )
                if overlay not in FLUX_OVERLAYS:
                    continue  # Argo CD reads values.yaml only (a $values file of a multi-source app)
                chart_repo = legacy_repo if (service, overlay) == ("notifications", "prod") else "acme-charts"
                files[f"{d}/kustomization.yaml"] = (
                    "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                    "kind: Kustomization\n"
                    f"namespace: {service}\n"
                    "resources:\n"
                    "  - helmrelease.yaml\n"
                    "configMapGenerator:\n"
                    f"  - name: {service}-values\n"
                    "    files:\n"
                    "      - values.yaml\n"
                    "generatorOptions:\n"
                    "  disableNameSuffixHash: true\n"
                )
                files[f"{d}/helmrelease.yaml"] = (
                    "apiVersion: helm.toolkit.fluxcd.io/v2\n"
                    "kind: HelmRelease\n"
                    "metadata:\n"
                    f"  name: {service}\n"
                    f"  namespace: {service}\n"
                    "spec:\n"
                    "  interval: 10m0s\n"
                    "  chart:\n"
                    "    spec:\n"
                    f"      chart: {service}\n"
                    f"      version: \"{chart_version}\"\n"
                    "      sourceRef:\n"
                    "        kind: HelmRepository\n"
                    f"        name: {chart_repo}\n"
                    "        namespace: flux-system\n"
                    "  install:\n"
                    "    remediation:\n"
                    "      retries: 3\n"
                    "  upgrade:\n"
                    "    remediation:\n"
                    "      retries: 3\n"
                    "      remediateLastFailure: true\n"
                    "  valuesFrom:\n"
                    "    - kind: ConfigMap\n"
                    f"      name: {service}-values\n"
                )
                continue
            image = f"ghcr.io/acme-shop/{service}"
            entry = f"  - name: {image}\n"
            if overlay == "prod-ap":
                entry += f"    newName: {MIRROR}/{service}\n"
            entry += f"    newTag: \"{version}\"\n"
            files[f"{d}/kustomization.yaml"] = (
                "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                "kind: Kustomization\n"
                f"namespace: {service}\n"
                "resources:\n"
                "  - ../../base\n"
                "labels:\n"
                "  - pairs:\n"
                f"      acme-shop.io/environment: {env}\n"
                "images:\n" + entry +
                "replicas:\n"
                f"  - name: {service}\n"
                f"    count: {replicas_for(env, service)}\n"
            )
    # Bases for the Kustomize-based services.
    for service in TEAMS:
        if service in HELM:
            continue
        d = f"apps/{service}/base"
        port = PORTS.get(service, 8080)
        kind = "StatefulSet" if service in STATEFUL else "Deployment"
        extra = f"  serviceName: {service}\n" if kind == "StatefulSet" else ""
        pvc = (
            "  volumeClaimTemplates:\n"
            "    - metadata:\n"
            "        name: data\n"
            "      spec:\n"
            "        accessModes: [ReadWriteOnce]\n"
            "        storageClassName: premium-rwo\n"
            "        resources:\n"
            "          requests:\n"
            "            storage: 20Gi\n"
        ) if kind == "StatefulSet" else ""
        files[f"{d}/{kind.lower()}.yaml"] = (
            "apiVersion: apps/v1\n"
            f"kind: {kind}\n"
            "metadata:\n"
            f"  name: {service}\n"
            "  labels:\n"
            f"    app.kubernetes.io/name: {service}\n"
            "    app.kubernetes.io/part-of: acme-shop\n"
            "spec:\n"
            f"{extra}"
            "  replicas: 1\n"
            "  selector:\n"
            "    matchLabels:\n"
            f"      app.kubernetes.io/name: {service}\n"
            "  template:\n"
            "    metadata:\n"
            "      labels:\n"
            f"        app.kubernetes.io/name: {service}\n"
            "      annotations:\n"
            "        prometheus.io/scrape: \"true\"\n"
            "        prometheus.io/port: \"9090\"\n"
            "    spec:\n"
            f"      serviceAccountName: {service}\n"
            "      securityContext:\n"
            "        runAsUser: 65532\n"
            "        fsGroup: 65532\n"
            "      containers:\n"
            f"        - name: {service}\n"
            f"          image: ghcr.io/acme-shop/{service}:latest  # tag set per environment in overlays/*\n"
            "          ports:\n"
            f"            - {{name: http, containerPort: {port}}}\n"
            "            - {name: metrics, containerPort: 9090}\n"
            "          env:\n"
            f"            - {{name: OTEL_SERVICE_NAME, value: {service}}}\n"
            "            - {name: LOG_FORMAT, value: json}\n"
            "          readinessProbe:\n"
            "            httpGet: {path: /readyz, port: http}\n"
            "          livenessProbe:\n"
            "            httpGet: {path: /healthz, port: http}\n"
            "            initialDelaySeconds: 10\n"
            "          resources:\n"
            "            requests: {cpu: 100m, memory: 256Mi}\n"
            "            limits: {memory: 512Mi}\n"
            "          securityContext:\n"
            "            allowPrivilegeEscalation: false\n"
            "            readOnlyRootFilesystem: true\n"
            "            runAsNonRoot: true\n"
            "            capabilities:\n"
            "              drop: [ALL]\n"
            f"{pvc}"
        )
        files[f"{d}/service.yaml"] = (
            "apiVersion: v1\n"
            "kind: Service\n"
            "metadata:\n"
            f"  name: {service}\n"
            "spec:\n"
            "  selector:\n"
            f"    app.kubernetes.io/name: {service}\n"
            "  ports:\n"
            "    - name: http\n"
            "      port: 80\n"
            "      targetPort: http\n"
        )
        files[f"{d}/serviceaccount.yaml"] = (
            "apiVersion: v1\n"
            "kind: ServiceAccount\n"
            "metadata:\n"
            f"  name: {service}\n"
        )
        files[f"{d}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\n"
            "kind: Kustomization\n"
            "resources:\n"
            f"  - serviceaccount.yaml\n"
            f"  - {kind.lower()}.yaml\n"
            "  - service.yaml\n"
        )
    # What each Flux cluster's root Kustomization applies.
    for cluster, (tool, _env, overlay, services, _day) in CLUSTERS.items():
        if tool != "flux":
            continue
        d = f"clusters/{cluster}"
        docs = []
        for service in services:
            docs.append(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
                "kind: Kustomization\n"
                "metadata:\n"
                f"  name: {service}\n"
                "  namespace: flux-system\n"
                "spec:\n"
                "  interval: 5m0s\n"
                "  retryInterval: 2m0s\n"
                "  timeout: 5m0s\n"
                f"  path: ./apps/{service}/overlays/{overlay}\n"
                "  prune: true\n"
                "  wait: true\n"
                "  sourceRef:\n"
                "    kind: GitRepository\n"
                "    name: flux-system\n"
            )
        files[f"{d}/apps.yaml"] = "---\n".join(docs)
        sources = (
            "apiVersion: source.toolkit.fluxcd.io/v1\n"
            "kind: HelmRepository\n"
            "metadata:\n"
            "  name: acme-charts\n"
            "  namespace: flux-system\n"
            "spec:\n"
            "  type: oci\n"
            "  provider: generic\n"
            "  interval: 10m0s\n"
            f"  url: {OCI_CHARTS}\n"
        )
        if cluster == "prod-us-1":
            sources += (
                "---\n"
                "apiVersion: source.toolkit.fluxcd.io/v1\n"
                "kind: HelmRepository\n"
                "metadata:\n"
                "  name: acme-charts-legacy\n"
                "  namespace: flux-system\n"
                "spec:\n"
                "  interval: 1h0m0s\n"
                f"  url: {CHART_REPO}\n"
            )
        files[f"{d}/sources.yaml"] = sources
        files[f"{d}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\n"
            "kind: Kustomization\n"
            "resources:\n"
            "  - flux-system\n"
            "  - sources.yaml\n"
            "  - apps.yaml\n"
        )
        files[f"{d}/flux-system/kustomization.yaml"] = (
            "# `flux bootstrap` writes gotk-components.yaml and gotk-sync.yaml here; left out of the demo.\n"
            "apiVersion: kustomize.config.k8s.io/v1beta1\n"
            "kind: Kustomization\n"
            "resources: []\n"
        )
    return files


def main() -> None:
    catalog = yaml.safe_load((HERE / "fleet.yaml").read_text())
    for service in catalog["services"]:
        TEAMS[service["name"]] = service["team"]
    for service, (team, _pins) in NEW_SERVICES.items():
        TEAMS.setdefault(service, team)
    for cluster in catalog["clusters"]:
        assert cluster["name"] in CLUSTERS or cluster["name"] == HUB, cluster["name"]

    if CLUSTERS_DIR.exists():
        shutil.rmtree(CLUSTERS_DIR)
    for cluster in [*CLUSTERS, HUB]:
        for rel, docs in build_cluster(cluster).items():
            tool = "hub" if cluster == HUB else CLUSTERS[cluster][0]
            what = {"argo": "Argo CD", "flux": "Flux", "hub": "Argo CD hub"}.get(tool, f"managed by {HUB}")
            header = f"cluster {cluster} ({what}): {rel}"
            dump_all(CLUSTERS_DIR / cluster / rel, docs, header)

    if REPO_DIR.exists():
        shutil.rmtree(REPO_DIR)
    for rel, text in repo_files().items():
        path = REPO_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {sum(1 for _ in CLUSTERS_DIR.rglob('*.yaml'))} cluster files, "
          f"{sum(1 for p in REPO_DIR.rglob('*') if p.is_file())} repo files")


if __name__ == "__main__":
    main()
