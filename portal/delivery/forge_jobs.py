"""Opening a pull request as a durable, resumable job on the forge queue: no request waits on a forge.

The PullRequest row (state `opening`) is the job's record: what it opens (`job`: the changes,
serialised), which run of it may work (`run`: a message carrying another run is stale and is
dropped), until when that run holds it (`lease_until`), what it is doing (`step`, `progress`,
shown by the pr-opened page as it polls), and until when it waits on a rate limit.

- A request only claims the row (the unique (repository, branch) rule: one row per change) and
  queues `delivery.open_pull_request` (`queue_opens`). The task is acknowledged late and
  rejected back to the queue when its worker process dies, so a killed run is run again.
- A run previews afresh and writes through `pull_requests.advance`, whose forge steps are
  re-entrant (forges.opening): a run after a dead one adopts its pull request, or continues
  from its branch and commit; never a second branch or pull request.
- A rate limit longer than `PORTAL_FORGE_JOB_INLINE_WAIT` is not slept through: the run
  records `waiting_until` and queues the next run for then (at most `PORTAL_FORGE_JOB_MAX_WAIT`
  seconds of waiting in all), so no worker sits idle on it.
- The reconciler (`reconcile`, a beat task) takes every `opening` row whose lease passed (its
  worker died, its message was lost): resumed by a new run while attempts remain, else resolved
  by asking the forge: its pull request adopted, or its branch deleted and the row failed with
  the reason. No row stays `opening` for ever.
Automatic pull requests run the same job in the automatic task's own worker (`open_now`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone
from pydantic import TypeAdapter, ValidationError

from forges.forge import Forge, ForgeError, NotFound, RateLimited
from forges.hosts import forge_for
from forges.retry import RetryPolicy
from portal.delivery import tasks
from portal.delivery.change_previews import preview_change
from portal.delivery.models import PullRequest
from portal.delivery.planner import Change, branch_name, combined, group_of, title_for
from portal.delivery.pull_requests import (
    DEMO_REFUSAL,
    FAILED,
    IN_PROGRESS,
    LINKED,
    NOTHING_TO_OPEN,
    REFUSED,
    OpenResult,
    adopt,
    advance,
    claim,
    fail,
    lease,
)
from portal.delivery.reach import as_json as reach_json
from portal.kernel.audit.models import record

log = logging.getLogger(__name__)

CHANGES = TypeAdapter(tuple[Change, ...])  # the job's changes as JSON and back, whatever they hold
READING = "reading the repository"
WAITING = "waiting"
RESUMED = "resumed"
FORGE_NAMES = {"github": "GitHub", "gitlab": "GitLab", "gitea": "Gitea"}


def queue_opens(
    groups: Sequence[Sequence[Change]], user: object | None, *, confirm_default_branch: bool = False
) -> list[OpenResult]:
    """One job per group of changes, queued on the forge queue: what the request does, no forge
    call in it. Each result names the row the page follows (queued, in progress, already open)."""
    results = []
    for group in groups:
        row, answer = claim_job(group, user, confirm_default_branch=confirm_default_branch)
        if answer is not None:
            results.append(answer)
            continue
        assert row is not None
        send(row)
        results.append(OpenResult(IN_PROGRESS, f"Opening the pull request: {row.title}", row))
    return results


def open_now(
    changes: Change | Sequence[Change],
    user: object | None,
    *,
    automatic: bool = False,
    forge: Forge | None = None,
    confirm_default_branch: bool = False,
    now: Callable[[], datetime] = timezone.now,
) -> OpenResult:
    """The same job, claimed and run in this process (automatic pull requests, already on the
    forge queue). A rate limit still queues the next run rather than sleeping here."""
    row, answer = claim_job(
        changes, user, automatic=automatic, confirm_default_branch=confirm_default_branch, forge=forge
    )
    if answer is not None:
        return answer
    assert row is not None
    done = run(row.pk, row.run, forge=forge, now=now)
    return done or OpenResult(IN_PROGRESS, "This pull request is being opened already.", row)


def claim_job(
    changes: Change | Sequence[Change],
    user: object | None,
    *,
    automatic: bool = False,
    confirm_default_branch: bool = False,
    forge: Forge | None = None,
) -> tuple[PullRequest | None, OpenResult | None]:
    """The row claimed for a new run (no forge call: names and titles are the planner's, pure),
    or the answer instead: refused before any write, or what the existing row says."""
    group = group_of(changes)
    branch = branch_name(group)
    if getattr(settings, "DEMO_MODE", False):
        return None, _refused(user, DEMO_REFUSAL, group[0].repository, branch, automatic)
    try:
        forge = forge or forge_for(group[0].repository)
    except ForgeError as error:
        return None, _refused(user, str(error), group[0].repository, branch, automatic)
    job = {"changes": CHANGES.dump_python(group, mode="json"), "confirm": confirm_default_branch}
    row, answer = claim(forge.kind, forge.repo.web_url, branch, title_for(group), combined(group), user, automatic, job)
    if answer is not None:
        target = row.url or f"{row.repository} {row.branch}"
        record(
            user,
            f"pull_request.{answer.status}",
            target[:300],
            repository=group[0].repository,
            branch=branch,
            message=answer.message,
            number=row.number,
            automatic=automatic,
        )
        return None, OpenResult(answer.status, answer.message, row)
    PullRequest.objects.filter(pk=row.pk).update(run=F("run") + 1)
    row.refresh_from_db()
    return row, None


def send(row: PullRequest, eta: datetime | None = None) -> None:
    """Queue the row's current run (on the forge queue: settings.CELERY_TASK_ROUTES)."""
    tasks.open_pull_request.apply_async((row.pk, row.run), eta=eta)


def run(
    pk: int, token: int, *, forge: Forge | None = None, now: Callable[[], datetime] = timezone.now
) -> OpenResult | None:
    """One run of the job; None when the message is stale (another run holds the row, or it is done)."""
    taken = PullRequest.objects.filter(pk=pk, state=PullRequest.State.OPENING, run=token).update(
        attempts=F("attempts") + 1, lease_until=now() + lease(), waiting_until=None, step=READING, progress=READING
    )
    if not taken:
        return None
    row = PullRequest.objects.select_related("opened_by").get(pk=pk)
    try:
        changes = CHANGES.validate_python(row.job.get("changes") or [])
    except ValidationError:
        changes = ()
    if not changes:
        return resolve(row, "its changes were not recorded")
    try:
        forge = forge or forge_for(changes[0].repository, policy=job_policy())
    except ForgeError as error:
        fail(row, str(error), refused=True)
        return OpenResult(REFUSED, str(error), row)
    delivery = preview_change(
        changes, forge=forge, automatic=row.automatic, confirm_default_branch=bool(row.job.get("confirm")), now=now
    )
    refusal = _refusal(delivery)
    if refusal or delivery.preview is None:
        fail(row, refusal or delivery.error, refused=True)
        return OpenResult(REFUSED, row.progress, row)
    preview = delivery.preview
    row.base_branch, row.title = preview.change.base_branch, preview.title[:300]
    row.reach = reach_json(delivery.reach)  # as this preview found it: what the API and MCP serve
    row.save(update_fields=["base_branch", "title", "reach"])
    try:
        return advance(
            forge,
            row,
            preview,
            reviewers=delivery.reviewers,
            labels=delivery.labels,
            now=now,
            on_step=_stepper(row, now),
            waits_outside=True,
        )
    except RateLimited as error:
        return _wait(row, forge, error, now)


def _refusal(delivery: object) -> str:
    preview = getattr(delivery, "preview", None)
    if preview is None:
        return getattr(delivery, "error", "") or "The repository could not be read."
    if getattr(delivery, "needs_confirmation", False):
        return (
            f"Not opened: the application follows {getattr(delivery, 'follows', '')}, not a branch; confirm "
            f"in the preview to propose the change on {preview.change.base_branch}."
        )
    if not preview.can_open:
        return f"{NOTHING_TO_OPEN}: {'; '.join(preview.problems) or 'nothing to change'}"
    return ""


def _stepper(row: PullRequest, now: Callable[[], datetime]) -> Callable[[str], None]:
    """Each step written where the page reads it, the lease renewed with it."""

    def step(name: str) -> None:
        PullRequest.objects.filter(pk=row.pk, run=row.run).update(
            step=name[:32], progress=name[:500], lease_until=now() + lease()
        )
        row.step = row.progress = name

    return step


def _wait(row: PullRequest, forge: Forge, error: RateLimited, now: Callable[[], datetime]) -> OpenResult:
    """The next run queued for when the limit resets; the branch made so far is kept for it."""
    seconds = error.wait if error.wait is not None else 60.0 * max(1, row.attempts)
    name = FORGE_NAMES.get(forge.kind, forge.repo.host)
    if row.waited + seconds > settings.PORTAL_FORGE_JOB_MAX_WAIT:
        return resolve(
            row, f"{name}'s rate limit would hold it past {settings.PORTAL_FORGE_JOB_MAX_WAIT:.0f} s", forge=forge
        )
    until = now() + timedelta(seconds=seconds)
    row.step, row.progress = WAITING, f"waiting for {name}'s rate limit until {until:%H:%M:%S} UTC"
    row.waiting_until, row.waited = until, row.waited + seconds
    row.run += 1
    row.lease_until = until + lease()
    row.save(update_fields=["step", "progress", "waiting_until", "waited", "run", "lease_until"])
    log.info("pull request %s waits for %s's rate limit until %s", row.pk, name, until.isoformat())
    send(row, eta=until)
    return OpenResult(IN_PROGRESS, row.progress, row)


def job_policy() -> RetryPolicy:
    """The job's forge client waits inline only for short limits; a longer one raises
    `RateLimited` and the job queues its next run for then (`_wait`)."""
    return RetryPolicy(max_wait=settings.PORTAL_FORGE_JOB_INLINE_WAIT)


# --- the reconciler ---------------------------------------------------------------------------


def reconcile(now: Callable[[], datetime] = timezone.now) -> dict[str, int]:
    """Every `opening` row whose lease passed: resumed by a new run, or resolved on the forge."""
    at = now()
    report = {"resumed": 0, "resolved": 0}
    stale = PullRequest.objects.filter(state=PullRequest.State.OPENING).filter(
        Q(lease_until__lt=at) | Q(lease_until__isnull=True)
    )
    for row in stale.select_related("opened_by"):
        if row.job.get("changes") and row.attempts < settings.PORTAL_FORGE_JOB_ATTEMPTS:
            # Atomically against a second reconciler: only one of them sends the next run.
            resumed = PullRequest.objects.filter(pk=row.pk, state=PullRequest.State.OPENING, run=row.run).update(
                run=F("run") + 1,
                lease_until=at + lease(),
                step=RESUMED,
                progress="resumed: the run opening it stopped before it finished",
            )
            if resumed:
                row.refresh_from_db()
                send(row)
                report["resumed"] += 1
            continue
        resolve(row, f"it was interrupted {row.attempts} times")
        report["resolved"] += 1
    if any(report.values()):
        log.warning("pull requests being opened, reconciled: %s", report)
    return report


def resolve(row: PullRequest, why: str, *, forge: Forge | None = None) -> OpenResult:
    """The job gives up, having asked the forge what exists: the pull request on its branch
    adopted, else its branch (the portal's own name) deleted and the row failed with `why`."""
    try:
        forge = forge or forge_for(_repository_of(row), policy=job_policy())
        pull = next((p for p in forge.open_pull_requests() if p.head_branch == row.branch), None)
        if pull is not None:
            adopt(row, pull, f"Adopted #{pull.number}, opened by an interrupted run: {pull.title}")
            return OpenResult(LINKED, row.progress, row)
        try:
            forge.delete_branch(row.branch)
            left = "; its branch was deleted"
        except NotFound:
            left = ""
    except ForgeError as error:
        left = f"; the forge could not be asked what it left ({error}): opening it again finds and continues it"
    fail(row, f"Not opened: {why}{left}.")
    return OpenResult(FAILED, row.progress, row)


def _repository_of(row: PullRequest) -> str:
    changes = row.job.get("changes") or []
    return changes[0].get("repository") if changes and changes[0].get("repository") else row.repository


def _refused(user: object | None, message: str, repository: str, branch: str, automatic: bool) -> OpenResult:
    record(
        user,
        f"pull_request.{REFUSED}",
        f"{repository} {branch}"[:300],
        repository=repository,
        branch=branch,
        message=message,
        automatic=automatic,
    )
    return OpenResult(REFUSED, message)
