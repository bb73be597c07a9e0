"""Where in Git an application's pins are declared: the repository, the revision it follows, the path.

The gitops side of Git pins: read from stored rows only; finding and editing the pins in
those files is forges' and delivery's.

A pull request must go where the pin is declared, and that is not always the application's
own source. A Flux HelmRelease names a Helm repository (https://charts.example, a chart
version): its values live beside the HelmRelease object, in the Git repository and path of
the Kustomization that applied it (its `kustomize.toolkit.fluxcd.io/name|namespace` labels).
An Argo CD Application that installs a chart from a Helm or OCI repository keeps its values
either in a `ref` source (`$values/...` value files) or in its own manifest, found in the
repository that defines the Application: the app-of-apps parent whose `status.resources`
lists it, or the one its tracking annotation or instance label names. When no Git location
is known, `PinSource.unknown` says why, so the portal offers an explanation instead of a
pull request aimed at a chart repository.

`pin_source` reads stored rows only; which branch a revision means is for the caller, who
can ask the forge (`revision_kind` tells the cases that need no forge). Most applications
keep their pins in their own primary Git source: `in_own_columns` tells them from four
columns, so a reader of thousands of rows (the Git pin reader) loads the objects only of the
few that need more. `pin_sources` answers for a batch of applications with the same answers
and a number of queries that does not grow with the batch: the parents of chart-only
Applications are looked up by name for the whole batch at once, and every Application's
`status.resources` is indexed once per batch (`Parents`), not scanned again per application —
at 50,000 applications a scan per application would be quadratic.

A chart version is declared elsewhere than the image tag when an Argo CD Application takes
its values from a `ref` source: the tag is in `$values/...`, but the chart's `targetRevision`
is in the Application manifest itself, where its parent deploys it from. `chart_pin_sources`
says where each application's chart version is declared (a HelmRelease: beside the object, as
its tag; an Argo CD Application: the repository that defines it, else the one of its values),
or why that is not known.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from gitops.models import GitOpsApp
from gitops.rawobjects import as_dict, as_list, as_str, dig
from gitops.rows import ARGO, FLUX

KUSTOMIZE_NAME = "kustomize.toolkit.fluxcd.io/name"
KUSTOMIZE_NAMESPACE = "kustomize.toolkit.fluxcd.io/namespace"
ARGO_TRACKING_ID = "argocd.argoproj.io/tracking-id"
ARGO_INSTANCE = "app.kubernetes.io/instance"
MAX_PARENTS = 3  # an app-of-apps of an app-of-apps; deeper chains are not followed

# How a revision reads without asking a forge.
DEFAULT = "default"  # HEAD or nothing: the repository's default branch
BRANCH = "branch"  # refs/heads/<name>
TAG = "tag"  # refs/tags/<name>
COMMIT = "commit"  # a full commit SHA
RANGE = "range"  # a semver range: follows the newest matching tag
NAME = "name"  # a bare name: a branch or a tag, only the forge can tell

_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# Characters and forms that make a semver constraint, never a plain tag or branch name.
_RANGE = re.compile(r"[*^~<>=|, ]|(^|[.-])[xX](\.|$)")


@dataclass(frozen=True)
class PinSource:
    """The Git repository, revision (as the GitOps tool follows it) and path holding a pin."""

    repository: str = ""
    revision: str = ""
    path: str = ""
    unknown: str = ""  # why no Git location is known ("" when it is)
    via: str = ""  # how it was found, for the preview ("the Kustomization flux-system/apps")

    @property
    def found(self) -> bool:
        return bool(self.repository) and not self.unknown


def revision_kind(revision: str) -> str:
    """DEFAULT, BRANCH, TAG, COMMIT, RANGE or NAME for a Git revision as Argo CD or Flux hold it."""
    text = (revision or "").strip()
    if not text or text == "HEAD":
        return DEFAULT
    if text.startswith("refs/heads/"):
        return BRANCH
    if text.startswith("refs/tags/"):
        return TAG
    if _COMMIT.match(text.lower()):
        return COMMIT
    if _RANGE.search(text):
        return RANGE
    return NAME


def ref_name(revision: str) -> str:
    """The branch or tag name without its `refs/heads/` / `refs/tags/` prefix."""
    return revision.strip().removeprefix("refs/heads/").removeprefix("refs/tags/")


def in_own_columns(tool: str, kind: str, chart: str, path: str) -> bool:
    """Whether an application's pins are where its own `repo_url`, `target_revision` and `path`
    columns say: a Flux Kustomization, or an Argo CD Application whose primary source is Git
    with a path (the first Git source with a path, which `pin_source` picks). No query."""
    if tool == FLUX:
        return kind != "HelmRelease"
    return tool == ARGO and not chart and bool(_clean(path))


def pin_source(app: GitOpsApp) -> PinSource:
    """Where `app`'s image tag is declared in Git (see the module docstring)."""
    return _pin_source(app, Parents())


