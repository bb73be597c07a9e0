"""Argo CD's cluster Secrets read through the Kubernetes API (and manifest folders): listed
with Argo CD's own label selector in the instance's namespace only, cut down to `name`,
`server` and `project` right after decoding, so `destination.name` resolves as Argo CD
resolves it. Their `config` (bearer token, client key, password) must end up nowhere:
not in rows, raw objects, logs, pages or the API. A 403 costs name resolution only.

The Secrets are shaped as Argo CD's declarative setup writes them and the API server returns
them (`data` base64; `kubectl apply` leaves the applied manifest, `stringData` included, in
the last-applied-configuration annotation): ../shared/reference/argocd-topology.md §1.2.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest
import yaml
from django.urls import reverse

from gitops import kinds
from gitops.collectors import collect
from gitops.derive.topology import ArgoCluster
from gitops.listing import list_capabilities
from gitops.models import GitOpsApp
from gitops.polling import poll
from gitops.sources.base import only_kept_data
from gitops.sources.kube import KubeSource
from gitops.sources.manifests import ManifestSource
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service
from tests.fakes.kube_emulator import Fault, KubeEmulator
from tests.test_credential_scan import database_text, forms

SECRETS = kinds.kinds_for(kinds.ARGOCD_CLUSTERS)[0]
TOKEN_ENV = "PORTAL_TEST_SECRETS_HUB_TOKEN"
EU_WEST_SERVER = "https://eu-west.k8s.acme.example:6443"

# A real-shaped `config` (util/db/cluster.go SecretToCluster): every credential field Argo CD reads.
BEARER = "eyJhbGciOiJSUzI1NiIsImtpZCI6InN0YWdpbmcifQ.Y2x1c3Rlci1zZWNyZXQtdG9rZW4.c2lnLWNsdXN0ZXItc2VjcmV0"
KEY_PEM = ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIDu5ClusterKeyNeverShownAnywhere0123456789abcd\n"
           "-----END EC PRIVATE KEY-----\n")
CERT_PEM = "-----BEGIN CERTIFICATE-----\nMIIBClientCertOfTheClusterSecret0123456789\n-----END CERTIFICATE-----\n"
PASSWORD = "cluster-Pa55w0rd-never-shown"
EXEC_SECRET = "exec-plugin-secret-arg-7781"
CONFIG = {
    "bearerToken": BEARER,
    "username": "admin",
    "password": PASSWORD,
    "tlsClientConfig": {
        "insecure": False,
        "caData": base64.b64encode(b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n").decode(),
        "certData": base64.b64encode(CERT_PEM.encode()).decode(),
        "keyData": base64.b64encode(KEY_PEM.encode()).decode(),
    },
    "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["aws", "--secret", EXEC_SECRET],
                           "apiVersion": "client.authentication.k8s.io/v1beta1"},
}
CREDENTIALS = (BEARER, PASSWORD, EXEC_SECRET, "ClusterKeyNeverShownAnywhere", "ClientCertOfTheClusterSecret",
               CONFIG["tlsClientConfig"]["keyData"], CONFIG["tlsClientConfig"]["certData"])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def cluster_secret(name: str, server: str, *, namespace: str = "argocd", project: str = "",
                   secret_type: str = "cluster", agent: str = "") -> dict:
    """A cluster Secret as the Kubernetes API returns it after `kubectl apply` of the
    declarative-setup manifest: `data` base64, the applied `stringData` in an annotation."""
    labels = {"argocd.argoproj.io/secret-type": secret_type}
    if agent:
        labels["argocd-agent.argoproj-labs.io/agent-name"] = agent
    string_data = {"name": name, "server": server, "config": json.dumps(CONFIG, indent=2)}
    if project:
        string_data["project"] = project
    applied = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "stringData": string_data,
               "metadata": {"name": f"{name}-cluster-secret", "namespace": namespace, "labels": labels}}
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {
            "name": f"{name}-cluster-secret", "namespace": namespace, "labels": labels,
            "uid": f"uid-secret-{namespace}-{name}", "resourceVersion": "4711",
            "creationTimestamp": "2026-11-18T18:49:06Z",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)},
        },
        "data": {key: b64(value) for key, value in string_data.items()},
    }


def leaked(text: str) -> list[str]:
    """Every spelling (plain, base64, URL-encoded, as a header) of a credential found in `text`."""
    return sorted({secret[:12] for secret in CREDENTIALS for form in forms(secret) if form in text})


def application(name: str, destination: dict) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "uid": f"uid-{name}", "resourceVersion": "7"},
        "spec": {"project": "default",
                 "source": {"repoURL": "https://github.com/acme/deploy.git", "path": f"apps/{name}",
                            "targetRevision": "main"},
                 "destination": {**destination, "namespace": "shop"}},
        "status": {"sync": {"status": "Synced", "revision": "c" * 40}, "health": {"status": "Healthy"},
                   "summary": {"images": ["ghcr.io/acme/checkout:2.1.0"]}},
    }


def serve(emulator: KubeEmulator, objects: list[dict]) -> None:
    emulator.add_all(objects)
    for spec in kinds.KINDS:
        emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)


def test_cut_down_secret_keeps_name_server_and_project_only():
    secret = cluster_secret("eu-west", EU_WEST_SERVER, project="shop")
    kept = only_kept_data(secret, SECRETS.kept_data or ())
    assert collect({"Secret": [kept]}).argocd_clusters == [ArgoCluster("eu-west", EU_WEST_SERVER)]
    assert sorted(kept["data"]) == ["name", "project", "server"]
    assert "annotations" not in kept["metadata"]
    assert leaked(json.dumps(kept)) == []
    # The credential really was in the object as the API returned it.
    assert leaked(json.dumps(secret))


def test_kube_source_lists_cluster_secrets_by_argo_cd_label_in_one_namespace(kube_emulator):
    repository = cluster_secret("repo", "https://github.com/acme/deploy.git", secret_type="repository")
    serve(kube_emulator, [
        cluster_secret("eu-west", EU_WEST_SERVER, project="shop"),
        cluster_secret("elsewhere", "https://10.1.1.1:6443", namespace="team-a"),
        repository,
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": "db", "namespace": "argocd", "uid": "uid-db", "resourceVersion": "3"},
         "data": {"password": b64(PASSWORD)}},
    ])
    with KubeSource.from_url(kube_emulator.url, kube_emulator.token) as source:
        result = source.list_objects(SECRETS, namespace="argocd")
    assert [item["metadata"]["name"] for item in result.items] == ["eu-west-cluster-secret"]
    item = result.items[0]
    assert item["apiVersion"] == "v1" and item["kind"] == "Secret"
    assert sorted(item["data"]) == ["name", "project", "server"]
    assert leaked(json.dumps(result.items)) == [] and leaked(repr(result)) == []
    (request,) = kube_emulator.requests_for(SECRETS)
    assert request.path == "/api/v1/namespaces/argocd/secrets"
    assert request.query["labelSelector"] == "argocd.argoproj.io/secret-type=cluster"


@pytest.fixture
def secrets_hub(kube_emulator, monkeypatch, db):
    """A hub whose app names its destination `eu-west`: only the cluster Secret says that this
    is the catalog's prod-west (by its API URL; no alias)."""
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    serve(kube_emulator, [
        application("checkout-west", {"name": "eu-west"}),
        cluster_secret("eu-west", EU_WEST_SERVER, project="default"),
    ])
    prod = Environment.objects.create(name="prod", order=3, production=True)
    mgmt = Environment.objects.create(name="mgmt", order=9)
    hub = Cluster.objects.create(name="hub", environment=mgmt, connection=Cluster.Connection.API,
                                 api_url=kube_emulator.url, token_env=TOKEN_ENV)
    ArgoCDInstance.objects.create(name="hub-argocd", cluster=hub, ui_url="https://argocd.hub.example")
    Cluster.objects.create(name="prod-west", environment=prod, connection=Cluster.Connection.NONE,
                           api_url=EU_WEST_SERVER + "/")
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    return hub


