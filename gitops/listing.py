"""Step 1 of a poll: what a cluster's source answers, kind by kind (gitops.polling is the rest).

Every capability is listed in turn (`list_capabilities`): one that answers 403/404 is recorded
as unavailable, in words a page can show, and only what depends on it is skipped; a failure
that means the cluster cannot be read at all stops the read (`Listing.fatal`). Then Argo CD's
argocd-cm and the custom kinds its health rules cover (`read_health_inputs`). The in-cluster
agent walks the kinds through these same functions (gitops.sources.agent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from gitops import kinds
from gitops.collectors.custom_health import (
    ARGOCD_CM,
    CONFIGMAP,
    HEALTH_RULES,
    MAX_BLIND_SPOT_KINDS,
    MAX_BLIND_SPOT_OBJECTS,
    HealthInputs,
    app_deployments,
    blind_spot_kinds,
    wanted_kinds,
)
from gitops.health.rules import PortalRule
from gitops.kinds import KindSpec
from gitops.models import HealthRule
from gitops.rawobjects import as_dict, as_str
from gitops.sources import ClusterSource, SourceError
from gitops.sources.argocd_api import ArgoCDSource
from gitops.store import columns
from portal.kernel.catalog.models import Cluster

# Reasons that mean "this cluster could not be read at all", as opposed to one kind.
_CLUSTER_WIDE = {"unreachable", "timeout", "unauthorized"}
_CAPABILITY_WORDS = {
    kinds.ARGOCD: "Argo CD applications",
    kinds.ARGOCD_PROJECTS: "sync windows",
    kinds.ARGOCD_CLUSTERS: "cluster names",
    kinds.FLUX_KUSTOMIZE: "Flux Kustomizations",
    kinds.FLUX_HELM: "Flux HelmReleases",
    kinds.FLUX_SOURCES: "Flux sources",
    kinds.WORKLOADS: "workloads",
    kinds.ROLLOUTS: "Argo Rollouts",
    HEALTH_RULES: "health rules",
    kinds.FLUX_NOTIFICATIONS: "Flux Alerts",
}


@dataclass
class Listing:
    """What a source answered: objects by kind, the kinds listed completely, and what failed."""

    objects: dict[str, list[dict]] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    unavailable: dict[str, str] = field(default_factory=dict)  # capability -> why, in words
    warnings: list[str] = field(default_factory=list)
    fatal: SourceError | None = None  # what stopped the whole read (None when part was read)
    # The Argo CD instance's cluster list when the source answers it itself (the Argo CD API).
    argocd_clusters: list | None = None
    health: HealthInputs = field(default_factory=HealthInputs)  # argocd-cm, custom resources
    # The catalog this listing was read with, for the poll's digest (gitops.pollplan.CatalogKey):
    # the cluster's Argo CD instances (pk, name, cluster_id, namespace, agent_mapping) and the
    # portal health rules applied to it (pk and updated_at of each).
    instances: tuple[RegisteredInstance, ...] = ()
    rules_version: tuple[tuple, ...] = ()


def list_capabilities(source: ClusterSource, *, argocd_namespace: str = "argocd") -> Listing:
    """Every kind, capability by capability; a cluster-wide failure stops the read.

    Argo CD's cluster Secrets are listed only where Argo CD runs (its Applications were
    listed), in its control-plane namespace `argocd_namespace` only, as Argo CD reads them."""
    listing = Listing()
    failures: list[SourceError] = []
    # A source may serve only some capabilities (the Argo CD API: apps and projects).
    for capability in getattr(source, "capabilities", kinds.CAPABILITIES):
        scoped = capability == kinds.ARGOCD_CLUSTERS
        if scoped and "Application" not in listing.listed:
            continue
        for spec in kinds.kinds_for(capability):
            try:
                result = source.list_objects(spec, namespace=argocd_namespace if scoped else None)
            except SourceError as exc:
                # Kept without its traceback: that holds this frame, and so the whole listing, in a
                # reference cycle only the collector frees (most clusters miss some CRD: every poll
                # would leave its 4,000 decoded containers for the collector to walk and free).
                failures.append(exc.with_traceback(None))
                if exc.reason in _CLUSTER_WIDE:
                    return Listing(fatal=exc)
                if scoped:
                    _cluster_names_unavailable(listing, argocd_namespace, exc)
                    continue
                _record_unavailable(listing, capability, spec.resource, exc)
                continue
            listing.objects.setdefault(spec.kind, []).extend(result.items)
            listing.listed.add(spec.kind)
            listing.warnings.extend(result.warnings)
    if not listing.listed and failures:
        listing.fatal = failures[0]
    elif isinstance(source, ArgoCDSource):
        listing.argocd_clusters = source.argocd_clusters()
    return listing


def _cluster_names_unavailable(listing: Listing, namespace: str, exc: SourceError) -> None:
    """Cluster Secrets not listed: only `destination.name` resolution degrades (names are
    then matched to catalog clusters and aliases as they stand). Reading them is optional
    RBAC; a 404 (no such list) is no news."""
    if exc.reason == "forbidden":
        listing.unavailable[kinds.ARGOCD_CLUSTERS] = (
            f"cluster names unavailable: no permission to list secrets in {namespace}"
        )
    elif exc.reason != "not_found":
        listing.unavailable[kinds.ARGOCD_CLUSTERS] = f"cluster names not updated: {exc.message}"


@dataclass(frozen=True)
class PortalRules:
    """The admins' enabled health rules (gitops.models.HealthRule) as gitops.health.rules.PortalRule,
    and their version: a disabled, edited, added or deleted rule changes it."""

    rules: tuple[PortalRule, ...] = ()
    version: tuple[tuple, ...] = ()


def portal_health_rules() -> PortalRules:
    """Read by every poll, as SQL text (gitops.store.columns); usually there are none."""
    rows = [HealthRule(**{name: columns.read(HealthRule, name, value)
                          for name, value in zip(_RULE_FIELDS, row, strict=True)})
            for row in columns.fetch(_RULES, [])]
    return PortalRules(tuple(row.portal_rule() for row in rows), tuple((row.pk, row.updated_at) for row in rows))


_RULE_FIELDS = ("id", "group", "kind", "language", "lua", "use_open_libs", "cel_current", "cel_in_progress",
                "cel_failed", "updated_at")
_RULES = f"""
    SELECT {", ".join(f'"{name}"' for name in _RULE_FIELDS)} FROM "gitops_healthrule"
    WHERE "enabled" ORDER BY "group", "kind", "id"
