"""Opening a planned pull request at most once across workers, and keeping it as a `PullRequest` row.

Order of events, and why:
1. Claim: insert the PullRequest row (state `opening`) under the unique
   (repository, branch) constraint. Two workers or two clicks race on that insert and
   the database lets exactly one win; the loser links to the winner's row.
2. The one forge write, `forges.opening.open_pull_request`: it links an open pull request
   that already does this (ours from an earlier attempt, or one whose title `names_change`
   recognises: Renovate, Dependabot, a person), else opens one and never leaves a
   half-made branch behind.
3. The row takes the forge's answer; when the forge failed, the claim is released so a
   retry may open it. Every outcome is audited once (here or by the forge write).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from forges import opening
from forges.forge import Forge, PullRequestInfo
from portal.delivery.change_requests import services_of
from portal.delivery.models import PullRequest
from portal.delivery.planner import Preview
from portal.delivery.prtitles import names_change
from portal.kernel.accounts.teams import team_of
from portal.kernel.audit.models import record
from portal.kernel.metrics import PULL_REQUESTS

OPENED = opening.OPENED
LINKED = opening.LINKED
REFUSED = opening.REFUSED
FAILED = opening.FAILED
IN_PROGRESS = "in_progress"  # another worker holds the claim
NOTHING_TO_OPEN = "Nothing to open"  # how a refusal starts when no file pins what the change moves

DEMO_REFUSAL = (
    "The demo portal does not open pull requests: it reads a local copy of the demo repository. "
    "The preview shows exactly what would change."
)


@dataclass
class OpenResult:
    status: str
    message: str
    pull_request: PullRequest | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # reviewers/labels not applied, and why

    @property
    def ok(self) -> bool:
        return self.status in (OPENED, LINKED, IN_PROGRESS)


def open_planned(
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
    repository = forge.repo.web_url
    if getattr(settings, "DEMO_MODE", False):
        return _audited(user, REFUSED, DEMO_REFUSAL, f"{repository} {preview.branch}", preview, automatic=automatic)
    if not preview.can_open:
        reason = "; ".join(preview.problems) or "nothing to change"
        target = f"{repository} {preview.branch}"
        return _audited(user, REFUSED, f"{NOTHING_TO_OPEN}: {reason}", target, preview, automatic=automatic)
    with _branch_lock(repository, preview.branch):
        row, refused = _claim(forge, preview, repository, user, automatic)
        if refused is not None:
            return refused
        change = preview.change
        outcome = opening.open_pull_request(
            forge,
            repository,
            change.base_branch,
            preview.branch,
            preview.title,
            preview.description,
            preview.edits,
            reviewers,
            labels,
            commit_message=preview.commit_message,
            same_change=lambda title: names_change(title, change),
            actor=user,
            details=_details(preview, automatic),
        )
        if outcome.pull is None:
            row.delete()  # the claim is released: a retry may open it
            PULL_REQUESTS.labels(kind=change.kind, outcome="failed").inc()
            return OpenResult(outcome.status, outcome.message)
        # The row keeps our branch name as its key, so the next open of this change finds it.
        _fill(row, outcome.pull, now(), opened_outside=outcome.outside)
        PULL_REQUESTS.labels(kind=change.kind, outcome="opened").inc()
        row.last_error = "; ".join(f"{name}: {why}" for name, why in outcome.skipped.items())
        row.save()
        return OpenResult(outcome.status, outcome.message, row, outcome.skipped)


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
    """The claimed row, or the row that is already there and the answer it gives."""
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
    refused = _answer_of(row, user, automatic, preview)
    if refused is not None:
        return row, refused
    # A person asks again after a close: take the row back, atomically against a racer.
    taken = PullRequest.objects.filter(pk=row.pk, state=PullRequest.State.CLOSED).update(
        number=None,
        url="",
        merged_at=None,
        closed_at=None,
        opened_at=None,
        checks=PullRequest.Checks.NONE,
        checks_failed_notified_at=None,
        checks_url="",
        opened_outside=False,
        last_error="",
        **fields,
    )
    if not taken:
        return row, _in_progress(user, row, preview, automatic)
    row.refresh_from_db()
    return row, None


def _answer_of(row: PullRequest, user: object | None, automatic: bool, preview: Preview) -> OpenResult | None:
    """What an existing row says to a new open; None when a person may take a closed one back."""
    target = row.url or f"{row.repository} {row.branch}"
    if row.state == PullRequest.State.OPENING:
        return _in_progress(user, row, preview, automatic)
    if row.state == PullRequest.State.OPEN:
        return _audited(user, LINKED, f"Already open: #{row.number}", target, preview, row, automatic)
    if row.state == PullRequest.State.MERGED:
        message = f"This change was merged already (#{row.number})."
        return _audited(user, REFUSED, message, target, preview, row, automatic)
    if automatic:
        message = f"#{row.number} was closed without merging; it is not reopened automatically."
        return _audited(user, REFUSED, message, target, preview, row, automatic)
    return None


def _in_progress(user: object | None, row: PullRequest, preview: Preview, automatic: bool = False) -> OpenResult:
    target = row.url or f"{row.repository} {row.branch}"
    return _audited(user, IN_PROGRESS, "This pull request is being opened already.", target, preview, row, automatic)


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


def _details(preview: Preview, automatic: bool = False) -> dict[str, Any]:
    """What the audit log keeps of a change, beside the forge write's own facts; `automatic`
    marks a pull request a version policy opened (no person asked for it). `team`, the owning
    team of the services changed, is the audit row's own column (portal.kernel.audit.record)."""
    change = preview.change
    return {
        "team": team_of(services_of([change])),
        "kind": change.kind,
        "services": list(change.services),
        "environment": change.environment,
        "image": change.image,
        "from_version": change.from_version,
        "to_version": change.to_version,
        "automatic": automatic,
    }


def _audited(
    user: object | None, status: str, message: str, target: str, preview: Preview, row: PullRequest | None = None,
    automatic: bool = False,
) -> OpenResult:
    """An outcome decided here, without a forge write: audited once, like the forge's own."""
    record(
        user,
        f"pull_request.{status}",
        target[:300],
        **_details(preview, automatic),
        repository=preview.change.repository,
        branch=preview.branch,
        files=[edit.path for edit in preview.edits],
        message=message,
        number=row.number if row is not None else None,
    )
    return OpenResult(status, message, row)
