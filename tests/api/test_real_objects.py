"""The real-objects corpus (tests/data/real-objects) polled through manifest-folder clusters
and read back through the API: every fact the store holds, with the value Argo CD or Flux
wrote in the object. The expected values are copied from the files, not from the code."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.kinds import KindSpec
from gitops.polling import poll
from gitops.sources.manifests import ManifestSource
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import Cluster
from tests.fixtures.real_objects import REAL_OBJECTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(catalog):
    for name, folder in (("argo-corpus", "argocd"), ("flux-corpus", "flux"), ("workload-corpus", "workloads")):
        cluster = Cluster.objects.create(name=name, environment=catalog.dev, connection=Cluster.Connection.MANIFESTS,
                                         manifests_path=str(REAL_OBJECTS / folder))
        report = poll(cluster)
        assert report.ok, report.error


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")

    def get(url: str, params: dict | None = None):
        response = client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}")
        assert response.status_code == 200, response.content
        return response.json()

    return get


def apps(api) -> dict[tuple[str, str, str], dict]:
    results = api("/api/v1/gitops", {"page_size": 200})["results"]
    return {(item["kind"], item["namespace"], item["name"]): item for item in results}


def test_an_argo_cd_api_server_response_without_apiversion_or_kind_is_read():
    # roadie-backstage-plugins' applications-test-app.json is what the Argo CD API server answers:
    # metadata, spec and status, no TypeMeta. It used to be dropped without a word.
    kind = KindSpec("argoproj.io", "Application", "applications", ("v1alpha1",), "argocd")
    listed = ManifestSource(REAL_OBJECTS / "argocd").list_objects(kind)
    names = {obj["metadata"]["name"] for obj in listed.items}
    assert "test-app" in names
    [app] = [obj for obj in listed.items if obj["metadata"]["name"] == "test-app"]
    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    # The folder's 15 Applications (INDEX.md), and nothing else taken for one: the AppProjects keep their kind.
    assert len(listed.items) == 15 and {obj["kind"] for obj in listed.items} == {"Application"}


def test_the_api_server_response_is_served_with_what_argo_cd_wrote(corpus, api):
    app = apps(api)[("Application", "argocd", "test-app")]
    assert app["destination"] == {"server": "https://kubernetes.default.svc", "name": "", "namespace": "default"}
    assert app["sources"] == [{"repo_url": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook",
                               "chart": "", "target_revision": "HEAD", "ref": ""}]
    assert app["synced_revision"] == "53e28ff20cc530b9ada2173fbbd64d48338583ba"
    assert (app["sync_status"], app["health_status"]) == ("Synced", "Healthy")
    assert app["images"] == ["gcr.io/heptio-images/ks-guestbook-demo:0.2"]
    assert app["generation"] == 2520
    assert [(h["id"], h["revision"], h["deployed_at"]) for h in app["history"]] == [
        (0, "53e28ff20cc530b9ada2173fbbd64d48338583ba", "2021-03-04T17:39:07Z"),
        (1, "53e28ff20cc530b9ada2173fbbd64d48338583ba", "2021-08-11T11:38:52Z"),
    ]


def test_argo_cd_destination_sources_images_history_and_generation(corpus, api):
    found = apps(api)
    demo = found[("Application", "appteam1-demo-dev", "springboot-demo")]
    assert demo["destination"] == {"server": "https://kubernetes.default.svc", "name": "",
                                   "namespace": "appteam1-demo-dev"}
    assert demo["sources"] == [{
        "repo_url": "https://github.com/abryson-redhat/argocd-demo.git",
        "path": "gitops/manifests/busunit1/integration/teams/appteam1/apps/springboot-demo",
        "chart": "", "target_revision": "helm", "ref": ""}]
    assert demo["multi_source"] is False
    assert demo["synced_revisions"] == ["72de7430c679cd7e781ccc2eeee029b90cb2eda6"]
    assert demo["images"] == ["nexus-registry-nexus.apps.cluster-bcttf.dynamic.redhatworkshops.io/repository/"
                              "smbc-demo/springboot-demo:latest"]
    assert demo["generation"] == 333 and demo["observed_generation"] is None  # Argo CD writes none
    assert [(h["revision"], h["deployed_at"]) for h in demo["history"]] == [
        ("4c59f8af1b70f5a02417b6c85209e28a6d792222", "2024-05-29T14:55:41Z")]
    assert demo["manual_sync"] is True and demo["automated"] is False
    assert demo["ready"] is None and demo["helm_release"] is None and demo["flux_source"] is None

    # diff-cache: destination given by name only, ten history entries kept, sync.revision "rev1".
    velero = found[("Application", "argo-cd", "velero-test")]
    assert velero["destination"] == {"server": "", "name": "gke-alpha-01-europe-west1", "namespace": "test-lla"}
    assert velero["synced_revision"] == "rev1" and velero["images"] == ["nginx:latest"]
    assert len(velero["history"]) == 10 and velero["history"][-1]["id"] == 23
    assert velero["history"][-1]["revision"] == "ea8759964626a583667a2bfd08f334ec2070040a"
    assert velero["generation"] == 263
    # Placed on its destination (discovered), read from the cluster that holds the Application.
    assert velero["cluster"] == "gke-alpha-01-europe-west1" and velero["read_from"] == "argo-corpus"

    # live-child-application: a Helm chart source at a chart version, destination in-cluster, no status.
    child = found[("Application", "argocd", "argo-workflows")]
    assert child["sources"] == [{"repo_url": "https://argoproj.github.io/argo-helm", "path": "", "chart":
                                 "argo-workflows", "target_revision": "0.45.27", "ref": ""}]
    assert child["destination"] == {"server": "", "name": "in-cluster", "namespace": "argo-workflows"}
    assert child["history"] == [] and child["synced_revisions"] == []


def test_a_multi_source_app_lists_every_source_and_revision(corpus, api):
    app = apps(api)[("Application", "argocd", "demo-ms-a")]
    assert app["multi_source"] is True
    assert [(s["repo_url"], s["path"], s["target_revision"]) for s in app["sources"]] == [
        ("https://github.com/dudinea/cfrepo02.git", "demo-applications/try-ms02a", "dev"),
        ("https://github.com/dudinea/cfrepo02.git", "demo-applications/try-ms02b", "dev"),
        ("https://github.com/dudinea/cfrepo01.git", "demo-applications/try-ms01a", "main"),
        ("https://github.com/dudinea/cfrepo01.git", "demo-applications/try-ms01b", "main"),
    ]
    assert app["synced_revisions"] == ["CURRENT_REPO_02_000000000000000000000000"] * 2 + [
        "CURRENT_REPO_01_000000000000000000000000"] * 2
    assert len(app["history"]) == 3
    last = app["history"][-1]
    assert last["id"] == 5 and last["initiated_by"] == "automated"
    assert last["revisions"] == ["HISTORY-1_REPO02_00000000000000000000000"] * 2 + [
        "CURRENT_REPO_01_000000000000000000000000"] * 2


def test_helmreleases_last_release_attempted_revision_ready_and_source(corpus, api):
    found = apps(api)
    tailscale = found[("HelmRelease", "tailscale", "tailscale-operator")]
    # As in the source: lastAttemptedRevision 1.90.6 while the latest release (version 3) is 1.90.9.
    assert tailscale["last_attempted_revision"] == "1.90.6"
    assert tailscale["helm_release"]["chart"] == "tailscale-operator"
    assert tailscale["helm_release"]["chart_version"] == "1.90.9"
    assert tailscale["helm_release"]["status"] == "deployed"
    assert tailscale["helm_release"]["release_version"] == 3
    assert tailscale["helm_release"]["digest"] == (
        "sha256:f00bb59fbdb28284e525bd4d85aea707e728b89653f2acfa6d98cef3b93e28d5")
    assert tailscale["ready"]["status"] == "True" and tailscale["ready"]["reason"] == "InstallSucceeded"
    assert tailscale["ready"]["message"] == ("Helm install succeeded for release tailscale/tailscale-operator.v1 "
                                             "with chart tailscale-operator@1.90.6")
    assert tailscale["observed_generation"] == 1
    assert tailscale["flux_source"]["ref"] == "HelmRepository/tailscale-operator"
    assert tailscale["flux_source"]["url"] == "https://pkgs.tailscale.com/helmcharts"

    cert = found[("HelmRelease", "cert-manager", "cert-manager")]
    assert cert["helm_release"]["chart_version"] == "1.19.1+9578566b26b2"
    assert cert["helm_release"]["digest"] == "sha256:b6eda3ef50097eb669b52c31d0b9824ef2303373784ebd4f231675efbc23b82b"
    assert cert["last_attempted_revision"] == "1.19.1+9578566b26b2"
    assert cert["flux_source"]["ref"] == "OCIRepository/cert-manager"
    assert cert["flux_source"]["url"] == "oci://quay.io/jetstack/charts/cert-manager"

    zot = found[("HelmRelease", "registry", "zot-registry")]
    assert zot["ready"]["reason"] == "UpgradeSucceeded" and zot["observed_generation"] == 2
    assert zot["helm_release"]["release_version"] == 3 and zot["helm_release"]["app_version"] == "v2.1.10"

    # v2beta1 (AKS): no history, the revision in lastAppliedRevision.
    nginx = found[("HelmRelease", "ingress-nginx", "ingress-nginx")]
    assert (nginx["generation"], nginx["observed_generation"]) == (1, 1)
    assert nginx["last_attempted_revision"] == "4.0.11" and nginx["synced_revision"] == "4.0.11"
    assert nginx["helm_release"] is None
    assert nginx["flux_source"]["ref"] == "HelmRepository/ingress-nginx"


def test_kustomizations_source_url_ref_history_and_generation(corpus, api):
    found = apps(api)
    infra = found[("Kustomization", "flux-system", "cluster-infra")]
    assert infra["flux_source"] == {
        "ref": "GitRepository/flux-system", "url": "https://github.com/stefanprodan/homelab.git",
        "follows": "refs/heads/main", "revision": infra["source_revision"]}
    assert infra["sources"][0]["path"] == "infra"
    assert infra["last_attempted_revision"] == "refs/heads/main@sha1:d676e33990dc2865d67c022d26dea93d5e3236ff"
    assert infra["ready"]["reason"] == "ReconciliationSucceeded"
    assert infra["generation"] is None and infra["observed_generation"] == 1  # flux-operator's API trims metadata
    assert len(infra["history"]) == 5
    assert infra["history"][-1]["digest"] == "sha256:bbe7aa022b513c7ceb4cf38e9fee0cec579c96fee9bf15afcdeff34bf4eed934"

    operator = found[("Kustomization", "flux-system", "flux-operator")]
    assert operator["flux_source"]["ref"] == "OCIRepository/flux-operator"
    assert operator["flux_source"]["url"] == "oci://ghcr.io/controlplaneio-fluxcd/flux-operator-manifests"
    assert operator["flux_source"]["follows"] == "latest"

    # karmada: suspended while Ready; generation 1 = observedGeneration 1; a remote kubeConfig secret.
    sample = found[("Kustomization", "test-kustomization", "sample")]
    assert sample["suspended"] is True
    assert (sample["generation"], sample["observed_generation"]) == (1, 1)
    assert sample["last_attempted_revision"] == "master@sha1:0647aea75b85755411b007a290b9321668370be5"
    assert sample["destination"]["name"] == "fake--decryption-secret"
    assert sample["sources"][0]["path"] == "./kustomize" and sample["flux_source"]["ref"] == "GitRepository/sample"


def test_the_detail_has_the_same_facts_and_the_conditions(corpus, api):
    listed = apps(api)[("HelmRelease", "tailscale", "tailscale-operator")]
    detail = api(listed["api_url"])
    for key in ("destination", "sources", "history", "helm_release", "flux_source", "ready", "generation",
                "observed_generation", "last_attempted_revision", "images", "synced_revisions"):
        assert detail[key] == listed[key], key
    assert [c["type"] for c in detail["conditions"]] == ["Ready", "Released"]


def test_a_page_of_the_corpus_costs_the_same_queries_as_a_page_of_two(corpus, api):
    api("/api/v1/gitops")  # the token's first use is recorded once
    with CaptureQueriesContext(connection) as small:
        api("/api/v1/gitops", {"page_size": 2})
    with CaptureQueriesContext(connection) as large:
        api("/api/v1/gitops", {"page_size": 200})
    assert len(large) == len(small)
