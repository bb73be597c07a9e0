"""Changes built from "move this service to that version here": the one place a
`portal.delivery.planner.Change` is made for every flow (upgrade, promotion, rollback, a chart's
version, a workload no GitOps tool deploys; by hand or automatic), and why none can be.

A builder aims the change where the pin lives (`gitops.git_locations.pin_source`: a HelmRelease's
values beside it in the Kustomization's repository, never the Helm chart repository), starting
from what Git pins (else what runs), with the release notes, summary and supply-chain diff the
description quotes. `no_pr_reason[s]` is the one answer to "can a pull request be proposed
here?" for every page that offers "Open PR" and for the preview.

Several changes to one repository, branch and environment (several services, in one path
or several, or ticked lines on the Updates page) make one pull request and one commit; one
change is a group of one (`group_changes`, at most MAX_CHANGES_PER_PR). Previewing and opening
them is portal.delivery.change_previews.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial

from forges.repourls import parse_repo_url
from gitops.git_locations import (
    DEFAULT,
    chart_pin_sources,
    in_own_columns,
    pin_source,
    pin_sources,
    ref_name,
    revision_kind,
)
from gitops.models import GitOpsApp, RunningVersion, Workload
from gitops.queries import with_ids
from portal.delivery.planner import PROMOTION, ROLLBACK, UPGRADE, Change
from portal.kernel.catalog.models import Service
from portal.releases import summaries
from portal.releases.charts import ChartPin, ChartRef, chart_pin
from portal.releases.excerpts import notes_for
from portal.releases.vulns import supply_chain_diff

MAX_CHANGES_PER_PR = 20


class ChangeError(ValueError):
    """The request cannot become a change (no repository, no path, no version)."""


def current_version(app: GitOpsApp, service: Service, pinned: str | None = None) -> str:
    """What the change moves away from: what Git pins when known, else what runs."""
    if pinned:
        return pinned
    running = sorted((app.running or {}).get(service.name) or [])
    if not running:
        raise ChangeError(f"{service.name} does not run under {app.name}")
    from portal.releases.versions import sort_tags

    ordered = sort_tags(running) or running
    return ordered[0]


def no_pr_reason(app: GitOpsApp | Workload) -> str:
    """Why no pull request can be proposed for `app` ("" when one can): no Git location of
    its pins is known (`gitops.git_locations.pin_source` says why); for a workload no GitOps tool
    deploys, its portal.git.repo and portal.git.path labels are missing. The one answer for
    every page that offers "Open PR" and for the preview."""
    if isinstance(app, Workload):
        if app.git_repo and app.git_path:
            return ""
        return (f"{app.name} names no Git location: add the portal.git.repo and portal.git.path labels "
                "(the service page shows the lines)")
    source = pin_source(app)
    return "" if source.found else (source.unknown or f"{app.name} names no Git repository")


def no_pr_reasons(app_ids: Iterable[int]) -> dict[int, str]:
    """`no_pr_reason` of many applications: app id -> reason, only for those that cannot get
    a pull request. One query over four columns; the objects are loaded (one more query, and
    `pin_sources`' few, however many there are) only of the applications whose pins are not in
    their own columns."""
    ids = list(dict.fromkeys(app_ids))
    if not ids:
        return {}
    return no_pr_reasons_of(with_ids(GitOpsApp.objects.all(), ids).values_list(*NO_PR_COLUMNS))


# The columns `no_pr_reasons_of` reads of each application, in its order.
NO_PR_COLUMNS = ("id", "tool", "kind", "chart", "path", "repo_url")


def no_pr_reasons_of(rows: Iterable[tuple[int, str, str, str, str, str]]) -> dict[int, str]:
    """`no_pr_reasons` from rows of `NO_PR_COLUMNS` the caller already read (a page that finds
    the applications by a join reads their columns in the same query, rather than naming
    thousands of ids in a second one)."""
    reasons: dict[int, str] = {}
    # In its own columns with a repository: a pull request can be proposed, nothing to ask.
    elsewhere = [
        pk for pk, tool, kind, chart, path, repo in dict.fromkeys(rows)
        if not (repo and in_own_columns(tool, kind, chart, path))
    ]
    if not elsewhere:
        return reasons
    others = list(GitOpsApp.objects.filter(pk__in=elsewhere).select_related("cluster"))
    # Their parents looked up together: a number of queries that does not grow with the page.
    sources = pin_sources(others)
    for app in others:
        if not sources[app.pk].found:
            reasons[app.pk] = sources[app.pk].unknown or f"{app.name} names no Git repository"
    return reasons


def no_chart_pr_reasons(apps: Iterable[GitOpsApp]) -> dict[int, str]:
    """Why no pull request can change the chart version of each of `apps`: app id -> reason,
    only for those that cannot get one. The chart version is not always where the image tag is
    (`gitops.git_locations.chart_pin_sources`), so a chart offer asks this, not `no_pr_reasons`."""
    ids = [app.pk for app in apps]
    if not ids:
        return {}
    # Loaded again with their clusters, in one query, whatever the caller loaded.
    sources = chart_pin_sources(GitOpsApp.objects.filter(pk__in=ids).select_related("cluster"))
    return {pk: source.unknown or "no Git repository declares the chart version"
            for pk, source in sources.items() if not source.found}


def no_chart_pr_reason(app: GitOpsApp) -> str:
    """`no_chart_pr_reasons` of one application ("" when a pull request can be proposed)."""
    return no_chart_pr_reasons([app]).get(app.pk, "")


def _base(kind: str, app: GitOpsApp, service: Service, to_version: str, from_version: str, **extra) -> Change:
    reason = no_pr_reason(app)
    if reason:
        raise ChangeError(reason)
    source = pin_source(app)
    if not to_version:
        raise ChangeError("no target version")
    if from_version == to_version:
        raise ChangeError(f"{service.name} is already at {to_version} in {app.name}")
    if app.cluster.environment is None:
        raise ChangeError(f"{app.cluster.name} is an unregistered destination: add it to an environment first")
    extra.setdefault("supply_chain", supply_chain_diff(service, from_version, to_version))
    return Change(
        kind=kind,
        services=(service.name,),
        environment=app.cluster.environment.name,
        repository=source.repository,
        # As followed: `preview_change` asks the forge what it means (HEAD, a tag, a branch).
        base_branch=source.revision.strip(),
        path=source.path,
        image=service.image_repository,
        image_aliases=tuple(a for a in service.image_aliases or [] if isinstance(a, str) and a),
        from_version=from_version,
        to_version=to_version,
        clusters=(app.cluster.name,),
        apps=(app.pk,),
        **extra,
    )


def change_forward(
    kind: str,
    app: GitOpsApp,
    service: Service,
    to_version: str,
    *,
    from_version: str | None = None,
    release_notes: str | None = None,
) -> Change:
    """An upgrade (move `service` to `to_version` in `app`'s repository) or a promotion (pin
    `to_version`, running in the environment before, in the next environment's `app`): from what
    Git pins (else runs), quoting `to_version`'s stored notes unless the caller gives its own
    (None: the stored ones, when known)."""
    pinned = _pinned(app, service)
    if pinned == to_version:
        raise ChangeError(f"Git already pins {service.name} {to_version}: merged, waiting to deploy")
    # Git's pin is what the edit changes, whatever the offer saw running (a promotion's offer
    # names the running version); `warnings_for` says when the two disagree.
    start = pinned or from_version or current_version(app, service)
    notes = notes_for(service, to_version) if release_notes is None else release_notes
    extra: dict = {"release_summary": summaries.summary_text(service, start, to_version)}
    if kind == PROMOTION and app.cluster.environment is not None:
        # The description says since when it ran in the environment before (promotions' own "since").
        from portal.delivery.promotions import ran_before

        waiting = ran_before(service.name, to_version, app.cluster.environment.name)
        if waiting is not None:
            extra |= {"ran_in": waiting.staging, "ran_since": waiting.since, "ran_since_exact": waiting.since_exact}
    return _base(kind, app, service, to_version, start, release_notes=notes, **extra)


def change_for_chart(
    kind: str,
    app: GitOpsApp,
    to_version: str,
    *,
    from_version: str | None = None,
    chart: str = "",
    failure: str = "",
    failing_since: datetime | None = None,
) -> Change:
    """Move the chart `app` installs from a Helm or OCI repository to `to_version`: only the
    pinned chart version changes (`forges.pins.chart_edits`: a HelmRelease's
    `spec.chart.spec.version`, an Argo CD Helm source's `targetRevision`, an OCIRepository's
    `ref`), in the repository where the app's pins live. A range is not a pin: refused.
    `chart` with `from_version`: a dependency of a chart kept in Git (its Chart.yaml pins it).
    A rollback says what went wrong and since when (`failure`, `failing_since`)."""
    pin = chart_pin(app)
    if pin is None and chart and from_version:
        pin = ChartPin(ChartRef("", chart), from_version)
    if pin is None:
        raise ChangeError(f"{app.name} installs no chart from a Helm or OCI repository")
    if pin.is_range and not from_version:
        raise ChangeError(
            f"{app.name} {pin.follows} of the chart {pin.ref.chart}: a range is not a pin, so there is nothing "
            "to change"
        )
    if pin.ref.repository:
        source = chart_pin_sources([app])[app.pk]
        if not source.found:
            raise ChangeError(source.unknown or "no Git repository declares the chart version")
    else:
        # A dependency of a chart kept in Git: its Chart.yaml is where the app's pins are.
        reason = no_pr_reason(app)
        if reason:
            raise ChangeError(reason)
        source = pin_source(app)
    start = from_version or pin.version
    if not to_version or start == to_version:
        raise ChangeError(f"the chart {pin.ref.chart} is already at {to_version} in {app.name}")
    if app.cluster.environment is None:
        raise ChangeError(f"{app.cluster.name} is an unregistered destination: add it to an environment first")
    return Change(
        kind=kind,
        services=(),
        environment=app.cluster.environment.name,
        repository=source.repository,
        base_branch=source.revision.strip(),
        path=source.path,
        image=pin.ref.repository,
        from_version=start,
        to_version=to_version,
        clusters=(app.cluster.name,),
        apps=(app.pk,),
        chart=pin.ref.chart,
        failure=failure,
        failing_since=failing_since,
    )


change_for_chart_upgrade = partial(change_for_chart, UPGRADE)
change_for_upgrade = partial(change_forward, UPGRADE)
change_for_promotion = partial(change_forward, PROMOTION)


def change_for_rollback(
    app: GitOpsApp,
    service: Service,
    to_version: str,
    *,
    from_version: str | None = None,
    failure: str = "",
    failing_since: datetime | None = None,
) -> Change:
    """Return `service` in `app` to `to_version`, saying what went wrong and since when."""
    start = from_version or current_version(app, service, _pinned(app, service))
    return _base(ROLLBACK, app, service, to_version, start, failure=failure, failing_since=failing_since)


def change_for_workload(
    kind: str,
    workload: Workload,
    service: Service,
    to_version: str,
    *,
    from_version: str | None = None,
    release_notes: str | None = None,
) -> Change:
    """An upgrade or promotion of a workload no GitOps tool deploys (a Nomad job, a Compose or
    Swarm service, an ECS service): the change goes where its portal.git.* labels say, the file
    or folder `git_path` of `git_repo` on `git_branch` (empty: the default branch), and changes
    only the tag where that file pins the image. There is no rollback offer without a GitOps
    tool to say what last deployed well: a person moves the version back with an upgrade."""
    if kind == ROLLBACK:
        raise ChangeError(f"{workload.name} has no GitOps tool: no rollback offer; propose the older version instead")
    reason = no_pr_reason(workload)
    if reason:
        raise ChangeError(reason)
    if workload.cluster.environment is None:
        raise ChangeError(f"{workload.cluster.name} is in no environment")
    running = sorted(set(RunningVersion.objects.filter(workload=workload, service=service)
                         .values_list("version", flat=True)))
    start = from_version or (running[0] if running else "")
    if not start:
        raise ChangeError(f"{service.name} does not run in {workload.name}")
    if start == to_version:
        raise ChangeError(f"{service.name} is already at {to_version} in {workload.name}")
    notes = notes_for(service, to_version) if release_notes is None else release_notes
    return Change(
        kind=kind, services=(service.name,), environment=workload.cluster.environment.name,
        repository=workload.git_repo, base_branch=workload.git_branch, path=workload.git_path,
        image=service.image_repository, from_version=start, to_version=to_version,
        clusters=(workload.cluster.name,), release_notes=notes,
    )


def _pinned(app: GitOpsApp, service: Service) -> str | None:
    from portal.delivery.models import GitPin

    versions = sorted(set(GitPin.objects.filter(app=app, service=service).values_list("version", flat=True)))
    return versions[0] if len(versions) == 1 and not versions[0].startswith("sha256:") else None


def group_key(change: Change) -> tuple[str, str, str, str]:
    """Changes with the same key share one pull request: one per repository, base branch and
    environment, whatever the paths (a monorepo's services go out in one commit)."""
    revision = change.base_branch.strip()
    branch = "" if revision_kind(revision) == DEFAULT else ref_name(revision)
    return (change.kind, _repository_key(change.repository), branch, change.environment)


def _repository_key(url: str) -> str:
    # `https://github.com/acme/GitOps.git` and `git@github.com:acme/gitops` are one repository.
    ref = parse_repo_url(url)
    return "/".join(ref.key) if ref is not None else url.strip().removesuffix("/").removesuffix(".git")


def group_changes(changes: Sequence[Change]) -> list[tuple[Change, ...]]:
    """Changes grouped by repository, branch and environment, in first-seen order."""
    groups: dict[tuple[str, ...], list[Change]] = {}
    for change in changes:
        groups.setdefault(group_key(change), []).append(change)
    return [tuple(group) for group in groups.values()]
