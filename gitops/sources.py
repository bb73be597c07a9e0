"""Where raw cluster objects come from: a live API server or a folder of manifests.

Both sources answer one question, "every object of this kind", as plain JSON dicts, so
collectors never see the `kubernetes` client's typed models (which drop fields they do
not know, such as every CRD field) and can be tested on files.

`KubeSource` reads raw JSON over the official client's HTTP layer: chunked lists
(`limit`/`continue`), a bounded time per request, API versions tried newest first.
Every failure becomes a `SourceError` with a small fixed set of reasons, so the poller
can mark one capability or one cluster stale and keep the last good data.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes.config.kube_config import load_kube_config

from gitops.fields import MAX_DEPTH, as_str, dig, storable_text
from gitops.kinds import KindSpec, selector_matches, split_api_version
from portal.kernel.credentials import in_cluster_environment
from portal.kernel.redaction import redact

logger = logging.getLogger(__name__)

UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
SERVER_ERROR = "server_error"
MALFORMED = "malformed"
REASONS = frozenset({UNREACHABLE, TIMEOUT, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, SERVER_ERROR, MALFORMED})

DEFAULT_PAGE_SIZE = 500
# (connect, read) seconds. Read covers each socket read, so a huge list that keeps
# streaming is not cut off, while a server that stops answering is.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)

Obj = dict[str, Any]


class SourceError(Exception):
    """A list that could not be read. `reason` is one of REASONS; `status` the HTTP code."""

    def __init__(self, reason: str, message: str, status: int | None = None) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown SourceError reason {reason!r}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.status = status


@dataclass
class ListResult:
    """Every object of one kind, plus what the caller should know about how it was read."""

    items: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pages: int = 0  # HTTP requests made (404 fallbacks and restarts included); files read
    version: str | None = None  # the API version that answered
    resource_version: str | None = None  # list metadata.resourceVersion, when there is one


class ClusterSource(Protocol):
    @property
    def name(self) -> str: ...

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        """All objects of `kind` (all namespaces unless one is named)."""
        ...


def _fill_type(item: Obj, api_version: str, kind: str) -> Obj:
    # Lists of built-in types omit apiVersion/kind on each item; collectors key on them.
    if not item.get("apiVersion"):
        item["apiVersion"] = api_version
    if not item.get("kind"):
        item["kind"] = kind
    return item


# ------------------------------------------------------------------------ bounded depth
# The JSON and YAML decoders recurse once per level of nesting, so a hostile object
# nested a thousand levels deep raises RecursionError (or worse) inside them. Depth is
# therefore measured before decoding, without recursion; a part nested deeper than
# MAX_DEPTH is replaced by a marker, and the objects holding it are skipped by name.

_JSON_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_JSON_TOKENS = re.compile(_JSON_STRING + r"|[\[\]{}]", re.DOTALL)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_STEPS = [0] * 256
# For `_valid_json_nests_deeper`: both kinds of bracket as one (valid JSON never mixes a pair).
_BRACKETS_AND_QUOTES = bytes.maketrans(b"{}", b"[]")
_STEPS[ord("[")] = _STEPS[ord("{")] = 1
_STEPS[ord("]")] = _STEPS[ord("}")] = -1
_TOO_DEEP = "\u0000gitops: nested too deep"
_TOO_DEEP_JSON = json.dumps(_TOO_DEEP)


def _json_nests_deeper(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text nests arrays/objects more than `limit` levels (strings ignored)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    # Escaped backslashes, then escaped quotes out (left to right, as a decoder pairs
    # them); then everything but quotes and brackets; then every other run between quotes
    # (the strings' contents). What is left is the bracket structure, found in C passes.
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(unescaped.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return max(accumulate(map(_STEPS.__getitem__, brackets))) > limit


def _cut_too_deep(text: str, limit: int = MAX_DEPTH) -> str:
    """The JSON text with every array/object below `limit` levels replaced by a marker."""
    parts: list[str] = []
    depth = 0
    kept_from = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == limit + 1:
                parts.append(text[kept_from : match.start()])
        else:
            if depth == limit + 1:
                parts.append(_TOO_DEEP_JSON)
                kept_from = match.end()
            depth -= 1
    if depth > limit:  # never closed: the decoder reports the text as truncated
        parts.append(_TOO_DEEP_JSON)
        kept_from = len(text)
    parts.append(text[kept_from:])
    return "".join(parts)


# Escapes of NUL or of a surrogate (half of a pair, or alone), and raw NUL bytes: only a
# text holding one of these is walked for text no database column can store. Plain
# substring searches (a few C passes); "\\ud"/"\\uD" also match "\\udXXX" escapes that are not
# surrogates (U+D000-U+D7FF), which only costs that text a walk.
_UNSTORABLE_JSON = (b"\\u0000", b"\\ud", b"\\uD", b"\x00")
_UNSTORABLE_YAML = ("\\0", "\\x00", "\\u", "\\U")


# The decoder's own recursion guard is trusted only under a sane recursion limit: raised
# far, json.loads could exhaust the C stack before it says RecursionError.
_TRUSTED_RECURSION_LIMIT = 10_000


def _valid_json_nests_deeper(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """`_json_nests_deeper` for a text json.loads has accepted (balanced, well formed), in
    fewer passes: strings without a bracket reduce to an empty pair of quotes, dropped in
    one replace (which never changes whether a bracket is inside a string), so only the few
    strings that hold brackets are split out; then each round of removing empty pairs
    peels exactly one level off every branch, so a text empty after `r` rounds nests `r`
    deep. Rounds are cheap while the text shrinks; a deep remainder is measured in one pass."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = unescaped.translate(_BRACKETS_AND_QUOTES, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in structure:
        structure = b"".join(structure.split(b'"')[::2])
    rounds = min(limit, 32)
    for _ in range(rounds):
        if not structure:
            return False
        structure = structure.replace(b"[]", b"")
    if not structure:
        return False
    return max(accumulate(map(_STEPS.__getitem__, structure))) > limit - rounds