def pin_sources(apps: Iterable[GitOpsApp]) -> dict[int, PinSource]:
    """`pin_source` of many applications (app id -> answer), with the parents of all their
    chart-only Applications looked up together, a level of app-of-apps at a time."""
    batch = list(apps)
    parents = Parents()
    level = [app for app in batch if _needs_parent(app)]
    for _ in range(MAX_PARENTS):
        if not level:
            break
        parents.prefetch(level)
        level = [parent for app in level if (parent := parents.parent(app)) is not None and _needs_parent(parent)]
    return {app.pk: _pin_source(app, parents) for app in batch}


def chart_pin_sources(apps: Iterable[GitOpsApp]) -> dict[int, PinSource]:
    """Where each application's chart version is declared (app id -> answer): a Flux
    HelmRelease's beside the object (its `pin_source`); an Argo CD Application's in its own
    manifest, in the repository its app-of-apps parent deploys it from. Parents are looked up
    together, as `pin_sources` does."""
    batch = list(apps)
    found = pin_sources([app for app in batch if app.tool != ARGO])
    parents = Parents()
    level = [app for app in batch if app.tool == ARGO]
    for _ in range(MAX_PARENTS):
        if not level:
            break
        parents.prefetch(level)
        level = [parent for app in level if (parent := parents.parent(app)) is not None and _needs_parent(parent)]
    for app in batch:
        if app.tool == ARGO:
            found[app.pk] = _manifest_source(app, parents)
    return found


def _manifest_source(app: GitOpsApp, parents: Parents) -> PinSource:
    """Where the Application's own manifest is declared: where its parent deploys it from."""
    parent = parents.parent(app)
    if parent is not None:
        found = _application(parent, 1, parents)
        if found.found:
            return PinSource(found.repository, found.revision, found.path, via=f"the Application {parent.name}")
    # No parent known: the manifest usually sits in the repository of its values (a `ref`
    # source); the preview looks for it there and says so when it is not.
    own = _application(app, 0, parents)
    if own.found:
        return own
    return PinSource(
        unknown=(
            f"the chart version of {app.name} is pinned in its Application manifest, and no Git repository "
            "that defines it is known (no app-of-apps parent lists it, no tracking annotation names one)"
        )
    )


def _pin_source(app: GitOpsApp, parents: Parents) -> PinSource:
    if in_own_columns(app.tool, app.kind, app.chart, app.path):
        via = f"{app.kind} {app.name}" if app.tool == FLUX else app.name
        return _git(app.repo_url, app.target_revision, app.path, via)
    if app.tool == FLUX:
        return _helmrelease(app)
    if app.tool == ARGO:
        return _application(app, 0, parents)
    return PinSource(unknown=f"{app.name}: the portal does not know where {app.tool} apps keep their pins")


# --- Flux ------------------------------------------------------------------------------


def _helmrelease(app: GitOpsApp) -> PinSource:
    source = _primary(app)
    if source.get("ref", "").startswith("GitRepository/") and app.repo_url:
        # A chart kept in Git: its values.yaml sits at the chart's path in that repository.
        return _git(app.repo_url, app.target_revision, as_str(source.get("path")), f"the chart's {source['ref']}")
    labels = as_dict(dig(app.raw, "metadata", "labels"))
    name, namespace = as_str(labels.get(KUSTOMIZE_NAME)), as_str(labels.get(KUSTOMIZE_NAMESPACE))
    if not name:
        return PinSource(
            unknown=(
                f"HelmRelease {app.namespace}/{app.name} carries no {KUSTOMIZE_NAME} label: the Git repository "
                "that declares it is unknown (its chart comes from a Helm repository, which is not where "
                "its values live)"
            )
        )
    parent = (
        GitOpsApp.objects.filter(
            cluster_id=app.cluster_id, tool=FLUX, kind="Kustomization", namespace=namespace or app.namespace, name=name
        )
        .only("repo_url", "target_revision", "path", "name", "namespace")
        .first()
    )
    if parent is None:
        return PinSource(
            unknown=(
                f"HelmRelease {app.namespace}/{app.name} was applied by the Kustomization "
                f"{namespace or app.namespace}/{name}, which the portal has not read on {app.cluster.name}"
            )
        )
    return _git(parent.repo_url, parent.target_revision, parent.path, f"the Kustomization {parent.namespace}/{name}")


