"""A fake Argo CD API server for tests: real HTTP on 127.0.0.1, answers shaped as Argo CD's.

Shapes follow argo-cd's server (`server/application`, `server/project`, `server/cluster`
and grpc-gateway's error body) as described in shared/reference/argocd-topology.md §2:

- `GET /api/v1/applications`: `{metadata: {resourceVersion}, items: [...]}` sorted by name,
  items without apiVersion/kind, no paging; `appNamespace` filters; `fields` projects each
  item to the whitelisted paths only (`forwarder_overwrite.go` `appFields`, v3.x), and the
  list itself then carries no apiVersion/kind either;
- `GET /api/v1/applications/{name}/resource-tree`: `{nodes: [...]}` (ResourceNode: group,
  version, kind, namespace, name, uid, health, createdAt, …);
- `GET /api/v1/applications/{name}/manifests`: `repository.ManifestResponse` as GetManifests
  answers it: `{manifests: [<each object as compact JSON text, keys sorted as Go marshals a map>]}`
  (the server gathers every source's objects into a fresh response: nothing else is set); the
  objects rendered at the revision asked (`revision`, or for a multi-source app
  `sourcePositions`/`revisions`), else at the app's own target; an app it does not hold is
  `permission denied` (403), as Argo CD hides which apps exist; a revision the repo server
  cannot resolve is its gRPC Unknown error (500);
- `GET /api/v1/projects`: AppProjectList, items without apiVersion/kind;
- `GET /api/v1/clusters`: ClusterList as `Cluster.Sanitized()` writes it, plus `info`;
  `extra_cluster_fields` lets a test add what a misbehaving server might leak;
- errors: HTTP status with `{"error": msg, "code": <gRPC code>, "message": msg}`.

Every request is logged (path and query) so a test can assert what was, and was not, asked.
"""

from __future__ import annotations

import copy
import json
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.fakes.kube_emulator import TLSFiles

Obj = dict[str, Any]

# The v3.x whitelist of `fields` (pkg/apiclient/application/forwarder_overwrite.go).
SELECTABLE_FIELDS = (
    "metadata.name", "metadata.namespace", "metadata.annotations", "metadata.labels",
    "metadata.creationTimestamp", "metadata.deletionTimestamp", "spec", "status.sync.status",
    "status.health", "status.summary", "status.resources", "status.operationState.phase",
    "status.operationState.startedAt", "status.operationState.finishedAt", "operation.sync",
    "status.sourceHydrator", "spec.destination", "spec.project", "spec.source", "spec.sources",
    "spec.sourceHydrator", "spec.syncPolicy", "status.sync.revision",
)
_GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 500: 13, 503: 14, 504: 4}
HOLD_LIMIT_SECONDS = 30.0


@dataclass
class ApiFault:
    """Answer requests whose path starts with `path` with `status` and `message`, or hold them."""

    path: str
    status: int = 500
    message: str = "internal error"
    hold: threading.Event | None = None
    body: bytes | None = None  # answer `status` with this body as it is (a proxy's HTML page)
    reached: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class ApiRequest:
    path: str
    query: list[tuple[str, str]]
    authorization: str | None

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.query if k == name), None)


def _project(item: Obj, paths: Iterable[str]) -> Obj:
    out: Obj = {}
    for path in paths:
        parts = path.split(".")
        value: Any = item
        for part in parts:
            if not isinstance(value, dict) or part not in value:
                break
            value = value[part]
        else:
            target = out
            for part in parts[:-1]:
                target = target.setdefault(part, {})
            target[parts[-1]] = copy.deepcopy(value)
    return out