def _load_json(data: bytes) -> tuple[Any, bool]:
    """The decoded JSON text, and whether parts nested too deep were cut out of it.

    The plain decoder first (in C): a text nested deeper than it may recurse raises
    RecursionError, and one it accepted is measured for depth on its (now known valid)
    bytes; only a text too deep either way takes the bounded path, which cuts the deep
    parts out before decoding."""
    with _collector_paused():
        return _decode_json(data)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a text is decoded. Decoding allocates one container
    per JSON object and array, and every few hundred allocations the collector would walk the
    young objects, and often all the process's older ones (a worker holds Django's whole start-up
    and a poll's rows): measured, that doubled the cost of decoding a cluster's lists. Decoded
    JSON holds no reference cycle, so nothing is left for the collector to find afterwards."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _decode_json(data: bytes) -> tuple[Any, bool]:
    decoded: Any = None
    if sys.getrecursionlimit() <= _TRUSTED_RECURSION_LIMIT:
        try:
            decoded = json.loads(data)
        except RecursionError:
            decoded = None
        else:
            if _valid_json_nests_deeper(data):
                decoded = None
            else:
                if any(marker in data for marker in _UNSTORABLE_JSON):
                    storable_text(decoded)
                return decoded, False
    if not _json_nests_deeper(data):
        decoded, cut = json.loads(data), False
    else:
        decoded, cut = json.loads(_cut_too_deep(data.decode("utf-8"))), True
    if any(marker in data for marker in _UNSTORABLE_JSON):
        storable_text(decoded)
    return decoded, cut


