"""Which reader a platform cluster uses, built from its catalog row (secrets from the environment)."""

from __future__ import annotations

from gitops.platforms import PlatformError, PlatformRead
from portal.kernel.catalog.models import Cluster
from portal.kernel.credentials import cluster_token

CONNECTIONS = frozenset({Cluster.Connection.NOMAD, Cluster.Connection.DOCKER, Cluster.Connection.ECS})


def read_platform(cluster: Cluster, timeout: float = 20.0) -> PlatformRead:
    if cluster.connection == Cluster.Connection.NOMAD:
        from gitops.platforms.nomad import NomadReader

        if not cluster.api_url:
            raise PlatformError("a Nomad cluster needs its API address (api_url)")
        token = cluster_token(cluster)
        return NomadReader(cluster.api_url, token, timeout=timeout, verify=cluster.verify_tls).read()
    if cluster.connection == Cluster.Connection.DOCKER:
        from gitops.platforms.docker import DockerReader

        reader = DockerReader(cluster.platform_endpoint or "unix:///var/run/docker.sock", timeout=timeout)
        try:
            return reader.read()
        finally:
            reader.close()
    if cluster.connection == Cluster.Connection.ECS:
        from gitops.platforms.ecs import ECSReader

        region, _, name = cluster.platform_endpoint.partition("/")
        if not region or not name:
            raise PlatformError("an ECS cluster's endpoint is region/cluster, e.g. eu-west-1/prod")
        return ECSReader(name, region).read()
    raise PlatformError(f"{cluster.connection} is not a platform connection")
