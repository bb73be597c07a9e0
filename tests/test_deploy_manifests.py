"""deploy/: the in-cluster install (kubernetes/), the agent's (agent/) and what both share
(reader/) are valid Kubernetes, least privilege, and in step with what the portal reads.

The RBAC check compares the ClusterRoles with gitops.kinds.KINDS, the one table of what a poll
lists: a kind added there without its permission here fails this test, and so does any grant
beyond get/list on those kinds.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.conf import settings

from gitops import kinds
from gitops.collectors.health import CONFIGMAP, HEALTH_RULES
from gitops.kinds import BY_CAPABILITY, CAPABILITIES, KINDS

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
INSTALLS = ("kubernetes", "agent")  # each applied with `kubectl apply -k deploy/<install>`
KUBERNETES_VERSION = "1.30.0"  # a version every supported cluster serves these APIs at
READ_VERBS = {"get", "list"}
# Capabilities read in one namespace only, granted by a Role there rather than a ClusterRole.
NAMESPACE_ONLY = {kinds.ARGOCD_CLUSTERS: "argocd", HEALTH_RULES: "argocd"}
# What a poll reads besides gitops.kinds.KINDS: Argo CD's argocd-cm (the custom kinds its rules
# cover are the operator's to grant, one per rule written).
EXTRA_READS = {HEALTH_RULES: (CONFIGMAP,)}


def _documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _manifests() -> dict[str, list[dict]]:
    return {
        str(path.relative_to(DEPLOY)): _documents(path)
        for path in sorted(DEPLOY.rglob("*.yaml"))
        if path.name != "kustomization.yaml"
    }


def _objects(kind: str) -> list[dict]:
    return [doc for docs in _manifests().values() for doc in docs if doc["kind"] == kind]


def _kustomized(folder: Path) -> set[Path]:
    """The files a kustomization folder builds, following folder resources as kustomize does."""
    built: set[Path] = set()
    for entry in yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]:
        path = (folder / entry).resolve()
        assert path.is_relative_to(DEPLOY), entry
        built |= _kustomized(path) if path.is_dir() else {path}
    return built


def _pod_specs() -> dict[str, dict]:
    specs = {}
    for doc in _objects("Deployment") + _objects("Job"):
        specs[doc["metadata"]["name"]] = doc["spec"]["template"]["spec"]
    return specs


@pytest.mark.parametrize("name", sorted(_manifests()))
def test_every_manifest_validates_against_the_kubernetes_schemas(name):
    for doc in _manifests()[name]:
        # strict: an unknown or misspelt field is an error, not silently dropped by the API server
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_installs_build_every_manifest_and_only_existing_files():
    built = set().union(*(_kustomized(DEPLOY / install) for install in INSTALLS))
    assert {str(p.relative_to(DEPLOY)) for p in built} == set(_manifests())
    for install in INSTALLS:
        assert DEPLOY / "reader" / "rbac" / "workloads.yaml" in _kustomized(DEPLOY / install)


def test_cluster_roles_grant_exactly_get_and_list_on_the_kinds_the_portal_reads():
    granted: dict[tuple[str, str], set[str]] = defaultdict(set)
    for role in _objects("ClusterRole") + _objects("Role"):
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
    assert read - set(granted) == set(), "read without a permission in deploy/reader/rbac"


def test_each_capability_is_one_separable_role_bound_only_to_the_reader():
    for capability in (*CAPABILITIES, *EXTRA_READS):
        file = "argocd-health-rules" if capability == HEALTH_RULES else capability
        docs = _documents(DEPLOY / "reader" / "rbac" / f"{file}.yaml")
        namespace = NAMESPACE_ONLY.get(capability)
        role_kind = "Role" if namespace else "ClusterRole"
        (role,) = [d for d in docs if d["kind"] == role_kind]
        (binding,) = [d for d in docs if d["kind"] == f"{role_kind}Binding"]
        assert role["metadata"].get("namespace") == namespace == binding["metadata"].get("namespace")
        resources = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
        assert resources == {(k.group, k.plural) for k in BY_CAPABILITY.get(capability) or EXTRA_READS[capability]}
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                      "name": role["metadata"]["name"]}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gitops-portal-reader",
                                        "namespace": "gitops-portal"}]
    assert not any(doc["roleRef"]["name"] == "cluster-admin" for doc in _objects("ClusterRoleBinding"))
    # Secrets are granted in Argo CD's namespace only, never cluster-wide.
    assert not any("secrets" in rule["resources"] for role in _objects("ClusterRole") for rule in role["rules"])


def test_pods_run_as_non_root_without_privilege_and_only_readers_hold_a_cluster_token():
    for name, spec in _pod_specs().items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert "memory" in container["resources"]["limits"], name
        holds_token = spec["automountServiceAccountToken"]
        assert holds_token is (name in {"gitops-portal-worker-poll", "gitops-portal-agent"}), name
        if holds_token:
            assert spec["serviceAccountName"] == "gitops-portal-reader"


def test_workers_consume_every_queue_polls_alone():
    queues: list[str] = []
    for name, spec in _pod_specs().items():
        command = spec["containers"][0]["command"]
        if "worker" in command:
            consumed = command[command.index("--queues") + 1].split(",")
            if settings.POLL_QUEUE in consumed:
                assert consumed == [settings.POLL_QUEUE], f"{name}: polls share no process with other work"
            queues += consumed
    assert sorted(queues) == sorted(settings.PORTAL_QUEUES)


def test_no_secret_is_committed_and_every_pod_reads_settings_from_the_named_secret():
    assert _objects("Secret") == []
    for name, spec in _pod_specs().items():
        env_from = spec["containers"][0]["envFrom"]
        secret = "gitops-portal-agent" if name == "gitops-portal-agent" else "gitops-portal-env"
        assert {"secretRef": {"name": secret}} in env_from, name


def test_the_agent_runs_the_agent_command_and_needs_no_database():
    (agent,) = [d for d in _objects("Deployment") if d["metadata"]["name"] == "gitops-portal-agent"]
    container = agent["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["python", "manage.py", "agent"]
    assert all("configMapRef" not in ref for ref in container["envFrom"])


def test_only_the_web_pods_accept_connections():
    policies = _objects("NetworkPolicy")
    covered = set()
    for policy in policies:
        selector = policy["spec"]["podSelector"]
        components = set(selector.get("matchLabels", {}).values())
        for expression in selector.get("matchExpressions", []):
            components |= set(expression["values"])
        if policy["spec"].get("ingress"):
            assert components & {"web"} and not components & {"worker-poll", "worker-background", "beat", "agent"}
        covered |= components
    assert {"web", "worker-poll", "worker-background", "beat", "migrate", "agent"} <= covered
