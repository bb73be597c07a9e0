"""Reading an Argo CD instance through its API server instead of the Kubernetes API.

A hub Argo CD often lives on a management cluster the portal may not read; its API server
is what a team can grant: a local account with `role:readonly` and an API token. This
source answers the same question as `KubeSource` ("every object of this kind") for the two
kinds the API serves, Applications and AppProjects, and yields the same objects, so the
collectors, the store and every page see no difference. Three differences of the API are
handled here:

- **Items carry no apiVersion/kind** (the server marshals the Go types, whose TypeMeta is
  empty); they are filled in, as the Kubernetes source fills them for typed lists.
- **Per-resource health is not in the list** since Argo CD 3.0 (`status.resourceHealthSource:
  appTree`): it lives in the resource tree, and the server adds it to `status.resources`
  only on Get. This source does the same from `GET .../resource-tree`, for the apps whose
  own health is not Healthy: an app's health is the worst of its resources', so a healthy
  app's tree adds nothing, and each tree read that misses Argo CD's cache makes its
  controller refresh the app. A tree that cannot be read (an argocd-agent app whose agent
  is offline) is a warning; the app is still reported from its mirrored status.
- **The list is one response**: Argo CD has no paging.

`manifests` asks the API server for what an application renders at a revision (`GET
.../manifests`, `server/application.GetManifests`): Argo CD's own repo server runs the app's
kustomize, Helm or plugin, so the portal never renders anything itself. The answer is
`{"manifests": ["<one object as JSON text>", ...]}`; Secrets come back with their data masked.

The poll reads the list *unprojected*. The `fields` projection only selects from a fixed
whitelist (`pkg/apiclient/application/forwarder_overwrite.go`) that leaves out
`metadata.uid`, `metadata.resourceVersion`, `metadata.generation`, `status.history`,
`status.conditions`, `status.reconciledAt` and `status.sync.revisions`: rows built from it
could offer no rollback and could not tell an unchanged app. The projection is used where
it suffices: counting apps per destination for cluster discovery (`app_destinations`).

Never sent: the `refresh` parameter (it makes a read a write, with only `get` permission).
Never kept: a cluster's `config` (credentials even after the server's sanitising, or
proxies' URLs): `clusters()` keeps `name` and `server` alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from gitops import kinds
from gitops.derive.topology import AgentMapping, ArgoCluster, cluster_from_api, resolve_destination
from gitops.kinds import KindSpec
from gitops.rawobjects import as_dict, as_list, as_str, dig
from gitops.sources.base import (
    DEFAULT_TIMEOUT,
    MALFORMED,
    NOT_FOUND,
    TIMEOUT,
    UNAUTHORIZED,
    UNREACHABLE,
    ListResult,
    Obj,
    SourceError,
)
from gitops.sources.decoding import load_json
from gitops.sources.kube import KubeSource, api_message, status_reason
from portal.kernel.redaction import redact

APPLICATION_API_VERSION = "argoproj.io/v1alpha1"
# `spec` is selectable in every Argo CD since the fast projection (v2.6): destination and
# project come with it. `spec.destination` alone would be dropped silently before v3.5.
DESTINATION_FIELDS = ("items.metadata.name", "items.metadata.namespace", "items.spec")
# A tree node with no live object and no health is Missing (server/application
# `inferResourcesStatusHealth`, what Argo CD's own Get does).
_NOT_CREATED = {"status": "Missing", "message": "Resource has not been created"}


@dataclass(frozen=True)
class AppDestination:
    """Where one Application deploys, as its spec says (`spec.destination`)."""

    namespace: str
    name: str
    server: str
    cluster_name: str


class ArgoCDSource:
    """The Applications and AppProjects of one Argo CD instance, from its API server.

    `url` is the API server's base URL (what the CLI's `--server` names, with its scheme);
    `token` a read-only local account's API token, sent as `Authorization: Bearer`.
    """

    # What polling lists through this source; workloads and Flux are not the API's.
    capabilities: tuple[str, ...] = (kinds.ARGOCD, kinds.ARGOCD_PROJECTS)

    def __init__(
        self,
        url: str,
        token: str,
        *,
        name: str | None = None,
        ca_data: str | None = None,
        ca_file: str | os.PathLike[str] | None = None,
        verify: bool = True,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        resource_health: bool = True,
    ) -> None:
        if not token:
            raise SourceError(UNAUTHORIZED, f"{name or url}: no Argo CD API token")
        self.url = url.rstrip("/")
        self.name = name or self.url
        self.timeout = timeout
        self.resource_health = resource_health
        self._token = token
        tls: dict[str, Any] = {}
        if not verify:
            tls["cert_reqs"] = "CERT_NONE"
        else:
            tls["cert_reqs"] = "CERT_REQUIRED"
            if ca_data:
                tls["ca_cert_data"] = ca_data
            if ca_file is not None:
                tls["ca_certs"] = os.fspath(ca_file)
        # No retries: a timed-out read retried three times would quadruple a poll's wait;
        # the next poll is the retry.
        self._pool = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]), **tls
        )

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> ArgoCDSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ ClusterSource

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        if kind.matches(APPLICATION_API_VERSION, "Application"):
            return self._applications(namespace)
        if kind.matches(APPLICATION_API_VERSION, "AppProject"):
            return self._projects(namespace)
        raise SourceError(NOT_FOUND, f"{self.name}: the Argo CD API does not serve {kind.resource}", 404)

    def _applications(self, namespace: str | None) -> ListResult:
        query = [("appNamespace", namespace)] if namespace else []
        result = ListResult(version="v1alpha1")
        page = self._list("/api/v1/applications", query, "list applications", result)
        result.items = [self._typed(item, "Application") for item in page["items"]]
        if self.resource_health:
            for app in result.items:
                self._fill_resource_health(app, result)
        return result

    def _projects(self, namespace: str | None) -> ListResult:
        result = ListResult(version="v1alpha1")
        page = self._list("/api/v1/projects", [], "list projects", result)
        result.items = [
            self._typed(item, "AppProject")
            for item in page["items"]
            if namespace is None or dig(item, "metadata", "namespace") == namespace
        ]
        return result

    @staticmethod
    def _typed(item: Obj, kind: str) -> Obj:
        # Same order as the Kubernetes API writes them, so the stored raw objects match.
        if item.get("apiVersion") and item.get("kind"):
            return item
        return {"apiVersion": APPLICATION_API_VERSION, "kind": kind,
                **{k: v for k, v in item.items() if k not in ("apiVersion", "kind")}}

    # ---------------------------------------------------------------- resource health

    def _fill_resource_health(self, app: Obj, result: ListResult) -> None:
        status = app.get("status")
        if not isinstance(status, dict) or status.get("resourceHealthSource") != "appTree":
            return  # health is inline in status.resources (Argo CD < 3.0, or persisted)
        if as_str(dig(status, "health", "status")) == "Healthy":
            return
        resources = [r for r in as_list(status.get("resources")) if isinstance(r, dict)]
        if not resources:
            return
        name = as_str(dig(app, "metadata", "name"))
        namespace = as_str(dig(app, "metadata", "namespace"))
        query = [("appNamespace", namespace)] if namespace else []
        project = as_str(dig(app, "spec", "project"))
        if project:
            query.append(("project", project))
        what = f"resource tree of {namespace}/{name}"
        try:
            body = self._read(f"/api/v1/applications/{quote(name, safe='')}/resource-tree", query, what, result)
            tree = self._decode(body, what)
        except SourceError as exc:
            result.warnings.append(f"{exc.message}; resource health not read")
            return
        nodes = {
            (as_str(n.get("group")), as_str(n.get("kind")), as_str(n.get("namespace")), as_str(n.get("name"))): n
            for n in as_list(tree.get("nodes"))
            if isinstance(n, dict)
        }
        for resource in resources:
            if resource.get("health"):
                continue
            key = (as_str(resource.get("group")), as_str(resource.get("kind")),
                   as_str(resource.get("namespace")), as_str(resource.get("name")))
            node = nodes.get(key)
            if node is None:
                continue
            health = as_dict(node.get("health"))
            if health:
                resource["health"] = dict(health)
            elif not (node.get("uid") or node.get("resourceVersion") or node.get("createdAt")):
                resource["health"] = dict(_NOT_CREATED)

    # ---------------------------------------------------------------------- manifests

    def manifests(
        self, name: str, *, app_namespace: str = "", project: str = "", revision: str = "",
        source_revisions: Mapping[int, str] | None = None,
    ) -> list[Obj]:
        """The objects Argo CD renders for one Application: at its own target when no revision is
        given, else at `revision` (one source) or at `source_revisions` (a multi-source app: the
        1-based source position, as `sourcePositions` counts them, to the revision it renders at;
        the sources not named stay at their target)."""
        query: list[tuple[str, str]] = []
        if app_namespace:
            query.append(("appNamespace", app_namespace))
        if project:
            query.append(("project", project))
        if revision:
            query.append(("revision", revision))
        # grpc-gateway reads repeated fields as repeated parameters, paired by order.
        for position, at in sorted((source_revisions or {}).items()):
            query += [("sourcePositions", str(position)), ("revisions", at)]
        what = f"manifests of {app_namespace + '/' if app_namespace else ''}{name}"
        body = self._read(f"/api/v1/applications/{quote(name, safe='')}/manifests", query, what, ListResult())
        texts = self._decode(body, what).get("manifests") or []
        if not isinstance(texts, list):
            raise SourceError(MALFORMED, f"{self.name}: {what}: `manifests` is not a list", 200)
        objects: list[Obj] = []
        for text in texts:
            doc = self._decode(str(text).encode(), what) if isinstance(text, str) else None
            if doc is None:
                raise SourceError(MALFORMED, f"{self.name}: {what}: a manifest is not JSON text", 200)
            objects.append(doc)
        return objects

    # ----------------------------------------------------------------------- clusters

    def clusters(self) -> list[ArgoCluster]:
        """The clusters this instance deploys to (`GET /api/v1/clusters`): name, server and
        argocd-agent name only (`gitops.derive.topology.cluster_from_api`).

        The server strips credentials already; whatever else an entry carries (config,
        annotations, connection state) is dropped here all the same. A cluster without a
        name is named by its server, as the API does when it fills the name in.
        """
        result = ListResult()
        page = self._list("/api/v1/clusters", [], "list clusters", result)
        found = []
        for item in page["items"]:
            cluster = cluster_from_api(item)
            if cluster is not None:
                found.append(cluster if cluster.name else replace(cluster, name=cluster.server))
        return found

    def argocd_clusters(self) -> list[ArgoCluster] | None:
        """`clusters()` for a poll (`Snapshot.argocd_clusters`): None when the token may not
        list clusters (or the call fails), so that destinations by name are matched to the
        catalog as they stand instead of being reported unknown."""
        try:
            return self.clusters()
        except SourceError:
            return None

    def app_destinations(self) -> list[AppDestination]:
        """Every Application's destination, from the list projected to names and spec."""
        result = ListResult()
        page = self._list(
            "/api/v1/applications", [("fields", ",".join(DESTINATION_FIELDS))], "list application destinations",
            result,
        )
        return [
            AppDestination(
                namespace=as_str(dig(item, "metadata", "namespace")),
                name=as_str(dig(item, "metadata", "name")),
                server=as_str(dig(item, "spec", "destination", "server")),
                cluster_name=as_str(dig(item, "spec", "destination", "name")),
            )
            for item in page["items"]
        ]

    # --------------------------------------------------------------------------- HTTP

    def _read(self, path: str, query: list[tuple[str, str]], what: str, result: ListResult) -> bytes:
        """The body of a 200 answer; any other status is a SourceError with the server's message."""
        status, body = self._get(path, query, what)
        result.pages += 1
        if status != 200:
            detail = self._redact(api_message(body)) or f"HTTP {status}"
            raise SourceError(status_reason(status), f"{self.name}: {what}: {detail}", status)
        return body

    def _list(self, path: str, query: list[tuple[str, str]], what: str, result: ListResult) -> Obj:
        body = self._read(path, query, what, result)
        # The Kubernetes source's decoding: bounded nesting depth, `items: null` as [].
        page = KubeSource._parse_page(body, f"{self.name}: {what}", 200, result.warnings)
        metadata = page.get("metadata") or {}
        result.resource_version = as_str(metadata.get("resourceVersion")) or None
        return page

    def _decode(self, body: bytes, what: str) -> Obj:
        try:
            doc, cut = load_json(body)
        except ValueError as exc:  # UnicodeDecodeError included
            raise SourceError(MALFORMED, f"{self.name}: {what}: response is not JSON ({exc})", 200) from None
        if not isinstance(doc, dict) or cut:
            raise SourceError(MALFORMED, f"{self.name}: {what}: not a JSON object of bounded depth", 200)
        return doc

    def _get(self, path: str, query: Iterable[tuple[str, str]], what: str) -> tuple[int, bytes]:
        params = [(k, v) for k, v in query if k != "refresh"]  # a refresh is a write: never
        url = self.url + path + (f"?{urlencode(params)}" if params else "")
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        try:
            response = self._pool.request("GET", url, headers=headers, preload_content=False)
            try:
                data = response.read()
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise self._transport_error(exc, what) from None
        except OSError as exc:
            raise SourceError(UNREACHABLE, f"{self.name}: {what}: {self._redact(str(exc))}") from None
        return int(response.status), data or b""

    def _transport_error(self, exc: urllib3.exceptions.HTTPError, what: str) -> SourceError:
        cause: BaseException = exc
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            cause = exc.reason
        if isinstance(cause, urllib3.exceptions.NewConnectionError):
            return SourceError(UNREACHABLE, f"{self.name}: {what}: cannot connect to {self.url} "
                                            f"({self._redact(str(cause))})")
        if isinstance(cause, urllib3.exceptions.TimeoutError):
            connect, read = self.timeout
            return SourceError(
                TIMEOUT, f"{self.name}: {what}: no answer from {self.url} within {connect:g}s connect / {read:g}s read"
            )
        return SourceError(UNREACHABLE, f"{self.name}: {what}: {self._redact(str(cause))}")

    def _redact(self, text: str) -> str:
        return redact(text, [self._token])


def discovered_clusters(
    source: ArgoCDSource, agents: AgentMapping = AgentMapping()  # noqa: B008 - frozen, never mutated
) -> list[tuple[ArgoCluster, int]]:
    """The clusters one Argo CD instance knows, each with how many apps deploy to it, busiest
    first: two API reads (the cluster list, and the app list projected to destinations).

    Destinations are resolved as Argo CD resolves them (`gitops.derive.topology.resolve_destination`);
    an app Argo CD cannot place (a name shared by two clusters, an unknown name) counts nowhere.
    """
    clusters = source.clusters()
    counts: dict[ArgoCluster, int] = dict.fromkeys(clusters, 0)
    by_server = {c.server: c for c in clusters}
    for app in source.app_destinations():
        destination = resolve_destination(app.server, app.cluster_name, clusters, namespace=app.namespace,
                                          agents=agents)
        target = by_server.get(destination.server) if not destination.error else None
        if target is not None:
            counts[target] += 1
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0].name, pair[0].server))


__all__ = ["AppDestination", "ArgoCDSource", "discovered_clusters"]
