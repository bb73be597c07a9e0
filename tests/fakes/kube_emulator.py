"""A small in-process emulator of the Kubernetes API's list endpoints, for tests and benches.

It speaks real HTTP on 127.0.0.1 so the official `kubernetes` client is exercised end to
end (URL building, auth header, timeouts, JSON) rather than patched. It knows only
lists: `/api/v1[/namespaces/<ns>]/<plural>` and
`/apis/<group>/<version>[/namespaces/<ns>]/<plural>`, with `limit`/`continue` paging,
equality-based `labelSelector`,
bearer-token auth, Status bodies shaped like the API server's, and per-resource faults.

Typical use (the `kube_emulator` fixture in conftest.py starts and stops one):

    kube_emulator.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {...}})
    kube_emulator.install("helm.toolkit.fluxcd.io/v2beta2", "helmreleases")  # empty CRD
    kube_emulator.fail("applications.argoproj.io", Fault.forbidden())
    source = KubeSource.from_url(kube_emulator.url, kube_emulator.token)
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from gitops.kinds import KINDS, KindSpec, selector_matches, split_api_version

Obj = dict[str, Any]
ResourceKey = tuple[str, str, str]  # (group, version, plural)

# Lists of these groups' types are typed lists: the API server omits apiVersion and kind
# on each item. CRD lists (unstructured) keep them. Emulating both keeps sources honest.
BUILTIN_GROUPS = frozenset({"", "apps", "batch"})

# A handler blocked by a hold gives up after this long even if a test forgot to release
# it, so a failing test cannot hang the whole run.
HOLD_LIMIT_SECONDS = 30.0

DEFAULT_USER = "system:serviceaccount:gitops-portal:portal-reader"


EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. "
    "Start a new list without the continue parameter."
)


@dataclass
class Fault:
    """Something to go wrong when a resource is listed; see the constructors below."""

    status: int | None = None  # answer with this code and a Status body
    reason: str = ""  # Status.reason
    message: str = ""  # Status.message; a default per code when empty
    malformed: bool = False  # 200 with a body that is not JSON
    hold: threading.Event | None = None  # wait for this Event, then answer normally
    on_page: int | None = None  # only the Nth page of a list (1 = the first request)
    times: int | None = None  # how many requests it affects; None = all
    fired: int = 0
    # Set when the fault first hits a request, so a test can wait for "the request is
    # in flight" on an Event instead of guessing with a sleep.
    reached: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def forbidden(cls, message: str = "", **kw: Any) -> Fault:
        """403 with the API server's RBAC wording (built from the emulator's user) by default."""
        return cls(status=403, reason="Forbidden", message=message, **kw)

    @classmethod
    def server_error(cls, message: str = "Internal error occurred: etcdserver: request timed out",
                     **kw: Any) -> Fault:
        return cls(status=500, reason="InternalError", message=message, **kw)

    @classmethod
    def garbage(cls, **kw: Any) -> Fault:
        return cls(malformed=True, **kw)

    @classmethod
    def delay(cls, release: threading.Event, **kw: Any) -> Fault:
        """Hold the answer until `release` is set (the test sets it after its client timed out)."""
        return cls(hold=release, **kw)

    @classmethod
    def expired_continue(cls, page: int, **kw: Any) -> Fault:
        if page < 2:
            raise ValueError("only a continue request (page 2 or later) can carry an expired token")
        return cls(status=410, reason="Expired", message=EXPIRED_MESSAGE, on_page=page, **kw)


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    group: str | None  # None when the path is not a list endpoint
    version: str | None
    plural: str | None
    namespace: str | None
    status: int
    authorization_sent: bool

    @property
    def resource(self) -> str | None:
        if self.plural is None:
            return None
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass
class _Resource:
    kind: str
    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name) -> obj
    ordered: list[Obj] | None = None  # sorted snapshot, rebuilt after a change


@dataclass(frozen=True)
class TLSFiles:
    cert_path: Path
    key_path: Path
    cert_pem: str


def make_self_signed_cert(directory: Path, host: str = "127.0.0.1") -> TLSFiles:
    """A throwaway CA-less server certificate for 127.0.0.1/localhost (tests only)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-emulator")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    cert_path = directory / "emulator.crt"
    key_path = directory / "emulator.key"
    cert_path.write_text(cert_pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return TLSFiles(cert_path, key_path, cert_pem)


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> bytes:
    """A `Status` object as the API server sends with an error."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


def forbidden_message(user: str, group: str, plural: str, namespace: str | None) -> str:
    """The API server's RBAC denial text for a list."""
    resource = f"{plural}.{group}" if group else plural
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{resource} is forbidden: User "{user}" cannot list resource "{plural}" '
        f'in API group "{group}" {scope}'
    )