@pytest.mark.django_db
def test_a_destination_name_resolves_through_the_hub_cluster_secrets_and_no_credential_is_kept(
        secrets_hub, kube_emulator, client, users, caplog):
    caplog.set_level(logging.DEBUG)
    report = poll(secrets_hub)
    assert report.ok, report.error
    assert kinds.ARGOCD_CLUSTERS not in report.unavailable
    app = GitOpsApp.objects.select_related("cluster").get(name="checkout-west")
    assert app.cluster.name == "prod-west" and app.running == {"checkout": ["2.1.0"]}
    assert not Cluster.objects.filter(discovered=True).exists()
    # Nowhere afterwards: every text and JSON column of every row (raw objects included),
    # the logs, the pages and the API.
    rows = "\n".join(f"{where}={text}" for where, text in database_text())
    assert "checkout-west" in rows and leaked(rows) == []
    assert leaked(caplog.text) == []
    client.force_login(users["admin"])
    pages = [reverse("clusters"), reverse("gitops"), reverse("service", args=["checkout"]), reverse("discovery"),
             reverse("overview"), reverse("matrix"), "/api/v1/gitops"]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert leaked(response.content.decode()) == [], url


@pytest.mark.django_db
def test_no_permission_on_secrets_degrades_only_name_resolution(secrets_hub, kube_emulator, client, users):
    kube_emulator.fail(SECRETS, Fault.forbidden())
    Cluster.objects.filter(name="prod-west").update(argocd_aliases=["eu-west"])
    report = poll(secrets_hub)
    assert report.ok, report.error
    assert report.unavailable == {
        kinds.ARGOCD_CLUSTERS: "cluster names unavailable: no permission to list secrets in argocd"}
    # Names are then matched to the catalog as it stands (here an alias): the app is still placed.
    assert GitOpsApp.objects.get(name="checkout-west").cluster.name == "prod-west"
    client.force_login(users["viewer"])
    assert "no permission to list secrets in argocd" in client.get(reverse("clusters")).content.decode()
    # Without the alias nothing says where eu-west is: unregistered, never guessed, never the hub.
    west = Cluster.objects.get(name="prod-west")
    west.argocd_aliases = []
    west.save(update_fields=["argocd_aliases"])  # as an admin does: the catalog's revision moves
    assert poll(secrets_hub).ok
    placed = GitOpsApp.objects.select_related("cluster").get(name="checkout-west").cluster
    assert placed.discovered and placed.name == "eu-west"


