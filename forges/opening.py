"""The one forge write: a previewed set of file edits opened as a pull request, at most once, cleanly, audited.

Order of events, and why:
1. Look on the forge for an open pull request that already does this: one on our branch
   (an earlier attempt), or one the caller recognises by its title (`same_change`:
   Renovate, Dependabot, a person). Return it instead of opening another: idempotent.
2. Branch from the base branch's head, one commit, the pull request, then reviewers and
   labels (best effort: an unknown reviewer never stops the PR). If anything fails after
   the branch exists and before the PR is open, the branch is deleted and the error
   reported: a forge error leaves no half-made branch.
3. Re-entrant: a run after one that died (a worker killed) finds what that one made under the
   same branch name and continues: its pull request is linked, its branch with our commit gets
   the pull request, a branch still at the base's head gets the commit. Only a branch holding
   something else is made again. A rate limit (`RateLimited`) is raised to a caller that waits
   outside (`waits_outside`, the job in portal.delivery.forge_jobs) with the branch kept, so
   the run after the wait continues from it.
The base branch is only ever read; nothing here merges. Every outcome is audited with the
caller's details. Claiming the change once across workers is the caller's job (the portal
keeps its pull requests in `portal.delivery`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forges.forge import (
    BranchExists,
    FileChange,
    Forge,
    ForgeError,
    NotFound,
    PullRequestExists,
    PullRequestInfo,
    RateLimited,
    WritesRefused,
    redact,
)
from forges.hosts import GITEA_TOKEN, GITHUB_TOKEN, GITLAB_TOKEN
from forges.pins.file_edits import FileEdit
from portal.kernel.audit.models import record

log = logging.getLogger(__name__)

OPENED = "opened"
LINKED = "linked"  # an open pull request already does this change
REFUSED = "refused"
FAILED = "failed"

# The steps a run reports (`on_step`), as the page says them.
LOOKING = "looking for an open pull request"
CREATING_BRANCH = "creating branch"
COMMITTING = "committing"
OPENING = "opening pull request"


@dataclass
class Opened:
    """How `open_pull_request` went: the pull request opened or found, or why there is none."""

    status: str  # OPENED, LINKED, REFUSED or FAILED
    message: str
    pull: PullRequestInfo | None = None
    outside: bool = False  # LINKED to a pull request on another branch (someone else's)
    skipped: dict[str, str] = field(default_factory=dict)  # reviewers/labels not applied, and why


def open_pull_request(
    forge: Forge,
    repository: str,
    base: str,
    branch: str,
    title: str,
    body: str,
    edits: Sequence[FileEdit],
    reviewers: Sequence[str] = (),
    labels: Sequence[str] = (),
    *,
    commit_message: str = "",
    same_change: Callable[[str], bool] | None = None,
    actor: object | None = None,
    details: Mapping[str, Any] | None = None,
    on_step: Callable[[str], None] = lambda step: None,
    waits_outside: bool = False,
) -> Opened:
    """Open (or find already open) the pull request that writes `edits` on `branch` into `base`.

    `repository` names the repository in the audit log and messages; `same_change(title)` says
    whether someone else's open pull request already proposes this; `on_step` hears each step
    before it starts. Never raises for forge errors, but `RateLimited` when `waits_outside`."""
    audit = _Audit(actor, repository, branch, base, edits, details or {})
    if not edits:
        return audit(Opened(REFUSED, "Nothing to open: no file changes"))
    try:
        on_step(LOOKING)
        found = _already_open(forge, branch, same_change)
    except RateLimited:
        if waits_outside:
            raise
        return audit(Opened(FAILED, "Could not list open pull requests: rate limited"))
    except ForgeError as error:
        return audit(Opened(FAILED, _clean(f"Could not list open pull requests: {error}")))
    if found is not None:
        outside = found.head_branch != branch
        message = f"Linked {'the existing' if outside else 'our'} pull request #{found.number}: {found.title}"
        return audit(Opened(LINKED, message, found, outside=outside))
    try:
        info = _write(forge, base, branch, title, body, edits, commit_message or title, on_step, waits_outside)
    except RateLimited:
        if waits_outside:
            raise
        return audit(Opened(FAILED, "The forge's rate limit stopped the pull request; nothing was left behind"))
    except WritesRefused as error:
        return audit(Opened(FAILED, str(error)))
    except Exception as error:  # noqa: BLE001 - reported, whatever the client raised; the branch is gone
        text = str(error) if isinstance(error, ForgeError) else f"{type(error).__name__}: {error}"
        return audit(Opened(FAILED, _clean(text)))
    # The PR is open from here on: a failure to add reviewers or labels is reported, not undone.
    skipped = _best_effort(forge, info.number, reviewers, labels)
    return audit(Opened(OPENED, f"Opened pull request #{info.number}: {info.title}", info, skipped=skipped))


def _already_open(
    forge: Forge, branch: str, same_change: Callable[[str], bool] | None
) -> PullRequestInfo | None:
    pulls = forge.open_pull_requests()
    ours = next((p for p in pulls if p.head_branch == branch), None)
    if ours is not None or same_change is None:
        return ours
    return next((p for p in pulls if same_change(p.title)), None)


def _write(
    forge: Forge,
    base: str,
    branch: str,
    title: str,
    body: str,
    edits: Sequence[FileEdit],
    message: str,
    on_step: Callable[[str], None],
    waits_outside: bool,
) -> PullRequestInfo:
    on_step(CREATING_BRANCH)
    committed = _branch(forge, base, branch, edits)
    try:
        if not committed:
            on_step(COMMITTING)
            changes = [FileChange(e.path, e.after, sha=e.sha, mode=e.mode) for e in edits]
            forge.commit_files(branch, message, changes)
        on_step(OPENING)
        try:
            return forge.open_pull_request(branch, base, title, body)
        except PullRequestExists:
            # Opened by a run whose answer was lost: the forge has it, so it is ours to link.
            ours = _already_open(forge, branch, None)
            if ours is None:
                raise
            return ours
    except RateLimited:
        if waits_outside:
            raise  # kept: the run after the wait continues from this branch
        _remove(forge, branch, RateLimited("rate limited"))
        raise
    except BaseException as error:
        _remove(forge, branch, error)
        raise


def _branch(forge: Forge, base: str, branch: str, edits: Sequence[FileEdit]) -> bool:
    """Our branch made from `base` (or found as an earlier run left it); whether it already
    holds the edits (that run committed them)."""
    try:
        forge.create_branch(branch, base)
        return False
    except BranchExists:
        pass
    if _holds(forge, branch, edits):
        return True  # an earlier run's commit: only the pull request is missing
    if forge.branch_head(branch) == forge.branch_head(base):
        return False  # made by an earlier run that died before its commit
    # Something else: left from an attempt that failed half-way. Start it again from the base.
    forge.delete_branch(branch)
    forge.create_branch(branch, base)
    return False


def _holds(forge: Forge, branch: str, edits: Sequence[FileEdit]) -> bool:
    try:
        return forge.read_files([e.path for e in edits], branch) == {e.path: e.after for e in edits}
    except NotFound:
        return False


def _remove(forge: Forge, branch: str, error: BaseException) -> None:
    try:
        forge.delete_branch(branch)
    except ForgeError as cleanup:
        raise ForgeError(f"{error}; the branch {branch} could not be removed: {cleanup}") from error


def _best_effort(forge: Forge, number: int, reviewers: Sequence[str], labels: Sequence[str]) -> dict[str, str]:
    skipped: dict[str, str] = {}
    for step, names in ((forge.request_reviewers, list(reviewers)), (forge.add_labels, list(labels))):
        if not names:
            continue
        try:
            skipped.update(step(number, names).skipped)
        except ForgeError as error:
            skipped.update({name: _clean(str(error)) for name in names})
    return skipped


@dataclass
class _Audit:
    """Records an outcome once, with what was asked, and logs it."""

    actor: object | None
    repository: str
    branch: str
    base: str
    edits: Sequence[FileEdit]
    details: Mapping[str, Any]

    def __call__(self, outcome: Opened) -> Opened:
        target = outcome.pull.url if outcome.pull is not None else f"{self.repository} {self.branch}"
        record(
            self.actor,
            f"pull_request.{outcome.status}",
            target[:300],
            **{
                **self.details,
                "repository": self.repository,
                "branch": self.branch,
                "base_branch": self.base,
                "files": [edit.path for edit in self.edits],
                "message": outcome.message,
                "number": outcome.pull.number if outcome.pull is not None else None,
            },
        )
        log.info("pull request %s: %s", outcome.status, outcome.message)
        return outcome


def _clean(text: str) -> str:
    return redact(text, _tokens())


def _tokens() -> Iterable[str]:
    # The configured tokens (forges.hosts names their settings): secrets to keep out of messages.
    from django.conf import settings

    return [getattr(settings, name, "") for name in (GITHUB_TOKEN, GITLAB_TOKEN, GITEA_TOKEN)]