def _holds_cut(value: Any) -> bool:
    """Whether a decoded value holds a part cut for being too deep (walked without recursion)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
        elif current == _TOO_DEEP:
            return True
    return False


def _describe(obj: Any) -> str:
    kind = as_str(dig(obj, "kind")) or "object"
    namespace = as_str(dig(obj, "metadata", "namespace"))
    name = as_str(dig(obj, "metadata", "name")) or "<no name>"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _too_deep_warning(where: str, obj: Any) -> str:
    return f"{where}: skipped {_describe(obj)}: nested deeper than {MAX_DEPTH} levels"


# ----------------------------------------------------------------- objects cut to what is read

# Metadata a Secret keeps once cut down. Not its annotations: kubectl's
# last-applied-configuration annotation holds the applied manifest, `stringData` included.
_KEPT_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels")


def only_kept_data(obj: Obj, keys: tuple[str, ...]) -> Obj:
    """A Secret cut down to `keys` of its `data`/`stringData` (KindSpec.kept_data), right
    after a source decoded it: an Argo CD cluster Secret keeps `name`, `server` and `project`;
    its `config` (bearer token, password, client key) is dropped before anything can store,
    log or show it. The object's other fields go too: nothing else of it is read."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kept: Obj = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {key: metadata[key] for key in _KEPT_METADATA if key in metadata},
    }
    for field_name in ("data", "stringData"):
        values = obj.get(field_name)
        if isinstance(values, dict):
            kept[field_name] = {key: values[key] for key in keys if isinstance(values.get(key), str)}
    return {key: value for key, value in kept.items() if value is not None}


def _labels(obj: Obj) -> dict[str, Any]:
    labels = dig(obj, "metadata", "labels")
    return labels if isinstance(labels, dict) else {}


# ---------------------------------------------------------------------------- KubeSource


class _VersionNotServed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _status_reason(code: int) -> str:
    if code == 401:
        return UNAUTHORIZED
    if code == 403:
        return FORBIDDEN
    if code == 404:
        return NOT_FOUND
    if code in (408, 504):
        return TIMEOUT
    return SERVER_ERROR


