"""From changes to a previewed, then opened, pull request.

`preview_change` reads the files from the changes' one repository and plans the pull request
with the one planner (portal.delivery.planner), adding what a person must know first: a freeze,
a sync window, a manual-sync application, pins by digest, an application that follows a tag;
`open_change` previews again and opens it through `portal.delivery.pull_requests` (claimed once,
audited, never merged). The changes come from portal.delivery.change_builders.

Which branch: the revision the application follows. `HEAD` or none is the forge's default
branch (asked once per client); a tag, a semver range or a commit is not a branch, so the
change is proposed on the default branch only when the person confirms it (merging there
deploys nothing until the followed tag moves).

Rollbacks are never held and never carry a freeze note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone

from forges.forge import Forge, ForgeError, NotFound
from forges.hosts import forge_for
from gitops.git_locations import BRANCH, COMMIT, DEFAULT, NAME, RANGE, TAG, ref_name, revision_kind
from gitops.models import ATTENTION_HEALTH, GitOpsApp, RunningVersion, sync_held
from gitops.windowstate import held_until
from portal.delivery.change_builders import MAX_CHANGES_PER_PR, ChangeError, group_key
from portal.delivery.freezes import freezes_in_effect
from portal.delivery.planner import CLOSING, PROMOTION, ROLLBACK, SUSPENDED_WORDS, Change, Preview, group_of, plan
from portal.delivery.pull_requests import OpenResult
from portal.delivery.reach import Reach, reach_of
from portal.delivery.reach import describe as describe_reach
from portal.kernel.timestamps import utc_stamp

FREEZE_DECISION = "Opening now is a decision to change during it."
FREEZE_OPENED = "This pull request was opened by hand during the freeze."


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
    # Which applications, clusters and environments the edits reach (portal.delivery.reach).
    reach: Reach | None = None

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
        reach = reach_of(changes, preview.moved, changes[0].repository, base.branch)
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
    preview.description = _with_notes(_before_closing(preview.description, describe_reach(reach)), changes,
                                      warnings, automatic)
    reviewers, labels = _reviewers_and_labels(changes)
    return DeliveryPreview(changes, preview, warnings, follows=follows, confirmed=confirm_default_branch,
                           reviewers=reviewers, labels=labels, reach=reach)


def _apps_named(apps: Sequence[GitOpsApp]) -> str:
    names = list(dict.fromkeys(app.name for app in apps))
    return ", ".join(names) if names else "The application"


def _before_closing(description: str, lines: list[str]) -> str:
    """`description` with `lines` (and a blank line) before its closing sentence."""
    head, sep, tail = description.rpartition(CLOSING)
    block = "\n".join(lines).strip("\n") + "\n\n"
    return f"{head}{block}{sep}{tail}" if sep else description + "\n" + block


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
    return _before_closing(description, notes) if notes else description


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
    """Claim and run the job that opens (or links) the pull request here and now
    (portal.delivery.forge_jobs: it previews afresh, then writes). `user` None acts as "system".

    An application that follows a tag gets a pull request on the default branch only when
    `confirm_default_branch` says a person chose it (never automatically)."""
    from portal.delivery.forge_jobs import open_now  # the job previews through this module

    return open_now(change, user, automatic=automatic, forge=forge, confirm_default_branch=confirm_default_branch,
                    now=now)


def _reviewers_and_labels(changes: Sequence[Change]) -> tuple[list[str], list[str]]:
    from portal.delivery.models import ServicePolicy

    names = [s for c in changes for s in c.services]
    reviewers: list[str] = []
    labels: list[str] = []
    for row in ServicePolicy.objects.filter(service__name__in=names):
        reviewers += [r for r in row.reviewers or [] if r not in reviewers]
        labels += [label for label in row.labels or [] if label not in labels]
    return reviewers, labels
