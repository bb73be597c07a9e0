"""Where an application's image pin lives in Git: the repository, the revision it follows, the path.

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

`pin_source` reads stored rows only (a bounded number of queries per application); which
branch a revision means is for the caller, who can ask the forge (`revision_kind` tells
the cases that need no forge). Most applications keep their pins in their own primary Git
source: `in_own_columns` tells them from four columns, so a reader of thousands of rows
(the Git pin reader) loads the objects only of the few that need more.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitops.fields import as_dict, as_list, as_str, dig
from gitops.models import GitOpsApp
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
    if in_own_columns(app.tool, app.kind, app.chart, app.path):
        via = f"{app.kind} {app.name}" if app.tool == FLUX else app.name
        return _git(app.repo_url, app.target_revision, app.path, via)
    if app.tool == FLUX:
        return _helmrelease(app)
    if app.tool == ARGO:
        return _application(app, depth=0)
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


def _application(app: GitOpsApp, depth: int) -> PinSource:
    sources = _sources(app)
    raw_sources = _raw_sources(app.raw)
    git = [s for s in sources if s.get("repo_url") and not s.get("chart")]
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
        parent = _parent(app)
        if parent is not None:
            found = _application(parent, depth + 1)
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


def _parent(app: GitOpsApp) -> GitOpsApp | None:
    """The Application that deploys `app`'s manifest: named by its tracking annotation or
    instance label, else the one whose status.resources lists it."""
    metadata = as_dict(as_dict(app.raw).get("metadata"))
    tracking = as_str(as_dict(metadata.get("annotations")).get(ARGO_TRACKING_ID))
    named = tracking.partition(":")[0] if ":" in tracking else ""
    named = named or as_str(as_dict(metadata.get("labels")).get(ARGO_INSTANCE))
    argo_apps = GitOpsApp.objects.filter(tool=ARGO, kind="Application").exclude(pk=app.pk)
    if named and named != app.name:
        parent = argo_apps.filter(name=named).select_related("cluster").first()
        if parent is not None:
            return parent
    namespace = as_str(metadata.get("namespace")) or app.namespace
    for pk, resources in argo_apps.values_list("pk", "raw__status__resources"):
        if any(_is_this(as_dict(r), app.name, namespace) for r in as_list(resources)):
            return GitOpsApp.objects.select_related("cluster").get(pk=pk)
    return None


def _is_this(resource: Mapping[str, Any], name: str, namespace: str) -> bool:
    return (
        as_str(resource.get("kind")) == "Application"
        and as_str(resource.get("group")) in ("argoproj.io", "")
        and as_str(resource.get("name")) == name
        and as_str(resource.get("namespace")) in (namespace, "")
    )


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
