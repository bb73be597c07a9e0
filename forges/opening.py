"""Opening a previewed change as a pull request: at most once, cleanly, audited.

Order of events, and why:
1. Claim: insert the PullRequest row (state `opening`) under the unique
   (repository, branch) constraint. Two workers or two clicks race on that insert and
   the database lets exactly one win; the loser links to the winner's row.
2. Look on the forge for an open pull request that already does this: one on our
   branch (an earlier attempt), or one whose title names the image or service and the
   target version (Renovate, Dependabot, a person). Link it instead of opening another.
3. Branch from the followed branch's head, one commit, the pull request, then
   reviewers and labels (best effort: an unknown reviewer never stops the PR).
   If anything fails after the branch exists and before the PR is open, the branch is
   deleted, the claim released, and the error reported.
The followed branch is only ever read; nothing here merges.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from forges.forge import (
    BranchExists,
    FileChange,
    Forge,
    ForgeError,
    PullRequestInfo,
    WritesRefused,
    redact,
)
from forges.hosts import GITEA_TOKEN, GITHUB_TOKEN, GITLAB_TOKEN
from forges.models import PullRequest
from forges.planning import Change, Preview
from forges.repourls import repo_url
from portal.audit.models import record
from portal.catalog.images import parse_image

log = logging.getLogger(__name__)

OPENED = "opened"
LINKED = "linked"  # an open pull request already does this change
IN_PROGRESS = "in_progress"  # another worker holds the claim
REFUSED = "refused"
FAILED = "failed"

DEMO_REFUSAL = (
    "The demo portal does not open pull requests: it reads a local copy of the demo repository. "
    "The preview shows exactly what would change."
)

_PREFIX = re.compile(r"^\s*(?:\[security\]\s*)?(?:[^\w\s]+\s*)?(?:[\w-]+(?:\([^)]*\))?!?:\s*)?", re.IGNORECASE)
_RENOVATE = re.compile(
    r"^update (?P<dep>\S+) docker tag to (?P<version>\S+?)(?: \([^)]*\))?(?: - (?:autoclosed|abandoned))?$",
    re.IGNORECASE,
)
_DEPENDABOT = re.compile(r"^bump (?P<name>\S+) from (?P<old>\S+) to (?P<new>\S+?)(?: in \S+)?$", re.IGNORECASE)


@dataclass
class OpenResult:
    status: str
    message: str
    pull_request: PullRequest | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # reviewers/labels not applied, and why

    @property
    def ok(self) -> bool:
        return self.status in (OPENED, LINKED, IN_PROGRESS)


def open_pull_request(
    forge: Forge,
    preview: Preview,
    *,
    user: object | None = None,
    automatic: bool = False,
    reviewers: Sequence[str] = (),
    labels: Sequence[str] = (),
    now: Callable[[], datetime] = timezone.now,
) -> OpenResult:
    """Open (or link) the pull request `preview` describes. Never raises for forge errors."""
    repository = repo_url(forge.repo)
    target = f"{repository} {preview.branch}"
    if getattr(settings, "DEMO_MODE", False):
        return _audited(user, REFUSED, DEMO_REFUSAL, target, preview)
    if not preview.can_open:
        reason = "; ".join(preview.problems) or "nothing to change"
        return _audited(user, REFUSED, f"Nothing to open: {reason}", target, preview)
    with _branch_lock(repository, preview.branch):
        return _open_claimed(forge, preview, repository, user, automatic, reviewers, labels, now)


def _open_claimed(
    forge: Forge,
    preview: Preview,
    repository: str,
    user: object | None,
    automatic: bool,
    reviewers: Sequence[str],
    labels: Sequence[str],
    now: Callable[[], datetime],
) -> OpenResult:
    target = f"{repository} {preview.branch}"
    row, existing = _claim(forge, preview, repository, user, automatic)
    if existing is not None:
        return existing

    try:
        found = _already_open(forge, preview)
    except ForgeError as error:
        row.delete()
        return _audited(user, FAILED, f"Could not list open pull requests: {error}", target, preview)
    if found is not None:
        outside = found.head_branch != preview.branch
        # The row keeps our branch name as its key, so the next open of this change finds it.
        _fill(row, found, now(), opened_outside=outside)
        row.save()
        message = f"Linked {'the existing' if outside else 'our'} pull request #{found.number}: {found.title}"
        return _audited(user, LINKED, message, row.url, preview, row)

    try:
        info, skipped = _open(forge, preview, reviewers, labels)
    except (ForgeError, WritesRefused) as error:
        row.delete()
        message = DEMO_REFUSAL if isinstance(error, WritesRefused) else _clean(str(error))
        return _audited(user, FAILED, message, target, preview)
    except Exception as error:  # noqa: BLE001 - the claim must be released whatever went wrong
        row.delete()
        return _audited(user, FAILED, _clean(f"{type(error).__name__}: {error}"), target, preview)
    _fill(row, info, now(), opened_outside=False)
    row.last_error = "; ".join(f"{name}: {why}" for name, why in skipped.items())
    row.save()
    result = _audited(user, OPENED, f"Opened pull request #{info.number}: {info.title}", info.url, preview, row)
    result.skipped = skipped
    return result


def names_change(title: str, change: Change) -> bool:
    """Whether a pull request title proposes this change (Renovate, Dependabot or a person)."""
    text = _PREFIX.sub("", title.strip(), count=1).strip()
    wanted = parse_image(change.image)
    renovate = _RENOVATE.match(text)
    if renovate:
        dep = parse_image(renovate["dep"])
        return bool(dep and wanted and dep.name == wanted.name) and _same_version(renovate["version"], change, True)
    dependabot = _DEPENDABOT.match(text)
    if dependabot:
        return _dependabot_names(dependabot["name"], change) and _same_version(dependabot["new"], change, False)
    # A person's title (or ours): the service or image, the version, and the environment.
    lowered = title.lower()
    subjects = [s.lower() for s in change.services] + [change.image.lower()]
    if wanted:
        subjects.append(wanted.repository.lower())
    if not any(re.search(rf"(?<![\w./-]){re.escape(s)}(?![\w/-])", lowered) for s in subjects if s):
        return False
    version = re.escape(change.to_version.lower().removeprefix("v"))
    if not re.search(rf"(?<![\w.])v?{version}(?![\w-]|\.\w)", lowered):
        return False
    environment = change.environment.lower()
    return not environment or re.search(rf"(?<![\w-]){re.escape(environment)}(?![\w-])", lowered) is not None


# --- steps ---------------------------------------------------------------------------

_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


@contextmanager
def _branch_lock(repository: str, branch: str) -> Iterator[None]:
    # Threads of one process (a threaded worker, the dev server) queue here, so the
    # database only ever sees racers from different processes, which the unique
    # constraint settles. It also keeps SQLite from answering a racer with "locked".
    with _locks_guard:
        lock = _locks.setdefault((repository, branch), threading.Lock())
    with lock:
        yield


def _claim(
    forge: Forge, preview: Preview, repository: str, user: object | None, automatic: bool
) -> tuple[PullRequest, OpenResult | None]:
    change = preview.change
    fields = {
        "kind": change.kind,
        "services": list(change.services),
        "environment": change.environment,
        "clusters": list(change.clusters),
        "forge_kind": forge.kind,
        "title": preview.title,
        "base_branch": change.base_branch,
        "state": PullRequest.State.OPENING,
        "opened_by": user if getattr(user, "is_authenticated", False) else None,
        "automatic": automatic,
        "from_version": change.from_version,
        "to_version": change.to_version,
        "image": change.image,
    }
    try:
        with transaction.atomic():
            return PullRequest.objects.create(repository=repository, branch=preview.branch, **fields), None
    except IntegrityError:
        pass
    row = PullRequest.objects.get(repository=repository, branch=preview.branch)
    target = row.url or f"{repository} {preview.branch}"
    if row.state == PullRequest.State.OPENING:
        return row, _audited(user, IN_PROGRESS, "This pull request is being opened already.", target, preview, row)
    if row.state == PullRequest.State.OPEN:
        return row, _audited(user, LINKED, f"Already open: #{row.number}", target, preview, row)
    if row.state == PullRequest.State.MERGED:
        return row, _audited(user, REFUSED, f"This change was merged already (#{row.number}).", target, preview, row)
    if automatic:
        return row, _audited(
            user,
            REFUSED,
            f"#{row.number} was closed without merging; it is not reopened automatically.",
            target,
            preview,
            row,
        )
    # A person asks again after a close: take the row back, atomically against a racer.
    taken = PullRequest.objects.filter(pk=row.pk, state=PullRequest.State.CLOSED).update(
        number=None,
        url="",
        merged_at=None,
        closed_at=None,
        opened_at=None,
        checks=PullRequest.Checks.NONE,
        checks_failed_notified_at=None,
        opened_outside=False,
        last_error="",
        **fields,
    )
    if not taken:
        return row, _audited(user, IN_PROGRESS, "This pull request is being opened already.", target, preview, row)
    row.refresh_from_db()
    return row, None


def _already_open(forge: Forge, preview: Preview) -> PullRequestInfo | None:
    pulls = forge.open_pull_requests()
    ours = next((p for p in pulls if p.head_branch == preview.branch), None)
    if ours is not None:
        return ours
    return next((p for p in pulls if names_change(p.title, preview.change)), None)


def _open(
    forge: Forge, preview: Preview, reviewers: Sequence[str], labels: Sequence[str]
) -> tuple[PullRequestInfo, dict[str, str]]:
    change = preview.change
    try:
        forge.create_branch(preview.branch, change.base_branch)
    except BranchExists:
        # We hold the claim and no open PR uses the branch: it is left from an attempt
        # that died before cleaning up. Start it again from the followed branch.
        forge.delete_branch(preview.branch)
        forge.create_branch(preview.branch, change.base_branch)
    try:
        changes = [FileChange(e.path, e.after, sha=e.sha, mode=e.mode) for e in preview.edits]
        forge.commit_files(preview.branch, preview.commit_message, changes)
        info = forge.open_pull_request(preview.branch, change.base_branch, preview.title, preview.description)
    except BaseException as error:
        try:
            forge.delete_branch(preview.branch)
        except ForgeError as cleanup:
            raise ForgeError(f"{error}; the branch {preview.branch} could not be removed: {cleanup}") from error
        raise
    skipped: dict[str, str] = {}
    # The PR is open from here on: a failure to add reviewers or labels is reported, not undone.
    for step, names in ((forge.request_reviewers, list(reviewers)), (forge.add_labels, list(labels))):
        if not names:
            continue
        try:
            skipped.update(step(info.number, names).skipped)
        except ForgeError as error:
            skipped.update({name: _clean(str(error)) for name in names})
    return info, skipped


def _fill(row: PullRequest, info: PullRequestInfo, at: datetime, opened_outside: bool) -> None:
    row.number = info.number
    row.url = info.url
    row.title = info.title
    row.state = {"open": PullRequest.State.OPEN, "merged": PullRequest.State.MERGED}.get(
        info.state, PullRequest.State.CLOSED
    )
    row.opened_at = info.created_at or at
    row.merged_at = info.merged_at
    row.closed_at = info.closed_at
    row.opened_outside = opened_outside


def _audited(
    user: object | None, status: str, message: str, target: str, preview: Preview, row: PullRequest | None = None
) -> OpenResult:
    change = preview.change
    record(
        user,
        f"pull_request.{status}",
        target[:300],
        kind=change.kind,
        services=list(change.services),
        environment=change.environment,
        repository=change.repository,
        branch=preview.branch,
        image=change.image,
        from_version=change.from_version,
        to_version=change.to_version,
        files=[edit.path for edit in preview.edits],
        message=message,
        number=row.number if row is not None else None,
    )
    log.info("pull request %s: %s", status, message)
    return OpenResult(status, message, row)


def _clean(text: str) -> str:
    return redact(text, _tokens())


def _tokens() -> Iterable[str]:
    return [os.environ.get(name, "") for name in (GITHUB_TOKEN, GITLAB_TOKEN, GITEA_TOKEN)]


def _same_version(written: str, change: Change, major_only_allowed: bool) -> bool:
    written = written.lower().removeprefix("v")
    target = change.to_version.lower().removeprefix("v")
    if written == target:
        return True
    # Renovate names only the major for a major bump ("to v2"), and keeps one PR per major.
    major = re.match(r"\d+", target)
    return major_only_allowed and written.isdigit() and major is not None and written == major.group()


def _dependabot_names(name: str, change: Change) -> bool:
    # Dependabot drops the registry host: ghcr.io/acme/api is "acme/api", nginx is "nginx".
    wanted = parse_image(change.image)
    written = parse_image(name)
    if wanted is None or written is None:
        return False
    if written.repository.lower() == wanted.repository.lower():
        return True
    return name.lower() in {s.lower() for s in change.services}