def _git(repository: str, revision: str, path: str, via: str) -> PinSource:
    if not repository:
        return PinSource(unknown=f"{via} names no Git repository")
    return PinSource(repository=repository, revision=revision or "", path=_clean(path), via=via)


# --- Argo CD ---------------------------------------------------------------------------


def _git_sources(app: GitOpsApp) -> list[dict[str, Any]]:
    return [s for s in _sources(app) if s.get("repo_url") and not s.get("chart")]


def _needs_parent(app: GitOpsApp) -> bool:
    """An Argo CD Application with only charts from Helm or OCI repositories: its values are
    in its own manifest, where its parent deploys it from."""
    return app.tool == ARGO and not in_own_columns(app.tool, app.kind, app.chart, app.path) and not _git_sources(app)


def _application(app: GitOpsApp, depth: int, parents: Parents) -> PinSource:
    sources = _sources(app)
    raw_sources = _raw_sources(app.raw)
    git = _git_sources(app)
    # A Git source with a path holds manifests or a chart (and its value files): the pin is there.
    for source in git:
        if as_str(source.get("path")):
            return _git(
                as_str(source["repo_url"]), as_str(source.get("target_revision")), as_str(source["path"]), app.name
            )
    # A `ref` source feeds value files (`$values/envs/prod/values.yaml`) to a chart from elsewhere.
    for source in git:
        name = as_str(source.get("ref"))
        files = list(_ref_value_files(raw_sources, name)) if name else []
        if files:
            folder = posixpath.commonpath([posixpath.dirname(f) for f in files]) if len(files) > 1 else ""
            path = folder or posixpath.dirname(files[0])
            revision = as_str(source.get("target_revision"))
            return _git(as_str(source["repo_url"]), revision, path, f"${name} of {app.name}")
    if git:
        # A Git source without a path is the repository root.
        source = git[0]
        return _git(as_str(source["repo_url"]), as_str(source.get("target_revision")), "", app.name)
    # Only charts from Helm or OCI repositories: the values are in the Application's own
    # manifest, which lives where its parent deploys it from.
    if depth < MAX_PARENTS:
        parent = parents.parent(app)
        if parent is not None:
            found = _application(parent, depth + 1, parents)
            if found.found:
                return PinSource(found.repository, found.revision, found.path, via=f"the Application {parent.name}")
    chart = as_str(sources[0].get("chart")) if sources else ""
    return PinSource(
        unknown=(
            f"{app.name} installs the chart {chart or '(unnamed)'} from a Helm repository, and no Git "
            "repository that defines it is known (no app-of-apps parent lists it, no tracking "
            "annotation names one): the portal does not open pull requests on chart repositories"
        )
    )


def _raw_sources(raw: Any) -> list[dict[str, Any]]:
    spec = as_dict(as_dict(raw).get("spec"))
    if as_list(spec.get("sources")):
        return [as_dict(s) for s in as_list(spec.get("sources"))]
    return [as_dict(spec.get("source"))] if spec.get("source") else []


def _ref_value_files(raw_sources: Iterable[Mapping[str, Any]], ref: str) -> Iterable[str]:
    prefix = f"${ref}/"
    for source in raw_sources:
        for value_file in as_list(dig(source, "helm", "valueFiles")):
            text = as_str(value_file)
            if text.startswith(prefix):
                yield _clean(text[len(prefix) :])


