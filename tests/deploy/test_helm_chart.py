"""deploy/helm/gitops-portal, the one in-cluster install, rendered by Helm's own engine: the
helm-python-sdk package embeds Helm v4's Go SDK (no helm binary to download). Rendered with its
default values and with ci/full-values.yaml (everything on), every object is valid Kubernetes,
least privilege, and in step with what the portal reads and queues.

The RBAC checks compare the reader's roles with gitops.kinds.KINDS, the one table of what a poll
lists: a kind added there without its permission in files/reader-rules.yaml fails here, and so
does any grant beyond get/list on those kinds.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import promql_parser
import pytest
import yaml
from django.conf import settings

from gitops import kinds
from gitops.collectors.custom_health import CONFIGMAP, HEALTH_RULES
from gitops.kinds import BY_CAPABILITY, CAPABILITIES, KINDS

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "gitops-portal"
RELEASE = NAMESPACE = "gitops-portal"
KUBERNETES_VERSION = "1.30.0"  # a version every supported cluster serves these APIs at
READ_VERBS = {"get", "list"}
# The reader capability named in the chart for gitops' HEALTH_RULES (argocd-cm in Argo CD's namespace).
CHART_CAPABILITY = {HEALTH_RULES: "argocd-health-rules"}
# Capabilities read in one namespace only, granted by a Role there rather than a ClusterRole.
NAMESPACE_ONLY = {kinds.ARGOCD_CLUSTERS, HEALTH_RULES}
# What a poll reads besides gitops.kinds.KINDS: Argo CD's argocd-cm (the custom kinds its rules
# cover are the operator's to grant, one per rule written).
EXTRA_READS = {HEALTH_RULES: (CONFIGMAP,)}
VARIANTS = ("default", "full")

# What `kubectl kustomize deploy/kubernetes` installed before the chart replaced it (read from its
# output at e60b3a4), as (kind, name, namespace when not the release's). The chart must install
# the same, less the Namespace: Helm installs into a namespace that exists (or that
# `--create-namespace` makes), and a chart holding its own release namespace fails to install.
KUSTOMIZE_PORTAL = {
    ("ServiceAccount", "gitops-portal", None), ("ServiceAccount", "gitops-portal-reader", None),
    ("Role", "gitops-portal-read-argocd-clusters", "argocd"),
    ("Role", "gitops-portal-read-argocd-health-rules", "argocd"),
    ("RoleBinding", "gitops-portal-read-argocd-clusters", "argocd"),
    ("RoleBinding", "gitops-portal-read-argocd-health-rules", "argocd"),
    *{(kind, f"gitops-portal-read-{capability}", None)
      for kind in ("ClusterRole", "ClusterRoleBinding")
      for capability in ("argocd", "argocd-projects", "flux-helm", "flux-kustomize", "flux-notifications",
                         "flux-sources", "rollouts", "workloads")},
    ("ConfigMap", "gitops-portal-config", None), ("Service", "gitops-portal", None),
    ("Deployment", "gitops-portal-beat", None), ("Deployment", "gitops-portal-web", None),
    ("Deployment", "gitops-portal-worker-background", None), ("Deployment", "gitops-portal-worker-poll", None),
    ("Job", "gitops-portal-migrate", None),
    ("NetworkPolicy", "gitops-portal-no-ingress", None), ("NetworkPolicy", "gitops-portal-web-ingress", None),
}
# What `kubectl kustomize deploy/agent` installed besides the reader's objects above.
KUSTOMIZE_AGENT = {("Deployment", "gitops-portal-agent", None),
                   ("NetworkPolicy", "gitops-portal-agent-no-ingress", None)}


MONITORING = "monitoring.coreos.com/v1"
DASHBOARD = CHART / "dashboards" / "gitops-portal.json"


def full_values() -> dict[str, Any]:
    return yaml.safe_load((CHART / "ci" / "full-values.yaml").read_text())


def render(values: dict[str, Any] | None = None) -> list[dict]:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [doc for path, text in sorted(files.items()) if path.endswith(".yaml")
            for doc in yaml.safe_load_all(text) if doc]


@functools.cache
def rendered(variant: str) -> tuple[dict, ...]:
    return tuple(render(full_values() if variant == "full" else None))


def objects(variant: str, kind: str) -> list[dict]:
    return [doc for doc in rendered(variant) if doc["kind"] == kind]


def settings_config_map(variant: str) -> dict:
    """The ConfigMap of settings (`config`); the dashboard's is another."""
    [config] = [doc for doc in objects(variant, "ConfigMap") if doc["metadata"]["name"].endswith("-config")]
    return config


