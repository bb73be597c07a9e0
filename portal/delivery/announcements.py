"""What delivery announces, as rows (`DeliveryEvent`) the layers above consume: delivery imports
none of them, and nothing answers back.

The periodic deployment tracking (portal.delivery.deployments.track) records each fact as it
finds it — a merged PR not running everywhere an hour after its merge, an open portal PR whose
checks forge tracking marked failing, a rollback the portal would propose — and the forge work
records a rollback pull request opened or merged (`rollback_pr_step`) — under a key that
names the episode, so the same fact found again is the same row, marked unconsumed again; the
facts a notification is worded from beyond the PR (where it waits, the offer) go with it.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from portal.delivery.models import DeliveryEvent, PullRequest
from portal.delivery.rollbacks import RollbackOffer

if TYPE_CHECKING:  # deployments records through this module
    from portal.delivery.deployments import Progress


def not_deployed_key(pr: PullRequest) -> str:
    """One episode per merged PR."""
    return f"delivery:merged-not-deployed:{pr.pk}"


def checks_failed_key(pr: PullRequest) -> str:
    """Forge tracking marks a portal PR's failing checks once (checks_failed_notified_at); that
    mark names the episode, so a PR whose checks fail again later is a new one."""
    failed_at = pr.checks_failed_notified_at or timezone.now()
    return f"delivery:checks-failed:{pr.pk}:{failed_at.isoformat()}"


def record(kind: str, key: str, at: datetime, *, pull_request: PullRequest | None = None,
           app_id: int | None = None, facts: dict[str, Any] | None = None) -> None:
    """The fact `key` holds as of `at`: a new row, or the row again, unconsumed."""
    if DeliveryEvent.objects.filter(key=key).update(seen_at=at, processed=None):
        return
    DeliveryEvent.objects.bulk_create(
        [DeliveryEvent(kind=kind, key=key, pull_request=pull_request, app_id=app_id, facts=facts or {}, seen_at=at)],
        ignore_conflicts=True,  # another run recorded it meanwhile: one row per episode
    )


def merged_not_deployed(pr: PullRequest, progress: Progress, at: datetime) -> None:
    facts = {"targets": progress.targets, "running": progress.running,
             "waiting": [[w.cluster, w.reason] for w in progress.waiting]}
    record(DeliveryEvent.MERGED_NOT_DEPLOYED, not_deployed_key(pr), at, pull_request=pr, facts=facts)


def checks_failed(pr: PullRequest, at: datetime) -> None:
    record(DeliveryEvent.PR_CHECKS_FAILED, checks_failed_key(pr), at, pull_request=pr)


def rollback_offered(offer: RollbackOffer, app_id: int | None, at: datetime) -> None:
    facts = {**asdict(offer), "replaced_at": offer.replaced_at.isoformat(),
             "failing_since": offer.failing_since.isoformat()}
    record(DeliveryEvent.ROLLBACK_OFFERED, offer.event_key, at, app_id=app_id, facts=facts)


def rollback_pr_step(pr: PullRequest, at: datetime) -> None:
    """A portal rollback PR is open, or merged: a step of its application's episode (once each).

    Called wherever a row takes a forge answer (the opening job, the reconciler, tracking); a
    state already recorded adds nothing, so calling it again is harmless."""
    if pr.kind != PullRequest.Kind.ROLLBACK or not pr.number:
        return
    if pr.state == PullRequest.State.OPEN:
        kind = DeliveryEvent.ROLLBACK_PR_OPENED
    elif pr.state == PullRequest.State.MERGED:
        kind = DeliveryEvent.ROLLBACK_PR_MERGED
    else:
        return
    key = rollback_pr_key(pr, kind)
    if DeliveryEvent.objects.filter(key=key).exists():
        return  # a step happens once: found again, it is not news
    record(kind, key, at, pull_request=pr)


def rollback_pr_key(pr: PullRequest, kind: str) -> str:
    return f"delivery:{kind}:{pr.pk}"


def progress_of(event: DeliveryEvent) -> Progress:
    """Where a merged PR waited when `event` was recorded."""
    from portal.delivery.deployments import Progress, Waiting

    facts = event.facts
    return Progress(targets=list(facts.get("targets", [])), running=list(facts.get("running", [])),
                    waiting=[Waiting(cluster, reason) for cluster, reason in facts.get("waiting", [])])


def offer_of(event: DeliveryEvent) -> RollbackOffer:
    """The rollback on offer when `event` was recorded."""
    facts = dict(event.facts)
    facts["replaced_at"] = datetime.fromisoformat(facts["replaced_at"])
    facts["failing_since"] = datetime.fromisoformat(facts["failing_since"])
    return RollbackOffer(**facts)