"""  # noqa: S608 - the fields' names, constants


class RegisteredInstance(NamedTuple):
    """An Argo CD instance of the catalog, as much as decides what a poll stores."""

    pk: int
    name: str
    cluster_id: int
    namespace: str
    agent_mapping: str


def registered_instances(cluster: Cluster) -> tuple[RegisteredInstance, ...]:
    """The catalog's Argo CD instances on `cluster`, oldest first: where its argocd-cm and cluster
    Secrets are read, and part of the poll's digest."""
    rows = columns.fetch(_INSTANCES, [cluster.pk])  # as SQL text: read by every poll (gitops.store.columns)
    return tuple(RegisteredInstance(*row) for row in rows)


_INSTANCES = """
    SELECT "id", "name", "cluster_id", "namespace", "agent_mapping" FROM "catalog_argocdinstance"
    WHERE "cluster_id" = %s ORDER BY "id"
"""


def argocd_namespaces(listing: Listing) -> list[str]:
    """Where an Argo CD on this cluster keeps argocd-cm: its instances' control-plane namespaces,
    else (no instance registered) the namespaces its Applications live in."""
    if not listing.objects.get("Application"):
        return []
    namespaces = sorted({instance.namespace for instance in listing.instances})
    if namespaces:
        return namespaces
    # Read before the collectors' guards: an object whose metadata is not a mapping counts for
    # nothing here, and the collectors name it in a warning.
    return sorted({as_str(as_dict(app.get("metadata")).get("namespace")) for app in listing.objects["Application"]
                   if isinstance(app, dict)} - {""})[:5]


