"""What a rollback pull request's opening and merge set off, in one place for every path that
sees them (the opening job, the reconciler adopting an open PR, tracking finding a merge):

- the version it rolls back is held in its environment (`holds`), once per PR: at the first of
  its steps seen, so an undo is not reversed by the merge that follows;
- its application's episode hears of it (`announcements.rollback_pr_step`, a DeliveryEvent).
"""

from __future__ import annotations

from datetime import datetime

from portal.delivery import announcements, holds
from portal.delivery.models import DeliveryEvent, PullRequest

STEPS = (DeliveryEvent.ROLLBACK_PR_OPENED, DeliveryEvent.ROLLBACK_PR_MERGED)


def rollback_pr_moved(pr: PullRequest, at: datetime) -> None:
    """`pr` took a forge answer; a rollback PR open or merged for the first time acts on it."""
    if pr.kind != PullRequest.Kind.ROLLBACK or pr.state not in (PullRequest.State.OPEN, PullRequest.State.MERGED):
        return
    first = not DeliveryEvent.objects.filter(pull_request=pr, kind__in=STEPS).exists()
    announcements.rollback_pr_step(pr, at)
    if first:
        holds.hold_rolled_back(pr, at)