def _api_message(body: bytes) -> str:
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
                raise _VersionNotServed(self._redact(_api_message(body)))
            if status == 410 and token is not None and not restarted:
                # The continue token outlived etcd compaction: the only consistent answer
                # is a fresh list. Once; a second expiry means the list cannot keep up.
                restarted = True
                items, token = [], None
                result.warnings.append(f"{what}: continue token expired; list restarted")
                continue
            if not 200 <= status < 300:
                detail = self._redact(_api_message(body)) or f"HTTP {status}"
                raise SourceError(_status_reason(status), f"{what}: {detail}", status)
            page = self._parse_page(body, what, status, result.warnings)
            if kind.kept_data is not None:
                page["items"] = [only_kept_data(item, kind.kept_data) for item in page["items"]]
            items.extend(_fill_type(item, api_version, kind.kind) for item in page["items"])
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
            page, cut = _load_json(body)
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
                if not _holds_cut(item):
                    kept.append(item)
                    continue
                warning = _too_deep_warning(what, item)
                logger.warning(warning)
                if warnings is not None:
                    warnings.append(warning)
            page["items"] = kept
            if _holds_cut(page):
                raise SourceError(MALFORMED, f"{what}: list nested deeper than {MAX_DEPTH} levels", status)
        metadata = page.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise SourceError(MALFORMED, f"{what}: list metadata is not an object", status)
        return page

    def _get(self, path: str, query: list[tuple[str, str | int]], what: str) -> tuple[int, bytes]:
        try:
            # Building the request runs the kubeconfig's token refresh (exec plugins,
            # rotated service-account tokens), which can fail on its own.
            method, url, headers, body, post_params = self._client.param_serialize(
                method="GET",
                resource_path=path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
        except ConfigException as exc:
            raise SourceError(UNAUTHORIZED, f"{what}: credentials: {self._redact(str(exc))}") from None
        try:
            # call_api hands back the undecoded urllib3 response (preload_content=False);
            # reading it here keeps the typed models out and the read inside the timeout.
            response = self._client.call_api(
                method, url, header_params=headers, body=body, post_params=post_params,
                _request_timeout=self.timeout,
            )
            try:
                data = response.read()
            finally:
                response.response.release_conn()
        except ApiException as exc:
            # The client turns TLS failures into ApiException(status=0).
            raise SourceError(UNREACHABLE, f"{what}: {self._redact(str(exc.reason or exc))}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise self._transport_error(exc, what) from None
        except OSError as exc:
            raise SourceError(UNREACHABLE, f"{what}: {self._redact(str(exc))}") from None
        return int(response.status), data or b""

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


# ------------------------------------------------------------------------ ManifestSource

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _PlainLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML without timestamp parsing: objects must look like the API's JSON (strings)."""


_PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _PlainLoader.yaml_implicit_resolvers.items()
}

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestSource:
    """Objects from every *.yaml/*.yml/*.json file under a folder: demo clusters, snapshots.

    Files are read on every call so an updated snapshot is seen by the next poll. A file
    that does not parse is skipped with a warning on the result; one bad file never hides
    the others.
    """

    def __init__(self, folder: str | os.PathLike[str], *, name: str | None = None) -> None:
        self.folder = Path(folder)
        self.name = name or self.folder.name

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        result = ListResult()
        versions_seen: list[str] = []
        any_of_kind = False
        for obj in self._objects(result):
            if not kind.matches(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))):
                continue
            any_of_kind = True
            if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
                continue
            if kind.label_selector and not selector_matches(kind.label_selector, _labels(obj)):
                continue
            if kind.kept_data is not None:
                obj = only_kept_data(obj, kind.kept_data)
            result.items.append(obj)
            version = split_api_version(str(obj["apiVersion"]))[1]
            if version not in versions_seen:
                versions_seen.append(version)
        if kind.kept_data is not None and not any_of_kind:
            # A folder of `kubectl get` snapshots rarely holds Secrets: none at all means they
            # were not taken, not that Argo CD has no clusters (an API's empty list would).
            raise SourceError(NOT_FOUND, f"the snapshot in {self.folder.name} holds no {kind.kind} objects")
        # Report the most preferred version present; items keep their own apiVersion.
        ranked = sorted(versions_seen, key=lambda v: kind.versions.index(v) if v in kind.versions else 99)
        result.version = ranked[0] if ranked else None
        return result

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            raise SourceError(UNREACHABLE, f"{self.name}: manifest folder {self.folder} does not exist")
        found: list[Path] = []
        for root, dirs, files in os.walk(self.folder):
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # .git and friends
            found.extend(Path(root, f) for f in files if f.endswith(MANIFEST_SUFFIXES))
        return sorted(found)

    def _objects(self, result: ListResult) -> Iterator[Obj]:
        for path in self._files():
            result.pages += 1
            relative = path.relative_to(self.folder)
            try:
                documents, cut = self._load(path)
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
                warning = f"{self.name}: skipped {relative}: {_describe_parse_error(exc)}"
                logger.warning(warning)
                result.warnings.append(warning)
                continue
            for index, document in enumerate(documents):
                if document is None:
                    continue
                if not isinstance(document, (dict, list)):
                    result.warnings.append(f"{self.name}: {relative} document {index + 1} is not an object")
                    continue
                for obj in _unwrap(document):
                    # Without a type and not an Argo CD API answer it is no Kubernetes object
                    # (a Helm values file, a kustomize config): not one to list.
                    if not (obj.get("apiVersion") and obj.get("kind")) and not _type_argocd_api_object(obj):
                        continue
                    if cut and _holds_cut(obj):
                        warning = _too_deep_warning(f"{self.name}: {relative}", obj)
                        logger.warning(warning)
                        result.warnings.append(warning)
                        continue
                    yield obj

    @staticmethod
    def _load(path: Path) -> tuple[list[Any], bool]:
        """The file's documents, and whether parts nested too deep were cut out (JSON)."""
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            document, cut = _load_json(text.encode("utf-8"))
            return [document], cut
        # PyYAML composes nodes recursively: measure the depth on the (flat) event
        # stream first, and skip a file too deep to compose as a whole.
        deep = _yaml_too_deep(text)
        if deep:
            raise ValueError(f"document {deep} nested deeper than {MAX_DEPTH} levels")
        # Parse the whole file before yielding anything: a syntax error on document 3
        # skips the file rather than half of it.
        documents = list(yaml.load_all(text, Loader=_PlainLoader))  # noqa: S506 - a safe loader
        if any(escape in text for escape in _UNSTORABLE_YAML):  # how YAML writes NUL or a surrogate
            storable_text(documents)
        return documents, False


