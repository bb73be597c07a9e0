"""Fakes of the Nomad HTTP API and the Docker Engine API for tests: real HTTP on 127.0.0.1,
answers shaped as the real servers write them.

- Nomad: `GET /v1/jobs?namespace=*` (job stubs with JobSummary) and `GET /v1/job/<id>?namespace=`
  (the full job), as hashicorp/nomad website/content/api-docs/jobs.mdx gives them ("List Jobs",
  "Read Job" sample responses); the ACL token in `X-Nomad-Token`, 403 "Permission denied"
  otherwise. `job()` below builds a job with the fields of that sample that the portal reads,
  plus the ones it must ignore (Constraints, Resources, Services, …).
- Docker Engine API v1.43: `GET /v1.43/containers/json` (ContainerSummary: Id, Names, Image,
  ImageID, Command, Created, Ports, Labels, State, Status, HostConfig, NetworkSettings, Mounts)
  and `GET /v1.43/services?status=true` (Service: ID, Version, CreatedAt, UpdatedAt, Spec,
  Endpoint, ServiceStatus), as moby/moby api/swagger.yaml defines them; a node that is not a
  Swarm manager answers /services with 503 and `{"message": "This node is not a swarm manager..."}`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

Obj = dict[str, Any]


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                query = dict(parse_qsl(parts.query))
                fake.requests.append((parts.path, query, dict(self.headers)))
                status, body = fake.answer(unquote(parts.path), query, self.headers)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, path: str, query: dict[str, str], headers: Any) -> tuple[int, Any]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# --------------------------------------------------------------------------------- Nomad


def job(job_id: str, tasks: dict[str, str], *, namespace: str = "default", count: int = 2,
        job_meta: dict[str, str] | None = None, group_meta: dict[str, str] | None = None,
        task_meta: dict[str, dict[str, str]] | None = None, status: str = "running") -> Obj:
    """A service job as `GET /v1/job/<id>` returns it: one group `job_id` running `tasks`
    (task name -> docker image)."""
    return {
        "Region": "global", "Namespace": namespace, "ID": job_id, "ParentID": "", "Name": job_id,
        "Type": "service", "Priority": 50, "AllAtOnce": False, "Datacenters": ["dc1"], "NodePool": "default",
        "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
        "TaskGroups": [{
            "Name": job_id, "Count": count,
            "RestartPolicy": {"Attempts": 2, "Interval": 1800000000000, "Delay": 15000000000, "Mode": "fail"},
            "Tasks": [{
                "Name": name, "Driver": "docker", "Config": {"image": image, "ports": ["http"]},
                "Services": [{"Name": f"{job_id}-{name}", "PortLabel": "http", "Tags": ["global"]}],
                "Resources": {"CPU": 500, "MemoryMB": 256}, "Meta": (task_meta or {}).get(name),
                "KillTimeout": 5000000000, "Leader": False,
            } for name, image in tasks.items()],
            "EphemeralDisk": {"Sticky": False, "SizeMB": 300, "Migrate": False},
            "Meta": group_meta,
        }],
        "Update": {"Stagger": 30000000000, "MaxParallel": 1}, "Periodic": None, "ParameterizedJob": None,
        "Payload": None, "Meta": job_meta, "Stop": False, "Status": status, "StatusDescription": "",
        "Version": 3, "CreateIndex": 7, "ModifyIndex": 42, "JobModifyIndex": 40,
    }


class NomadFake(_Server):
    def __init__(self, token: str = "") -> None:
        super().__init__()
        self.token = token
        self.jobs: list[tuple[Obj, dict[str, int]]] = []  # (job, running/starting/failed counts)

    def add(self, full_job: Obj, *, running: int | None = None, starting: int = 0, failed: int = 0) -> None:
        group = full_job["TaskGroups"][0]
        counts = {"Queued": 0, "Complete": 0, "Failed": failed, "Running": group["Count"] if running is None
                  else running, "Starting": starting, "Lost": 0, "Unknown": 0}
        self.jobs.append((full_job, counts))

    def answer(self, path: str, query: dict[str, str], headers: Any) -> tuple[int, Any]:
        if self.token and headers.get("X-Nomad-Token") != self.token:
            return 403, "Permission denied"
        if path == "/v1/jobs":
            wanted = query.get("namespace", "default")
            return 200, [self._stub(j, c) for j, c in self.jobs if wanted in ("*", j["Namespace"])]
        if path.startswith("/v1/job/"):
            job_id = path.removeprefix("/v1/job/")
            for full, _counts in self.jobs:
                if full["ID"] == job_id and full["Namespace"] == query.get("namespace", "default"):
                    return 200, full
            return 404, "job not found"
        return 404, "Invalid URL"

    @staticmethod
    def _stub(full: Obj, counts: dict[str, int]) -> Obj:
        return {
            "ID": full["ID"], "ParentID": full["ParentID"], "Name": full["Name"], "Namespace": full["Namespace"],
            "Datacenters": full["Datacenters"], "NodePool": full["NodePool"], "Type": full["Type"],
            "Priority": full["Priority"], "Periodic": False, "ParameterizedJob": False, "Stop": full["Stop"],
            "Status": full["Status"], "StatusDescription": "",
            "JobSummary": {"JobID": full["ID"], "Namespace": full["Namespace"],
                           "Summary": {full["TaskGroups"][0]["Name"]: counts},
                           "Children": {"Pending": 0, "Running": 0, "Dead": 0}, "CreateIndex": 7, "ModifyIndex": 42},
            "CreateIndex": 7, "ModifyIndex": 42, "JobModifyIndex": 40, "SubmitTime": 1733000000000000000,
        }


# -------------------------------------------------------------------------------- Docker


def docker_container(name: str, image: str, labels: dict[str, str], *, state: str = "running",
                     status: str = "Up 2 hours") -> Obj:
    return {
        "Id": f"{abs(hash(name)):064x}"[:64], "Names": [f"/{name}"], "Image": image,
        "ImageID": "sha256:" + "ab" * 32, "Command": "/docker-entrypoint.sh", "Created": 1733000000,
        "Ports": [{"PrivatePort": 8080, "Type": "tcp"}], "Labels": labels, "State": state, "Status": status,
        "HostConfig": {"NetworkMode": "bridge"},
        "NetworkSettings": {"Networks": {"bridge": {"IPAddress": "172.17.0.2"}}}, "Mounts": [],
    }


def swarm_service(name: str, image: str, labels: dict[str, str], *, replicas: int, running: int) -> Obj:
    return {
        "ID": f"svc{abs(hash(name)) % 10**12:012d}", "Version": {"Index": 19},
        "CreatedAt": "2026-11-30T10:00:00.000000000Z", "UpdatedAt": "2026-11-30T10:05:00.000000000Z",
        "Spec": {"Name": name, "Labels": labels,
                 "TaskTemplate": {"ContainerSpec": {"Image": image, "Isolation": "default"},
                                  "Resources": {}, "ForceUpdate": 0, "Runtime": "container"},
                 "Mode": {"Replicated": {"Replicas": replicas}},
                 "EndpointSpec": {"Mode": "vip"}},
        "Endpoint": {"Spec": {"Mode": "vip"}},
        "ServiceStatus": {"RunningTasks": running, "DesiredTasks": replicas, "CompletedTasks": 0},
    }


class DockerFake(_Server):
    def __init__(self, *, swarm: bool = False) -> None:
        super().__init__()
        self.swarm = swarm
        self.containers: list[Obj] = []
        self.services: list[Obj] = []

    def answer(self, path: str, query: dict[str, str], headers: Any) -> tuple[int, Any]:
        if path == "/v1.43/containers/json":
            return 200, self.containers
        if path == "/v1.43/services":
            if not self.swarm:
                return 503, {"message": "This node is not a swarm manager. Use \"docker swarm init\" or "
                                        "\"docker swarm join\" to connect this node to swarm and try again."}
            return 200, self.services
        return 404, {"message": f"page not found: {path}"}
