"""Nomad jobs through Nomad's HTTP API: `GET /v1/jobs?namespace=*` (with each job's summary),
then `GET /v1/job/<id>?namespace=<ns>` for its task groups, tasks and `meta`.

An ACL token, when Nomad has ACLs on, comes from the environment variable the cluster names and
travels in the `X-Nomad-Token` header; it needs only `namespace:list-jobs` and
`namespace:read-job`. Plain HTTP calls through requests (the API is small and JSON; the
community clients add nothing the portal needs and lag Nomad's releases). Every task whose
driver takes an image (docker, podman, containerd) is a container of its job's workload.

`portal.git.*` may be set in the job's, a group's or a task's `meta`; the most specific wins,
as Nomad itself merges meta (task over group over job). A job is one workload: its Git location
is the job's, or that of its first task that sets one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import requests

from gitops.platforms import NOMAD_JOB, PlatformError, PlatformRead, as_dict, container, git_location, with_git
from gitops.rows import WorkloadRow

IMAGE_DRIVERS = ("docker", "podman", "containerd-driver", "nerdctl")
MAX_JOBS = 10_000


class NomadReader:
    def __init__(self, address: str, token: str = "", *, timeout: float = 20.0, verify: bool | str = True,
                 session: requests.Session | None = None) -> None:
        self.address = address.rstrip("/")
        self._session = session or requests.Session()
        self._session.headers["Accept"] = "application/json"
        if token:
            self._session.headers["X-Nomad-Token"] = token
        self.timeout = timeout
        self.verify = verify
        self.requests = 0

    def _get(self, path: str, params: dict[str, str]) -> Any:
        self.requests += 1
        try:
            response = self._session.get(f"{self.address}{path}", params=params, timeout=self.timeout,
                                         verify=self.verify)
        except requests.RequestException as exc:
            raise PlatformError(f"Nomad at {self.address} unreachable: {type(exc).__name__}") from None
        if response.status_code == 403:
            raise PlatformError("Nomad refused the token (403): it needs namespace:list-jobs and namespace:read-job")
        if response.status_code >= 400:
            raise PlatformError(f"Nomad answered {response.status_code} for {path}: {response.text[:200]}")
        try:
            return response.json()
        except ValueError:
            raise PlatformError(f"Nomad answered {path} with something that is not JSON") from None

    def read(self) -> PlatformRead:
        out = PlatformRead(listed={NOMAD_JOB})
        stubs = self._get("/v1/jobs", {"namespace": "*"})
        if not isinstance(stubs, list):
            raise PlatformError("Nomad's job list is not a list")
        for stub in stubs[:MAX_JOBS]:
            if not isinstance(stub, dict) or not isinstance(stub.get("ID"), str):
                out.warnings.append("Nomad: a job list entry without an ID was skipped")
                continue
            if stub.get("ParentID"):
                continue  # a periodic or dispatched child: its parent job is the workload
            namespace = str(stub.get("Namespace") or "default")
            try:
                job = self._get(f"/v1/job/{quote(stub['ID'], safe='')}", {"namespace": namespace})
            except PlatformError as exc:
                out.warnings.append(f"Nomad job {namespace}/{stub['ID']}: {exc}")
                continue
            if isinstance(job, dict):
                out.workloads.append(job_row(job, stub.get("JobSummary")))
        return out


def _meta(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def job_row(job: dict[str, Any], summary: Any = None) -> WorkloadRow:
    """One Nomad job as a workload: containers per task, replicas from the job summary."""
    namespace = str(job.get("Namespace") or "default")
    row = WorkloadRow(kind=NOMAD_JOB, namespace=namespace, name=str(job.get("ID") or job.get("Name")),
                      uid=str(job.get("ID") or ""))
    where = f"Nomad job {namespace}/{row.name}"
    job_meta = _meta(job.get("Meta"))
    location = None
    desired = 0
    for group in job.get("TaskGroups") or []:
        if not isinstance(group, dict):
            continue
        desired += int(group.get("Count") or 0) if isinstance(group.get("Count"), int) else 0
        group_meta = {**job_meta, **_meta(group.get("Meta"))}
        for task in group.get("Tasks") or []:
            if not isinstance(task, dict):
                continue
            config = as_dict(task.get("Config"))
            image = config.get("image")
            if task.get("Driver") not in IMAGE_DRIVERS or not isinstance(image, str):
                continue
            row.containers.append(container(f"{group.get('Name')}/{task.get('Name')}", image, row))
            if location is None:
                location = git_location({**group_meta, **_meta(task.get("Meta"))}, row.warnings, where)
    if location is None and not row.containers:
        location = git_location(job_meta, row.warnings, where)
    with_git(row, location)
    running = starting = failed = 0
    groups = summary.get("Summary") if isinstance(summary, dict) else None
    for counts in (groups or {}).values():
        if isinstance(counts, dict):
            running += int(counts.get("Running") or 0)
            starting += int(counts.get("Starting") or 0) + int(counts.get("Queued") or 0)
            failed += int(counts.get("Failed") or 0) + int(counts.get("Lost") or 0)
    stopped = bool(job.get("Stop"))
    row.replicas_desired = 0 if stopped else desired
    row.replicas_ready = row.replicas_available = running if groups is not None else None
    status = str(job.get("Status") or "")
    if stopped or status == "dead":
        row.health_status, row.health_message = "Current", f"job {status or 'stopped'}"
        row.paused = stopped
    elif groups is None:
        row.health_status = "Unknown"
    elif running >= desired:
        row.health_status = "Current"
    elif starting or status == "pending":
        row.health_status, row.health_message = "InProgress", f"{running} of {desired} allocations running"
    else:
        row.health_status = "Failed"
        row.health_message = f"{running} of {desired} allocations running" + (f", {failed} failed or lost"
                                                                               if failed else "")
    return row
