"""The one forge write: a previewed set of file edits opened as a pull request, at most once, cleanly, audited.

Order of events, and why:
1. Look on the forge for an open pull request that already does this: one on our branch
   (an earlier attempt), or one the caller recognises by its title (`same_change`:
   Renovate, Dependabot, a person). Return it instead of opening another: idempotent.
2. Branch from the base branch's head, one commit, the pull request, then reviewers and
   labels (best effort: an unknown reviewer never stops the PR). If anything fails after
   the branch exists and before the PR is open, the branch is deleted and the error
   reported: a forge error leaves no half-made branch.
The base branch is only ever read; nothing here merges. Every outcome is audited with the
caller's details. Claiming the change once across workers is the caller's job (the portal
keeps its pull requests in `portal.delivery`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forges.forge import BranchExists, FileChange, Forge, ForgeError, PullRequestInfo, WritesRefused, redact
from forges.hosts import GITEA_TOKEN, GITHUB_TOKEN, GITLAB_TOKEN
from forges.pins.file_edits import FileEdit
from portal.kernel.audit.models import record

log = logging.getLogger(__name__)

OPENED = "opened"
LINKED = "linked"  # an open pull request already does this change
REFUSED = "refused"
FAILED = "failed"


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
) -> Opened:
    """Open (or find already open) the pull request that writes `edits` on `branch` into `base`.

    `repository` names the repository in the audit log and messages; `same_change(title)` says
    whether someone else's open pull request already proposes this. Never raises for forge errors."""
    audit = _Audit(actor, repository, branch, base, edits, details or {})
    if not edits:
        return audit(Opened(REFUSED, "Nothing to open: no file changes"))
    try:
        found = _already_open(forge, branch, same_change)
    except ForgeError as error:
        return audit(Opened(FAILED, _clean(f"Could not list open pull requests: {error}")))
    if found is not None:
        outside = found.head_branch != branch
        message = f"Linked {'the existing' if outside else 'our'} pull request #{found.number}: {found.title}"
        return audit(Opened(LINKED, message, found, outside=outside))
    try:
        info = _write(forge, base, branch, title, body, edits, commit_message or title)
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
    forge: Forge, base: str, branch: str, title: str, body: str, edits: Sequence[FileEdit], message: str
) -> PullRequestInfo:
    try:
        forge.create_branch(branch, base)
    except BranchExists:
        # No open PR uses the branch: it is left from an attempt that died before cleaning
        # up. Start it again from the base branch.
        forge.delete_branch(branch)
        forge.create_branch(branch, base)
    try:
        changes = [FileChange(e.path, e.after, sha=e.sha, mode=e.mode) for e in edits]
        forge.commit_files(branch, message, changes)
        return forge.open_pull_request(branch, base, title, body)
    except BaseException as error:
        try:
            forge.delete_branch(branch)
        except ForgeError as cleanup:
            raise ForgeError(f"{error}; the branch {branch} could not be removed: {cleanup}") from error
        raise


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
