"""Nomad, Docker/Compose/Swarm and ECS clusters (gitops.platforms) polled end to end: their
workloads are stored as Kubernetes ones are (services matched by image, running versions kept),
each with the Git location its portal.git.* labels name; a failed read keeps the last good data.

Nomad and Docker against HTTP fakes shaped as their APIs answer (tests/fakes/platforms.py), ECS
against moto's in-process AWS."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from gitops.models import RunningVersion, Workload
from gitops.platforms import COMPOSE_SERVICE, CONTAINER, ECS_SERVICE, NOMAD_JOB, SWARM_SERVICE, lines_to_add
from gitops.polling import poll
from portal.kernel.catalog.models import Cluster, Environment, Service
from tests.fakes.platforms import DockerFake, NomadFake, docker_container, job, swarm_service

pytestmark = pytest.mark.django_db
REPO = "https://github.com/acme/deploy"


@pytest.fixture
def prod(db):
    env = Environment.objects.create(name="prod", order=3, production=True)
    Service.objects.create(name="vault", image_repository="hashicorp/vault")
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    Service.objects.create(name="search", image_repository="ghcr.io/acme/search")
    return env


def git(path: str, branch: str = "") -> dict[str, str]:
    return {"portal.git.repo": REPO, "portal.git.path": path, **({"portal.git.branch": branch} if branch else {})}


def workloads(cluster: Cluster) -> dict[tuple[str, str, str], Workload]:
    return {(w.kind, w.namespace, w.name): w for w in Workload.objects.filter(cluster=cluster)}


def test_nomad_jobs_become_workloads_with_their_git_location_and_versions(prod, monkeypatch):
    with NomadFake(token="nomad-acl-0123") as nomad:
        nomad.add(job("vault", {"server": "hashicorp/vault:1.17.2"}, namespace="platform", count=3,
                      job_meta=git("jobs/vault.nomad.hcl")), running=3)
        # Task meta over group meta over job meta, as Nomad merges them.
        nomad.add(job("checkout", {"web": "ghcr.io/acme/checkout:2.4.1"}, job_meta=git("jobs/old.hcl"),
                      group_meta=git("jobs/checkout/"), task_meta={"web": git("jobs/checkout/web.hcl", "release")}),
                  running=1, starting=1)
        nomad.add(job("search", {"api": "ghcr.io/acme/search:5.0.0"}), running=0, failed=2)
        monkeypatch.setenv("NOMAD_TEST_TOKEN", "nomad-acl-0123")
        cluster = Cluster.objects.create(name="nomad-eu", environment=prod, connection=Cluster.Connection.NOMAD,
                                         api_url=nomad.url, token_env="NOMAD_TEST_TOKEN")
        report = poll(cluster)
    assert report.ok, report.error
    assert nomad.requests[0][1] == {"namespace": "*"}
    assert all(headers.get("X-Nomad-Token") == "nomad-acl-0123" for _p, _q, headers in nomad.requests)
    rows = workloads(cluster)
    vault = rows[(NOMAD_JOB, "platform", "vault")]
    assert (vault.git_repo, vault.git_path, vault.git_branch) == (REPO, "jobs/vault.nomad.hcl", "")
    assert (vault.replicas_desired, vault.replicas_ready, vault.health_status) == (3, 3, "Current")
    assert vault.containers[0]["container"] == "vault/server" and vault.containers[0]["tag"] == "1.17.2"
    checkout = rows[(NOMAD_JOB, "default", "checkout")]
    assert (checkout.git_path, checkout.git_branch) == ("jobs/checkout/web.hcl", "release")
    assert checkout.health_status == "InProgress" and "1 of 2" in checkout.health_message
    search = rows[(NOMAD_JOB, "default", "search")]
    assert search.git_repo == "" and search.health_status == "Failed" and "2 failed" in search.health_message
    versions = dict(RunningVersion.objects.filter(cluster=cluster).values_list("service__name", "version"))
    assert versions == {"vault": "1.17.2", "checkout": "2.4.1", "search": "5.0.0"}


def test_a_refused_or_unreachable_nomad_keeps_the_last_good_data(prod, monkeypatch):
    with NomadFake(token="right") as nomad:
        nomad.add(job("vault", {"server": "hashicorp/vault:1.17.2"}, job_meta=git("jobs/vault.hcl")))
        monkeypatch.setenv("NOMAD_TEST_TOKEN", "right")
        cluster = Cluster.objects.create(name="nomad-eu", environment=prod, connection=Cluster.Connection.NOMAD,
                                         api_url=nomad.url, token_env="NOMAD_TEST_TOKEN")
        assert poll(cluster).ok
        monkeypatch.setenv("NOMAD_TEST_TOKEN", "revoked")
        refused = poll(cluster)
        url = nomad.url
    assert not refused.ok and "namespace:list-jobs" in refused.error
    gone = poll(Cluster.objects.get(pk=cluster.pk))
    assert not gone.ok and f"Nomad at {url} unreachable" in gone.error
    cluster.refresh_from_db()
    assert cluster.poll.stale_since is not None and "right" not in cluster.poll.last_error
    assert Workload.objects.filter(cluster=cluster).count() == 1  # kept


def test_malformed_git_labels_are_skipped_with_a_warning(prod):
    with NomadFake() as nomad:
        nomad.add(job("vault", {"server": "hashicorp/vault:1.17.2"},
                      job_meta={"portal.git.repo": "javascript:alert(1)", "portal.git.path": "../../etc/passwd"}))
        nomad.add(job("half", {"server": "hashicorp/vault:1.17.2"}, job_meta={"portal.git.path": "jobs/x.hcl"}))
        cluster = Cluster.objects.create(name="nomad-eu", environment=prod, connection=Cluster.Connection.NOMAD,
                                         api_url=nomad.url)
        report = poll(cluster)
    assert report.ok and not Workload.objects.exclude(git_repo="").exists()
    assert any("is not a repository URL" in w for w in report.warnings)
    assert any("go together" in w for w in report.warnings)


def test_docker_compose_services_swarm_services_and_containers(prod):
    with DockerFake(swarm=True) as engine:
        compose = {"com.docker.compose.project": "shop", "com.docker.compose.service": "checkout",
                   **git("compose.yaml")}
        engine.containers = [
            docker_container("shop-checkout-1", "ghcr.io/acme/checkout:2.4.1", compose),
            docker_container("shop-checkout-2", "ghcr.io/acme/checkout:2.4.1", compose,
                             status="Up 5 minutes (unhealthy)"),
            docker_container("vault", "hashicorp/vault:1.17.2", git("hosts/vault/docker-run.env")),
            # A task of the Swarm service below: counted with the service, not again.
            docker_container("search.1.x7k", "ghcr.io/acme/search:5.0.0",
                             {"com.docker.swarm.service.name": "search", "com.docker.stack.namespace": "shop"}),
        ]
        engine.services = [swarm_service("search", "ghcr.io/acme/search:5.0.0@sha256:" + "cd" * 32,
                                         {"com.docker.stack.namespace": "shop", **git("stacks/shop.yaml", "main")},
                                         replicas=3, running=2)]
        cluster = Cluster.objects.create(name="edge-host", environment=prod, connection=Cluster.Connection.DOCKER,
                                         platform_endpoint=engine.url.replace("http://", "tcp://"))
        report = poll(cluster)
    assert report.ok, report.error
    rows = workloads(cluster)
    assert set(rows) == {(COMPOSE_SERVICE, "shop", "checkout"), (CONTAINER, "", "vault"),
                         (SWARM_SERVICE, "shop", "search")}
    checkout = rows[(COMPOSE_SERVICE, "shop", "checkout")]
    assert (checkout.replicas_desired, checkout.replicas_ready, checkout.health_status) == (2, 1, "Failed")
    assert checkout.git_path == "compose.yaml"
    search = rows[(SWARM_SERVICE, "shop", "search")]
    assert (search.replicas_desired, search.replicas_ready, search.health_status) == (3, 2, "InProgress")
    assert (search.git_path, search.git_branch) == ("stacks/shop.yaml", "main")
    versions = dict(RunningVersion.objects.filter(cluster=cluster).values_list("service__name", "version"))
    assert versions == {"checkout": "2.4.1", "vault": "1.17.2", "search": "5.0.0"}


def test_a_docker_host_that_is_no_swarm_manager_has_no_swarm_services(prod):
    with DockerFake(swarm=False) as engine:
        engine.containers = [docker_container("vault", "hashicorp/vault:1.17.2", {})]
        cluster = Cluster.objects.create(name="edge-host", environment=prod, connection=Cluster.Connection.DOCKER,
                                         platform_endpoint=engine.url.replace("http://", "tcp://"))
        report = poll(cluster)
    assert report.ok and report.unavailable == {}
    assert list(workloads(cluster)) == [(CONTAINER, "", "vault")]


@mock_aws
def test_ecs_services_with_tags_on_the_service_or_the_task_definition(prod):
    ecs = boto3.client("ecs", region_name="eu-west-1")
    ecs.create_cluster(clusterName="shop-prod")
    checkout = ecs.register_task_definition(
        family="checkout", containerDefinitions=[
            {"name": "web", "image": "ghcr.io/acme/checkout:2.4.1", "memory": 512, "essential": True},
            {"name": "envoy", "image": "envoyproxy/envoy:v1.31.2", "memory": 128, "essential": False}],
        tags=[{"key": "portal.git.repo", "value": REPO}, {"key": "portal.git.path", "value": "ecs/old.json"}],
    )["taskDefinition"]["taskDefinitionArn"]
    ecs.create_service(cluster="shop-prod", serviceName="checkout", taskDefinition=checkout, desiredCount=2,
                       tags=[{"key": "portal.git.repo", "value": REPO},
                             {"key": "portal.git.path", "value": "ecs/checkout-task.json"}])
    search = ecs.register_task_definition(
        family="search", containerDefinitions=[{"name": "api", "image": "ghcr.io/acme/search:5.0.0", "memory": 256}],
        tags=[{"key": "portal.git.repo", "value": REPO}, {"key": "portal.git.path", "value": "ecs/search.json"}],
    )["taskDefinition"]["taskDefinitionArn"]
    ecs.create_service(cluster="shop-prod", serviceName="search", taskDefinition=search, desiredCount=1)
    cluster = Cluster.objects.create(name="ecs-eu", environment=prod, connection=Cluster.Connection.ECS,
                                     platform_endpoint="eu-west-1/shop-prod")
    report = poll(cluster)
    assert report.ok, report.error
    rows = workloads(cluster)
    assert set(rows) == {(ECS_SERVICE, "shop-prod", "checkout"), (ECS_SERVICE, "shop-prod", "search")}
    assert rows[(ECS_SERVICE, "shop-prod", "checkout")].git_path == "ecs/checkout-task.json"  # the service's tag wins
    assert rows[(ECS_SERVICE, "shop-prod", "search")].git_path == "ecs/search.json"
    assert [c["container"] for c in rows[(ECS_SERVICE, "shop-prod", "checkout")].containers] == ["web", "envoy"]
    versions = dict(RunningVersion.objects.filter(cluster=cluster).values_list("service__name", "version"))
    assert versions == {"checkout": "2.4.1", "search": "5.0.0"}


@mock_aws
def test_an_ecs_cluster_that_cannot_be_read_goes_stale(prod):
    cluster = Cluster.objects.create(name="ecs-eu", environment=prod, connection=Cluster.Connection.ECS,
                                     platform_endpoint="eu-west-1/no-such-cluster")
    report = poll(cluster)
    assert not report.ok and "ECS cluster no-such-cluster" in report.error


def test_lines_to_add_name_the_labels_for_each_platform():
    assert '"portal.git.repo" = "https://github.com/acme/deploy"' in lines_to_add(NOMAD_JOB, REPO, "jobs/vault.hcl")
    assert "labels:\n  portal.git.repo:" in lines_to_add(COMPOSE_SERVICE)
    assert "deploy:\n  labels:" in lines_to_add(SWARM_SERVICE)
    assert "aws ecs tag-resource" in lines_to_add(ECS_SERVICE)
