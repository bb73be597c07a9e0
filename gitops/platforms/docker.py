"""Docker Engine, Compose and Swarm through the Engine API (the `docker` SDK: it speaks to the
Unix socket, TCP and TLS the way the docker CLI does, so the portal does not re-implement it).

Read: `GET /containers/json` (running containers with their labels; one call, no per-container
inspect) and, on a Swarm manager, `GET /services?status=true` (desired and running tasks).
A Compose service's containers (labels `com.docker.compose.project` / `.service`) are one
workload, its replicas their count; a Swarm service is one workload; containers a Swarm service
runs are not counted again; any other container is a workload of its own. `portal.git.*` come
from the container's labels (in compose.yaml: the service's `labels:`) or the Swarm service's
labels (`deploy.labels`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import docker
from docker.errors import APIError, DockerException

from gitops.platforms import (
    COMPOSE_SERVICE,
    CONTAINER,
    SWARM_SERVICE,
    PlatformError,
    PlatformRead,
    as_dict,
    container,
    git_location,
    with_git,
)
from gitops.rows import WorkloadRow

API_VERSION = "1.43"  # Docker Engine 24; every field read here is older
COMPOSE_PROJECT, COMPOSE_SERVICE_LABEL = "com.docker.compose.project", "com.docker.compose.service"
SWARM_SERVICE_NAME, SWARM_STACK = "com.docker.swarm.service.name", "com.docker.stack.namespace"


class DockerReader:
    def __init__(self, base_url: str, *, timeout: float = 20.0, tls: Any = None) -> None:
        self.base_url = base_url
        try:
            self._client = docker.DockerClient(base_url=base_url, version=API_VERSION, timeout=int(timeout), tls=tls)
        except DockerException as exc:
            raise PlatformError(f"Docker at {base_url}: {exc}") from None

    def close(self) -> None:
        self._client.close()

    def read(self) -> PlatformRead:
        out = PlatformRead(listed={CONTAINER, COMPOSE_SERVICE})
        api = self._client.api
        try:
            containers = api.containers()  # running ones, as `docker ps`
        except (APIError, DockerException) as exc:
            raise PlatformError(f"Docker at {self.base_url}: {_why(exc)}") from None
        try:
            services = api.services(status=True)
            out.listed.add(SWARM_SERVICE)
        except APIError as exc:
            services = []
            if exc.status_code == 503:  # "This node is not a swarm manager": no Swarm here
                out.listed.add(SWARM_SERVICE)
            else:
                out.unavailable["swarm"] = f"Swarm services not read: {_why(exc)}"
        except DockerException as exc:
            services = []
            out.unavailable["swarm"] = f"Swarm services not read: {_why(exc)}"
        for service in services:
            if isinstance(service, dict):
                out.workloads.append(swarm_row(service))
        out.workloads.extend(container_rows([c for c in containers if isinstance(c, dict)]))
        return out


def _why(exc: Exception) -> str:
    text = getattr(exc, "explanation", None) or str(exc)
    return str(text)[:300]


def _labels(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def swarm_row(service: dict[str, Any]) -> WorkloadRow:
    spec = as_dict(service.get("Spec"))
    labels = _labels(spec.get("Labels"))
    name = str(spec.get("Name") or service.get("ID") or "")
    row = WorkloadRow(kind=SWARM_SERVICE, namespace=labels.get(SWARM_STACK, ""), name=name,
                      uid=str(service.get("ID") or ""))
    image = as_dict(as_dict(spec.get("TaskTemplate")).get("ContainerSpec")).get("Image")
    if isinstance(image, str):
        row.containers.append(container(name, image, row))
    with_git(row, git_location(labels, row.warnings, f"Swarm service {name}"))
    mode = as_dict(spec.get("Mode"))
    status = as_dict(service.get("ServiceStatus"))
    desired = status.get("DesiredTasks")
    if desired is None and isinstance(mode.get("Replicated"), dict):
        desired = mode["Replicated"].get("Replicas")
    running = status.get("RunningTasks")
    row.replicas_desired = desired if isinstance(desired, int) else None
    row.replicas_ready = row.replicas_available = running if isinstance(running, int) else None
    if row.replicas_desired is None or row.replicas_ready is None:
        row.health_status = "Unknown"
    elif row.replicas_ready >= row.replicas_desired:
        row.health_status = "Current"
    else:
        row.health_status = "InProgress"
        row.health_message = f"{row.replicas_ready} of {row.replicas_desired} tasks running"
    return row


def container_rows(containers: list[dict[str, Any]]) -> list[WorkloadRow]:
    """Compose services grouped from their containers; plain containers one by one."""
    compose: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    rows: list[WorkloadRow] = []
    for item in containers:
        labels = _labels(item.get("Labels"))
        if SWARM_SERVICE_NAME in labels:
            continue  # a Swarm task: its service is the workload
        if COMPOSE_PROJECT in labels and COMPOSE_SERVICE_LABEL in labels:
            compose[(labels[COMPOSE_PROJECT], labels[COMPOSE_SERVICE_LABEL])].append(item)
            continue
        names = item.get("Names") if isinstance(item.get("Names"), list) else []
        name = str(names[0]).lstrip("/") if names else str(item.get("Id") or "")[:12]
        row = WorkloadRow(kind=CONTAINER, namespace="", name=name, uid=str(item.get("Id") or ""))
        _fill_container(row, [item], labels, f"container {name}")
        rows.append(row)
    for (project, service), items in sorted(compose.items()):
        row = WorkloadRow(kind=COMPOSE_SERVICE, namespace=project, name=service)
        _fill_container(row, items, _labels(items[0].get("Labels")), f"Compose service {project}/{service}")
        rows.append(row)
    return rows


def _fill_container(row: WorkloadRow, items: list[dict[str, Any]], labels: dict[str, str], where: str) -> None:
    image = items[0].get("Image")
    if isinstance(image, str):
        row.containers.append(container(row.name, image, row))
    images = {i.get("Image") for i in items}
    if len(images) > 1:
        row.warnings.append(f"{where}: its containers run {len(images)} different images (a rollout under way?)")
    with_git(row, git_location(labels, row.warnings, where))
    running = sum(1 for i in items if i.get("State") == "running")
    unhealthy = [i for i in items if "(unhealthy)" in str(i.get("Status") or "")]
    row.replicas_desired = len(items)
    row.replicas_ready = row.replicas_available = running - len(unhealthy)
    if unhealthy:
        row.health_status = "Failed"
        row.health_message = f"{len(unhealthy)} of {len(items)} containers unhealthy"
    else:
        row.health_status = "Current" if running == len(items) else "InProgress"