def default_plural(kind: str) -> str:
    """Lower-case plural for kinds gitops.kinds does not list (ConfigMap -> configmaps)."""
    lower = kind.lower()
    if lower.endswith("y") and not lower.endswith(("ay", "ey", "oy", "uy")):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def _encode_token(payload: Obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()


def _decode_token(token: str) -> Obj | None:
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None


class KubeEmulator:
    """The API server stand-in. Thread-safe; start() before use, stop() after (or `with`)."""

    def __init__(self, token: str | None = "emulator-token-0123456789", *, user: str = DEFAULT_USER,
                 tls: TLSFiles | None = None) -> None:
        self.token = token
        self.user = user
        self.tls = tls
        self.requests: list[LoggedRequest] = []
        self._lock = threading.RLock()  # handle() logs while holding it
        self._resources: dict[ResourceKey, _Resource] = {}
        self._faults: dict[str, list[Fault]] = {}
        self._resource_version = 1000
        self._page_cache: dict[tuple[ResourceKey, str | None, int, int, int, str], bytes] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> KubeEmulator:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls.cert_path, self.tls.key_path)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        # A short poll interval keeps stop() quick: shutdown waits for the next poll.
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="kube-emulator",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> KubeEmulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("emulator not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- objects

    def install(self, api_version: str, plural: str, kind: str | None = None) -> None:
        """Serve a resource with no objects yet (a CRD installed but empty)."""
        group, version = split_api_version(api_version)
        if kind is None:
            spec = _spec_by_plural(group, plural)
            if spec is None:
                raise ValueError(f"kind needed for {plural}.{group}: not in gitops.kinds")
            kind = spec.kind
        with self._lock:
            self._resources.setdefault((group, version, plural), _Resource(kind))

    def add(self, obj: Obj, *, plural: str | None = None) -> Obj:
        """Store a copy of `obj` under the resource its apiVersion/kind names; returns the copy.

        The plural comes from gitops.kinds; for other kinds pass it or accept the
        lower-case English plural.
        """
        stored = self._prepare(obj, plural)
        with self._lock:
            self._store(*stored)
        return stored[1]

    def add_all(self, objs: Iterable[Obj]) -> None:
        prepared = [self._prepare(obj, None) for obj in objs]
        with self._lock:
            for key, obj, kind in prepared:
                self._store(key, obj, kind)

    def add_synthetic(self, spec: KindSpec, count: int, *, namespaces: int = 10,
                      version: str | None = None) -> None:
        """`count` small objects of `spec`, spread over `namespaces` namespaces (benchmarks)."""
        version = version or spec.versions[0]
        api_version = spec.api_version(version)
        key = (spec.group, version, spec.plural)
        with self._lock:
            resource = self._resources.setdefault(key, _Resource(spec.kind))
            for i in range(count):
                self._resource_version += 1
                namespace = f"ns-{i % namespaces:03d}"
                name = f"{spec.plural}-{i:07d}"
                resource.objects[(namespace, name)] = {
                    "apiVersion": api_version,
                    "kind": spec.kind,
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "uid": f"00000000-0000-4000-8000-{i:012d}",
                        "resourceVersion": str(self._resource_version),
                        "generation": 1,
                        "labels": {"app.kubernetes.io/name": name},
                    },
                    "spec": {},
                    "status": {},
                }
            resource.ordered = None
            self._page_cache.clear()

    def warm(self, spec: KindSpec, limit: int, *, version: str | None = None) -> int:
        """Serialise every cluster-wide page of `spec` at `limit` now; returns the page count.

        A benchmark then measures the client, not the emulator's JSON encoding.
        """
        key = (spec.group, version or spec.versions[0], spec.plural)
        pages = 0
        start = 0
        with self._lock:
            rv = self._resource_version
            total = len(self._ordered(key, None))
            while True:
                self._page(key, None, limit, start, rv)
                pages += 1
                start += limit
                if start >= total:
                    return pages

    def _prepare(self, obj: Obj, plural: str | None) -> tuple[ResourceKey, Obj, str]:
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            raise ValueError("an object needs apiVersion, kind and metadata.name")
        group, version = split_api_version(api_version)
        if plural is None:
            spec = next((k for k in KINDS if k.matches(api_version, kind)), None)
            plural = spec.plural if spec is not None else default_plural(kind)
        return (group, version, plural), copy.deepcopy(obj), kind

    def remove(self, obj: Obj) -> None:
        """Delete the object with `obj`'s apiVersion/kind/namespace/name (as if kubectl deleted it)."""
        key, stored, _ = self._prepare(obj, None)
        metadata = stored["metadata"]
        with self._lock:
            resource = self._resources[key]
            del resource.objects[(str(metadata.get("namespace", "")), metadata["name"])]
            resource.ordered = None
            self._resource_version += 1
            self._page_cache.clear()

    def _store(self, key: ResourceKey, obj: Obj, kind: str) -> None:
        self._resource_version += 1
        metadata = obj.setdefault("metadata", {})
        metadata["resourceVersion"] = str(self._resource_version)
        resource = self._resources.setdefault(key, _Resource(kind))
        resource.objects[(str(metadata.get("namespace", "")), metadata["name"])] = obj
        resource.ordered = None
        self._page_cache.clear()

    # ---------------------------------------------------------------- faults

    def fail(self, resource: str | KindSpec, fault: Fault) -> Fault:
        """Make listing `resource` ("plural.group", "plural" for core, or a KindSpec) go wrong."""
        name = resource.resource if isinstance(resource, KindSpec) else resource
        with self._lock:
            self._faults.setdefault(name, []).append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def release_all(self) -> None:
        with self._lock:
            faults = [f for fs in self._faults.values() for f in fs]
        for fault in faults:
            if fault.hold is not None:
                fault.hold.set()

    # ---------------------------------------------------------------- request log

    def requests_for(self, resource: str | KindSpec) -> list[LoggedRequest]:
        name = resource.resource if isinstance(resource, KindSpec) else resource
        with self._lock:
            return [r for r in self.requests if r.resource == name]

    # ---------------------------------------------------------------- serving

    def _ordered(self, key: ResourceKey, namespace: str | None, selector: str = "") -> list[Obj]:
        resource = self._resources[key]
        if resource.ordered is None:
            # etcd returns keys in order; namespace then name is the same order.
            resource.ordered = [resource.objects[k] for k in sorted(resource.objects)]
        objects = resource.ordered
        if namespace is not None:
            objects = [o for o in objects if o["metadata"].get("namespace") == namespace]
        if selector:
            # `labelSelector`, equality-based, as the API server applies it before paging.
            objects = [o for o in objects if selector_matches(selector, o["metadata"].get("labels") or {})]
        return objects

    def _page(self, key: ResourceKey, namespace: str | None, limit: int, start: int, rv: int,
              selector: str = "") -> bytes:
        cache_key = (key, namespace, limit, start, rv, selector)
        cached = self._page_cache.get(cache_key)
        if cached is not None:
            return cached
        group, version, plural = key
        resource = self._resources[key]
        objects = self._ordered(key, namespace, selector)
        chunk = objects[start : start + limit] if limit > 0 else objects[start:]
        if group in BUILTIN_GROUPS:
            chunk = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in chunk]
        metadata: Obj = {"resourceVersion": str(rv)}
        end = start + len(chunk)
        if limit > 0 and end < len(objects):
            metadata["continue"] = _encode_token({"rv": rv, "start": end})
            metadata["remainingItemCount"] = len(objects) - end
        body = json.dumps(
            {
                "apiVersion": f"{group}/{version}" if group else version,
                "kind": f"{resource.kind}List",
                "metadata": metadata,
                "items": chunk,
            },
            separators=(",", ":"),
        ).encode()
        self._page_cache[cache_key] = body
        return body

    def _active_fault(self, resource: str, page: int) -> Fault | None:
        for fault in self._faults.get(resource, []):
            if fault.times is not None and fault.fired >= fault.times:
                continue
            if fault.on_page is not None and fault.on_page != page:
                continue
            fault.fired += 1
            fault.reached.set()
            return fault
        return None

    def handle(self, method: str, raw_path: str, authorization: str | None
               ) -> tuple[int, bytes, threading.Event | None, LoggedRequest]:
        """Answer one request: (status, body, an Event to wait for first, log entry)."""
        split = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        parts = [unquote(p) for p in split.path.strip("/").split("/") if p]
        route = _route(parts)
        group, version, plural, namespace = route if route else (None, None, None, None)

        def done(status: int, body: bytes, hold: threading.Event | None = None
                 ) -> tuple[int, bytes, threading.Event | None, LoggedRequest]:
            entry = LoggedRequest(method, split.path, query, group, version, plural, namespace, status,
                                  authorization is not None)
            with self._lock:
                self.requests.append(entry)
            return status, body, hold, entry

        if self.token is not None and not _bearer_matches(authorization, self.token):
            return done(401, status_body(401, "Unauthorized", "Unauthorized"))
        if method != "GET":
            return done(405, status_body(405, "MethodNotAllowed", "the emulator serves lists only"))
        not_found = status_body(404, "NotFound", "the server could not find the requested resource")
        if route is None:
            return done(404, not_found)
        assert group is not None and version is not None and plural is not None
        key = (group, version, plural)
        resource_name = f"{plural}.{group}" if group else plural

        limit_text = query.get("limit", "0") or "0"
        if not limit_text.isdigit():
            return done(400, status_body(400, "BadRequest", f"invalid limit {limit_text!r}"))
        limit = int(limit_text)
        token = query.get("continue") or None
        start, list_rv = 0, None
        if token is not None:
            payload = _decode_token(token)
            if payload is None or not isinstance(payload.get("start"), int) or not isinstance(
                payload.get("rv"), int
            ):
                return done(400, status_body(400, "BadRequest", "continue key is not valid: malformed token"))
            start, list_rv = payload["start"], payload["rv"]
        # Pages are numbered from the offset, so a fault can target "page N" without
        # the emulator tracking list sessions.
        page = start // limit + 1 if limit > 0 else 1

        with self._lock:
            if key not in self._resources:
                return done(404, not_found)
            fault = self._active_fault(resource_name, page)
            if fault is None or fault.hold is not None:
                rv = self._resource_version if list_rv is None else list_rv
                body = self._page(key, namespace, limit, start, rv, query.get("labelSelector", ""))
        if fault is None:
            return done(200, body)
        if fault.hold is not None:
            return done(200, body, fault.hold)
        if fault.malformed:
            return done(200, b'{"apiVersion":"v1","kind":"List","items":[{"metadata":')
        code = fault.status or 500
        message = fault.message
        if not message and code == 403:
            message = forbidden_message(self.user, group, plural, namespace)
        details = {"group": group, "kind": plural}
        return done(code, status_body(code, fault.reason or "InternalError", message or "error", details))


