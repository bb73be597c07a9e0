"""A real container registry for tests: Debian's `docker-registry` (distribution v2.8).

Session fixtures start up to three registry processes on free ports of 127.0.0.1, all
serving one temporary storage folder, each from a generated config:

- `open_registry`: no auth. The fixture pushes the test images through it (blob
  uploads and manifests over the distribution API: there is no docker engine here).
- `basic_registry`: `auth: htpasswd` with a bcrypt hash made by the `bcrypt` module,
  else the standard library's `crypt` (libxcrypt does bcrypt), else `htpasswd -B`.
- `token_registry`: `auth: token`, trusting the certificate of `TokenServer`, a small
  local realm that checks basic credentials and signs ES256 JWTs the way a Docker
  token service does (x5c header, `access` claim).

Distribution v2.8 ignores `n` on `tags/list` (it pages only `_catalog`), so `PagingProxy`
pages the real registry's answers the way the OCI spec, GHCR and distribution v3 do.

Without the binary the registry tests skip with a message saying how to get it; in CI
(PORTAL_REQUIRE_SERVICES=1) they fail instead.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import secrets
import select
import shutil
import socket
import subprocess
import tarfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

BINARY = os.environ.get("PORTAL_DOCKER_REGISTRY") or shutil.which("docker-registry") or "/usr/bin/docker-registry"
USER = "ci-reader"
PASSWORD = "pw-registry-7f3e9c1d"  # a test secret: assertions check it never shows in an error
SERVICE = "portal-test-registry"
ISSUER = "portal-test-token-issuer"

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"

# repository -> tag -> image build time. Version tags, their pre-releases and suffix
# family, and tags that are not versions, as real repositories mix them.
BASE_TIME = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
SEED: dict[str, dict[str, datetime]] = {
    "acme/checkout": {
        "1.0.0": BASE_TIME,
        "1.1.0": BASE_TIME + timedelta(days=7),
        "1.2.0-rc.1": BASE_TIME + timedelta(days=12),
        "1.2.0": BASE_TIME + timedelta(days=14),
        "1.2.0-alpine": BASE_TIME + timedelta(days=14, hours=1),
        "v2.0.0": BASE_TIME + timedelta(days=30),
        "latest": BASE_TIME + timedelta(days=30),
        "sha-4f3a2b1": BASE_TIME + timedelta(days=30),
    },
}
MULTI_ARCH = ("acme/multi", "3.0.0")  # an OCI index: amd64 built at BASE_TIME, arm64 a day later


def require_binary() -> None:
    if not os.path.exists(BINARY):
        missing(f"registry tests need Debian's docker-registry at {BINARY} (apt-get install -y docker-registry)")


def missing(message: str) -> None:
    """Skip on a developer's machine without the tool; fail in CI, which must run these tests."""
    if os.environ.get("PORTAL_REQUIRE_SERVICES") == "1":
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Registry:
    host: str  # "127.0.0.1:PORT": what an image name starts with
    url: str  # "http://127.0.0.1:PORT"
    process: subprocess.Popen
    log: Path

    def image(self, repository: str) -> str:
        return f"{self.host}/{repository}"


