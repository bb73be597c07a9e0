"""Sources: the official `kubernetes` client over real HTTP to the emulator, and manifest folders."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops.kinds import BY_CAPABILITY, KINDS, KindSpec, kinds_for
from gitops.sources.base import REASONS, SourceError
from gitops.sources.kube import KubeSource
from gitops.sources.manifests import ManifestSource
from tests.fakes.kube_emulator import Fault, KubeEmulator, make_self_signed_cert


def spec(api_version: str, kind: str) -> KindSpec:
    found = next((k for k in KINDS if k.matches(api_version, kind)), None)
    assert found is not None, f"{api_version} {kind} missing from gitops.kinds"
    return found


APPLICATION = spec("argoproj.io/v1alpha1", "Application")
DEPLOYMENT = spec("apps/v1", "Deployment")
HELMRELEASE = spec("helm.toolkit.fluxcd.io/v2", "HelmRelease")
KUSTOMIZATION = spec("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
ROLLOUT = spec("argoproj.io/v1alpha1", "Rollout")


def application(name: str, namespace: str = "argocd") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://github.com/acme/deploy.git", "path": f"apps/{name}",
                       "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
        },
        "status": {
            "sync": {"status": "Synced", "revision": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
            "health": {"status": "Healthy"},
        },
    }


def deployment(name: str, namespace: str, image: str = "ghcr.io/acme/api:1.4.2") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "generation": 3,
                     "labels": {"app.kubernetes.io/name": name}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": name, "image": image}]}}},
        "status": {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2},
    }


def helmrelease(name: str, version: str = "v2") -> dict[str, Any]:
    return {
        "apiVersion": f"helm.toolkit.fluxcd.io/{version}",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "10m", "chart": {"spec": {"chart": name, "version": "6.x",
                 "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "InstallSucceeded",
                                   "message": f"Helm install succeeded for release flux-system/{name}.v1"}]},
    }


def source_for(emulator: KubeEmulator, **kw: Any) -> KubeSource:
    return KubeSource.from_url(emulator.url, emulator.token or "", name="test-cluster", **kw)


def assert_clean(error: SourceError, emulator: KubeEmulator) -> None:
    """No credential in anything a page or a log line could show."""
    assert emulator.token
    for text in (str(error), error.message, repr(error.args)):
        assert emulator.token not in text


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ------------------------------------------------------------------------- listing


def test_lists_every_namespace_and_fills_type_of_builtin_items(kube_emulator: KubeEmulator) -> None:
    for namespace in ("shop", "payments", "search"):
        kube_emulator.add(deployment("api", namespace))
    kube_emulator.add(deployment("worker", "shop"))

    result = source_for(kube_emulator).list_objects(DEPLOYMENT)

    assert sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in result.items) == [
        ("payments", "api"), ("search", "api"), ("shop", "api"), ("shop", "worker")]
    # The emulator strips apiVersion/kind from typed list items, as the API server does.
    assert {(o["apiVersion"], o["kind"]) for o in result.items} == {("apps/v1", "Deployment")}
    assert result.items[0]["spec"]["template"]["spec"]["containers"][0]["image"] == "ghcr.io/acme/api:1.4.2"
    assert result.version == "v1"
    assert result.pages == 1
    assert result.resource_version is not None and result.resource_version.isdigit()
    assert [r.path for r in kube_emulator.requests] == ["/apis/apps/v1/deployments"]


def test_lists_one_namespace_on_the_namespaced_path(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop", namespace="argocd"))
    kube_emulator.add(application("team-a-api", namespace="team-a"))

    result = source_for(kube_emulator).list_objects(APPLICATION, namespace="team-a")

    assert [o["metadata"]["name"] for o in result.items] == ["team-a-api"]
    assert kube_emulator.requests[-1].path == "/apis/argoproj.io/v1alpha1/namespaces/team-a/applications"


def test_paginates_with_limit_and_continue(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_all(application(f"app-{i:02d}") for i in range(7))

    result = source_for(kube_emulator, page_size=3).list_objects(APPLICATION)

    assert [o["metadata"]["name"] for o in result.items] == [f"app-{i:02d}" for i in range(7)]
    assert result.pages == 3
    requests = kube_emulator.requests_for(APPLICATION)
    assert len(requests) == 3
    assert all(r.query["limit"] == "3" for r in requests)
    assert "continue" not in requests[0].query
    assert requests[1].query["continue"] and requests[2].query["continue"] != requests[1].query["continue"]


def test_default_page_size_is_500(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_synthetic(DEPLOYMENT, 1001, namespaces=7)

    result = source_for(kube_emulator).list_objects(DEPLOYMENT)

    assert len(result.items) == 1001
    assert len({(o["metadata"]["namespace"], o["metadata"]["name"]) for o in result.items}) == 1001
    assert result.pages == 3
    assert [r.query["limit"] for r in kube_emulator.requests_for(DEPLOYMENT)] == ["500"] * 3


def test_falls_back_to_an_older_version_on_404(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(helmrelease("podinfo", version="v2beta2"))

    result = source_for(kube_emulator).list_objects(HELMRELEASE)

    assert result.version == "v2beta2"
    assert [o["apiVersion"] for o in result.items] == ["helm.toolkit.fluxcd.io/v2beta2"]
    assert result.pages == 2
    assert [(r.version, r.status) for r in kube_emulator.requests] == [("v2", 404), ("v2beta2", 200)]


def test_an_installed_but_empty_crd_is_an_empty_list_not_an_error(kube_emulator: KubeEmulator) -> None:
    kube_emulator.install("kustomize.toolkit.fluxcd.io/v1", "kustomizations")

    result = source_for(kube_emulator).list_objects(KUSTOMIZATION)

    assert result.items == [] and result.version == "v1" and result.pages == 1


# --------------------------------------------------------------------------- faults


def test_crd_not_installed_is_not_found_after_every_version(kube_emulator: KubeEmulator) -> None:
    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(HELMRELEASE)

    error = caught.value
    assert error.reason == "not_found" and error.status == 404
    assert "helmreleases.helm.toolkit.fluxcd.io" in error.message
    assert "the server could not find the requested resource" in error.message
    assert [r.version for r in kube_emulator.requests] == ["v2", "v2beta2", "v2beta1"]
    assert_clean(error, kube_emulator)


def test_closed_port_is_unreachable() -> None:
    source = KubeSource.from_url(f"http://127.0.0.1:{free_port()}", "secret-token-value", name="gone")

    with pytest.raises(SourceError) as caught:
        source.list_objects(DEPLOYMENT)

    assert caught.value.reason == "unreachable"
    assert caught.value.status is None
    assert "secret-token-value" not in str(caught.value)


def test_a_server_slower_than_the_timeout_is_a_timeout(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(deployment("api", "shop"))
    release = threading.Event()
    kube_emulator.fail(DEPLOYMENT, Fault.delay(release))
    source = source_for(kube_emulator, timeout=(2.0, 0.2))

    try:
        with pytest.raises(SourceError) as caught:
            source.list_objects(DEPLOYMENT)
    finally:
        release.set()

    assert caught.value.reason == "timeout"
    assert "0.2s read" in caught.value.message
    # One attempt only: a timed-out GET is not silently retried.
    assert len(kube_emulator.requests_for(DEPLOYMENT)) == 1
    assert_clean(caught.value, kube_emulator)


def test_wrong_token_is_unauthorized(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(deployment("api", "shop"))
    source = KubeSource.from_url(kube_emulator.url, "not-the-right-token-42", name="test-cluster")

    with pytest.raises(SourceError) as caught:
        source.list_objects(DEPLOYMENT)

    error = caught.value
    assert (error.reason, error.status) == ("unauthorized", 401)
    assert error.message.endswith("Unauthorized")
    assert "not-the-right-token-42" not in str(error)
    assert kube_emulator.requests[0].authorization_sent


def test_each_request_sends_the_credential_as_refreshed_then(kube_emulator: KubeEmulator) -> None:
    """A kubeconfig's exec plugin or a rotated service-account token refreshes the credential through
    the configuration's hook before a request: every list sends the current one, and a refresh
    that fails is the cluster's credentials failing, said without the credential."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException

    kube_emulator.add(deployment("api", "shop"))
    configuration = Configuration(host=kube_emulator.url)
    configuration.api_key["BearerToken"] = "expired-token-1"
    configuration.api_key_prefix["BearerToken"] = "Bearer"
    refreshes: list[str] = []

    def refresh(config: Configuration) -> None:
        refreshes.append("refreshed")
        config.api_key["BearerToken"] = kube_emulator.token

    configuration.refresh_api_key_hook = refresh
    source = KubeSource(configuration, name="rotated")
    assert [o["metadata"]["name"] for o in source.list_objects(DEPLOYMENT).items] == ["api"]
    assert refreshes == ["refreshed"]

    def failing(config: Configuration) -> None:
        raise ConfigException("exec: executable aws-iam-authenticator not found")

    configuration.refresh_api_key_hook = failing
    with pytest.raises(SourceError) as caught:
        source.list_objects(DEPLOYMENT)
    assert caught.value.reason == "unauthorized" and "aws-iam-authenticator not found" in caught.value.message
    assert (kube_emulator.token or "") not in str(caught.value)


