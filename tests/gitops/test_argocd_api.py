"""ArgoCDSource against a fake Argo CD API server over real HTTP (tests/fakes/argocd_api.py):
applications, projects and their windows, clusters (never credentials), resource-tree health,
no `refresh` ever sent, errors redacted and classified, and the same stored rows as the
Kubernetes source gives for the same fleet."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from django.forms.models import model_to_dict

from gitops import kinds
from gitops.derive.topology import ArgoCluster
from gitops.listing import list_capabilities
from gitops.models import AppProject, GitOpsApp
from gitops.polling import poll, source_for
from gitops.sources.argocd_api import ArgoCDSource, discovered_clusters
from gitops.sources.base import SourceError
from gitops.sources.kube import KubeSource
from portal.kernel.catalog.models import Cluster, Environment
from tests.fakes.argocd_api import ApiFault, ArgoCDAPIFake
from tests.fakes.kube_emulator import make_self_signed_cert

ROOT = Path(__file__).resolve().parents[2]
APPLICATION = kinds.kinds_for(kinds.ARGOCD)[0]
APPPROJECT = kinds.kinds_for(kinds.ARGOCD_PROJECTS)[0]
TOKEN_ENV = "PORTAL_TEST_ARGOCD_TOKEN"


@pytest.fixture
def argocd() -> Iterator[ArgoCDAPIFake]:
    with ArgoCDAPIFake() as fake:
        yield fake


def demo_argo_objects(cluster: str) -> list[dict[str, Any]]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / cluster).rglob("*.yaml")):
        objects.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") in
                       ("Application", "AppProject"))
    return objects


def app(name: str, namespace: str = "argocd", *, health: str = "Healthy", tree: bool = False,
        project: str = "default") -> dict[str, Any]:
    status: dict[str, Any] = {
        "sync": {"status": "Synced", "revision": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
        "health": {"status": health},
        "resources": [
            {"kind": "Service", "name": name, "namespace": name, "status": "Synced", "version": "v1"},
            {"group": "apps", "kind": "Deployment", "name": name, "namespace": name, "status": "Synced",
             "version": "v1"},
        ],
        "summary": {"images": [f"ghcr.io/acme/{name}:1.0.0"]},
    }
    if tree:
        status["resourceHealthSource"] = "appTree"
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "41"},
        "spec": {"project": project,
                 "source": {"repoURL": "https://github.com/acme/deploy.git", "path": f"apps/{name}",
                            "targetRevision": "main"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": name}},
        "status": status,
    }


def source(fake: ArgoCDAPIFake, **kw: Any) -> ArgoCDSource:
    kw.setdefault("token", fake.token)
    return ArgoCDSource(fake.url, name="hub", **kw)


# ------------------------------------------------------------------ applications, projects


def test_applications_come_typed_from_one_unprojected_request(argocd):
    argocd.add_application(app("checkout"))
    argocd.add_application(app("payments", namespace="team-payments"))

    result = source(argocd).list_objects(APPLICATION)

    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in result.items] == [
        ("argocd", "checkout"), ("team-payments", "payments")]
    # The API's items carry no apiVersion/kind; the source fills them as the Kubernetes API has them.
    assert {(o["apiVersion"], o["kind"]) for o in result.items} == {("argoproj.io/v1alpha1", "Application")}
    assert result.items[0]["status"]["summary"]["images"] == ["ghcr.io/acme/checkout:1.0.0"]
    assert result.pages == 1 and result.resource_version == "1000"
    [request] = argocd.requests
    assert request.path == "/api/v1/applications" and request.query == []
    assert request.authorization == f"Bearer {argocd.token}"


def test_one_namespace_is_asked_for_with_app_namespace(argocd):
    argocd.add_application(app("checkout"))
    argocd.add_application(app("payments", namespace="team-payments"))

    result = source(argocd).list_objects(APPLICATION, namespace="team-payments")

    assert [o["metadata"]["name"] for o in result.items] == ["payments"]
    assert argocd.requests[-1].query == [("appNamespace", "team-payments")]


def test_projects_with_their_sync_windows(argocd):
    windows = [{"kind": "deny", "schedule": "0 22 * * *", "duration": "8h", "applications": ["*"],
                "manualSync": True, "timeZone": "Europe/Berlin"}]
    argocd.add_project({"metadata": {"name": "payments", "namespace": "argocd", "resourceVersion": "7"},
                        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                                 "syncWindows": windows}})

    [project] = source(argocd).list_objects(APPPROJECT).items

    assert (project["apiVersion"], project["kind"]) == ("argoproj.io/v1alpha1", "AppProject")
    assert project["spec"]["syncWindows"] == windows
    assert argocd.requests[-1].path == "/api/v1/projects"


def test_kinds_the_api_does_not_serve_are_not_found_and_polling_does_not_ask(argocd):
    deployments = kinds.kinds_for(kinds.WORKLOADS)[0]
    with pytest.raises(SourceError) as caught:
        source(argocd).list_objects(deployments)
    assert caught.value.reason == "not_found"

    listing = list_capabilities(source(argocd))

    assert listing.fatal is None and listing.unavailable == {}
    assert listing.listed == {"Application", "AppProject"}
    assert {r.path for r in argocd.requests} == {"/api/v1/applications", "/api/v1/projects", "/api/v1/clusters"}


# --------------------------------------------------------------------------- resource tree


def test_resource_health_comes_from_the_tree_for_an_unhealthy_app_tree_app(argocd):
    argocd.add_application(app("orders", health="Degraded", tree=True, project="shop"))
    argocd.add_application(app("checkout", tree=True))  # healthy: its tree adds nothing
    argocd.add_application(app("legacy", health="Degraded"))  # health inline (Argo CD 2.x)
    argocd.set_tree("argocd", "orders", [
        {"version": "v1", "kind": "Service", "namespace": "orders", "name": "orders", "uid": "u-svc",
         "health": {"status": "Healthy"}, "createdAt": "2026-11-30T10:00:00Z"},
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "orders", "name": "orders",
         "uid": "u-dep", "health": {"status": "Degraded", "message": "Deployment \"orders\" exceeded its progress "
                                    "deadline"}, "createdAt": "2026-11-30T10:00:00Z"},
        {"group": "apps", "version": "v1", "kind": "ReplicaSet", "namespace": "orders", "name": "orders-7d9c",
         "uid": "u-rs", "parentRefs": [{"group": "apps", "kind": "Deployment", "name": "orders",
                                        "namespace": "orders", "uid": "u-dep"}],
         "health": {"status": "Degraded"}},
    ])

    items = {o["metadata"]["name"]: o for o in source(argocd).list_objects(APPLICATION).items}

    health = {r["kind"]: r.get("health") for r in items["orders"]["status"]["resources"]}
    assert health == {"Service": {"status": "Healthy"},
                      "Deployment": {"status": "Degraded",
                                     "message": "Deployment \"orders\" exceeded its progress deadline"}}
    assert all("health" not in r for r in items["checkout"]["status"]["resources"])
    [tree] = [r for r in argocd.requests if r.path.endswith("/resource-tree")]
    assert tree.path == "/api/v1/applications/orders/resource-tree"
    assert tree.query == [("appNamespace", "argocd"), ("project", "shop")]


def test_a_tree_node_with_no_live_object_is_missing_as_argo_cd_says(argocd):
    argocd.add_application(app("orders", health="Missing", tree=True))
    argocd.set_tree("argocd", "orders", [
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "orders", "name": "orders"},
    ])

    [item] = source(argocd).list_objects(APPLICATION).items

    deployment = next(r for r in item["status"]["resources"] if r["kind"] == "Deployment")
    assert deployment["health"] == {"status": "Missing", "message": "Resource has not been created"}


def test_an_unreadable_tree_is_a_warning_and_the_app_is_still_reported(argocd):
    argocd.add_application(app("orders", health="Degraded", tree=True))
    argocd.fail(ApiFault("/api/v1/applications/orders/resource-tree", 503,
                         "error getting cached app resource tree: agent orders is not connected"))

    result = source(argocd).list_objects(APPLICATION)

    assert [o["metadata"]["name"] for o in result.items] == ["orders"]
    assert any("resource tree of argocd/orders" in w and "not connected" in w for w in result.warnings)


def test_a_tree_that_is_no_json_object_is_a_warning(argocd):
    argocd.add_application(app("orders", health="Degraded", tree=True))
    argocd.fail(ApiFault("/api/v1/applications/orders/resource-tree", 200, body=b"[" * 5000 + b"]" * 5000))

    result = source(argocd).list_objects(APPLICATION)

    assert [o["metadata"]["name"] for o in result.items] == ["orders"]
    assert any("resource tree of argocd/orders" in w and "bounded depth" in w for w in result.warnings)


def test_no_request_ever_carries_refresh(argocd, db):
    argocd.add_application(app("orders", health="Degraded", tree=True))
    argocd.add_application(app("checkout"))
    argocd.set_tree("argocd", "orders", [])
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    hub = source(argocd)

    list_capabilities(hub)
    discovered_clusters(hub)

    paths = {r.path for r in argocd.requests}
    assert {"/api/v1/applications", "/api/v1/projects", "/api/v1/clusters",
            "/api/v1/applications/orders/resource-tree"} <= paths
    assert not [r for r in argocd.requests if any(k == "refresh" for k, _ in r.query)]


# -------------------------------------------------------------------------------- clusters


def test_clusters_are_name_and_server_only_even_if_the_server_leaks_more(argocd):
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    argocd.add_cluster("prod-eu-1", "https://10.0.4.1:6443/")
    argocd.add_cluster("", "https://10.0.9.9:6443")  # no name: the API fills it with the server
    argocd.extra_cluster_fields = {"config": {"bearerToken": "leaked-bearer-abcdef0123",
                                              "tlsClientConfig": {"keyData": "LS0tLS1CRUdJTi"}}}

    clusters = source(argocd).clusters()

    assert clusters == [
        ArgoCluster("in-cluster", "https://kubernetes.default.svc"),
        ArgoCluster("prod-eu-1", "https://10.0.4.1:6443"),
        ArgoCluster("https://10.0.9.9:6443", "https://10.0.9.9:6443"),
    ]
    assert "leaked-bearer" not in repr(clusters) and "LS0tLS1CRUdJTi" not in repr(clusters)


def test_discovered_clusters_count_apps_by_destination_from_the_projected_list(argocd):
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    argocd.add_cluster("prod-eu-1", "https://10.0.4.1:6443")
    argocd.add_cluster("staging", "https://10.0.5.1:6443")
    for name, destination in [("a", {"server": "https://10.0.4.1:6443/"}), ("b", {"name": "prod-eu-1"}),
                              ("c", {"name": "in-cluster"}), ("d", {"server": "https://10.9.9.9"}),
                              ("e", {"name": "prod-eu-1", "server": "https://10.0.4.1:6443"})]:
        obj = app(name)
        obj["spec"]["destination"] = {**destination, "namespace": name}
        argocd.add_application(obj)

    found = discovered_clusters(source(argocd))

    assert [(c.name, n) for c, n in found] == [("prod-eu-1", 2), ("in-cluster", 1), ("staging", 0)]
    [listed] = [r for r in argocd.requests if r.path == "/api/v1/applications"]
    assert listed.param("fields") == "items.metadata.name,items.metadata.namespace,items.spec"


def test_a_destination_name_shared_by_two_clusters_counts_for_neither(argocd):
    argocd.add_cluster("prod", "https://10.0.4.1:6443")
    argocd.add_cluster("prod", "https://10.0.5.1:6443")
    obj = app("x")
    obj["spec"]["destination"] = {"name": "prod", "namespace": "x"}
    argocd.add_application(obj)

    assert [n for _, n in discovered_clusters(source(argocd))] == [0, 0]


def test_cluster_list_for_a_poll_is_none_when_the_token_may_not_list_clusters(argocd):
    argocd.fail(ApiFault("/api/v1/clusters", 403, "permission denied: clusters, get"))
    assert source(argocd).argocd_clusters() is None
    argocd.faults.clear()
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    assert source(argocd).argocd_clusters() == [ArgoCluster("in-cluster", "https://kubernetes.default.svc")]


# ----------------------------------------------------------------------------------- errors


def test_a_bad_token_is_unauthorized_and_never_echoed(argocd):
    with pytest.raises(SourceError) as caught:
        source(argocd, token="wrong-token-value-123").list_objects(APPLICATION)
    assert caught.value.reason == "unauthorized" and caught.value.status == 401
    assert "invalid session" in caught.value.message
    assert "wrong-token-value-123" not in str(caught.value)


def test_an_echoed_authorization_header_is_redacted(argocd):
    argocd.fail(ApiFault("/api/v1/applications", 500,
                         f"upstream said: Authorization: Bearer {argocd.token}; token={argocd.token}"))
    with pytest.raises(SourceError) as caught:
        source(argocd).list_objects(APPLICATION)
    assert caught.value.reason == "server_error"
    assert argocd.token not in str(caught.value) and argocd.token not in caught.value.message


def test_forbidden_projects_cost_only_the_sync_windows(argocd):
    argocd.add_application(app("checkout"))
    argocd.fail(ApiFault("/api/v1/projects", 403, "permission denied: projects, get, default"))

    listing = list_capabilities(source(argocd))

    assert listing.fatal is None
    assert listing.listed == {"Application"}
    assert listing.unavailable == {
        kinds.ARGOCD_PROJECTS: "sync windows unavailable: no permission to list appprojects.argoproj.io"}


def test_unreachable_and_timeout_are_classified():
    with pytest.raises(SourceError) as caught:
        ArgoCDSource("http://127.0.0.1:9", "t0ken-value", name="hub").list_objects(APPLICATION)
    assert caught.value.reason == "unreachable"

    with ArgoCDAPIFake() as fake:
        release = threading.Event()
        fault = fake.fail(ApiFault("/api/v1/applications", hold=release))
        try:
            with pytest.raises(SourceError) as caught:
                ArgoCDSource(fake.url, fake.token, name="hub", timeout=(1.0, 0.3)).list_objects(APPLICATION)
        finally:
            release.set()
        assert fault.reached.is_set()
        assert caught.value.reason == "timeout"


def test_a_body_that_is_not_json_is_malformed(argocd):
    # A proxy in front of the API server answering with its login page.
    argocd.fail(ApiFault("/api/v1/applications", 200, body=b"<html><body>Sign in</body></html>"))
    with pytest.raises(SourceError) as caught:
        source(argocd).list_objects(APPLICATION)
    assert caught.value.reason == "malformed"


def test_tls_is_verified_against_the_given_ca(tmp_path):
    files = make_self_signed_cert(tmp_path)
    with ArgoCDAPIFake(tls=files) as fake:
        fake.add_application(app("checkout"))
        assert fake.url.startswith("https://")
        by_data = ArgoCDSource(fake.url, fake.token, name="hub", ca_data=files.cert_pem)
        by_file = ArgoCDSource(fake.url, fake.token, name="hub", ca_file=files.cert_path)
        assert len(by_data.list_objects(APPLICATION).items) == len(by_file.list_objects(APPLICATION).items) == 1
        with pytest.raises(SourceError) as caught:
            ArgoCDSource(fake.url, fake.token, name="hub").list_objects(APPLICATION)  # system CAs only
        assert caught.value.reason == "unreachable"
        assert fake.token not in str(caught.value)
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning):  # an operator's explicit choice
            unverified = ArgoCDSource(fake.url, fake.token, name="hub", verify=False).list_objects(APPLICATION)
        assert len(unverified.items) == 1


# --------------------------------------------------------------- same rows as Kubernetes


def _rows(cluster: Cluster) -> tuple[dict, dict]:
    # Which rows they are (ids, the cluster each poll is of, its name) differs by construction; the
    # fingerprint digests those ids too. Everything read from the objects must not differ.
    skip = {"id", "cluster", "sort_cluster", "read_from", "argocd_instance", "fingerprint", "first_seen", "updated_at",
            "services"}
    apps = {(a.namespace, a.name): {k: v for k, v in model_to_dict(a).items() if k not in skip}
            for a in GitOpsApp.objects.filter(cluster=cluster)}
    projects = {(p.namespace, p.name): {k: v for k, v in model_to_dict(p).items() if k not in skip}
                for p in AppProject.objects.filter(cluster=cluster)}
    return apps, projects


@pytest.mark.django_db
@pytest.mark.parametrize("fleet", ["prod-eu-1", "prod-ap-1"])
def test_the_api_source_stores_the_same_rows_as_the_kubernetes_source(fleet, argocd, kube_emulator, monkeypatch):
    prod = Environment.objects.create(name="prod", order=3, production=True)
    monkeypatch.setenv("PORTAL_TEST_KUBE_TOKEN", kube_emulator.token)
    monkeypatch.setenv(TOKEN_ENV, argocd.token)
    for spec in (APPLICATION, APPPROJECT):
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    for obj in demo_argo_objects(fleet):
        stored = kube_emulator.add(obj)  # the emulator stamps a resourceVersion: Argo CD's copy has it too
        (argocd.add_application if obj["kind"] == "Application" else argocd.add_project)(stored)
    unhealthy_tree_apps = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o for o in demo_argo_objects(fleet)
        if o["kind"] == "Application" and o["status"].get("resourceHealthSource") == "appTree"
        and o["status"]["health"]["status"] != "Healthy"
    }
    for (namespace, name), obj in unhealthy_tree_apps.items():
        argocd.set_tree(namespace, name, [
            {"group": r.get("group", ""), "version": r["version"], "kind": r["kind"], "namespace": r["namespace"],
             "name": r["name"]}  # not created yet: no uid, no health
            for r in obj["status"]["resources"]
        ])
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    via_kube = Cluster.objects.create(name="via-kube", environment=prod, connection=Cluster.Connection.API,
                                      api_url=kube_emulator.url, token_env="PORTAL_TEST_KUBE_TOKEN")
    via_argocd = Cluster.objects.create(name="via-argocd", environment=prod,
                                        connection=Cluster.Connection.ARGOCD_API, api_url=argocd.url,
                                        token_env=TOKEN_ENV)
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    assert isinstance(source_for(via_argocd), ArgoCDSource)
    assert isinstance(source_for(via_kube), KubeSource)
    assert poll(via_kube, at=at).ok
    report = poll(via_argocd, at=at)
    assert report.ok, report.error

    kube_apps, kube_projects = _rows(via_kube)
    api_apps, api_projects = _rows(via_argocd)
    assert kube_apps and kube_projects
    assert api_projects == kube_projects
    assert api_apps.keys() == kube_apps.keys()
    for key, row in kube_apps.items():
        if key not in unhealthy_tree_apps:
            assert api_apps[key] == row, key
            continue
        # Argo CD 3 keeps this app's resource health in the tree: the API source adds it (as
        # Argo CD's own Get does); everything else is the same.
        api_row = copy.deepcopy(api_apps[key])
        resources = api_row["raw"]["status"]["resources"]
        assert resources and all(r.pop("health") == {"status": "Missing", "message": "Resource has not been created"}
                                 for r in resources)
        assert api_row == row, key
    assert fleet != "prod-ap-1" or unhealthy_tree_apps, "prod-ap-1 has an unhealthy appTree app to read a tree for"


@pytest.mark.django_db
def test_a_hub_poll_through_the_api_places_apps_by_the_api_cluster_list(argocd, monkeypatch):
    """`spec.destination.name` is resolved with the instance's own cluster list (here only the
    API knows that "eu-prod" is https://10.0.4.1:6443, the catalog's prod-eu-1)."""
    prod = Environment.objects.create(name="prod", order=3, production=True)
    monkeypatch.setenv(TOKEN_ENV, argocd.token)
    hub = Cluster.objects.create(name="hub", environment=prod, connection=Cluster.Connection.ARGOCD_API,
                                 api_url=argocd.url, token_env=TOKEN_ENV)
    target = Cluster.objects.create(name="prod-eu-1", environment=prod, connection=Cluster.Connection.NONE,
                                    api_url="https://10.0.4.1:6443")
    argocd.add_cluster("in-cluster", "https://kubernetes.default.svc")
    argocd.add_cluster("eu-prod", "https://10.0.4.1:6443")
    remote = app("checkout-prod")
    remote["spec"]["destination"] = {"name": "eu-prod", "namespace": "checkout"}
    argocd.add_application(remote)
    argocd.add_application(app("argocd-self"))

    report = poll(hub)

    assert report.ok, report.error
    placed = dict(GitOpsApp.objects.values_list("name", "cluster__name"))
    assert placed == {"checkout-prod": target.name, "argocd-self": "hub"}