class ArgoCDAPIFake:
    def __init__(self, token: str = "argocd-readonly-token-0123456789", *, tls: TLSFiles | None = None) -> None:
        self.token = token
        self.tls = tls
        self.applications: list[Obj] = []
        self.projects: list[Obj] = []
        self.clusters: list[Obj] = []
        self.trees: dict[tuple[str, str], Obj] = {}  # (app namespace, app name) -> ApplicationTree
        self.extra_cluster_fields: Obj = {}
        # (app namespace, app name) -> revision -> the objects the repo server renders there
        self.rendered: dict[tuple[str, str], dict[str, list[Obj]]] = {}
        self.faults: list[ApiFault] = []
        self.requests: list[ApiRequest] = []
        self.resource_version = 1000
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def start(self) -> ArgoCDAPIFake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls.cert_path, self.tls.key_path)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            for fault in self.faults:
                if fault.hold is not None:
                    fault.hold.set()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ArgoCDAPIFake:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --------------------------------------------------------------------- content

    def add_application(self, obj: Obj) -> None:
        """An Application as the API returns it: the object without apiVersion/kind."""
        self.applications.append({k: copy.deepcopy(v) for k, v in obj.items() if k not in ("apiVersion", "kind")})

    def add_project(self, obj: Obj) -> None:
        self.projects.append({k: copy.deepcopy(v) for k, v in obj.items() if k not in ("apiVersion", "kind")})

    def add_cluster(self, name: str, server: str, **extra: Any) -> None:
        """A cluster entry as `Cluster.Sanitized()` plus the controller's `info` writes it."""
        self.clusters.append({
            "server": server,
            "name": name,
            "config": {"tlsClientConfig": {"insecure": False}},
            "connectionState": {"status": "Successful", "message": "", "attemptedAt": "2026-11-30T10:00:00Z"},
            "serverVersion": "1.31",
            "info": {
                "connectionState": {"status": "Successful", "message": "", "attemptedAt": "2026-11-30T10:00:00Z"},
                "serverVersion": "1.31",
                "cacheInfo": {"resourcesCount": 412, "apisCount": 61, "lastCacheSyncTime": "2026-11-30T09:58:00Z"},
                "applicationsCount": 0,
            },
            **extra,
        })

    def set_tree(self, namespace: str, name: str, nodes: list[Obj]) -> None:
        self.trees[(namespace, name)] = {"nodes": nodes}

    def set_manifests(self, namespace: str, name: str, revision: str, objects: list[Obj]) -> None:
        """What the app renders at `revision` (a branch, a tag or a commit SHA, as asked); for a
        multi-source app, each source's revision in order, joined by commas (`1.4.0,main`)."""
        self.rendered.setdefault((namespace, name), {})[revision] = copy.deepcopy(objects)

    def fail(self, fault: ApiFault) -> ApiFault:
        self.faults.append(fault)
        return fault

    def requests_to(self, path: str) -> list[ApiRequest]:
        return [r for r in self.requests if r.path == path]

    # --------------------------------------------------------------------- serving

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path = unquote(parts.path)
        query = parse_qsl(parts.query, keep_blank_values=True)
        authorization = handler.headers.get("Authorization")
        with self._lock:
            self.requests.append(ApiRequest(path, query, authorization))
        for fault in self.faults:
            if path.startswith(fault.path):
                fault.reached.set()
                if fault.hold is not None:
                    fault.hold.wait(HOLD_LIMIT_SECONDS)
                    break
                if fault.body is not None:
                    return self._raw(handler, fault.status, fault.body)
                return self._error(handler, fault.status, fault.message)
        if authorization != f"Bearer {self.token}":
            # What argocd-server answers for a missing or bad token.
            return self._error(handler, 401, "invalid session: token signature is invalid")
        request = ApiRequest(path, query, authorization)
        if path == "/api/v1/applications":
            return self._send(handler, 200, self._application_list(request))
        if path.startswith("/api/v1/applications/") and path.endswith("/resource-tree"):
            name = path[len("/api/v1/applications/"):-len("/resource-tree")]
            namespace = request.param("appNamespace") or "argocd"
            tree = self.trees.get((namespace, name))
            if tree is None:
                return self._error(handler, 404, f'applications.argoproj.io "{name}" not found')
            return self._send(handler, 200, tree)
        if path.startswith("/api/v1/applications/") and path.endswith("/manifests"):
            return self._manifests(handler, request, path[len("/api/v1/applications/"):-len("/manifests")])
        if path == "/api/v1/projects":
            return self._send(handler, 200, {"metadata": {"resourceVersion": str(self.resource_version)},
                                             "items": copy.deepcopy(self.projects)})
        if path == "/api/v1/clusters":
            items = [{**copy.deepcopy(c), **copy.deepcopy(self.extra_cluster_fields)} for c in self.clusters]
            return self._send(handler, 200, {"metadata": {}, "items": items})
        return self._error(handler, 404, "Not Found")

    def _application_list(self, request: ApiRequest) -> Obj:
        namespace = request.param("appNamespace")
        items = [a for a in self.applications if not namespace or a["metadata"].get("namespace") == namespace]
        items = sorted(items, key=lambda a: a["metadata"]["name"])
        fields = request.param("fields")
        if fields:
            selected = [f.removeprefix("items.") for f in fields.split(",") if f.startswith("items.")]
            allowed = [f for f in selected if f in SELECTABLE_FIELDS]
            items = [_project(item, allowed) for item in items]
        else:
            items = copy.deepcopy(items)
        return {"metadata": {"resourceVersion": str(self.resource_version)}, "items": items}

    def _manifests(self, handler: BaseHTTPRequestHandler, request: ApiRequest, name: str) -> None:
        namespace = request.param("appNamespace") or "argocd"
        app = next((a for a in self.applications if a["metadata"]["name"] == name
                    and a["metadata"].get("namespace", "argocd") == namespace), None)
        if app is None or (namespace, name) not in self.rendered:
            return self._error(handler, 403, "permission denied")
        spec = app.get("spec") or {}
        sources = spec.get("sources") or [spec.get("source") or {}]
        positions = [int(p) for k, p in request.query if k == "sourcePositions"]
        revisions = [r for k, r in request.query if k == "revisions"]
        if any(p < 1 or p > len(sources) for p in positions) or len(positions) != len(revisions):
            return self._error(handler, 500, "source position is out of range")
        chosen = dict(zip(positions, revisions, strict=True))
        if spec.get("sources"):
            # Every source's revision matters (a chart's, and its `$values` source's): one render per set.
            revision = ",".join(chosen.get(i) or s.get("targetRevision") or "HEAD" for i, s in enumerate(sources, 1))
        else:
            revision = request.param("revision") or sources[0].get("targetRevision") or "HEAD"
        objects = self.rendered[(namespace, name)].get(revision)
        if objects is None:
            return self._error(handler, 500, f"error generating manifests: rpc error: code = Unknown desc = "
                                             f"unable to resolve '{revision}' to a commit SHA")
        texts = [json.dumps(obj, sort_keys=True, separators=(",", ":")) for obj in objects]
        return self._send(handler, 200, {"manifests": texts})

    @classmethod
    def _send(cls, handler: BaseHTTPRequestHandler, status: int, doc: Obj) -> None:
        cls._raw(handler, status, json.dumps(doc).encode())

    @staticmethod
    def _raw(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _error(self, handler: BaseHTTPRequestHandler, status: int, message: str) -> None:
        self._send(handler, status, {"error": message, "code": _GRPC_CODES.get(status, 2), "message": message})
