"""What every source of raw cluster objects shares: the protocol, its answer and its errors.

A source answers one question, "every object of this kind", as plain JSON dicts, so
collectors never see the `kubernetes` client's typed models (which drop fields they do
not know, such as every CRD field) and can be tested on files. The sources are
`gitops.sources.kube` (a live API server), `gitops.sources.manifests` (a folder),
`gitops.sources.argocd_api` (an Argo CD API server) and `gitops.sources.agent` (what an
in-cluster agent pushed). Every failure becomes a `SourceError` with a small fixed set of
reasons, so the poller can mark one capability or one cluster stale and keep the last good
data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gitops.kinds import KindSpec

UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
SERVER_ERROR = "server_error"
MALFORMED = "malformed"
REASONS = frozenset({UNREACHABLE, TIMEOUT, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, SERVER_ERROR, MALFORMED})

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


def fill_type(item: Obj, api_version: str, kind: str) -> Obj:
    # Lists of built-in types omit apiVersion/kind on each item; collectors key on them.
    if not item.get("apiVersion"):
        item["apiVersion"] = api_version
    if not item.get("kind"):
        item["kind"] = kind
    return item


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