@pytest.mark.django_db
def test_secrets_are_read_in_the_instance_namespace_and_only_where_argo_cd_runs(secrets_hub, kube_emulator):
    ArgoCDInstance.objects.filter(name="hub-argocd").update(namespace="gitops-system")
    kube_emulator.add(cluster_secret("eu-west", EU_WEST_SERVER, namespace="gitops-system"))
    assert poll(secrets_hub).ok
    paths = {r.path for r in kube_emulator.requests_for(SECRETS)}
    assert paths == {"/api/v1/namespaces/gitops-system/secrets"}
    assert GitOpsApp.objects.get(name="checkout-west").cluster.name == "prod-west"
    # A cluster without Argo CD (no Application list): its secrets are not asked for.
    with KubeEmulator() as flux_only:
        flux_only.install("apps/v1", "deployments", "Deployment")
        flux_only.install("v1", "secrets", "Secret")
        with KubeSource.from_url(flux_only.url, flux_only.token) as source:
            listing = list_capabilities(source)
        assert flux_only.requests_for(SECRETS) == []
        assert kinds.ARGOCD_CLUSTERS not in listing.unavailable


def test_manifest_folders_read_cluster_secrets_as_the_api_does(tmp_path: Path):
    folder = tmp_path / "hub"
    folder.mkdir()
    documents = [cluster_secret("eu-west", EU_WEST_SERVER), cluster_secret("elsewhere", "https://10.1.1.1:6443",
                                                                           namespace="team-a"),
                 cluster_secret("repo", "https://github.com/acme/deploy.git", secret_type="repository")]
    written = {"apiVersion": "v1", "kind": "Secret", "stringData": {
        "name": "dev", "server": "https://dev.example", "config": json.dumps(CONFIG)},
        "metadata": {"name": "dev", "namespace": "argocd",
                     "labels": {"argocd.argoproj.io/secret-type": "cluster"}}}
    (folder / "secrets.yaml").write_text(yaml.safe_dump_all([*documents, written]))
    listing = list_capabilities(ManifestSource(folder))
    assert sorted(s["metadata"]["name"] for s in listing.objects["Secret"]) == ["dev", "eu-west-cluster-secret"]
    assert leaked(json.dumps(listing.objects)) == []
    clusters = collect(listing.objects).argocd_clusters
    assert sorted(clusters, key=lambda c: c.name) == [ArgoCluster("dev", "https://dev.example"),
                                                       ArgoCluster("eu-west", EU_WEST_SERVER)]


def test_the_demo_hub_folder_gives_its_three_destinations():
    listing = list_capabilities(ManifestSource(Path(__file__).parents[2] / "examples/clusters/mgmt-hub"))
    names = sorted(c.name for c in collect(listing.objects).argocd_clusters)
    assert names == ["dev-eu-2", "prod-eu-2", "prod-sa-1"]
