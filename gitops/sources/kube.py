"""Raw objects from a live Kubernetes API server, read through the official client.

`KubeSource` reads raw JSON over the official client's HTTP layer: chunked lists
(`limit`/`continue`), a bounded time per request, API versions tried newest first.
Every failure becomes a `SourceError` (gitops.sources.base) with a small fixed set of
reasons, so the poller can mark one capability or one cluster stale and keep the last
good data.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from urllib.parse import urlencode

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes.config.kube_config import load_kube_config

from gitops.kinds import KindSpec
from gitops.rawobjects import MAX_DEPTH
from gitops.sources.base import (
    DEFAULT_TIMEOUT,
    FORBIDDEN,
    MALFORMED,
    NOT_FOUND,
    SERVER_ERROR,
    TIMEOUT,
    UNAUTHORIZED,
    UNREACHABLE,
    ListResult,
    Obj,
    SourceError,
    fill_type,
    only_kept_data,
)
from gitops.sources.decoding import holds_cut, load_json, too_deep_warning
from portal.kernel.credentials import in_cluster_environment
from portal.kernel.redaction import redact

logger = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 500


class _VersionNotServed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def status_reason(code: int) -> str:
    if code == 401:
        return UNAUTHORIZED
    if code == 403:
        return FORBIDDEN
    if code == 404:
        return NOT_FOUND
    if code in (408, 504):
        return TIMEOUT
    return SERVER_ERROR


def api_message(body: bytes) -> str:
    """The Status.message the API server sent, or a short excerpt of a non-Status body."""
    try:
        doc = json.loads(body)
    except ValueError:
        text = body.decode("utf-8", "replace").strip()
        return text[:200]
    if isinstance(doc, dict) and isinstance(doc.get("message"), str):
        return doc["message"]
    return ""


class KubeSource:
    """Lists raw objects from one Kubernetes API server through the official client.

    Build it with `from_kubeconfig`, `in_cluster` or `from_url`; the constructor takes a
    ready `kubernetes.client.Configuration` for anything else (client certificates,
    proxies).
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        name: str,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        # urllib3 retries a timed-out GET three times by default, which would turn a
        # 30 s read timeout into two minutes; the next poll is the retry.
        configuration.retries = False
        self.name = name
        self.timeout = timeout
        self.page_size = page_size
        self._configuration = configuration
        self._client = ApiClient(configuration)
        self._timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        context: str | None = None,
        *,
        name: str | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> KubeSource:
        """A context of a kubeconfig file (the file's current context when None)."""
        configuration = Configuration()
        try:
            # persist_config=False: the portal must never rewrite an operator's kubeconfig.
            load_kube_config(
                config_file=os.fspath(path) if path is not None else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (ConfigException, OSError, yaml.YAMLError) as exc:
            raise SourceError(UNREACHABLE, f"kubeconfig {path or '~/.kube/config'}: {exc}") from None
        return cls(configuration, name=name or context or "kubeconfig", timeout=timeout,
                   page_size=page_size)

    @classmethod
    def in_cluster(
        cls,
        *,
        name: str = "in-cluster",
        token_path: str = SERVICE_TOKEN_FILENAME,
        ca_path: str = SERVICE_CERT_FILENAME,
        environ: Mapping[str, str] | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> KubeSource:
        """The pod's service account (KUBERNETES_SERVICE_HOST/PORT, token and CA files).

        The token file is re-read as it rotates (bound service account tokens expire).
        """
        configuration = Configuration()
        loader = InClusterConfigLoader(
            token_filename=token_path,
            cert_filename=ca_path,
            environ=dict(in_cluster_environment()) if environ is None else environ,
        )
        try:
            loader.load_and_set(configuration)
        except (ConfigException, OSError) as exc:
            raise SourceError(UNREACHABLE, f"in-cluster configuration: {exc}") from None
        return cls(configuration, name=name, timeout=timeout, page_size=page_size)

    @classmethod
    def from_url(
        cls,
        url: str,
        token: str,
        *,
        ca_data: str | None = None,
        ca_file: str | os.PathLike[str] | None = None,
        verify: bool = True,
        name: str | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> KubeSource:
        """An API URL with a bearer token; CA as PEM text or a file; verify=False skips TLS checks."""
        configuration = Configuration(host=url.rstrip("/"))
        configuration.api_key["BearerToken"] = token
        configuration.api_key_prefix["BearerToken"] = "Bearer"
        configuration.verify_ssl = verify
        if ca_data:
            configuration.ca_cert_data = ca_data
        if ca_file is not None:
            configuration.ssl_ca_cert = os.fspath(ca_file)
        return cls(configuration, name=name or url, timeout=timeout, page_size=page_size)

    @property
    def host(self) -> str:
        return str(self._configuration.host)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KubeSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        result = ListResult()
        not_served: list[str] = []
        for version in kind.versions:
            try:
                self._list_version(kind, version, namespace, result)
            except _VersionNotServed as exc:
                not_served.append(f"{version}: {exc.message}" if exc.message else version)
                continue
            result.version = version
            return result
        raise SourceError(
            NOT_FOUND,
            f"{self.name}: {kind.resource} is not served in any of versions "
            f"{', '.join(kind.versions)} ({'; '.join(not_served)})",
            404,
        )

    def _list_version(self, kind: KindSpec, version: str, namespace: str | None, result: ListResult) -> None:
        path = kind.list_path(version, namespace)
        api_version = kind.api_version(version)
        what = f"{self.name}: list {kind.resource}/{version}"
        items: list[Obj] = []
        token: str | None = None
        restarted = False
        while True:
            query: list[tuple[str, str | int]] = [("limit", self.page_size)]
            if kind.label_selector:
                query.append(("labelSelector", kind.label_selector))
            if token:
                query.append(("continue", token))
            status, body = self._get(path, query, what)
            result.pages += 1
            if status == 404 and token is None:
                raise _VersionNotServed(self._redact(api_message(body)))
            if status == 410 and token is not None and not restarted:
                # The continue token outlived etcd compaction: the only consistent answer
                # is a fresh list. Once; a second expiry means the list cannot keep up.
                restarted = True
                items, token = [], None
                result.warnings.append(f"{what}: continue token expired; list restarted")
                continue
            if not 200 <= status < 300:
                detail = self._redact(api_message(body)) or f"HTTP {status}"
                raise SourceError(status_reason(status), f"{what}: {detail}", status)
            page = self._parse_page(body, what, status, result.warnings)
            if kind.kept_data is not None:
                page["items"] = [only_kept_data(item, kind.kept_data) for item in page["items"]]
            items.extend(fill_type(item, api_version, kind.kind) for item in page["items"])
            metadata = page.get("metadata") or {}
            if token is None:
                result.resource_version = metadata.get("resourceVersion")
            token = metadata.get("continue") or None
            if token is None:
                result.items = items
                return

    @staticmethod
    def _parse_page(body: bytes, what: str, status: int, warnings: list[str] | None = None) -> Obj:
        try:
            page, cut = load_json(body)
        except UnicodeDecodeError:
            raise SourceError(MALFORMED, f"{what}: response is not UTF-8 text", status) from None
        except ValueError as exc:
            raise SourceError(MALFORMED, f"{what}: response is not JSON ({exc})", status) from None
        if not isinstance(page, dict):
            raise SourceError(MALFORMED, f"{what}: response is not a JSON object", status)
        items = page.get("items")
        if items is None:
            items = page["items"] = []  # an empty list may be sent as "items": null
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise SourceError(MALFORMED, f"{what}: `items` is not a list of objects", status)
        if cut:
            kept = []
            for item in items:
                if not holds_cut(item):
                    kept.append(item)
                    continue
                warning = too_deep_warning(what, item)
                logger.warning(warning)
                if warnings is not None:
                    warnings.append(warning)
            page["items"] = kept
            if holds_cut(page):
                raise SourceError(MALFORMED, f"{what}: list nested deeper than {MAX_DEPTH} levels", status)
        metadata = page.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise SourceError(MALFORMED, f"{what}: list metadata is not an object", status)
        return page

    def _get(self, path: str, query: list[tuple[str, str | int]], what: str) -> tuple[int, bytes]:
        """One GET, through the client's own connection pool (its TLS, client certificates and
        proxy) with the credential its configuration gives, but not through `ApiClient.call_api`:
        its request building and response wrapping cost about as much again as the request
        itself over the 16 lists of every poll (bench/fleet.py's floor makes the same requests
        with urllib3 alone), and only lists are read here."""
        try:
            # What the client's request building does for auth: the configuration's refresh
            # hook runs the kubeconfig's token refresh (exec plugins, rotated service-account
            # tokens), which can fail on its own.
            auth = self._configuration.auth_settings().get("BearerToken")
        except ConfigException as exc:
            raise SourceError(UNAUTHORIZED, f"{what}: credentials: {self._redact(str(exc))}") from None
        headers = {**self._client.default_headers, "Accept": "application/json"}
        if auth and auth["value"]:
            headers[auth["key"]] = auth["value"]
        url = f"{self._configuration.host}{path}?{urlencode(query)}"
        try:
            response = self._client.rest_client.pool_manager.request(
                "GET", url, headers=headers, timeout=self._timeout, preload_content=True)
        except urllib3.exceptions.HTTPError as exc:
            raise self._transport_error(exc, what) from None
        except OSError as exc:
            raise SourceError(UNREACHABLE, f"{what}: {self._redact(str(exc))}") from None
        return int(response.status), response.data or b""

    def _transport_error(self, exc: urllib3.exceptions.HTTPError, what: str) -> SourceError:
        cause: BaseException = exc
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            cause = exc.reason
        # NewConnectionError subclasses ConnectTimeoutError in urllib3 2: test it first.
        if isinstance(cause, urllib3.exceptions.NewConnectionError):
            detail = self._redact(str(cause))
            return SourceError(UNREACHABLE, f"{what}: cannot connect to {self.host} ({detail})")
        if isinstance(cause, urllib3.exceptions.TimeoutError):
            connect, read = self.timeout
            return SourceError(
                TIMEOUT, f"{what}: no answer from {self.host} within {connect:g}s connect / {read:g}s read"
            )
        return SourceError(UNREACHABLE, f"{what}: {self._redact(str(cause))}")

    def _redact(self, text: str) -> str:
        # A proxy or a misbehaving server may echo the Authorization header back; the
        # message ends up in pages and logs, so strip every form of the credential.
        keys = [str(value) for value in self._configuration.api_key.values() if value]
        return redact(text, keys + [key.partition(" ")[2] for key in keys])
