"""Keeping PullRequest rows in step with their forge: state, merge time, checks.

`refresh_open` is what the 30-minute beat task (`delivery.track_pull_requests`) runs. The
forge is asked through `forges.pr_state`; the answer is kept here. An open pull request whose
branch moved gets its rendered diff and comment renewed (`portal.delivery.rendered_previews`). One pull request's
failure (forge down, token revoked) is written on that row and never stops the others.
"Checks fail" is marked once per pull request: the first time it is seen,
`checks_failed_notified_at` is set, and the notification side reads that timestamp;
later refreshes never move it.

State and merge time are saved before the checks are asked for: a token that may read pull
requests but not checks (a GitHub fine-grained token with Contents + Pull requests only),
or a forge failing on the checks, never hides a merge. Checks the token may not read are
"unknown": stored as none, with the reason in `last_error`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError
from django.utils import timezone

from forges.forge import FAIL, MERGED, OPEN, Forge, ForgeError, NotConfigured, PullRequestInfo
from forges.pr_state import checks_state, pull_request_state
from portal.delivery.models import PullRequest
from portal.delivery.rendered_previews import follow
from portal.delivery.rollback_prs import rollback_pr_moved
from portal.kernel.links import safe_http_url

log = logging.getLogger(__name__)

ForgeFor = Callable[[str], Forge]


@dataclass
class TrackingReport:
    refreshed: int = 0
    merged: int = 0
    closed: int = 0
    checks_failed: int = 0  # newly failing
    errors: int = 0
    unreadable: int = 0  # on a forge no configured token can read (not asked)


def refresh(row: PullRequest, forge: Forge, now: datetime | None = None) -> PullRequest:
    """Ask the forge about one pull request and save its state, then its checks, on the row."""
    now = now or timezone.now()
    answer = pull_request_state(forge, row.number or 0, with_checks=False)
    row.title = answer.title or row.title
    row.url = answer.url or row.url
    if answer.state == MERGED:
        row.state = PullRequest.State.MERGED
        row.merged_at = answer.merged_at or row.merged_at or now
    elif answer.state == OPEN:
        row.state = PullRequest.State.OPEN
    else:
        row.state = PullRequest.State.CLOSED
        row.closed_at = answer.closed_at or row.closed_at or now
    row.tracked_at = now
    row.save(update_fields=["title", "url", "state", "merged_at", "closed_at", "tracked_at"])
    rollback_pr_moved(row, now)
    if row.state == PullRequest.State.OPEN:
        _follow_rendered(row, forge, answer.info.head_sha, now)
    try:
        checks = checks_state(forge, answer)
    except ForgeError as error:
        # The state is saved; the checks stay as last seen and the error is told.
        row.last_error = str(error)[:1000]
        row.save(update_fields=["last_error"])
        log.warning("checks of %s #%s could not be read: %s", row.repository, row.number, error)
        return row
    row.checks = checks.checks
    if row.checks == FAIL and row.checks_failed_notified_at is None:
        row.checks_failed_notified_at = now
    row.checks_url = _failing_check(forge, answer.info, row) if row.checks == FAIL else ""
    row.last_error = checks.unknown[:1000]
    row.save(update_fields=["checks", "checks_failed_notified_at", "checks_url", "last_error"])
    return row


def _follow_rendered(row: PullRequest, forge: Forge, head: str, now: datetime) -> None:
    """A branch that moved is rendered again and its comment edited (a head seen before: nothing).
    The diff is an extra beside the state: whatever fails in it (a renderer, a chart registry, a
    malformed render) is logged and tried again at the next run, and never stops the tracking of
    this pull request's checks or of the others."""
    try:
        follow(row, forge, head, now=now)
    except DatabaseError:
        raise  # the database is the tracking's own failure, not the diff's
    except Exception:
        log.exception("the rendered diff of %s #%s failed", row.repository, row.number)


def _failing_check(forge: Forge, info: PullRequestInfo, row: PullRequest) -> str:
    """The failing check's web page, http(s) only; "" (the pages link the forge's checks list
    instead) when the forge names none or cannot say: the failure itself is already kept."""
    try:
        link = safe_http_url(forge.failing_check_url(info)) or ""
    except ForgeError as error:
        log.warning("the failing check of %s #%s could not be read: %s", row.repository, row.number, error)
        return row.checks_url
    return link[:500]


def refresh_open(forge_for: ForgeFor | None = None, now: datetime | None = None,
                 only: Iterable[int] | None = None) -> TrackingReport:
    """Refresh every open pull request (or those of `only`); forges are built once per repository."""
    if forge_for is None:
        from forges.hosts import forge_for as registry_forge_for

        forge_for = registry_forge_for
    now = now or timezone.now()
    report = TrackingReport()
    forges: dict[str, Forge | ForgeError] = {}
    rows = PullRequest.objects.filter(state=PullRequest.State.OPEN, number__isnull=False).order_by("id")
    if only is not None:
        rows = rows.filter(pk__in=list(only))
    for row in rows:
        if row.repository not in forges:
            try:
                forges[row.repository] = forge_for(row.repository)
            except ForgeError as error:
                forges[row.repository] = error
        forge = forges[row.repository]
        if isinstance(forge, NotConfigured):
            # No token can read this forge: nothing is asked, the reason is stored once on the
            # row (no log line per pull request per run) and the last known state is kept.
            report.unreadable += 1
            reason = str(forge)[:1000]
            if row.last_error != reason:
                PullRequest.objects.filter(pk=row.pk).update(last_error=reason)
            continue
        already_failed = row.checks_failed_notified_at is not None
        try:
            if isinstance(forge, ForgeError):
                raise forge
            refresh(row, forge, now)
        except ForgeError as error:
            report.errors += 1
            # Keep the last known state: a forge error is not a closed pull request.
            PullRequest.objects.filter(pk=row.pk).update(last_error=str(error)[:1000], tracked_at=now)
            log.warning("tracking %s #%s failed: %s", row.repository, row.number, error)
            continue
        report.refreshed += 1
        report.merged += row.state == PullRequest.State.MERGED
        report.closed += row.state == PullRequest.State.CLOSED
        report.checks_failed += row.checks_failed_notified_at is not None and not already_failed
    return report
