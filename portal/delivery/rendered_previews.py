"""An open pull request's rendered diff, kept in step with its branch: what each application the
change lands in renders at the branch's head against what it renders at its own target today.

Tracking (`portal.delivery.tracking.refresh`) calls `follow` with the head the forge reports; a
head seen before costs nothing, a new one is rendered again and the one comment on the pull
request is edited (`portal.delivery.rendered_comments`). Rendering is never done here:

- an Argo CD application the portal reads through Argo CD's API (`ArgoCDSource`) is rendered by
  that Argo CD (`GET .../manifests`): the head revision for the sources in the pull request's
  repository, no revision (the app's own target) for the other side;
- another application that installs a chart from a chart repository is rendered by Helm's own
  engine when it is installed, with its values at the base branch and at the head
  (`portal.delivery.chart_renders`);
- anything else says that no renderer is available for it.

What Argo CD could not render (a revision it cannot fetch, a token that may not read the app) is
that app's error; the other apps are still compared.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.utils import timezone

from forges.forge import Forge
from forges.pins.layouts.app_specs import same_repository
from gitops.models import GitOpsApp
from gitops.polling import source_for
from gitops.sources import SourceError
from gitops.sources.argocd_api import ArgoCDSource
from portal.delivery.chart_renders import chart_diff
from portal.delivery.models import PullRequest, RenderedDiff
from portal.delivery.rendered_comments import keep_comment
from portal.delivery.rendered_diff import APP_DIFFS, NO_RENDERER, AppDiff, compare, masked
from portal.kernel.catalog.models import Cluster

log = logging.getLogger(__name__)

ARGOCD = "Argo CD"


def follow(row: PullRequest, forge: Forge, head: str, *, now: datetime | None = None) -> RenderedDiff | None:
    """The pull request's rendered diff at `head`, rendered when the head is new, and its comment
    written when it does not tell this head yet. None when the change names no application."""
    targets = _targets_of(row)
    if not targets or not head:
        return None
    now = now or timezone.now()
    stored = RenderedDiff.objects.filter(pull_request=row).first()
    if stored is None or stored.head != head:
        diffs, outputs = render(targets, forge, row.repository, base=row.base_branch, head=head)
        stored = stored or RenderedDiff(pull_request=row)
        stored.head, stored.computed_at = head, now
        stored.apps, stored.outputs = APP_DIFFS.dump_python(diffs, mode="json"), outputs
        stored.save()
    if stored.commented_head != head:
        keep_comment(stored, forge, row.number or 0)
    return stored


@dataclass(frozen=True)
class Target:
    """An application a change lands in, with where the change edits it."""

    app: GitOpsApp
    folder: str  # the change's folder in the repository (`Change.path`)
    chart_version: str = ""  # the version a chart change moves the app's chart to


def render(
    targets: list[Target], forge: Forge, repository: str, *, base: str, head: str
) -> tuple[list[AppDiff], list[dict[str, Any]]]:
    """Each app's diff, and the full output of both sides per app (for the portal's page)."""
    diffs: list[AppDiff] = []
    outputs: list[dict[str, Any]] = []
    for target in targets:
        app = target.app
        label = f"{app.namespace}/{app.name}"
        if app.tool == "argo" and app.read_from.connection == Cluster.Connection.ARGOCD_API:
            diff, before, after = _argocd_diff(app, label, repository, head)
        else:
            charted = chart_diff(app, forge, repository, base=base, head=head, folder=target.folder,
                                 chart_version=target.chart_version)
            if charted is None:
                diffs.append(AppDiff(app=label, cluster=app.cluster.name, renderer="", error=NO_RENDERER))
                continue
            diff, before, after = charted
        diffs.append(diff)
        if not diff.error:
            outputs.append({"app": label, "before": masked(before), "after": masked(after)})
    return diffs, outputs


def _argocd_diff(
    app: GitOpsApp, label: str, repository: str, head: str
) -> tuple[AppDiff, list[dict[str, Any]], list[dict[str, Any]]]:
    diff = AppDiff(app=label, cluster=app.cluster.name, renderer=ARGOCD, before_revision=_target(app),
                   after_revision=head)
    at_head = _head_revisions(app, repository, head)
    if at_head is None:
        return replace(diff, error="its sources are not in the pull request's repository"), [], []
    ask = {"app_namespace": app.namespace, "project": app.project}
    try:
        with _argocd_source(app.read_from) as source:
            before = source.manifests(app.name, **ask)
            after = source.manifests(app.name, **ask, **at_head)
    except SourceError as error:
        log.warning("rendered diff of %s: %s", label, error.message)
        return replace(diff, error=error.message[:500]), [], []
    return replace(diff, comparison=compare(before, after, app.destination_namespace)), before, after


def _head_revisions(app: GitOpsApp, repository: str, head: str) -> dict[str, Any] | None:
    """How to ask Argo CD for the app at the pull request's head: `revision` for one source,
    `source_revisions` (1-based positions) for the sources of a multi-source app that live in the
    pull request's repository; None when none does."""
    spec = app.raw.get("spec") if isinstance(app.raw, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    many = spec.get("sources")
    if isinstance(many, list) and many:
        positions = {
            i: head for i, source in enumerate(many, 1)
            if isinstance(source, dict) and same_repository(str(source.get("repoURL") or ""), repository)
        }
        return {"source_revisions": positions} if positions else None
    return {"revision": head} if same_repository(app.repo_url, repository) else None


def _target(app: GitOpsApp) -> str:
    return app.target_revision or "HEAD"


def _argocd_source(cluster: Cluster) -> ArgoCDSource:
    source = source_for(cluster)
    if not isinstance(source, ArgoCDSource):
        raise SourceError("not_found", f"{cluster.name} is not read through Argo CD's API")
    return source


def _targets_of(row: PullRequest) -> list[Target]:
    """The applications the pull request's changes land in (`Change.apps`, kept in its job)."""
    changes = row.job.get("changes") if isinstance(row.job, dict) else None
    where: dict[int, tuple[str, str]] = {}
    for change in changes or []:
        if not isinstance(change, dict):
            continue
        chart_version = str(change.get("to_version") or "") if change.get("chart") else ""
        for app_id in change.get("apps") or []:
            if isinstance(app_id, int):
                where.setdefault(app_id, (str(change.get("path") or ""), chart_version))
    if not where:
        return []
    found = GitOpsApp.objects.filter(pk__in=where).select_related("cluster", "read_from")
    return [Target(app, *where[app.pk]) for app in found.order_by("namespace", "name")]
