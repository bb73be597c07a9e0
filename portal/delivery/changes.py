"""From "move this service to that version here" to a previewed, then opened, pull request.

Every flow (upgrade, promotion, rollback; by hand or automatic) goes through here:
a builder turns an application and a service into a `portal.delivery.planner.Change`,
`preview_change` reads the application's files from its one repository and plans the
pull request with the one planner (adding what a person must know first: a freeze, a sync
window, a manual-sync application, pins by digest), and `open_change` previews again and
opens it through `portal.delivery.pull_requests` (claimed once, audited, never merged).

Several changes to one repository, branch and environment (several services of one
application, or ticked lines on the Updates page) make one pull request; one change is a
group of one. Rollbacks are never held and never carry a freeze note.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from django.utils import timezone

from forges.forge import Forge, ForgeError
from forges.hosts import forge_for
from gitops.models import GitOpsApp, sync_held
from portal.catalog.models import Service
from portal.delivery.freezes import freezes_in_effect
from portal.delivery.planner import CLOSING, PROMOTION, ROLLBACK, UPGRADE, Change, Preview, group_of, plan
from portal.delivery.pull_requests import REFUSED, OpenResult, open_planned
from portal.releases.excerpts import notes_for
from portal.timestamps import utc_stamp

log = logging.getLogger(__name__)

DEFAULT_BRANCH = "main"
MAX_CHANGES_PER_PR = 20
FREEZE_DECISION = "Opening now is a decision to change during it."
FREEZE_OPENED = "This pull request was opened by hand during the freeze."


class ChangeError(ValueError):
    """The request cannot become a change (no repository, no path, no version)."""


# --- builders ------------------------------------------------------------------------


def followed_branch(app: GitOpsApp) -> str:
    """The branch the application follows; `HEAD` or nothing means the default branch."""
    revision = (app.target_revision or "").strip()
    if not revision or revision == "HEAD":
        return DEFAULT_BRANCH
    return revision.removeprefix("refs/heads/")


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


def _base(kind: str, app: GitOpsApp, service: Service, to_version: str, from_version: str, **extra) -> Change:
    if not app.repo_url:
        raise ChangeError(f"{app.name} names no Git repository")
    if not to_version:
        raise ChangeError("no target version")
    if from_version == to_version:
        raise ChangeError(f"{service.name} is already at {to_version} in {app.name}")
    return Change(
        kind=kind,
        services=(service.name,),
        environment=app.cluster.environment.name,
        repository=app.repo_url,
        base_branch=followed_branch(app),
        path=(app.path or "").strip("/"),
        image=service.image_repository,
        from_version=from_version,
        to_version=to_version,
        clusters=(app.cluster.name,),
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
    start = from_version or current_version(app, service, _pinned(app, service))
    notes = notes_for(service, to_version) if release_notes is None else release_notes
    return _base(kind, app, service, to_version, start, release_notes=notes)


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


def _pinned(app: GitOpsApp, service: Service) -> str | None:
    from portal.delivery.models import GitPin

    versions = sorted(set(GitPin.objects.filter(app=app, service=service).values_list("version", flat=True)))
    return versions[0] if len(versions) == 1 and not versions[0].startswith("sha256:") else None


def group_key(change: Change) -> tuple[str, str, str, str, str]:
    """Changes with the same key can share one pull request."""
    return (change.kind, change.repository, change.base_branch, change.environment, change.path)


def group_changes(changes: Sequence[Change]) -> list[tuple[Change, ...]]:
    """Changes grouped by repository, branch, environment (and path), in first-seen order."""
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

    @property
    def change(self) -> Change:
        return self.preview.change if self.preview is not None else self.changes[0]

    @property
    def can_open(self) -> bool:
        return self.preview is not None and self.preview.can_open and not self.error

    @property
    def problems(self) -> list[str]:
        return self.preview.problems if self.preview is not None else []


def apps_of(change: Change) -> list[GitOpsApp]:
    """The stored applications a change lands in (same repository and path, on its clusters)."""
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
    for app in apps:
        if window_blocks(app, at):
            until = f" until {utc_stamp(app.sync_blocked_until)}" if app.sync_blocked_until else ""
            warnings.append(
                f"A sync window holds {app.name} on {app.cluster.name}{until}: merging will not deploy it yet."
            )
        if app.manual_sync:
            warnings.append(
                f"{app.name} on {app.cluster.name} is synced by hand: merging does not deploy it; "
                "someone must sync it in the GitOps tool."
            )
    return warnings


def preview_change(
    change: Change | Sequence[Change],
    *,
    forge: Forge | None = None,
    automatic: bool = False,
    now: Callable[[], datetime] = timezone.now,
) -> DeliveryPreview:
    """Read the files of the change's one repository and plan it. Writes nothing.

    Several changes must share repository, branch, environment and path (see `group_changes`);
    they become one pull request."""
    changes = group_of(change)
    if not changes:
        raise ChangeError("nothing to change")
    if len(changes) > MAX_CHANGES_PER_PR:
        raise ChangeError(f"at most {MAX_CHANGES_PER_PR} changes make one pull request")
    if len({group_key(c) for c in changes}) > 1:
        raise ChangeError("changes in one pull request must share repository, branch, environment and path")
    at = now()
    apps = apps_of(changes[0])
    warnings = warnings_for(changes, apps, at)
    try:
        forge = forge or forge_for(changes[0].repository)
        entries, files = forge.pin_files(changes[0].path, changes[0].base_branch)
    except (ForgeError, RuntimeError) as error:
        return DeliveryPreview(changes, None, warnings, error=f"Could not read the repository: {error}")
    preview = plan(changes, entries, files)
    if preview.digest_pinned:
        warnings.append(
            "Pinned by digest, left for a person: "
            + ", ".join(f"{p.path} line {p.line}" for p in preview.digest_pinned)
        )
    preview.description = _with_notes(preview.description, changes, warnings, automatic)
    return DeliveryPreview(changes, preview, warnings)


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
    now: Callable[[], datetime] = timezone.now,
) -> OpenResult:
    """Preview afresh, then open (or link) the pull request. `user` None acts as "system"."""
    changes = group_of(change)
    try:
        forge = forge or forge_for(changes[0].repository)
    except ForgeError as error:
        return OpenResult(REFUSED, str(error))
    delivery = preview_change(changes, forge=forge, automatic=automatic, now=now)
    if delivery.preview is None:
        return OpenResult(REFUSED, delivery.error)
    reviewers, labels = _reviewers_and_labels(changes)
    return open_planned(
        forge,
        delivery.preview,
        user=user,
        automatic=automatic,
        reviewers=reviewers,
        labels=labels,
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
