"""Amazon ECS services through boto3 (credentials from the standard AWS chain: environment,
shared config, instance or task role — never stored by the portal).

Read: `ListServices` (paged) and `DescribeServices` (ten at a time, with their tags), then
`DescribeTaskDefinition` once per task definition revision (with its tags). A service is one
workload, its containers the task definition's, replicas its desired and running counts.
`portal.git.*` may be tagged on the service or on the task definition; the service's win.
Needs only ecs:ListServices, ecs:DescribeServices and ecs:DescribeTaskDefinition.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from gitops.platforms import ECS_SERVICE, PlatformError, PlatformRead, container, git_location, with_git
from gitops.rows import WorkloadRow


class ECSReader:
    def __init__(self, cluster: str, region: str, *, client: Any = None) -> None:
        self.cluster = cluster
        self._ecs = client or boto3.client("ecs", region_name=region)

    def read(self) -> PlatformRead:
        out = PlatformRead(listed={ECS_SERVICE})
        try:
            arns: list[str] = []
            for page in self._ecs.get_paginator("list_services").paginate(cluster=self.cluster):
                arns.extend(page.get("serviceArns") or [])
            services: list[dict[str, Any]] = []
            for start in range(0, len(arns), 10):
                answer = self._ecs.describe_services(cluster=self.cluster, services=arns[start:start + 10],
                                                     include=["TAGS"])
                services.extend(answer.get("services") or [])
                for failure in answer.get("failures") or []:
                    out.warnings.append(f"ECS service {failure.get('arn')}: {failure.get('reason')}")
        except (ClientError, BotoCoreError) as exc:
            raise PlatformError(f"ECS cluster {self.cluster}: {exc}") from None
        definitions: dict[str, dict[str, Any] | None] = {}
        for service in services:
            arn = str(service.get("taskDefinition") or "")
            if arn and arn not in definitions:
                try:
                    answer = self._ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
                    definitions[arn] = {**answer.get("taskDefinition", {}), "tags": answer.get("tags") or []}
                except (ClientError, BotoCoreError) as exc:
                    definitions[arn] = None
                    out.warnings.append(f"ECS task definition {arn}: {exc}")
            out.workloads.append(service_row(self.cluster, service, definitions.get(arn)))
        return out


def _tags(value: Any) -> dict[str, str]:
    return {str(t.get("key")): str(t.get("value")) for t in value or [] if isinstance(t, dict)}


def service_row(cluster: str, service: dict[str, Any], definition: dict[str, Any] | None) -> WorkloadRow:
    name = str(service.get("serviceName") or "")
    row = WorkloadRow(kind=ECS_SERVICE, namespace=cluster, name=name, uid=str(service.get("serviceArn") or ""))
    where = f"ECS service {cluster}/{name}"
    if definition is None:
        row.warnings.append(f"{where}: its task definition could not be read")
    else:
        for spec in definition.get("containerDefinitions") or []:
            if isinstance(spec, dict) and isinstance(spec.get("image"), str):
                row.containers.append(container(str(spec.get("name") or ""), spec["image"], row))
    labels = {**_tags((definition or {}).get("tags")), **_tags(service.get("tags"))}
    with_git(row, git_location(labels, row.warnings, where))
    desired, running = service.get("desiredCount"), service.get("runningCount")
    row.replicas_desired = desired if isinstance(desired, int) else None
    row.replicas_ready = row.replicas_available = running if isinstance(running, int) else None
    rollouts = [d for d in service.get("deployments") or [] if isinstance(d, dict)]
    failed = [d for d in rollouts if d.get("rolloutState") == "FAILED"]
    if failed:
        row.health_status = "Failed"
        row.health_message = str(failed[0].get("rolloutStateReason") or "deployment failed")[:500]
    elif len(rollouts) > 1 or any(d.get("rolloutState") == "IN_PROGRESS" for d in rollouts):
        row.health_status, row.health_message = "InProgress", "a deployment is rolling out"
    elif row.replicas_desired is not None and row.replicas_ready is not None:
        row.health_status = "Current" if row.replicas_ready >= row.replicas_desired else "InProgress"
    return row
