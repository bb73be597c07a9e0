"""Keeping PullRequest rows in step with their forge: state, merge time, checks.

`refresh_open` is what the 30-minute beat task (`delivery.track_pull_requests`) runs. The
forge is asked through `forges.pr_state`; the answer is kept here. One pull request's
failure (forge down, token revoked) is written on that row and never stops the others.
"Checks fail" is marked once per pull request: the first time it is seen,
`checks_failed_notified_at` is set, and the notification side reads that timestamp;
later refreshes never move it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from forges.forge import FAIL, MERGED, OPEN, Forge, ForgeError
from forges.pr_state import pull_request_state
from portal.delivery.models import PullRequest

log = logging.getLogger(__name__)

ForgeFor = Callable[[str], Forge]


@dataclass
class TrackingReport:
    refreshed: int = 0
    merged: int = 0
    closed: int = 0
    checks_failed: int = 0  # newly failing
    errors: int = 0


def refresh(row: PullRequest, forge: Forge, now: datetime | None = None) -> PullRequest:
    """Ask the forge about one pull request and save its state and checks on the row."""
    now = now or timezone.now()
    answer = pull_request_state(forge, row.number or 0)
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
    row.checks = answer.checks
    if row.checks == FAIL and row.checks_failed_notified_at is None:
        row.checks_failed_notified_at = now
    row.last_error = ""
    row.tracked_at = now
    row.save()
    return row


def refresh_open(forge_for: ForgeFor | None = None, now: datetime | None = None) -> TrackingReport:
    """Refresh every open pull request; forges are built once per repository."""
    if forge_for is None:
        from forges.hosts import forge_for as registry_forge_for

        forge_for = registry_forge_for
    now = now or timezone.now()
    report = TrackingReport()
    forges: dict[str, Forge | ForgeError] = {}
    rows = PullRequest.objects.filter(state=PullRequest.State.OPEN, number__isnull=False).order_by("id")
    for row in rows:
        if row.repository not in forges:
            try:
                forges[row.repository] = forge_for(row.repository)
            except ForgeError as error:
                forges[row.repository] = error
        forge = forges[row.repository]
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