def read_health_inputs(source: ClusterSource, listing: Listing, namespaces: list[str], portal: PortalRules) -> None:
    """Step 1b: the Argo CD instance's argocd-cm, then the custom kinds an app deploys and a rule
    covers, then those it deploys that nothing checks, up to the poll's budget
    (gitops.collectors.custom_health). A kind RBAC hides (or that fails to list) is recorded like
    any other kind (unavailable, with its message), its apps say why their objects were not
    judged, and the rest of the poll goes on. These lists are part of the poll's digest
    (`health_digest_part`): unchanged, they make an unchanged poll, which collects nothing."""
    if isinstance(source, ArgoCDSource):
        return  # the Argo CD API serves Applications and projects, not ConfigMaps or custom kinds
    listing.rules_version = portal.version
    cm_data: dict | None = None
    errors: list[str] = []
    for namespace in namespaces:
        try:
            result = source.list_objects(CONFIGMAP, namespace=namespace)
        except SourceError as exc:
            if exc.reason == "not_found":
                continue  # no such namespace: no argocd-cm there
            what = f"argocd-cm in {namespace}"
            message = (f"health rules unavailable: no permission to list configmaps in {namespace}"
                       if exc.reason == "forbidden" else f"health rules not read ({what}): {exc.message}")
            listing.unavailable[f"{HEALTH_RULES}:{namespace}"] = message
            errors.append(message)
            continue
        for item in result.items:
            if (isinstance(item, dict) and as_dict(item.get("metadata")).get("name") == ARGOCD_CM
                    and isinstance(item.get("data"), dict)):
                cm_data = item["data"]
                break
        if cm_data is not None:
            break
    inputs = HealthInputs(argocd_cm=cm_data, portal=portal.rules, errors=tuple(errors))
    objects: dict[tuple[str, str], list[dict]] = {}
    not_read: dict[tuple[str, str], str] = {}
    deployments = app_deployments(listing.objects, inputs.argocd_rules(), portal.rules)
    for key, spec in sorted(wanted_kinds(deployments).items()):
        _read_custom_kind(source, listing, key, spec, objects, not_read)
    # Then the kinds nothing checks, for the tools' blind spot, within the poll's budget.
    read = 0
    blind = [(key, spec) for key, spec in blind_spot_kinds(deployments)
             if key not in objects and key not in not_read]
    for number, (key, spec) in enumerate(blind):
        if number >= MAX_BLIND_SPOT_KINDS or read >= MAX_BLIND_SPOT_OBJECTS:
            not_read[key] = (f"{spec.kind} not read: a poll reads at most {MAX_BLIND_SPOT_KINDS} custom kinds "
                             f"(and {MAX_BLIND_SPOT_OBJECTS} of their objects) that no health check covers")
            continue
        _read_custom_kind(source, listing, key, spec, objects, not_read)
        read += len(objects.get(key, ()))
    if len(blind) > MAX_BLIND_SPOT_KINDS or read >= MAX_BLIND_SPOT_OBJECTS:
        listing.warnings.append(f"custom kinds with no health check: {len(blind)} deployed, only some read "
                                f"(at most {MAX_BLIND_SPOT_KINDS} kinds, {MAX_BLIND_SPOT_OBJECTS} objects a poll)")
    listing.health = HealthInputs(argocd_cm=cm_data, portal=portal.rules, objects=objects, not_read=not_read,
                                  errors=tuple(errors))


def _read_custom_kind(source: ClusterSource, listing: Listing, key: tuple[str, str], spec: KindSpec,
                      objects: dict[tuple[str, str], list[dict]], not_read: dict[tuple[str, str], str]) -> None:
    """One custom kind's objects into ``objects``, or why not into ``not_read`` (and the listing's
    unavailable): a kind RBAC hides is said so, on every app that deploys it."""
    try:
        result = source.list_objects(spec)
    except SourceError as exc:
        if exc.reason == "forbidden":
            message = f"RBAC hides {spec.kind}: no permission to list {spec.resource}"
        elif exc.reason == "not_found":
            message = f"{spec.kind} health unavailable: {spec.resource} is not served"
        else:
            message = f"{spec.kind} health not read: {exc.message}"
        listing.unavailable[f"{HEALTH_RULES}:{spec.group}/{spec.kind}"] = message
        not_read[key] = message
        return
    objects[key] = result.items
    listing.warnings.extend(result.warnings)


def health_digest_part(listing: Listing) -> dict[str, list[dict]]:
    """The health inputs as kinds for the unchanged-poll digest: a custom object's change must
    make the poll collect again."""
    out: dict[str, list[dict]] = {}
    for (group, kind), items in listing.health.objects.items():
        out[f"{HEALTH_RULES}:{group}/{kind}"] = items
    if listing.health.argocd_cm is not None:
        out[f"{HEALTH_RULES}:{ARGOCD_CM}"] = [{"metadata": {"uid": "argocd-cm", "resourceVersion": repr(
            sorted(listing.health.argocd_cm.items()))}}]
    return out


def _record_unavailable(listing: Listing, capability: str, resource: str, exc: SourceError) -> None:
    what = _CAPABILITY_WORDS.get(capability, capability)
    if exc.reason == "forbidden":
        listing.unavailable[capability] = f"{what} unavailable: no permission to list {resource}"
    elif exc.reason == "not_found":
        # Flux sources are many kinds; a missing Bucket CRD is not news. Nor is a cluster without
        # Flux's notification-controller: then no Alert notifies anything (portal.findings).
        if capability not in (kinds.FLUX_SOURCES, kinds.FLUX_NOTIFICATIONS):
            listing.unavailable[capability] = f"{what} unavailable: {resource} is not installed"
    else:
        listing.unavailable[capability] = f"{what} not updated: {exc.message}"
