"""From "move this service to that version here" to a previewed, then opened, pull request.

Every flow (upgrade, promotion, rollback; by hand or automatic) goes through here:
a builder turns an application and a service into a `portal.delivery.planner.Change`
aimed where the pin lives (`gitops.git_locations.pin_source`: a HelmRelease's values beside it
in the Kustomization's repository, never the Helm chart repository), `preview_change` reads
the files from that one repository and plans the pull request with the one planner (adding
what a person must know first: a freeze, a sync window, a manual-sync application, pins by
digest, an application that follows a tag), and `open_change` previews again and opens it
through `portal.delivery.pull_requests` (claimed once, audited, never merged).

Which branch: the revision the application follows. `HEAD` or none is the forge's default
branch (asked once per client); a tag, a semver range or a commit is not a branch, so the
change is proposed on the default branch only when the person confirms it (merging there
deploys nothing until the followed tag moves).

Several changes to one repository, branch and environment (several services, in one path
or several, or ticked lines on the Updates page) make one pull request and one commit; one
change is a group of one. Rollbacks are never held and never carry a freeze note.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from django.utils import timezone

from forges.forge import Forge, ForgeError, NotFound
from forges.hosts import forge_for
from forges.repourls import parse_repo_url
from gitops.git_locations import (
    BRANCH,
    COMMIT,
    DEFAULT,
    NAME,
    RANGE,
    TAG,
    chart_pin_sources,
    in_own_columns,
    pin_source,
    pin_sources,
    ref_name,
    revision_kind,
)
from gitops.models import ATTENTION_HEALTH, GitOpsApp, RunningVersion, Workload, sync_held
from gitops.windowstate import held_until
from portal.delivery.freezes import freezes_in_effect
from portal.delivery.planner import (
    CLOSING,
    PROMOTION,
    ROLLBACK,
    SUSPENDED_WORDS,
    UPGRADE,
    Change,
    Preview,
    group_of,
    plan,
)
from portal.delivery.pull_requests import REFUSED, OpenResult, open_planned
from portal.kernel.catalog.models import Service
from portal.kernel.timestamps import utc_stamp
from portal.releases import summaries
from portal.releases.charts import ChartPin, ChartRef, chart_pin
from portal.releases.excerpts import notes_for
from portal.releases.vulns import supply_chain_diff

log = logging.getLogger(__name__)

MAX_CHANGES_PER_PR = 20
FREEZE_DECISION = "Opening now is a decision to change during it."
FREEZE_OPENED = "This pull request was opened by hand during the freeze."


class ChangeError(ValueError):
    """The request cannot become a change (no repository, no path, no version)."""


# --- builders ------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseBranch:
    """The branch a pull request goes into, and what the application follows when that is not it."""

    branch: str
    follows: str = ""  # "the tag v1.4.0", "the semver range 1.2.*", "the commit 4f2a9c1": not a branch


def base_branch(forge: Forge, revision: str) -> BaseBranch:
    """Where a change to an application following `revision` goes (see the module docstring)."""
    kind = revision_kind(revision)
    if kind == DEFAULT:
        return BaseBranch(forge.default_branch())
    name = ref_name(revision)
    if kind == BRANCH:
        return BaseBranch(name)
    if kind == NAME:
        try:
            forge.branch_head(name)
            return BaseBranch(name)
        except NotFound:
            kind = TAG  # a name that is not a branch is a tag (or nothing: the read says so)
    what = {TAG: "the tag", RANGE: "the semver range", COMMIT: "the commit"}[kind]
    shown = name[:12] if kind == COMMIT else name
    return BaseBranch(forge.default_branch(), follows=f"{what} {shown}")


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
    return no_pr_reasons_of(GitOpsApp.objects.filter(pk__in=ids).values_list(*NO_PR_COLUMNS))


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


# --- preview -------------------------------------------------------------------------


@dataclass
class DeliveryPreview:
    """A pull request as it would be opened, with what a person should know first."""

    changes: tuple[Change, ...]
    preview: Preview | None
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # the repository could not be read
    follows: str = ""  # what the application follows when it is not a branch ("the tag v1.4.0")
    confirmed: bool = False  # the person chose the default branch anyway
    # What opening asks of the forge after the pull request exists (the services' policies):
    # shown before, so nobody learns who was asked to review only once it is open.
    reviewers: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def change(self) -> Change:
        return self.preview.change if self.preview is not None else self.changes[0]

    @property
    def paths(self) -> list[str]:
        """The folders the changes land in, in first-seen order."""
        return list(dict.fromkeys(c.path for c in self.changes))

    @property
    def needs_confirmation(self) -> bool:
        """The application follows a tag, range or commit and nobody confirmed the default branch."""
        return bool(self.follows) and not self.confirmed

    @property
    def can_open(self) -> bool:
        return (
            self.preview is not None and self.preview.can_open and not self.error and not self.needs_confirmation
        )

    @property
    def problems(self) -> list[str]:
        return self.preview.problems if self.preview is not None else []


def apps_of(change: Change) -> list[GitOpsApp]:
    """The stored applications a change lands in: the ones it names, else those with its
    repository and path on its clusters."""
    if change.apps:
        return list(GitOpsApp.objects.filter(pk__in=change.apps).select_related("cluster__environment"))
    query = GitOpsApp.objects.filter(repo_url=change.repository, path__in=_path_spellings(change.path))
    if change.clusters:
        query = query.filter(cluster__name__in=change.clusters)
    return list(query.select_related("cluster__environment"))


def _path_spellings(path: str) -> list[str]:
    clean = path.strip("/")
    return [clean, f"{clean}/", f"/{clean}", f"./{clean}"] if clean else ["", ".", "/", "./"]


def window_blocks(app: GitOpsApp, at: datetime) -> bool:
    """A sync window blocks the application now (until a known time, or with no end in sight)."""
    return sync_held(app.sync_blocked, app.sync_blocked_until, at)


def warnings_for(changes: Sequence[Change], apps: Sequence[GitOpsApp], at: datetime) -> list[str]:
    """What a person should read before opening (and what the description repeats)."""
    first = changes[0]
    warnings: list[str] = []
    if first.kind != ROLLBACK:
        for freeze in freezes_in_effect(first.environment, at):
            warnings.append(
                f"A change freeze is in effect until {utc_stamp(freeze.ends_at)}: {freeze.reason}. "
                + FREEZE_DECISION
            )
    warnings += _pin_disagreements(changes, apps)
    if first.kind == PROMOTION:
        warnings += _failing_where_it_runs(changes)
    for app in apps:
        if app.suspended or (window_blocks(app, at) and (app.sync_window or {}).get("kind") == "suspend"):
            warnings.append(
                f"{app.name} on {app.cluster.name} is {SUSPENDED_WORDS}: merging will not deploy it yet."
            )
        elif window_blocks(app, at):
            held = held_until(app.sync_blocked_until, utc_stamp)
            warnings.append(
                f"A sync window holds {app.name} on {app.cluster.name} {held}: merging will not deploy it yet."
            )
        if app.manual_sync:
            warnings.append(
                f"{app.name} on {app.cluster.name} is synced by hand: merging does not deploy it; "
                "someone must sync it in the GitOps tool."
            )
    return warnings


def _pin_disagreements(changes: Sequence[Change], apps: Sequence[GitOpsApp]) -> list[str]:
    """Where Git pins another version than runs: the change starts from Git's pin, and what
    runs has not caught up with Git (a merge waiting to deploy, or a change by hand)."""
    found = []
    by_pk = {app.pk: app for app in apps}
    for change in changes:
        if change.kind == ROLLBACK or change.chart:
            continue
        for pk in change.apps:
            app = by_pk.get(pk)
            if app is None:
                continue
            running = sorted({v for s in change.services for v in (app.running or {}).get(s) or []})
            if running and change.from_version not in running:
                found.append(
                    f"Git pins {change.from_version} for {', '.join(change.services)} in {app.name} on "
                    f"{app.cluster.name}, while {', '.join(running)} runs: the change starts from Git's pin."
                )
    return found


def _failing_where_it_runs(changes: Sequence[Change]) -> list[str]:
    """A promoted version that fails where it runs now (Degraded or Missing in the environment
    before): promoting it carries the failure forward, so the preview says so first."""
    found = []
    for change in changes:
        if not change.services:
            continue
        failing = (
            RunningVersion.objects.filter(
                service__name__in=change.services, version=change.to_version,
                app__health_status__in=ATTENTION_HEALTH,
            )
            .exclude(cluster__environment__name=change.environment)
            .values_list("app__name", "cluster__name", "app__health_status", "app__health_since")
            .distinct()
        )
        for name, cluster, health, since in failing:
            when = f" since {utc_stamp(since)}" if since else ""
            found.append(
                f"{', '.join(change.services)} {change.to_version} is {health} in {name} on {cluster}{when}: "
                "promoting it carries that failure into " + (change.environment or "the next environment") + "."
            )
    return found


def preview_change(
    change: Change | Sequence[Change],
    *,
    forge: Forge | None = None,
    automatic: bool = False,
    confirm_default_branch: bool = False,
    now: Callable[[], datetime] = timezone.now,
) -> DeliveryPreview:
    """Read the files of the change's one repository and plan it. Writes nothing.

    Several changes must share repository, branch and environment (see `group_changes`);
    they become one pull request, each change planned under its own path. When the
    application follows a tag, a range or a commit, the change is planned on the default
    branch and can be opened only with `confirm_default_branch`."""
    changes = group_of(change)
    if not changes:
        raise ChangeError("nothing to change")
    if len(changes) > MAX_CHANGES_PER_PR:
        raise ChangeError(f"at most {MAX_CHANGES_PER_PR} changes make one pull request")
    if len({group_key(c) for c in changes}) > 1:
        raise ChangeError("changes in one pull request must share repository, branch and environment")
    at = now()
    apps = [app for c in changes for app in apps_of(c)]
    warnings = warnings_for(changes, list({app.pk: app for app in apps}.values()), at)
    follows = ""
    try:
        forge = forge or forge_for(changes[0].repository)
        base = base_branch(forge, changes[0].base_branch)
        follows = base.follows
        changes = tuple(replace(c, base_branch=base.branch) for c in changes)
        entries, files = forge.tree_files(base.branch)
        # Files are read as the planner looks at them: what the applications build.
        preview = plan(changes, entries, files, objects={app.pk: app.raw for app in apps})
    except (ForgeError, RuntimeError) as error:
        return DeliveryPreview(changes, None, warnings, error=f"Could not read the repository: {error}")
    if follows:
        warnings.insert(
            0,
            f"{_apps_named(apps)} follows {follows}, not a branch: merging into {base.branch} deploys "
            "nothing until that reference moves to include it.",
        )
    if preview.digest_pinned:
        warnings.append(
            "Pinned by digest, left for a person: "
            + ", ".join(f"{p.path} line {p.line}" for p in preview.digest_pinned)
        )
    preview.description = _with_notes(preview.description, changes, warnings, automatic)
    reviewers, labels = _reviewers_and_labels(changes)
    return DeliveryPreview(changes, preview, warnings, follows=follows, confirmed=confirm_default_branch,
                           reviewers=reviewers, labels=labels)


def _apps_named(apps: Sequence[GitOpsApp]) -> str:
    names = list(dict.fromkeys(app.name for app in apps))
    return ", ".join(names) if names else "The application"


def _with_notes(description: str, changes: tuple[Change, ...], warnings: list[str], automatic: bool) -> str:
    notes = []
    if automatic:
        environment = changes[0].environment
        notes.append(
            f"**Automatic**: opened by the portal without a person, because the version policy of "
            f"{', '.join(s for c in changes for s in c.services)} asks for automatic pull requests in "
            f"`{environment}` for this jump."
        )
    notes += [
        f"**Note**: {w.replace(FREEZE_DECISION, FREEZE_OPENED)}"
        for w in warnings
        if not w.startswith("Pinned by digest")
    ]
    if not notes:
        return description
    head, sep, tail = description.rpartition(CLOSING)
    block = "\n".join(notes) + "\n\n"
    return f"{head}{block}{sep}{tail}" if sep else description + "\n" + block


# --- opening -------------------------------------------------------------------------


def open_change(
    change: Change | Sequence[Change],
    user: object | None,
    automatic: bool = False,
    *,
    forge: Forge | None = None,
    confirm_default_branch: bool = False,
    now: Callable[[], datetime] = timezone.now,
) -> OpenResult:
    """Preview afresh, then open (or link) the pull request. `user` None acts as "system".

    An application that follows a tag gets a pull request on the default branch only when
    `confirm_default_branch` says a person chose it (never automatically)."""
    changes = group_of(change)
    try:
        forge = forge or forge_for(changes[0].repository)
    except ForgeError as error:
        return OpenResult(REFUSED, str(error))
    delivery = preview_change(
        changes, forge=forge, automatic=automatic, confirm_default_branch=confirm_default_branch, now=now
    )
    if delivery.preview is None:
        return OpenResult(REFUSED, delivery.error)
    if delivery.needs_confirmation:
        return OpenResult(
            REFUSED,
            f"Not opened: the application follows {delivery.follows}, not a branch; confirm in the preview "
            f"to propose the change on {delivery.change.base_branch}.",
        )
    return open_planned(
        forge,
        delivery.preview,
        user=user,
        automatic=automatic,
        reviewers=delivery.reviewers,
        labels=delivery.labels,
        now=now,
    )


def _reviewers_and_labels(changes: Sequence[Change]) -> tuple[list[str], list[str]]:
    from portal.delivery.models import ServicePolicy

    names = [s for c in changes for s in c.services]
    reviewers: list[str] = []
    labels: list[str] = []
    for row in ServicePolicy.objects.filter(service__name__in=names):
        reviewers += [r for r in row.reviewers or [] if r not in reviewers]
        labels += [label for label in row.labels or [] if label not in labels]
    return reviewers, labels
