"""Topology (pure): which cluster an Argo CD Application deploys to, and which catalog
cluster that is.

Hand-written because the rules are Argo CD's own, and no library carries them: Argo CD
resolves `spec.destination` against its cluster list (`util/argo/argo.go`
GetDestinationServer / GetDestinationCluster, `util/db/cluster.go`), argocd-agent's
principal routes an app to an agent by its namespace or by its destination name
(`docs/concepts/agent-mapping.md`), and neither is exposed as an API a reader can call.
The facts are in ../shared/reference/argocd-topology.md §1 and §4.

1. `resolve_destination` turns `spec.destination` into the Argo CD cluster it means,
   the way Argo CD does: `server` (minus a trailing "/") or `name` looked up in the
   instance's cluster list, the implicit `in-cluster` / `https://kubernetes.default.svc`
   being the cluster the instance runs on; a destination Argo CD itself refuses
   (both fields, neither, an unknown or ambiguous name) carries Argo CD's error.
2. `CatalogIndex.match` finds the catalog cluster: by API URL, by Argo CD cluster name,
   or by the aliases an admin set on the cluster (`Cluster.argocd_aliases`).
3. A destination nothing matches is `unregistered`: the store files its apps under a
   discovered cluster, never under the instance's own cluster.

Cluster Secrets are read for `name`, `server` and the argocd-agent label only. Sources list
them as Argo CD does (its namespace, its label; gitops.kinds) and drop everything else,
`config` (passwords, bearer tokens, client keys) first, right after decoding the list
(gitops.sources.base.only_kept_data); here `config` is never decoded either.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from gitops.rawobjects import as_dict, as_str, dig

IN_CLUSTER_NAME = "in-cluster"
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
AGENT_NAME_LABEL = "argocd-agent.argoproj-labs.io/agent-name"

# Argo CD's own messages (util/argo/argo.go), shown on the app when it cannot be placed.
BOTH_SET = "application destination can't have both name and server defined"
NONE_SET = "Destination server missing from app spec"


@dataclass(frozen=True)
class ArgoCluster:
    """One cluster an Argo CD instance knows: its name, server URL and, for an
    argocd-agent principal, the agent it stands for. Never its credentials."""

    name: str
    server: str
    agent: str = ""


@dataclass(frozen=True)
class AgentMapping:
    """How an argocd-agent principal ties an app to an agent ("" when it is no principal)."""

    mode: str = ""  # "" | "namespace" | "destination"
    control_namespace: str = "argocd"  # apps here belong to no agent (namespace mapping)


@dataclass(frozen=True)
class Destination:
    """Where an app deploys, as its Argo CD instance resolves it."""

    server: str = ""  # normalised server URL; "" when only a name is known
    name: str = ""  # the Argo CD cluster name, when known
    in_cluster: bool = False  # the cluster the instance itself runs on
    agent: str = ""  # the argocd-agent agent the app belongs to
    error: str = ""  # why Argo CD cannot place it (the app is then not placed either)

    @property
    def label(self) -> str:
        """How pages name it: "prod-eu (https://10.0.0.1:6443)", the name, or the server."""
        if self.name and self.server:
            return f"{self.name} ({self.server})"
        return self.name or self.server


def normalise_server(url: str) -> str:
    """A server URL as Argo CD compares it (trailing "/" trimmed), scheme and host
    lower-cased so that a catalog cluster's API URL typed by hand still matches."""
    url = url.strip().rstrip("/")
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment))


def cluster_from_secret(secret: Mapping[str, Any]) -> ArgoCluster | None:
    """A cluster Secret (`argocd.argoproj.io/secret-type: cluster`) as Argo CD reads it
    (util/db/cluster.go SecretToCluster), or None for any other Secret. `data` is
    base64 as the API returns it; `stringData` as written in a manifest file."""
    labels = as_dict(dig(secret, "metadata", "labels"))
    if as_str(labels.get(SECRET_TYPE_LABEL)) != "cluster":
        return None
    server = _secret_value(secret, "server")
    if not server:
        return None
    return ArgoCluster(
        name=_secret_value(secret, "name"),
        server=normalise_server(server),
        agent=as_str(labels.get(AGENT_NAME_LABEL)),
    )


def cluster_from_api(item: Mapping[str, Any]) -> ArgoCluster | None:
    """One item of the Argo CD API's `GET /api/v1/clusters` (already sanitised by the server)."""
    server = as_str(item.get("server"))
    if not server:
        return None
    labels = as_dict(item.get("labels"))
    return ArgoCluster(name=as_str(item.get("name")), server=normalise_server(server),
                       agent=as_str(labels.get(AGENT_NAME_LABEL)))