def _spec_by_plural(group: str, plural: str) -> KindSpec | None:
    for spec in KINDS:
        if spec.group == group and spec.plural == plural:
            return spec
    return None


def _route(parts: list[str]) -> tuple[str, str, str, str | None] | None:
    """(group, version, plural, namespace) for a list path, else None."""
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[1:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[2:]
    else:
        return None
    version, tail = rest[0], rest[1:]
    if len(tail) == 1:
        return group, version, tail[0], None
    if len(tail) == 3 and tail[0] == "namespaces":
        return group, version, tail[2], tail[1]
    return None


def _bearer_matches(authorization: str | None, token: str) -> bool:
    if not authorization:
        return False
    scheme, _, value = authorization.partition(" ")
    return scheme.lower() == "bearer" and value.strip() == token


def _make_handler(emulator: KubeEmulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the client's connection pool expects

        def _serve(self) -> None:
            status, body, hold, _entry = emulator.handle(self.command, self.path,
                                                         self.headers.get("Authorization"))
            if hold is not None:
                hold.wait(HOLD_LIMIT_SECONDS)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                # The client gave up (timeout test): nothing left to tell it.
                self.close_connection = True

        do_GET = _serve
        do_POST = _serve
        do_PUT = _serve
        do_PATCH = _serve
        do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return  # the request log replaces stderr noise

    return Handler