def _yaml_too_deep(text: str, limit: int = MAX_DEPTH) -> int:
    """The number (from 1) of the first YAML document nested deeper than `limit`, or 0.

    An alias counts as deep as the node it names, so anchors cannot stack depth.
    """
    heights: dict[str, int] = {}  # anchor -> levels of the node it names
    open_: list[list[Any]] = []  # per open collection: [anchor, its level, deepest level within]
    document = 0
    for event in yaml.parse(text, Loader=_PlainLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            document += 1
        elif isinstance(event, yaml.CollectionStartEvent):
            level = len(open_) + 1
            if level > limit:
                return document
            open_.append([event.anchor, level, level])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, level, deepest = open_.pop()
            if anchor:
                heights[anchor] = deepest - level + 1
            if open_:
                open_[-1][2] = max(open_[-1][2], deepest)
        elif isinstance(event, yaml.AliasEvent):
            reached = len(open_) + heights.get(event.anchor or "", 0)
            if reached > limit:
                return document
            if open_:
                open_[-1][2] = max(open_[-1][2], reached)
    return 0


def _unwrap(document: Obj | list[Any]) -> Iterator[Obj]:
    """Objects in a document: itself, the items of a (typed) List, or a JSON array's members."""
    if isinstance(document, list):
        for member in document:
            if isinstance(member, (dict, list)):
                yield from _unwrap(member)
        return
    kind = document.get("kind")
    items = document.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        # A typed list (DeploymentList) names its items' type; a plain `List` does not.
        item_kind = kind[: -len("List")]
        api_version = str(document.get("apiVersion", ""))
        for item in items:
            if not isinstance(item, dict):
                continue
            if item_kind:
                _fill_type(item, api_version, item_kind)
            yield from _unwrap(item)
        return
    if kind is None and isinstance(items, list) and "spec" not in document:
        # The Argo CD API's list answer ({"metadata": {"resourceVersion"}, "items": [...]}) is untyped too.
        for item in items:
            if isinstance(item, dict):
                yield from _unwrap(item)
        return
    # Untyped objects too: the caller types an Argo CD API-server response or names the skip.
    yield document


# What the Argo CD API server returns (`argocd app get -o json`, /api/v1/applications) has no
# TypeMeta: the Go types are marshalled without it (gitops.argocd_api). Saved to a file, such
# an object is known by its shape: an Application's spec names a destination and what to
# deploy; an AppProject's spec lists its allowed sources or destinations or sync windows.
_ARGOCD_API_VERSION = "argoproj.io/v1alpha1"
_APPLICATION_SPEC = ("source", "sources", "sourceHydrator")
_PROJECT_SPEC = ("sourceRepos", "destinations", "syncWindows", "clusterResourceWhitelist")


def _type_argocd_api_object(obj: Obj) -> bool:
    """Fill apiVersion/kind of an untyped Argo CD API-server response; False if it is none."""
    metadata, spec = obj.get("metadata"), obj.get("spec")
    if obj.get("apiVersion") or obj.get("kind") or not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return False
    if isinstance(spec.get("destination"), Mapping) and any(key in spec for key in _APPLICATION_SPEC):
        kind = "Application"
    elif any(key in spec for key in _PROJECT_SPEC) and "destination" not in spec:
        kind = "AppProject"
    else:
        return False
    _fill_type(obj, _ARGOCD_API_VERSION, kind)
    return True


def _describe_parse_error(exc: BaseException) -> str:
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.YAMLError) and mark is not None:
        problem = getattr(exc, "problem", None) or "syntax error"
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)