def _named_parent(app: GitOpsApp) -> str:
    """The parent its tracking annotation (`<app>:<group>/<kind>:<namespace>/<name>`) or its
    instance label names ("" when neither does, or it names the app itself)."""
    metadata = as_dict(as_dict(app.raw).get("metadata"))
    tracking = as_str(as_dict(metadata.get("annotations")).get(ARGO_TRACKING_ID))
    named = tracking.partition(":")[0] if ":" in tracking else ""
    named = named or as_str(as_dict(metadata.get("labels")).get(ARGO_INSTANCE))
    return named if named != app.name else ""


class Parents:
    """The Application that deploys each chart-only Application's manifest: the one named by
    its tracking annotation or instance label, else the one whose `status.resources` lists it
    (the first by id, as one scan in id order finds it).

    `prefetch` answers for many applications with one query for the named parents, the one
    scan of every Application's `status.resources` (indexed by the listed name and namespace,
    done once per `Parents`) when some application has no named parent, and one query loading
    the parents found. `parent` of an application not prefetched prefetches it alone."""

    def __init__(self) -> None:
        self._named: dict[str, GitOpsApp | None] = {}  # name -> the first Application of that name
        self._listing: dict[tuple[str, str], list[int]] | None = None  # (name, namespace) -> ids listing it
        self._loaded: dict[int, GitOpsApp] = {}
        self._answers: dict[int, GitOpsApp | None] = {}

    def parent(self, app: GitOpsApp) -> GitOpsApp | None:
        if app.pk not in self._answers:
            self.prefetch([app])
        return self._answers[app.pk]

    def prefetch(self, apps: Iterable[GitOpsApp]) -> None:
        wanted = [app for app in apps if app.pk not in self._answers]
        names = {name for app in wanted if (name := _named_parent(app)) and name not in self._named}
        if names:
            self._named.update(dict.fromkeys(names))
            for found in _applications().filter(name__in=names).select_related("cluster").order_by("pk"):
                if self._named.get(found.name) is None:
                    self._named[found.name] = found
        listed: dict[int, int | None] = {}
        for app in wanted:
            named = self._named.get(_named_parent(app))
            if named is not None and named.pk != app.pk:
                self._answers[app.pk] = named
            else:
                listed[app.pk] = self._listed_parent(app)
        missing = {pk for pk in listed.values() if pk is not None and pk not in self._loaded}
        if missing:
            self._loaded.update({p.pk: p for p in _applications().filter(pk__in=missing).select_related("cluster")})
        for pk, parent_pk in listed.items():
            self._answers[pk] = self._loaded.get(parent_pk) if parent_pk is not None else None

    def _listed_parent(self, app: GitOpsApp) -> int | None:
        if self._listing is None:
            self._listing = _listing_index()
        name = app.name
        namespace = as_str(as_dict(as_dict(app.raw).get("metadata")).get("namespace")) or app.namespace
        listing = self._listing.get((name, namespace), []) + self._listing.get((name, ""), [])
        return min((pk for pk in listing if pk != app.pk), default=None)


def _applications() -> QuerySet[GitOpsApp]:
    return GitOpsApp.objects.filter(tool=ARGO, kind="Application")


def _listing_index() -> dict[tuple[str, str], list[int]]:
    """(name, namespace) -> the ids of the Applications whose status.resources list an
    Application of that name there ("" for a resource that names no namespace): one scan."""
    index: dict[tuple[str, str], list[int]] = {}
    for pk, resources in _applications().order_by("pk").values_list("pk", "raw__status__resources"):
        for resource in as_list(resources):
            item = as_dict(resource)
            if as_str(item.get("kind")) == "Application" and as_str(item.get("group")) in ("argoproj.io", ""):
                key = (as_str(item.get("name")), as_str(item.get("namespace")))
                ids = index.setdefault(key, [])
                if not ids or ids[-1] != pk:
                    ids.append(pk)
    return index


def _sources(app: GitOpsApp) -> list[dict[str, Any]]:
    """The app's sources as stored; a row written without them has its primary one in columns."""
    stored = [as_dict(s) for s in as_list(app.sources)]
    if stored:
        return stored
    return [
        {"repo_url": app.repo_url, "path": app.path, "chart": app.chart, "target_revision": app.target_revision}
    ]


def _primary(app: GitOpsApp) -> dict[str, Any]:
    return _sources(app)[0]


def _clean(path: str) -> str:
    text = (path or "").strip().removeprefix("./").strip("/")
    return "" if text in (".", "") else posixpath.normpath(text)