def _secret_value(secret: Mapping[str, Any], key: str) -> str:
    plain = as_dict(secret.get("stringData")).get(key)
    if isinstance(plain, str):
        return plain.strip()
    encoded = as_dict(secret.get("data")).get(key)
    if not isinstance(encoded, str):
        return ""
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8").strip()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def resolve_destination(
    server: str,
    name: str,
    clusters: Sequence[ArgoCluster] | None,
    *,
    namespace: str = "",
    agents: AgentMapping = AgentMapping(),  # noqa: B008 - frozen, never mutated
) -> Destination:
    """The destination of an app in `namespace` with `spec.destination` {server, name}.

    `clusters` is the instance's cluster list; None when the portal could not read it
    (a name is then matched to the catalog as it stands, and never reported as unknown).
    """
    clusters = list(clusters) if clusters is not None else None
    agent = _agent_of(server, name, namespace, agents)
    if agent:
        by_agent = [c for c in clusters or [] if c.agent == agent]
        if len(by_agent) == 1:
            return Destination(server=by_agent[0].server, name=by_agent[0].name or agent, agent=agent)
        return Destination(name=agent, agent=agent)
    if server and name:
        return Destination(error=BOTH_SET)
    if server:
        server = normalise_server(server)
        found = next((c for c in clusters or [] if c.server == server), None)
        in_cluster = server == IN_CLUSTER_SERVER
        return Destination(server=server, name=found.name if found else (IN_CLUSTER_NAME if in_cluster else ""),
                           in_cluster=in_cluster)
    if name:
        if clusters is None:
            return Destination(name=name, in_cluster=name == IN_CLUSTER_NAME)
        named = [c for c in clusters if c.name == name]
        if len(named) > 1:
            servers = ", ".join(c.server for c in named)
            return Destination(name=name, error=f"there are {len(named)} clusters with the same name: [{servers}]")
        if named:
            return Destination(server=named[0].server, name=name, in_cluster=named[0].server == IN_CLUSTER_SERVER)
        if name == IN_CLUSTER_NAME:
            return Destination(server=IN_CLUSTER_SERVER, name=name, in_cluster=True)
        return Destination(name=name, error=f"there are no clusters with this name: {name}")
    return Destination(error=NONE_SET)


def _agent_of(server: str, name: str, namespace: str, agents: AgentMapping) -> str:
    """The agent an app on a principal belongs to: its namespace (namespace-based
    mapping, the default; apps in the control-plane namespace belong to none) or its
    destination name (destination-based mapping)."""
    if agents.mode == "namespace":
        return namespace if namespace and namespace != agents.control_namespace else ""
    if agents.mode == "destination":
        return name if name and not server else ""
    return ""


class CatalogCluster(Protocol):
    """What matching needs of a catalog cluster (portal.kernel.catalog.models.Cluster)."""

    @property
    def name(self) -> str: ...

    @property
    def api_url(self) -> str: ...

    @property
    def argocd_aliases(self) -> Any: ...


class CatalogIndex:
    """The catalog's clusters by every name and URL Argo CD may use for them."""

    def __init__(self, clusters: Iterable[CatalogCluster]) -> None:
        clusters = list(clusters)
        self._by_server: dict[str, CatalogCluster] = {}
        self._by_name: dict[str, CatalogCluster] = {}
        for cluster in clusters:
            if cluster.api_url:
                self._by_server.setdefault(normalise_server(cluster.api_url), cluster)
            self._by_name.setdefault(cluster.name, cluster)
        # Aliases an admin set win over what merely happens to look alike.
        for cluster in clusters:
            for alias in cluster.argocd_aliases or []:
                if not isinstance(alias, str) or not alias.strip():
                    continue
                if "://" in alias:
                    self._by_server[normalise_server(alias)] = cluster
                else:
                    self._by_name[alias.strip()] = cluster

    def match(self, destination: Destination, home: CatalogCluster | None) -> CatalogCluster | None:
        """The catalog cluster `destination` is; `home` is the cluster the instance runs on
        (its in-cluster destination). None: unregistered (or unresolvable)."""
        if destination.error:
            return None
        if destination.in_cluster:
            return home
        if destination.server and destination.server in self._by_server:
            return self._by_server[destination.server]
        for name in (destination.name, destination.agent):
            if name and name in self._by_name:
                return self._by_name[name]
        return None


@dataclass(frozen=True)
class Unregistered:
    """A destination no catalog cluster matched: what a discovered cluster row records."""

    slug: str  # a catalog name for it, unique among the catalog's when the store writes it
    api_url: str  # its server URL when it is an http(s) URL (not an argocd-agent proxy)
    aliases: tuple[str, ...]  # the Argo CD name and server it is known by


_NOT_SLUG = re.compile(r"[^a-z0-9-]+")


def unregistered(destination: Destination) -> Unregistered | None:
    """The discovered cluster for a destination that matched nothing; None when Argo CD
    itself cannot place the app (that is the app's error, not a cluster)."""
    if destination.error or not (destination.server or destination.name):
        return None
    base = destination.name or destination.agent or (urlsplit(destination.server).hostname or destination.server)
    slug = _NOT_SLUG.sub("-", base.lower()).strip("-")[:63].strip("-") or "cluster"
    aliases = tuple(a for a in (destination.name, destination.agent, destination.server) if a)
    # An agent's server goes through the principal's resource proxy (…?agentName=x): no API URL of the cluster.
    api_url = destination.server if destination.server and not urlsplit(destination.server).query else ""
    return Unregistered(slug=slug, api_url=api_url, aliases=tuple(dict.fromkeys(aliases)))


# A word of a cluster name or of a server URL ("https://prod-eu-2.k8s.example:6443").
_ENVIRONMENT_PATTERNS = (
    ("prod", re.compile(r"(^|[-_./:])(prod|prd|production|live)([-_./:0-9]|$)")),
    ("staging", re.compile(r"(^|[-_./:])(staging|stage|stg|preprod|uat)([-_./:0-9]|$)")),
    ("dev", re.compile(r"(^|[-_./:])(dev|develop|development|test|qa|sandbox)([-_./:0-9]|$)")),
)


def suggest_environment(cluster_name: str, environments: Iterable[str]) -> str:
    """The environment a discovered cluster's name suggests ("eu-prod-2" -> an environment
    named like prod), among `environments`; "" when nothing fits."""
    known = list(environments)
    lowered = cluster_name.lower()
    for family, pattern in _ENVIRONMENT_PATTERNS:
        if not pattern.search(lowered):
            continue
        for environment in known:
            if pattern.search(environment.lower()) or environment.lower() == family:
                return environment
    return ""
