"""One address per GitOps app in the API (issue 41).

`/api/v1/gitops/<cluster>/<namespace>/<name>` names an app by the cluster it deploys to. Several
apps may share that: a Flux Kustomization and HelmRelease of one name, or Applications of one
namespace/name in two Argo CD instances (or a hub and a standalone Argo CD) deploying to one
cluster. What tells them apart is what the database keeps unique (GitOpsApp.Meta: `read_from`,
`kind`, namespace, name): `?kind=` and `?read_from=<the cluster whose poll reported it>`, with
`?instance=<Argo CD instance name>` as the friendlier alias where an instance is registered.

An app's canonical address carries a qualifier only when a twin makes it needed, so an
ordinary app keeps its short address; a 409 lists, for each candidate, every address that
resolves it.
"""

from __future__ import annotations

from itertools import combinations
from urllib.parse import urlencode

from django.db.models import Exists, OuterRef
from django.urls import reverse

from gitops.models import GitOpsApp

# Query parameters that pick one of several apps at one path, in the order an address lists them.
QUALIFIERS = ("kind", "read_from", "instance")


def twin_facts(app: str = "") -> dict[str, Exists]:
    """Annotations that let a page of apps (or of rows naming an app through the relation
    `app`, e.g. "app__") write their addresses without a query per app: whether a twin of
    another kind, or of the same kind read from another cluster, shares the path."""
    twins = GitOpsApp.objects.filter(cluster=OuterRef(f"{app}cluster"), namespace=OuterRef(f"{app}namespace"),
                                     name=OuterRef(f"{app}name")).exclude(pk=OuterRef(f"{app}pk"))
    return {"twin_of_other_kind": Exists(twins.exclude(kind=OuterRef(f"{app}kind"))),
            "twin_of_same_kind": Exists(twins.filter(kind=OuterRef(f"{app}kind")))}


def qualifiers(app: GitOpsApp, annotated: object = None) -> dict[str, str]:
    """The query that makes the app's path name it alone: empty for most apps. `annotated` is
    the row that carries twin_facts (the app itself unless given)."""
    annotated = app if annotated is None else annotated
    other_kind = getattr(annotated, "twin_of_other_kind", None)
    same_kind = getattr(annotated, "twin_of_same_kind", None)
    if other_kind is None or same_kind is None:  # a row loaded without twin_facts
        twins = GitOpsApp.objects.filter(cluster_id=app.cluster_id, namespace=app.namespace,
                                         name=app.name).exclude(pk=app.pk)
        other_kind = twins.exclude(kind=app.kind).exists()
        same_kind = twins.filter(kind=app.kind).exists()
    query = {}
    if other_kind:
        query["kind"] = app.kind
    if same_kind:
        query["read_from"] = app.read_from.name
    return query


def path(app: GitOpsApp, query: dict[str, str] | None = None) -> str:
    """The detail path of the app, with `query` (its canonical qualifiers unless given)."""
    query = qualifiers(app) if query is None else query
    base = reverse("api-gitops-detail", kwargs={"cluster": app.cluster.name, "namespace": app.namespace,
                                                "name": app.name})
    return base + ("?" + urlencode(query) if query else "")


def facts(app: GitOpsApp) -> dict[str, str]:
    """The app's value for each qualifier it has (no instance for Flux or an unregistered Argo CD)."""
    out = {"kind": app.kind, "read_from": app.read_from.name}
    if app.argocd_instance is not None:
        out["instance"] = app.argocd_instance.name
    return out


def matching(candidates: list[GitOpsApp], query: dict[str, str]) -> list[GitOpsApp]:
    return [app for app in candidates if all(facts(app).get(key) == value for key, value in query.items())]


def addresses(app: GitOpsApp, candidates: list[GitOpsApp]) -> list[dict[str, str]]:
    """Every query of qualifiers that resolves `app` alone among `candidates` (every app at
    its path), shortest first; a query that adds a qualifier to one already listed is left out."""
    own = facts(app)
    found: list[dict[str, str]] = []
    for size in range(1, len(own) + 1):
        for keys in combinations([key for key in QUALIFIERS if key in own], size):
            if any(set(shorter) <= set(keys) for shorter in found):
                continue
            query = {key: own[key] for key in keys}
            if matching(candidates, query) == [app]:
                found.append(query)
    return found