def start_registry(workdir: Path, storage: Path, auth: dict | None) -> Registry:
    port = free_port()
    config = {
        "version": 0.1,
        "log": {"level": "info", "accesslog": {"disabled": True}},  # info: says "listening on"
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    if auth:
        config["auth"] = auth
    workdir.mkdir(parents=True, exist_ok=True)
    # YAML is a superset of JSON, so the registry reads this file as its config.yml.
    config_path = workdir / "config.yml"
    config_path.write_text(json.dumps(config, indent=2))
    log = workdir / "registry.log"
    # Unbuffered: select() watches the descriptor, so no line may sit unseen in a Python buffer.
    process = subprocess.Popen(
        [BINARY, "serve", str(config_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0
    )
    registry = Registry(host=f"127.0.0.1:{port}", url=f"http://127.0.0.1:{port}", process=process, log=log)
    _wait_until_listening(registry)
    return registry


def _wait_until_listening(registry: Registry, deadline_seconds: float = 90.0) -> None:
    """Block on the registry's output until it logs "listening on" (no polling), then keep
    copying its output to the log file so the pipe never fills."""
    out = registry.process.stdout
    assert out is not None
    seen: list[bytes] = []
    deadline = time.monotonic() + deadline_seconds
    while b"listening on" not in (seen[-1] if seen else b""):
        remaining = deadline - time.monotonic()
        ready = select.select([out], [], [], max(remaining, 0))[0] if remaining > 0 else []
        line = out.readline() if ready else b""
        if not line:
            stop_registry(registry)
            why = "exited" if ready else f"did not listen within {deadline_seconds} s"
            raise RuntimeError(f"docker-registry {why}: {b''.join(seen).decode(errors='replace')[-2000:]}")
        seen.append(line)

    def copy() -> None:
        with registry.log.open("wb") as log:
            log.writelines(seen)
            for line in out:
                log.write(line)
                log.flush()

    threading.Thread(target=copy, daemon=True).start()


def stop_registry(registry: Registry) -> None:
    registry.process.terminate()
    try:
        registry.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        registry.process.kill()
        registry.process.wait()


def bcrypt_hash(password: str) -> tuple[str, str] | None:
    """(hash, which tool made it); None when no bcrypt implementation is available."""
    try:
        import bcrypt  # type: ignore[import-not-found]

        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode(), "bcrypt module"
    except ImportError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt  # removed in Python 3.13; present in the 3.11 the project runs on
        except ImportError:
            crypt = None  # type: ignore[assignment]
    if crypt is not None and hasattr(crypt, "METHOD_BLOWFISH"):
        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
        if hashed and hashed.startswith("$2"):
            return hashed, "crypt (libxcrypt)"
    htpasswd = shutil.which("htpasswd")
    if htpasswd:
        out = subprocess.run([htpasswd, "-nbB", "-C", "4", USER, password], capture_output=True, text=True, check=True)
        return out.stdout.strip().split(":", 1)[1], "htpasswd"
    return None


# --- pushing images through the distribution API ------------------------------------


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(text: str) -> tuple[bytes, str]:
    """A tiny gzipped tar with one file, and its diff id (digest of the uncompressed tar)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = text.encode()
        info = tarfile.TarInfo("VERSION")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0), _digest(raw.getvalue())


def push_blob(registry_url: str, repository: str, data: bytes) -> str:
    digest = _digest(data)
    start = requests.post(f"{registry_url}/v2/{repository}/blobs/uploads/", timeout=10)
    assert start.status_code == 202, start.text
    location = requests.compat.urljoin(registry_url, start.headers["Location"])
    separator = "&" if "?" in location else "?"
    done = requests.put(
        f"{location}{separator}digest={digest}",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
        timeout=10,
    )
    assert done.status_code == 201, done.text
    return digest


def push_manifest(registry_url: str, repository: str, reference: str, manifest: dict) -> str:
    body = json.dumps(manifest).encode()
    response = requests.put(
        f"{registry_url}/v2/{repository}/manifests/{reference}",
        data=body,
        headers={"Content-Type": manifest["mediaType"]},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return _digest(body)


def push_image(
    registry_url: str, repository: str, tag: str, created: datetime, *, oci: bool = False, arch: str = "amd64"
) -> str:
    """Push a one-layer image built at `created` under `tag` (or only by digest when tag is "")."""
    layer, diff_id = _layer(f"{repository}:{tag}:{arch}\n")
    config = {
        "architecture": arch,
        "os": "linux",
        "created": created.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z",  # nanoseconds, as Go writes them
        "config": {"Labels": {"org.opencontainers.image.version": tag}},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(config).encode()
    config_digest = push_blob(registry_url, repository, config_bytes)
    layer_digest = push_blob(registry_url, repository, layer)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST if oci else DOCKER_MANIFEST,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json"
            if oci
            else "application/vnd.docker.container.image.v1+json",
            "size": len(config_bytes),
            "digest": config_digest,
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip"
                if oci
                else "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": len(layer),
                "digest": layer_digest,
            }
        ],
    }
    body = json.dumps(manifest).encode()
    return push_manifest(registry_url, repository, tag or _digest(body), manifest)


def push_multi_arch(registry_url: str, repository: str, tag: str, created: datetime) -> None:
    # arm64 first in the index, so choosing amd64 is a real choice.
    arm = push_image(registry_url, repository, "", created + timedelta(days=1), oci=True, arch="arm64")
    amd = push_image(registry_url, repository, "", created, oci=True, arch="amd64")
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {"mediaType": OCI_MANIFEST, "digest": arm, "size": 1, "platform": {"os": "linux", "architecture": "arm64"}},
            {"mediaType": OCI_MANIFEST, "digest": amd, "size": 1, "platform": {"os": "linux", "architecture": "amd64"}},
        ],
    }
    # The index's sizes must be the real manifest sizes: read them back from the registry.
    for entry in index["manifests"]:
        got = requests.get(
            f"{registry_url}/v2/{repository}/manifests/{entry['digest']}", headers={"Accept": OCI_MANIFEST}, timeout=10
        )
        entry["size"] = len(got.content)
    push_manifest(registry_url, repository, tag, index)


def seed(registry_url: str) -> None:
    for repository, tags in SEED.items():
        for index, (tag, created) in enumerate(tags.items()):
            push_image(registry_url, repository, tag, created, oci=index % 2 == 1)
    push_multi_arch(registry_url, *MULTI_ARCH, BASE_TIME)


# --- the token realm ------------------------------------------------------------------


@dataclass
class TokenRequest:
    user: str | None  # None: anonymous
    scope: str
    service: str


@dataclass
class TokenServer:
    """A Docker token service: GET /token?service=…&scope=… with optional basic auth."""

    users: dict[str, str]
    issuer: str = ISSUER
    requests: list[TokenRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "portal test token issuer")])
        now = datetime.now(UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1))
            .sign(self._key, hashes.SHA256())
        )
        self.certificate_pem = self.certificate.public_bytes(serialization.Encoding.PEM)
        self._x5c = base64.b64encode(self.certificate.public_bytes(serialization.Encoding.DER)).decode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                server._answer(self)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/token"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        import jwt

        query = parse_qs(urlsplit(handler.path).query)
        scope = (query.get("scope") or [""])[0]
        user = None
        header = handler.headers.get("Authorization", "")
        if header.startswith("Basic "):
            name, _, password = base64.b64decode(header[6:]).decode().partition(":")
            if self.users.get(name) != password:
                self._send(handler, 401, {"details": "incorrect username or password"})
                return
            user = name
        self.requests.append(TokenRequest(user=user, scope=scope, service=(query.get("service") or [""])[0]))
        access = []
        if user and scope.startswith("repository:"):
            _, repository, actions = scope.split(":", 2)
            access.append({"type": "repository", "name": repository, "actions": actions.split(",")})
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user or "",
            "aud": SERVICE,
            "iat": now,
            "nbf": now - 10,
            "exp": now + 300,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        token = jwt.encode(claims, self._key, algorithm="ES256", headers={"x5c": [self._x5c]})
        self._send(handler, 200, {"token": token, "expires_in": 300, "issued_at": datetime.now(UTC).isoformat()})

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


# --- paging proxy -----------------------------------------------------------------------


@dataclass
class PagingProxy:
    """Forwards to a registry and pages `GET /v2/<name>/tags/list` by `n` and `last` with a
    `Link: <…>; rel="next"` header, as the OCI distribution spec describes and GHCR, Harbor
    and distribution v3 do. Distribution v2.8 ignores `n` on tags (it pages only _catalog),
    so this is how the client's paging meets the real registry's answers. Everything else,
    Authorization and WWW-Authenticate included, passes through unchanged.
    `link_base` makes the Link absolute on another origin, as a hostile registry might."""

    upstream: str
    link_base: str = ""
    tag_requests: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                proxy._forward(self)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> PagingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        paging = parts.path.endswith("/tags/list")
        headers = {k: v for k, v in handler.headers.items() if k.lower() in ("authorization", "accept")}
        target = f"{self.upstream}{parts.path}" if paging else f"{self.upstream}{handler.path}"
        got = requests.get(target, headers=headers, timeout=10, allow_redirects=False)
        body, extra = got.content, {}
        if paging and got.status_code == 200:
            self.tag_requests.append(query)
            listing = got.json()
            tags = sorted(t for t in listing.get("tags") or [] if t > query.get("last", ""))
            if "n" in query:
                size = int(query["n"])
                if len(tags) > size:
                    tags = tags[:size]
                    base = self.link_base or ""
                    extra["Link"] = f'<{base}{parts.path}?n={size}&last={tags[-1]}>; rel="next"'
            body = json.dumps({"name": listing["name"], "tags": tags}).encode()
        handler.send_response(got.status_code)
        for name in ("Content-Type", "WWW-Authenticate", "Docker-Content-Digest", "Location"):
            if name in got.headers:
                handler.send_header(name, got.headers[name])
        for name, value in extra.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


# --- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def registry_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("registry")


@pytest.fixture(scope="session")
def open_registry(registry_dir: Path) -> Iterator[Registry]:
    require_binary()
    registry = start_registry(registry_dir / "open", registry_dir / "storage", auth=None)
    try:
        seed(registry.url)
        yield registry
    finally:
        stop_registry(registry)


@pytest.fixture(scope="session")
def basic_registry(open_registry: Registry, registry_dir: Path) -> Iterator[Registry]:
    made = bcrypt_hash(PASSWORD)
    if made is None:
        missing("no bcrypt implementation (bcrypt module, crypt, htpasswd) to write the registry's htpasswd")
    hashed, _tool = made
    htpasswd = registry_dir / "htpasswd"
    htpasswd.write_text(f"{USER}:{hashed}\n")
    auth = {"htpasswd": {"realm": "portal-test", "path": str(htpasswd)}}
    registry = start_registry(registry_dir / "basic", registry_dir / "storage", auth=auth)
    try:
        yield registry
    finally:
        stop_registry(registry)


@dataclass
class TokenRegistry:
    registry: Registry
    realm: TokenServer


@pytest.fixture(scope="session")
def token_registry(open_registry: Registry, registry_dir: Path) -> Iterator[TokenRegistry]:
    realm = TokenServer(users={USER: PASSWORD})
    bundle = registry_dir / "token-issuer.pem"
    bundle.write_bytes(realm.certificate_pem)
    auth = {"token": {"realm": realm.url, "service": SERVICE, "issuer": ISSUER, "rootcertbundle": str(bundle)}}
    try:
        registry = start_registry(registry_dir / "token", registry_dir / "storage", auth=auth)
        try:
            yield TokenRegistry(registry=registry, realm=realm)
        finally:
            stop_registry(registry)
    finally:
        realm.close()