def pod_specs(variant: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc["spec"]["template"]["spec"]
            for doc in objects(variant, "Deployment") + objects(variant, "Job")}


def containers(variant: str) -> list[tuple[str, dict]]:
    return [(name, container) for name, spec in pod_specs(variant).items()
            for container in spec.get("initContainers", []) + spec["containers"]]


def installed(variant: str) -> set[tuple[str, str, str | None]]:
    return {(doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace")) for doc in rendered(variant)}


@pytest.mark.parametrize("values", [None, "ci/full-values.yaml"])
def test_the_chart_lints_clean_with_helm(values):
    report = helm.lint(str(CHART), full_values() if values else None, strict=True, namespace=NAMESPACE,
                       kube_version=f"v{KUBERNETES_VERSION}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(variant):
    assert len(rendered(variant)) > 20
    for doc in rendered(variant):
        if doc["apiVersion"] == MONITORING:
            continue  # the Prometheus Operator's CRDs, which kubernetes-validate does not know: below
        # strict: an unknown or misspelt field is an error, not silently dropped by the API server
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_chart_installs_what_the_kustomize_folder_did():
    assert installed("default") == KUSTOMIZE_PORTAL | {("PodDisruptionBudget", "gitops-portal-web", None)}
    # full-values.yaml puts Argo CD in "argo-cd": the reader's Roles follow it there.
    moved = {(kind, name, "argocd" if namespace == "argo-cd" else namespace)
             for kind, name, namespace in installed("full")}
    assert moved == KUSTOMIZE_PORTAL | KUSTOMIZE_AGENT | {
        ("Ingress", "gitops-portal", None),
        ("PodDisruptionBudget", "gitops-portal-web", None),
        ("PodDisruptionBudget", "gitops-portal-worker-poll", None),
        ("PodDisruptionBudget", "gitops-portal-worker-background", None),
        # Prometheus, which the kustomize folder had none of.
        ("ServiceMonitor", "gitops-portal", None), ("PodMonitor", "gitops-portal-workers", None),
        ("PrometheusRule", "gitops-portal", None), ("NetworkPolicy", "gitops-portal-metrics-ingress", None),
        ("ConfigMap", "gitops-portal-dashboard", None),
    }
    # One source of truth: the kustomize folders are gone, not kept beside the chart.
    assert sorted((ROOT / "deploy").rglob("kustomization.yaml")) == []


def test_an_agent_only_install_is_the_agent_and_its_reader():
    docs = render({"portal": {"enabled": False},
                   "agent": {"enabled": True, "cluster": "prod-eu-1", "portalURL": "https://portal.example.com"}})
    readers = {key for key in KUSTOMIZE_PORTAL if "read" in key[1]}
    got = {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in docs}
    assert got == readers | KUSTOMIZE_AGENT
    with pytest.raises(helm.HelmError, match="agent.cluster"):
        render({"agent": {"enabled": True}})


@pytest.mark.parametrize("variant", VARIANTS)
def test_images_carry_a_version_never_latest(variant):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == version, "the chart's appVersion is the portal's version"
    for name, container in containers(variant):
        image = container["image"]
        reference, _, digest = image.partition("@")
        repository, _, tag = reference.rpartition(":")
        assert repository and "/" not in tag and tag != "latest", (name, image)
        if variant == "default":
            assert (tag, digest) == (chart["appVersion"], ""), (name, image)
        else:
            assert digest.startswith("sha256:"), (name, image)
    with pytest.raises(helm.HelmValuesError):
        render({"image": {"tag": "latest"}})


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_deployment_has_probes_and_the_web_probes_are_the_health_endpoints(variant):
    for deployment in objects(variant, "Deployment"):
        name = deployment["metadata"]["name"]
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert "livenessProbe" in container, name
    (web,) = [d for d in objects(variant, "Deployment") if d["metadata"]["name"] == "gitops-portal-web"]
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    # Django answers only the hosts it allows: the kubelet's probes name one of them.
    config = settings_config_map(variant)
    allowed = config["data"]["ALLOWED_HOSTS"].split(",")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        (header,) = container[probe]["httpGet"]["httpHeaders"]
        assert header["name"] == "Host"
        host = header["value"]
        # as Django matches: exactly, or ".example.com" for example.com and its subdomains
        assert host in allowed or any(a.startswith(".") and (host == a[1:] or host.endswith(a)) for a in allowed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_container_has_resources_and_a_memory_limit(variant):
    for name, container in containers(variant):
        resources = container["resources"]
        assert resources["requests"].keys() >= {"cpu", "memory"}, name
        assert "memory" in resources["limits"], name


@pytest.mark.parametrize("variant", VARIANTS)
def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook(variant):
    (job,) = objects(variant, "Job")
    annotations = job["metadata"]["annotations"]
    assert set(annotations["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["command"] == ["python", "manage.py", "migrate", "--noinput"]
    # A pre-install hook runs before the release's own objects exist: it may name none of them.
    assert "serviceAccountName" not in spec
    assert container["envFrom"] == [{"secretRef": {"name": "gitops-portal-env"}}]
    config = settings_config_map(variant)
    assert {e["name"]: e["value"] for e in container["env"]} == config["data"]


def test_cluster_roles_grant_exactly_get_and_list_on_the_kinds_the_portal_reads():
    granted: dict[tuple[str, str], set[str]] = defaultdict(set)
    for role in objects("default", "ClusterRole") + objects("default", "Role"):
        for rule in role["rules"]:
            assert "nonResourceURLs" not in rule and "resourceNames" not in rule, role["metadata"]["name"]
            verbs = set(rule["verbs"])
            assert verbs == READ_VERBS, f"{role['metadata']['name']} grants {sorted(verbs)}"
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    assert "*" not in group and "*" not in resource
                    assert "/" not in resource, f"subresource {resource} is never read"
                    granted[(group, resource)] |= verbs
    read = {(kind.group, kind.plural) for kind in (*KINDS, *(k for extra in EXTRA_READS.values() for k in extra))}
    assert set(granted) - read == set(), "granted but never read"
    assert read - set(granted) == set(), "read without a permission in files/reader-rules.yaml"


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_capability_is_one_separable_role_bound_only_to_the_reader(variant):
    argocd_namespace = full_values()["reader"]["argocdNamespace"] if variant == "full" else "argocd"
    docs = rendered(variant)
    for capability in (*CAPABILITIES, *EXTRA_READS):
        name = f"gitops-portal-read-{CHART_CAPABILITY.get(capability, capability)}"
        namespace = argocd_namespace if capability in NAMESPACE_ONLY else None
        role_kind = "Role" if namespace else "ClusterRole"
        (role,) = [d for d in docs if d["kind"] == role_kind and d["metadata"]["name"] == name]
        (binding,) = [d for d in docs if d["kind"] == f"{role_kind}Binding" and d["metadata"]["name"] == name]
        assert role["metadata"].get("namespace") == namespace == binding["metadata"].get("namespace")
        resources = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
        assert resources == {(k.group, k.plural) for k in BY_CAPABILITY.get(capability) or EXTRA_READS[capability]}
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gitops-portal-reader",
                                        "namespace": NAMESPACE}]
    assert not any(doc["roleRef"]["name"] == "cluster-admin" for doc in objects(variant, "ClusterRoleBinding"))
    # Secrets are granted in Argo CD's namespace only, never cluster-wide.
    assert not any("secrets" in rule["resources"] for role in objects(variant, "ClusterRole") for rule in role["rules"])


def test_a_capability_turned_off_drops_only_its_role():
    docs = render({"reader": {"argocdNamespace": "argocd", "capabilities": {"argocd-clusters": False}}})
    names = {d["metadata"]["name"] for d in docs if d["kind"] in ("Role", "RoleBinding")}
    assert names == {"gitops-portal-read-argocd-health-rules"}
    assert len([d for d in docs if d["kind"] == "ClusterRole"]) == len(CAPABILITIES) - 1  # argocd-clusters is a Role


@pytest.mark.parametrize("variant", VARIANTS)
def test_pods_run_as_non_root_without_privilege_and_only_readers_hold_a_cluster_token(variant):
    for name, spec in pod_specs(variant).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
        holds_token = spec["automountServiceAccountToken"]
        assert holds_token is (name in {"gitops-portal-worker-poll", "gitops-portal-agent"}), name
        if holds_token:
            assert spec["serviceAccountName"] == "gitops-portal-reader"
    for account in objects(variant, "ServiceAccount"):
        assert account["automountServiceAccountToken"] is False


@pytest.mark.parametrize("variant", VARIANTS)
def test_workers_consume_every_queue_polls_alone(variant):
    queues: list[str] = []
    for name, spec in pod_specs(variant).items():
        command = spec["containers"][0]["command"]
        if "worker" in command:
            consumed = command[command.index("--queues") + 1].split(",")
            if settings.POLL_QUEUE in consumed:
                assert consumed == [settings.POLL_QUEUE], f"{name}: polls share no process with other work"
            queues += consumed
    assert sorted(queues) == sorted(settings.PORTAL_QUEUES)


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_secret_is_in_the_chart_and_every_pod_reads_settings_from_the_named_secret(variant):
    assert objects(variant, "Secret") == []
    for name, spec in pod_specs(variant).items():
        env_from = spec["containers"][0]["envFrom"]
        secret = "gitops-portal-agent" if name == "gitops-portal-agent" else "gitops-portal-env"
        assert {"secretRef": {"name": secret}} in env_from, name
    config = settings_config_map(variant)
    assert not {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} & set(config["data"])
    with pytest.raises(helm.HelmValuesError):
        render({"config": {"SECRET_KEY": "in-values"}})


def test_the_agent_runs_the_agent_command_and_needs_no_database():
    (agent,) = [d for d in objects("full", "Deployment") if d["metadata"]["name"] == "gitops-portal-agent"]
    container = agent["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["python", "manage.py", "agent"]
    # Its liveness is the age of the file its loop touches (gitops/management/commands/agent.py).
    env = {item["name"]: item["value"] for item in container["env"]}
    probe = " ".join(container["livenessProbe"]["exec"]["command"])
    assert "$PORTAL_AGENT_HEARTBEAT_FILE" in probe and env["PORTAL_AGENT_HEARTBEAT_FILE"].startswith("/tmp/")
    assert container["command"][3:] == ["--cluster", "prod-eu-1", "--portal", "https://portal.example.com",
                                        "--argocd-namespace", "argo-cd"]
    assert all("configMapRef" not in ref for ref in container["envFrom"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_only_the_web_pods_accept_connections(variant):
    covered = set()
    for policy in objects(variant, "NetworkPolicy"):
        selector = policy["spec"]["podSelector"]
        components = {selector.get("matchLabels", {}).get("app.kubernetes.io/component")} - {None}
        for expression in selector.get("matchExpressions", []):
            components |= set(expression["values"])
        if policy["spec"].get("ingress") and policy["metadata"]["name"].endswith("-metrics-ingress"):
            # The scraper's way in: the web's port and the workers' metrics port, nothing else.
            [rule] = policy["spec"]["ingress"]
            assert {port["port"] for port in rule["ports"]} == {8000, 9808}
            assert components == {"web", "worker-poll", "worker-background"}
        elif policy["spec"].get("ingress"):
            assert components == {"web"}
        covered |= components
    expected = {"web", "worker-poll", "worker-background", "beat", "migrate"}
    assert covered == (expected | {"agent"} if variant == "full" else expected)


# --- Prometheus: the monitors, the rules and the dashboard ------------------------------------


def exported_series() -> set[str]:
    """Every series name /metrics can answer with (portal.kernel.metrics and the scrape's own)."""
    from prometheus_client import Counter, Gauge, Histogram

    from portal.kernel import metrics

    names = {metrics.CLUSTER_LAST_OK_AGE, metrics.CLUSTER_NEVER_OK, metrics.QUEUE_DEPTH}
    for series in vars(metrics).values():
        if isinstance(series, Counter):
            names.add(f"{series._name}_total")
        elif isinstance(series, Histogram):
            names |= {f"{series._name}{suffix}" for suffix in ("_bucket", "_sum", "_count")}
        elif isinstance(series, Gauge):
            names.add(series._name)
    return names


def check_promql(expr: str) -> set[str]:
    promql_parser.parse(expr)  # raises on anything Prometheus's grammar refuses
    named = set(re.findall(r"\bportal_[a-z_]+\b", expr))
    assert named, expr
    assert named <= exported_series(), (expr, named - exported_series())
    return named


def test_the_monitors_are_off_by_default_and_on_in_full_values():
    assert [doc for doc in rendered("default") if doc["apiVersion"] == MONITORING] == []
    monitors = {(doc["kind"], doc["metadata"]["name"]) for doc in rendered("full") if doc["apiVersion"] == MONITORING}
    assert monitors == {("ServiceMonitor", "gitops-portal"), ("PodMonitor", "gitops-portal-workers"),
                        ("PrometheusRule", "gitops-portal")}
    [service_monitor] = objects("full", "ServiceMonitor")
    [endpoint] = service_monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("http", "/metrics")
    assert endpoint["authorization"]["credentials"] == {"name": "gitops-portal-env", "key": "PORTAL_METRICS_TOKEN"}
    [service] = objects("full", "Service")
    assert service["spec"]["selector"].items() <= service_monitor["spec"]["selector"]["matchLabels"].items()
    assert "http" in {port["name"] for port in service["spec"]["ports"]}
    [pod_monitor] = objects("full", "PodMonitor")
    scraped = set(pod_monitor["spec"]["selector"]["matchExpressions"][0]["values"])
    workers = {doc["metadata"]["name"].removeprefix("gitops-portal-"): doc for doc in objects("full", "Deployment")
               if doc["metadata"]["name"].startswith("gitops-portal-worker-")}
    assert scraped == set(workers)
    for worker in workers.values():
        [container] = worker["spec"]["template"]["spec"]["containers"]
        assert {"name": "metrics", "containerPort": 9808} in container["ports"]
        assert {"name": "PORTAL_METRICS_WORKER_PORT", "value": "9808"} in container["env"]


def test_every_alert_is_valid_promql_over_series_the_portal_exports():
    [rule] = objects("full", "PrometheusRule")
    [group] = rule["spec"]["groups"]
    alerts = {item["alert"]: item for item in group["rules"]}
    assert {"GitOpsPortalClusterStale", "GitOpsPortalQueueGrowing", "GitOpsPortalForgeRateLimitLow",
            "GitOpsPortalNotificationsFailing"} <= set(alerts)
    named = set()
    for alert in alerts.values():
        named |= check_promql(alert["expr"])
        assert alert["labels"]["severity"] and alert["annotations"]["summary"]
    assert "portal_cluster_last_ok_age_seconds" in alerts["GitOpsPortalClusterStale"]["expr"]
    assert "> 600" in alerts["GitOpsPortalClusterStale"]["expr"]  # stale after 10 minutes
    assert {"portal_queue_depth", "portal_forge_rate_limit_remaining", "portal_notifications_total"} <= named


def test_the_dashboard_graphs_only_series_the_portal_exports():
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "gitops-portal"
    named = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            named |= check_promql(target["expr"])
    # Shipped as it is for Grafana's sidecar when asked.
    [config_map] = [doc for doc in objects("full", "ConfigMap") if doc["metadata"]["name"].endswith("-dashboard")]
    assert json.loads(config_map["data"]["gitops-portal.json"]) == dashboard
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    # Every series the portal exports is on it, one way or another.
    families = {re.sub(r"_(bucket|sum|count)$", "", name) for name in exported_series()}
    assert families <= {re.sub(r"_(bucket|sum|count)$", "", name) for name in named}
