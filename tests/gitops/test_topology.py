"""Destinations resolved as Argo CD resolves them, from objects shaped as Argo CD writes them
(cluster Secrets per the declarative-setup docs and util/db/cluster.go; Applications per
the real-objects corpus), and matched to catalog clusters."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gitops.collectors import collect
from gitops.derive.topology import (
    BOTH_SET,
    NONE_SET,
    AgentMapping,
    ArgoCluster,
    CatalogIndex,
    Destination,
    cluster_from_api,
    cluster_from_secret,
    resolve_destination,
    suggest_environment,
    unregistered,
)

CORPUS = Path("/work/shared/testdata/real-objects/argocd")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def cluster_secret(name: str, server: str, *, agent: str = "", config: str = '{"bearerToken": "s3cr3t-token"}'
                   ) -> dict:
    """A cluster Secret as the Kubernetes API returns it (data base64-encoded)."""
    labels = {"argocd.argoproj.io/secret-type": "cluster"}
    if agent:
        labels["argocd-agent.argoproj-labs.io/agent-name"] = agent
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": f"cluster-{name}", "namespace": "argocd", "labels": labels},
        "data": {"name": b64(name), "server": b64(server), "config": b64(config)},
    }


@dataclass
class CatalogRow:
    name: str
    api_url: str = ""
    argocd_aliases: list[str] = field(default_factory=list)


CLUSTERS = [
    ArgoCluster("prod-eu", "https://prod-eu.k8s.example:6443"),
    ArgoCluster("staging", "https://10.0.0.7:6443"),
]


def test_a_cluster_secret_gives_name_and_server_never_its_credentials():
    secret = cluster_secret("prod-eu", "https://prod-eu.k8s.example:6443/")
    found = cluster_from_secret(secret)
    assert found == ArgoCluster("prod-eu", "https://prod-eu.k8s.example:6443")
    assert "s3cr3t" not in repr(found)
    # A manifest file writes stringData; any other Secret is not a cluster.
    written = {"kind": "Secret", "metadata": {"labels": {"argocd.argoproj.io/secret-type": "cluster"}},
               "stringData": {"name": "dev", "server": "https://dev.example"}}
    assert cluster_from_secret(written) == ArgoCluster("dev", "https://dev.example")
    repo = cluster_secret("x", "https://x")
    repo["metadata"]["labels"]["argocd.argoproj.io/secret-type"] = "repository"
    assert cluster_from_secret(repo) is None


def test_collect_reads_cluster_secrets_for_name_and_server_only():
    collected = collect({"Secret": [cluster_secret("staging", "https://10.0.0.7:6443"),
                                    {"kind": "Secret", "metadata": {"name": "db-password"},
                                     "data": {"password": b64("hunter2")}}]})
    assert collected.argocd_clusters == [ArgoCluster("staging", "https://10.0.0.7:6443")]
    assert collected.warnings == []
    assert "hunter2" not in repr(collected) and "s3cr3t" not in repr(collected)


def test_api_cluster_items_give_the_agent_label():
    item = {"server": "https://principal-proxy:8443?agentName=edge-1", "name": "edge-1",
            "labels": {"argocd-agent.argoproj-labs.io/agent-name": "edge-1"},
            "info": {"connectionState": {"status": "Successful"}}}
    assert cluster_from_api(item) == ArgoCluster("edge-1", "https://principal-proxy:8443?agentName=edge-1", "edge-1")


def test_destination_by_server_name_and_in_cluster_as_argo_cd_resolves_them():
    by_server = resolve_destination("https://prod-eu.k8s.example:6443/", "", CLUSTERS)
    assert (by_server.server, by_server.name, by_server.in_cluster) == (
        "https://prod-eu.k8s.example:6443", "prod-eu", False)
    by_name = resolve_destination("", "staging", CLUSTERS)
    assert (by_name.server, by_name.name) == ("https://10.0.0.7:6443", "staging")
    assert resolve_destination("https://kubernetes.default.svc", "", CLUSTERS).in_cluster
    assert resolve_destination("", "in-cluster", CLUSTERS).in_cluster
    # A Secret renaming the in-cluster server keeps it the instance's own cluster.
    renamed = [*CLUSTERS, ArgoCluster("hub", "https://kubernetes.default.svc")]
    assert resolve_destination("", "hub", renamed).in_cluster


def test_destinations_argo_cd_refuses_carry_its_error():
    assert resolve_destination("https://x", "y", CLUSTERS).error == BOTH_SET
    assert resolve_destination("", "", CLUSTERS).error == NONE_SET
    assert resolve_destination("", "nowhere", CLUSTERS).error == "there are no clusters with this name: nowhere"
    twice = [*CLUSTERS, ArgoCluster("staging", "https://10.0.0.8:6443")]
    assert resolve_destination("", "staging", twice).error.startswith("there are 2 clusters with the same name")
    # Without the instance's cluster list a name is not known to be wrong: it is matched as it stands.
    assert resolve_destination("", "nowhere", None) == Destination(name="nowhere")


def test_the_corpus_application_by_name_resolves_through_the_cluster_list():
    app = next(yaml.safe_load_all((CORPUS / "argo-cd__metrics_test-fakeApp1-4.yaml").read_text()))
    destination = app["spec"]["destination"]  # name: cluster1
    clusters = [cluster_from_secret(cluster_secret("cluster1", "https://cluster1.example:443"))]
    resolved = resolve_destination(destination.get("server", ""), destination.get("name", ""), clusters,
                                   namespace=app["metadata"]["namespace"])
    assert resolved.server == "https://cluster1.example:443"


def test_argocd_agent_namespace_mapping_ignores_the_server_and_finds_the_agent_cluster():
    clusters = [*CLUSTERS, ArgoCluster("edge-1", "https://proxy:8443?agentName=edge-1", agent="edge-1")]
    agents = AgentMapping("namespace", "argocd")
    # Managed mode on the principal: the app lives in namespace <agent>; the server is ignored.
    mirrored = resolve_destination("https://kubernetes.default.svc", "", clusters, namespace="edge-1", agents=agents)
    assert (mirrored.agent, mirrored.name, mirrored.in_cluster) == ("edge-1", "edge-1", False)
    # The control-plane namespace's apps belong to no agent.
    local = resolve_destination("https://kubernetes.default.svc", "", clusters, namespace="argocd", agents=agents)
    assert local.in_cluster and not local.agent
    by_destination = resolve_destination("", "edge-1", clusters, namespace="apps", agents=AgentMapping("destination"))
    assert by_destination.agent == "edge-1"


def test_catalog_match_by_api_url_argo_cd_name_alias_and_in_cluster():
    hub = CatalogRow("hub")
    prod = CatalogRow("prod-eu-1", api_url="HTTPS://Prod-EU.k8s.example:6443/")
    staging = CatalogRow("staging-1", argocd_aliases=["staging", "https://10.0.0.7:6443"])
    edge = CatalogRow("edge-1")
    index = CatalogIndex([hub, prod, staging, edge])
    assert index.match(resolve_destination("https://prod-eu.k8s.example:6443", "", CLUSTERS), hub) is prod
    assert index.match(Destination(name="staging"), hub) is staging
    assert index.match(Destination(server="https://10.0.0.7:6443"), hub) is staging
    assert index.match(Destination(server="https://kubernetes.default.svc", in_cluster=True), hub) is hub
    assert index.match(Destination(name="edge-1", agent="edge-1"), hub) is edge
    assert index.match(Destination(server="https://10.9.9.9:6443"), hub) is None
    assert index.match(Destination(error=BOTH_SET), hub) is None


def test_an_unregistered_destination_is_named_from_its_argo_cd_name_or_host():
    found = unregistered(Destination(server="https://10.9.9.9:6443", name="EU_West Prod"))
    assert found is not None
    assert (found.slug, found.api_url) == ("eu-west-prod", "https://10.9.9.9:6443")
    assert found.aliases == ("EU_West Prod", "https://10.9.9.9:6443")
    by_host = unregistered(Destination(server="https://api.dev-3.example.com:6443"))
    assert by_host is not None and by_host.slug == "api-dev-3-example-com"
    # An agent's server is the principal's resource proxy, not the cluster's API.
    agent = unregistered(Destination(server="https://proxy:8443?agentName=edge-1", name="edge-1", agent="edge-1"))
    assert agent is not None and agent.api_url == ""
    assert unregistered(Destination(error=NONE_SET)) is None


def test_environment_suggested_from_the_cluster_name():
    environments = ["dev", "staging", "production"]
    assert suggest_environment("eu-prod-2", environments) == "production"
    assert suggest_environment("api-stg-1", environments) == "staging"
    assert suggest_environment("dev3", environments) == "dev"
    assert suggest_environment("edge-1", environments) == ""
    assert suggest_environment("reproduce", environments) == ""
    # A destination known only by its server URL (no cluster Secret read): the URL's words count.
    assert suggest_environment("https://prod-eu-2.k8s.example:6443", environments) == "production"
    assert suggest_environment("https://10.0.0.7:6443/dev", environments) == "dev"
    assert suggest_environment("https://reproduce.example", environments) == ""