def test_rbac_denial_is_forbidden_with_the_api_message(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop"))
    kube_emulator.fail(APPLICATION, Fault.forbidden())

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(APPLICATION)

    error = caught.value
    assert (error.reason, error.status) == ("forbidden", 403)
    assert (
        'applications.argoproj.io is forbidden: User "system:serviceaccount:gitops-portal:portal-reader" '
        'cannot list resource "applications" in API group "argoproj.io" at the cluster scope'
    ) in error.message
    assert len(kube_emulator.requests) == 1  # a 403 is an answer, not a reason to try other versions
    assert_clean(error, kube_emulator)


def test_internal_error_is_server_error_with_the_api_message(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop"))
    kube_emulator.fail(APPLICATION, Fault.server_error())

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(APPLICATION)

    assert (caught.value.reason, caught.value.status) == ("server_error", 500)
    assert "Internal error occurred: etcdserver: request timed out" in caught.value.message
    assert_clean(caught.value, kube_emulator)


def test_a_body_that_is_not_json_is_malformed(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop"))
    kube_emulator.fail(APPLICATION, Fault.garbage())

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(APPLICATION)

    assert caught.value.reason == "malformed"
    assert "not JSON" in caught.value.message
    assert_clean(caught.value, kube_emulator)


def test_a_fault_on_a_later_page_fails_the_whole_list(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_all(application(f"app-{i}") for i in range(5))
    # Page 1 answers, the continue request breaks: a partial list must never pass as whole.
    kube_emulator.fail(APPLICATION, Fault.garbage(on_page=2))

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator, page_size=2).list_objects(APPLICATION)

    assert caught.value.reason == "malformed"
    assert [r.status for r in kube_emulator.requests] == [200, 200]


def test_unavailable_server_is_server_error(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop"))
    kube_emulator.fail(APPLICATION, Fault(status=503, reason="ServiceUnavailable",
                                          message="the server is currently unable to handle the request"))

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(APPLICATION)

    assert (caught.value.reason, caught.value.status) == ("server_error", 503)
    assert "currently unable to handle the request" in caught.value.message


def test_expired_continue_token_restarts_the_list_once(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_all(application(f"app-{i}") for i in range(7))
    kube_emulator.fail(APPLICATION, Fault.expired_continue(page=2, times=1))

    result = source_for(kube_emulator, page_size=3).list_objects(APPLICATION)

    assert [o["metadata"]["name"] for o in result.items] == [f"app-{i}" for i in range(7)]
    assert result.pages == 5  # page 1, 410 on page 2, then pages 1-3 again
    assert [r.status for r in kube_emulator.requests] == [200, 410, 200, 200, 200]
    assert any("continue token expired" in w for w in result.warnings)


def test_expired_continue_token_twice_is_an_error(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_all(application(f"app-{i}") for i in range(7))
    kube_emulator.fail(APPLICATION, Fault.expired_continue(page=2))

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator, page_size=3).list_objects(APPLICATION)

    assert (caught.value.reason, caught.value.status) == ("server_error", 410)
    assert "too old to display a consistent list result" in caught.value.message
    assert len(kube_emulator.requests) == 4


def test_a_server_echoing_the_token_never_leaks_it(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add(application("shop"))
    kube_emulator.fail(APPLICATION, Fault.server_error(
        message=f"proxy rejected request with Authorization: Bearer {kube_emulator.token}"))

    with pytest.raises(SourceError) as caught:
        source_for(kube_emulator).list_objects(APPLICATION)

    assert "proxy rejected request with Authorization: ***" in caught.value.message
    assert_clean(caught.value, kube_emulator)


def test_source_error_reasons_are_a_closed_set() -> None:
    assert REASONS == {"unreachable", "timeout", "unauthorized", "forbidden", "not_found", "server_error",
                       "malformed"}
    with pytest.raises(ValueError):
        SourceError("exploded", "x")


# ------------------------------------------------------------- ways to connect


def write_kubeconfig(path: Path, emulator: KubeEmulator) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "staging",
        "clusters": [
            {"name": "emulated", "cluster": {"server": emulator.url}},
            {"name": "elsewhere", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}},
        ],
        "users": [
            {"name": "reader", "user": {"token": emulator.token}},
            {"name": "intruder", "user": {"token": "wrong-token-abcdef"}},
        ],
        "contexts": [
            {"name": "staging", "context": {"cluster": "emulated", "user": "reader"}},
            {"name": "stolen", "context": {"cluster": "emulated", "user": "intruder"}},
            {"name": "offline", "context": {"cluster": "elsewhere", "user": "reader"}},
        ],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubeconfig_context_reaches_the_cluster(kube_emulator: KubeEmulator, tmp_path: Path) -> None:
    kube_emulator.add(deployment("api", "shop"))
    kubeconfig = write_kubeconfig(tmp_path / "config", kube_emulator)
    before = kubeconfig.read_text()

    with KubeSource.from_kubeconfig(kubeconfig, "staging") as source:
        result = source.list_objects(DEPLOYMENT)
    with KubeSource.from_kubeconfig(kubeconfig) as current:  # the file's current-context
        assert len(current.list_objects(DEPLOYMENT).items) == 1

    assert source.name == "staging"
    assert [o["metadata"]["name"] for o in result.items] == ["api"]
    assert kubeconfig.read_text() == before


def test_kubeconfig_contexts_fail_by_their_own_reason(kube_emulator: KubeEmulator, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", kube_emulator)

    with pytest.raises(SourceError) as wrong_user:
        KubeSource.from_kubeconfig(kubeconfig, "stolen").list_objects(DEPLOYMENT)
    with pytest.raises(SourceError) as offline:
        KubeSource.from_kubeconfig(kubeconfig, "offline").list_objects(DEPLOYMENT)
    with pytest.raises(SourceError) as no_context:
        KubeSource.from_kubeconfig(kubeconfig, "production")

    assert wrong_user.value.reason == "unauthorized"
    assert "wrong-token-abcdef" not in str(wrong_user.value)
    assert offline.value.reason == "unreachable"
    assert no_context.value.reason == "unreachable" and "production" in no_context.value.message


@pytest.fixture
def tls_emulator(tmp_path: Path) -> Iterator[KubeEmulator]:
    pytest.importorskip("cryptography")
    files = make_self_signed_cert(tmp_path)
    with KubeEmulator(tls=files) as emulator:
        emulator.add(deployment("api", "shop"))
        yield emulator


def test_tls_with_ca_data_or_ca_file(tls_emulator: KubeEmulator) -> None:
    assert tls_emulator.tls is not None and tls_emulator.url.startswith("https://")
    token = tls_emulator.token or ""
    by_data = KubeSource.from_url(tls_emulator.url, token, ca_data=tls_emulator.tls.cert_pem)
    by_file = KubeSource.from_url(tls_emulator.url, token, ca_file=tls_emulator.tls.cert_path)

    assert len(by_data.list_objects(DEPLOYMENT).items) == 1
    assert len(by_file.list_objects(DEPLOYMENT).items) == 1


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_unknown_ca_is_unreachable_unless_verification_is_off(tls_emulator: KubeEmulator) -> None:
    token = tls_emulator.token or ""
    with pytest.raises(SourceError) as caught:
        KubeSource.from_url(tls_emulator.url, token).list_objects(DEPLOYMENT)
    insecure = KubeSource.from_url(tls_emulator.url, token, verify=False)

    assert caught.value.reason == "unreachable"
    assert "certificate" in caught.value.message.lower()
    assert token not in str(caught.value)
    assert len(insecure.list_objects(DEPLOYMENT).items) == 1


def test_in_cluster_service_account(tls_emulator: KubeEmulator, tmp_path: Path) -> None:
    assert tls_emulator.tls is not None
    token_file = tmp_path / "token"
    token_file.write_text(tls_emulator.token or "")
    environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(tls_emulator.port)}

    source = KubeSource.in_cluster(token_path=str(token_file), ca_path=str(tls_emulator.tls.cert_path),
                                   environ=environ)

    assert [o["metadata"]["name"] for o in source.list_objects(DEPLOYMENT).items] == ["api"]
    with pytest.raises(SourceError) as outside:
        KubeSource.in_cluster(token_path=str(token_file), ca_path=str(tls_emulator.tls.cert_path), environ={})
    assert outside.value.reason == "unreachable"


# ------------------------------------------------------------------ manifests


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def manifest_folder(tmp_path: Path) -> Path:
    write(tmp_path / "argocd" / "apps.yaml", yaml.safe_dump_all([application("shop"), application("search")]))
    write(tmp_path / "argocd" / "more" / "list.yml", yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": [application("payments", namespace="team-a"),
                                                          deployment("api", "payments")]}))
    typed = {"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {"resourceVersion": "9"},
             "items": [{k: v for k, v in deployment("web", "shop").items()
                        if k not in ("apiVersion", "kind")}]}
    write(tmp_path / "snapshot" / "deployments.json", json.dumps(typed))
    write(tmp_path / "snapshot" / "flux.json", json.dumps([helmrelease("podinfo", "v2beta2"),
                                                           helmrelease("redis", "v2")]))
    write(tmp_path / "flux" / "kustomization.yaml", (
        "# kustomize's own file, not a Flux Kustomization\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [apps.yaml]\n"
        "---\n"
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
        "metadata: {name: apps, namespace: flux-system, creationTimestamp: 2024-05-01T10:00:00Z}\n"
        "spec: {interval: 10m, path: ./apps, sourceRef: {kind: GitRepository, name: flux-system}}\n"
        "---\n"
    ))
    write(tmp_path / "broken.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: [unclosed\n")
    write(tmp_path / "values.yaml", "replicaCount: 2\nimage: {tag: 1.0.0}\n")
    write(tmp_path / "README.md", "apiVersion: apps/v1\nkind: Deployment\n")
    write(tmp_path / ".git" / "hidden.yaml", yaml.safe_dump(deployment("ghost", "shop")))
    return tmp_path


def test_manifests_multi_document_lists_and_json(manifest_folder: Path) -> None:
    source = ManifestSource(manifest_folder, name="demo")

    apps = source.list_objects(APPLICATION)
    deployments = source.list_objects(DEPLOYMENT)
    releases = source.list_objects(HELMRELEASE)

    assert sorted(o["metadata"]["name"] for o in apps.items) == ["payments", "search", "shop"]
    assert sorted(o["metadata"]["name"] for o in deployments.items) == ["api", "web"]
    web = next(o for o in deployments.items if o["metadata"]["name"] == "web")
    assert (web["apiVersion"], web["kind"]) == ("apps/v1", "Deployment")  # filled from DeploymentList
    assert sorted(o["apiVersion"] for o in releases.items) == [
        "helm.toolkit.fluxcd.io/v2", "helm.toolkit.fluxcd.io/v2beta2"]
    assert releases.version == "v2"
    assert all(isinstance(o, dict) for o in apps.items + deployments.items + releases.items)


def test_manifests_filter_by_group_not_just_kind(manifest_folder: Path) -> None:
    result = ManifestSource(manifest_folder).list_objects(KUSTOMIZATION)

    assert [o["metadata"]["name"] for o in result.items] == ["apps"]
    # Timestamps stay the strings the API would send, not datetime objects.
    assert result.items[0]["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"


def test_manifests_skip_a_bad_file_with_a_warning(manifest_folder: Path) -> None:
    result = ManifestSource(manifest_folder, name="demo").list_objects(DEPLOYMENT)

    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("demo: skipped broken.yaml: invalid YAML at line")
    assert "ghost" not in {o["metadata"]["name"] for o in result.items}  # dot-folders ignored


def test_manifests_namespace_filter(manifest_folder: Path) -> None:
    result = ManifestSource(manifest_folder).list_objects(APPLICATION, namespace="team-a")

    assert [o["metadata"]["name"] for o in result.items] == ["payments"]


def test_manifests_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        ManifestSource(tmp_path / "nowhere").list_objects(DEPLOYMENT)
    assert caught.value.reason == "unreachable"


def test_manifests_with_nothing_of_a_kind(manifest_folder: Path) -> None:
    result = ManifestSource(manifest_folder).list_objects(ROLLOUT)

    assert result.items == [] and result.version is None


# ------------------------------------------------------------------------ kinds


def test_every_capability_has_kinds_and_versions_newest_first() -> None:
    assert set(BY_CAPABILITY) == {"argocd", "argocd-projects", "argocd-clusters", "flux-kustomize", "flux-helm",
                                  "flux-sources", "workloads", "rollouts", "flux-notifications"}
    assert all(BY_CAPABILITY[c] for c in BY_CAPABILITY)
    assert HELMRELEASE.versions == ("v2", "v2beta2", "v2beta1")
    assert KUSTOMIZATION.versions == ("v1", "v1beta2")
    assert {k.kind for k in kinds_for("flux-sources")} == {
        "GitRepository", "HelmRepository", "HelmChart", "Bucket", "OCIRepository"}
    assert {k.kind for k in kinds_for("workloads")} == {"Deployment", "StatefulSet", "DaemonSet", "CronJob"}
    assert len({(k.group, k.plural) for k in KINDS}) == len(KINDS)
    with pytest.raises(ValueError):
        kinds_for("tekton")


def test_kind_paths() -> None:
    pods = KindSpec("", "Pod", "pods", ("v1",), "workloads")
    assert pods.list_path("v1") == "/api/v1/pods"
    assert pods.list_path("v1", "shop") == "/api/v1/namespaces/shop/pods"
    assert pods.api_version("v1") == "v1"
    assert APPLICATION.list_path("v1alpha1", "argocd") == (
        "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications")
    assert APPLICATION.resource == "applications.argoproj.io"
    assert not any(k.matches("kustomize.config.k8s.io/v1beta1", "Kustomization") for k in KINDS)


def test_manifest_files_are_parsed_once_and_each_listing_gets_its_own_objects(tmp_path: Path, monkeypatch) -> None:
    """A poll lists a dozen kinds from the same files: the bytes are parsed once, a file changed
    in place (same size, same time stamp) is parsed again at once, and an object one listing
    hands out is that listing's own."""
    from gitops.sources import manifests

    calls: list[int] = []
    real = manifests.load_yaml
    monkeypatch.setattr(manifests, "load_yaml", lambda text: calls.append(1) or real(text))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "parse-once-a", "namespace": "default"}, "spec": {"replicas": 1}}
    path = tmp_path / "apps.yaml"
    path.write_text(yaml.safe_dump(deployment))
    stamp = path.stat()
    source = ManifestSource(tmp_path)
    kind = next(k for k in KINDS if k.kind == "Deployment")

    first = source.list_objects(kind).items
    first[0]["spec"]["replicas"] = 99  # a caller changing what it got
    again = source.list_objects(kind).items
    assert len(calls) == 1
    assert again[0]["spec"]["replicas"] == 1 and again[0] is not first[0]

    path.write_text(yaml.safe_dump({**deployment, "metadata": {"name": "parse-once-b", "namespace": "default"}}))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the same size and time stamp
    assert path.stat().st_size == stamp.st_size
    assert [o["metadata"]["name"] for o in source.list_objects(kind).items] == ["parse-once-b"]
    assert len(calls) == 2
