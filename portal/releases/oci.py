"""Reading an image's tags (and a tag's build time) from a container registry.

Speaks the OCI distribution API (`GET /v2/<name>/tags/list`, manifests, blobs) with the
three ways registries let a client in: anonymously, with HTTP basic auth, and with the
bearer-token flow (a 401 carrying `WWW-Authenticate: Bearer realm=…,service=…,scope=…`
sends the client to the realm for a token, with basic credentials when it has them).

Configuration comes from portal.settings; credentials by registry host:

    PORTAL_REGISTRY_AUTH="ghcr.io=GHCR_USER:GHCR_TOKEN,registry.corp.example=CORP_USER:CORP_PASS"

names, for each host, the environment variables that hold the user name and the password
or token (read from the environment by those names when a client is built).
`PORTAL_REGISTRY_PLAIN_HTTP` lists hosts reached over http (a local registry);
every other host is https. `PORTAL_REGISTRY_TIMEOUT` is the per-request timeout in
seconds (default 10). Functions taking `environ` read all of these from it instead
(tests). A `RegistryError` never carries a secret: messages name the variables, not
their values, and registry-provided text goes through portal.kernel.redaction.redact (echoed
Authorization headers, Basic/Bearer credentials and their base64 forms).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings

from portal.kernel.catalog.images import DOCKER_HUB, split_registry
from portal.kernel.credentials import named_secret
from portal.kernel.redaction import basic_pair, redact
from portal.kernel.timestamps import parse_time

DOCKER_HUB_API = "https://registry-1.docker.io"
MAX_PAGES = 1000  # a registry whose Link header loops must not keep a worker forever
_ERROR_TEXT_LIMIT = 200

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_INDEX_TYPES = {MANIFEST_TYPES[2], MANIFEST_TYPES[3]}
OCI_ARTIFACT_MANIFEST = "application/vnd.oci.artifact.manifest.v1+json"  # OCI 1.1 rc artifacts (cosign, oras)
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')
_CHALLENGE_PARAM = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([^,\s]*))')


class RegistryError(Exception):
    """The registry could not be read. `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BlobTooLarge(RegistryError):
    """A blob bigger than the caller's limit; `size` is what the registry declared (or what was read)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"blob of {size} bytes is over the limit")
        self.size = size


@dataclass(frozen=True)
class Manifest:
    digest: str  # Docker-Content-Digest, when the registry sent it
    media_type: str
    body: dict

    @property
    def is_index(self) -> bool:
        return self.media_type in _INDEX_TYPES or "manifests" in self.body


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str = ""  # "$USER_VAR/$TOKEN_VAR": what an error message may name

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, source={self.source!r})"


def parse_registry_auth(text: str) -> dict[str, tuple[str, str]]:
    """`"ghcr.io=USER_VAR:TOKEN_VAR,…"` -> {"ghcr.io": ("USER_VAR", "TOKEN_VAR")}; malformed items are skipped."""
    mapping: dict[str, tuple[str, str]] = {}
    for item in (text or "").split(","):
        host, _, names = item.strip().partition("=")
        user_var, _, secret_var = names.partition(":")
        if host.strip() and user_var.strip() and secret_var.strip():
            mapping[_host_key(host.strip())] = (user_var.strip(), secret_var.strip())
    return mapping


def credentials_for(host: str, environ: Mapping[str, str] | None = None) -> Credentials | None:
    """The credentials configured for `host`, read from the variables PORTAL_REGISTRY_AUTH names."""
    auth = settings.PORTAL_REGISTRY_AUTH if environ is None else environ.get("PORTAL_REGISTRY_AUTH", "")
    names = parse_registry_auth(auth).get(_host_key(host))
    if names is None:
        return None
    user_var, secret_var = names
    # The setting names these variables: a variable whose name comes from configuration is
    # the one kind portal.settings does not read itself.
    if environ is None:
        username, password = named_secret(user_var), named_secret(secret_var)
    else:
        username, password = environ.get(user_var, ""), environ.get(secret_var, "")
    source = f"${user_var}/${secret_var}"
    if not username or not password:
        raise RegistryError(f"{host}: credentials are configured as {source} but the variables are not both set")
    return Credentials(username=username, password=password, source=source)


def _host_key(host: str) -> str:
    host = host.lower()
    return DOCKER_HUB if host in {"index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"} else host


def endpoint(image: str, environ: Mapping[str, str] | None = None) -> tuple[str, str, str]:
    """(registry host, API base URL, repository) for an image name as a Service holds it:
    `nginx` -> ("docker.io", "https://registry-1.docker.io", "library/nginx")."""
    name = image.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    host, repository = split_registry(name.strip())
    if host == DOCKER_HUB:
        return host, DOCKER_HUB_API, repository
    if environ is None:
        plain = set(settings.PORTAL_REGISTRY_PLAIN_HTTP)
    else:
        plain = {h.strip().lower() for h in environ.get("PORTAL_REGISTRY_PLAIN_HTTP", "").split(",") if h.strip()}
    scheme = "http" if host in plain else "https"
    return host, f"{scheme}://{host}", repository


@dataclass(frozen=True)
class ImageDetails:
    """What a tag's image config says about it (OCI image config `created` and labels)."""

    digest: str  # the manifest digest the tag pointed at
    created_at: datetime | None
    labels: Mapping[str, str]


class RegistryClient:
    """One registry, one set of credentials; remembers tokens for the scopes it was given."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials | None = None,
        *,
        timeout: float | None = None,
        session: requests.Session | None = None,
        host: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.host = host or urlsplit(self.base_url).netloc
        self.credentials = credentials
        self.timeout = (
            timeout if timeout is not None else settings.PORTAL_REGISTRY_TIMEOUT
        )
        self.session = session or requests.Session()
        self._scheme: str | None = None  # "basic" or "bearer" once the registry has said which
        self._tokens: dict[str, str] = {}  # scope -> bearer token

    @classmethod
    def for_image(
        cls, image: str, environ: Mapping[str, str] | None = None, **kwargs: object
    ) -> tuple[RegistryClient, str]:
        """The client for an image's registry (credentials from the environment) and the repository path."""
        host, base_url, repository = endpoint(image, environ)
        return cls(base_url, credentials_for(host, environ), host=host, **kwargs), repository  # type: ignore[arg-type]

    # --- public reads ----------------------------------------------------------------

    def tags(self, repository: str, page_size: int | None = None) -> list[str]:
        """Every tag of `repository`, following the registry's `Link: <…>; rel="next"` pages."""
        url = f"{self.base_url}/v2/{repository}/tags/list"
        params: dict[str, str] | None = {"n": str(page_size)} if page_size else None
        tags: list[str] = []
        for _ in range(MAX_PAGES):
            response = self._get(url, repository, params=params)
            body = self._json(response, repository)
            tags.extend(str(t) for t in body.get("tags") or [])
            next_url = self._next_page(response)
            if next_url is None:
                return tags
            url, params = next_url, None
        raise RegistryError(f"{self.host}: {repository} has more than {MAX_PAGES} pages of tags")

    def details(self, repository: str, tag: str) -> ImageDetails:
        """The build time and labels of the image a tag points at (manifest -> config blob).
        For a multi-platform index the first linux/amd64 image (else the first) is read."""
        response = self._get(
            f"{self.base_url}/v2/{repository}/manifests/{tag}",
            repository,
            headers={"Accept": ", ".join(MANIFEST_TYPES)},
        )
        digest = response.headers.get("Docker-Content-Digest", "")
        manifest = self._json(response, repository)
        if manifest.get("mediaType") in _INDEX_TYPES or "manifests" in manifest:
            chosen = _pick_platform(manifest.get("manifests") or [])
            if chosen is None:
                raise RegistryError(f"{self.host}: {repository}:{tag} is an index without images")
            response = self._get(
                f"{self.base_url}/v2/{repository}/manifests/{chosen}",
                repository,
                headers={"Accept": ", ".join(MANIFEST_TYPES)},
            )
            manifest = self._json(response, repository)
        config_digest = (manifest.get("config") or {}).get("digest")
        if not config_digest:
            raise RegistryError(f"{self.host}: {repository}:{tag} has no image config (schema 1 manifest?)")
        config = self._json(self._get(f"{self.base_url}/v2/{repository}/blobs/{config_digest}", repository), repository)
        labels = (config.get("config") or {}).get("Labels") or {}
        return ImageDetails(
            digest=digest,
            created_at=_build_time(config.get("created")),
            labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        )

    # --- manifests, referrers and blobs (supply chain: portal.releases.sbom_registry) ----

    def manifest(self, repository: str, reference: str, accept: tuple[str, ...] = ()) -> Manifest | None:
        """The manifest a tag or digest names, or None when the registry has none (404)."""
        try:
            response = self._get(
                f"{self.base_url}/v2/{repository}/manifests/{reference}",
                repository,
                headers={"Accept": ", ".join(accept or MANIFEST_TYPES + (OCI_ARTIFACT_MANIFEST,))},
            )
        except RegistryError as exc:
            if exc.status == 404:
                return None
            raise
        body = self._json(response, repository)
        media_type = str(body.get("mediaType") or response.headers.get("Content-Type", "").split(";")[0])
        return Manifest(digest=response.headers.get("Docker-Content-Digest", ""), media_type=media_type, body=body)

    def referrers(self, repository: str, digest: str) -> dict | None:
        """The OCI 1.1 referrers index of `digest`; None when the registry has no referrers API
        (distribution v2.8 answers 404; some answer 400 or 405)."""
        try:
            response = self._get(f"{self.base_url}/v2/{repository}/referrers/{digest}", repository,
                                 headers={"Accept": MANIFEST_TYPES[2]})
        except RegistryError as exc:
            if exc.status in (400, 404, 405):
                return None
            raise
        return self._json(response, repository)

    def blob(self, repository: str, digest: str, limit: int) -> bytes:
        """A blob's bytes, refusing (BlobTooLarge) one bigger than `limit` without reading it all."""
        response = self._get(f"{self.base_url}/v2/{repository}/blobs/{digest}", repository, stream=True)
        try:
            declared = int(response.headers.get("Content-Length") or 0)
            if declared > limit:
                raise BlobTooLarge(declared)
            chunks, size = [], 0
            for chunk in response.iter_content(chunk_size=1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise BlobTooLarge(size)
                chunks.append(chunk)
            return b"".join(chunks)
        except requests.RequestException as exc:
            raise RegistryError(f"{self.host}: {repository}: the blob could not be read ({type(exc).__name__})")
        finally:
            response.close()

    # --- HTTP and auth ---------------------------------------------------------------

    def _get(
        self,
        url: str,
        repository: str,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
    ) -> requests.Response:
        scope = f"repository:{repository}:pull"
        response = self._send(url, params, headers, self._authorization(scope), stream)
        if response.status_code == 401:
            challenge = response.headers.get("WWW-Authenticate", "")
            authorization = self._answer(challenge, scope, repository)
            response = self._send(url, params, headers, authorization, stream)
            if response.status_code == 401:
                raise RegistryError(self._denied(repository, response), status=401)
        if response.status_code >= 400:
            raise RegistryError(self._failure(repository, response), status=response.status_code)
        return response

    def _send(
        self,
        url: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        authorization: str | None,
        stream: bool = False,
    ) -> requests.Response:
        sent = dict(headers or {})
        if authorization:
            sent["Authorization"] = authorization
        try:
            return self.session.get(url, params=params, headers=sent, timeout=self.timeout, stream=stream)
        except requests.Timeout:
            raise RegistryError(f"{self.host}: no answer within {self.timeout:g} s")
        except requests.RequestException as exc:
            raise RegistryError(f"{self.host}: cannot connect ({type(exc).__name__})")

    def _authorization(self, scope: str) -> str | None:
        if self._scheme == "bearer" and scope in self._tokens:
            return f"Bearer {self._tokens[scope]}"
        if self._scheme == "basic" and self.credentials:
            return _basic(self.credentials)
        return None

    def _answer(self, challenge: str, scope: str, repository: str) -> str:
        """The Authorization header that answers a 401's challenge."""
        kind, _, rest = challenge.strip().partition(" ")
        params = {m[1].lower(): m[2] if m[2] is not None else m[3] for m in _CHALLENGE_PARAM.finditer(rest)}
        if kind.lower() == "basic":
            if self.credentials is None:
                raise RegistryError(
                    f"{self.host}: {repository} needs credentials; set PORTAL_REGISTRY_AUTH for {self.host}", status=401
                )
            self._scheme = "basic"
            return _basic(self.credentials)
        if kind.lower() == "bearer" and params.get("realm"):
            token = self._token(params["realm"], params.get("service", ""), params.get("scope") or scope)
            self._scheme = "bearer"
            self._tokens[scope] = token
            return f"Bearer {token}"
        raise RegistryError(
            f"{self.host}: refused {repository} with an authentication scheme the portal does not speak", status=401
        )

    def _token(self, realm: str, service: str, scope: str) -> str:
        parts = urlsplit(realm)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise RegistryError(f"{self.host}: the token realm is not an http(s) URL")
        query = {"scope": scope}
        if service:
            query["service"] = service
        headers = {"Authorization": _basic(self.credentials)} if self.credentials else {}
        try:
            response = self.session.get(realm, params=query, headers=headers, timeout=self.timeout)
        except requests.Timeout:
            raise RegistryError(
                f"{self.host}: the token service {parts.netloc} gave no answer within {self.timeout:g} s"
            )
        except requests.RequestException as exc:
            raise RegistryError(f"{self.host}: cannot reach the token service {parts.netloc} ({type(exc).__name__})")
        if response.status_code in (401, 403):
            who = f"the credentials from {self.credentials.source}" if self.credentials else "anonymous access"
            raise RegistryError(f"{self.host}: the token service {parts.netloc} rejected {who}", status=401)
        if response.status_code >= 400:
            raise RegistryError(
                f"{self.host}: the token service {parts.netloc} answered {response.status_code}: "
                f"{self._scrub(response.text)}",
                status=response.status_code,
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        # Docker's token spec says `token`; OAuth2-style services answer `access_token`.
        token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not token:
            raise RegistryError(f"{self.host}: the token service {parts.netloc} returned no token")
        return str(token)

    def _next_page(self, response: requests.Response) -> str | None:
        match = _LINK_NEXT.search(response.headers.get("Link", ""))
        if match is None:
            return None
        url = urljoin(response.url, match.group(1))
        here, there = urlsplit(self.base_url), urlsplit(url)
        # Credentials go only to the registry itself, never to a host a header names.
        if (here.scheme, here.netloc) != (there.scheme, there.netloc):
            raise RegistryError(f"{self.host}: the next page of tags points at another host ({there.netloc})")
        return url

    def _json(self, response: requests.Response, repository: str) -> dict:
        try:
            body = json.loads(response.content)
        except ValueError:
            raise RegistryError(f"{self.host}: {repository}: the answer is not JSON")
        if not isinstance(body, dict):
            raise RegistryError(f"{self.host}: {repository}: the answer is not a JSON object")
        return body

    # --- messages --------------------------------------------------------------------

    def _denied(self, repository: str, response: requests.Response) -> str:
        codes = self._error_codes(response)
        if self.credentials is None:
            # Docker Hub answers 401, not 404, for an unknown repository read anonymously.
            return (
                f"{self.host}: {repository} is unknown or needs credentials ({codes or 'unauthorized'}); "
                f"set PORTAL_REGISTRY_AUTH for a private repository"
            )
        return f"{self.host}: the credentials from {self.credentials.source} were refused for {repository}" + (
            f" ({codes})" if codes else ""
        )

    def _failure(self, repository: str, response: requests.Response) -> str:
        codes = self._error_codes(response)
        if response.status_code == 404:
            return f"{self.host}: {repository} not found" + (f" ({codes})" if codes else "")
        return f"{self.host}: {repository}: HTTP {response.status_code}" + (
            f" ({codes})" if codes else f": {self._scrub(response.text)}" if response.text else ""
        )

    def _error_codes(self, response: requests.Response) -> str:
        """The registry's `errors: [{code, message}]` as text; registries echo requests back, so scrubbed."""
        try:
            errors = json.loads(response.content).get("errors") or []
        except (ValueError, AttributeError):
            return ""
        parts = [f"{e.get('code', '')}: {e.get('message', '')}".strip(": ") for e in errors if isinstance(e, dict)]
        return self._scrub("; ".join(p for p in parts if p))

    def _scrub(self, text: str) -> str:
        # Redacted before it is cut short: a cut could leave half a secret no pattern knows.
        secrets = list(self._tokens.values())
        if self.credentials:
            secrets += [self.credentials.password, basic_pair(self.credentials.username, self.credentials.password)]
        return redact(text.strip(), secrets)[:_ERROR_TEXT_LIMIT]


def _basic(credentials: Credentials) -> str:
    pair = f"{credentials.username}:{credentials.password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def _pick_platform(manifests: list) -> str | None:
    entries = [m for m in manifests if isinstance(m, dict) and m.get("digest")]
    for entry in entries:
        platform = entry.get("platform") or {}
        if platform.get("os") == "linux" and platform.get("architecture") == "amd64":
            return str(entry["digest"])
    return str(entries[0]["digest"]) if entries else None


def _build_time(value: object) -> datetime | None:
    """The config's `created`; None for reproducible builds, which stamp 1970-01-01 (no real build time)."""
    created = parse_time(value) if isinstance(value, str) else None
    return created if created is not None and created.year >= 1980 else None
