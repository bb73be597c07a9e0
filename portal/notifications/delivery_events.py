"""Delivery's announcements turned into notification events: a merged PR not deployed after an
hour, a portal PR whose checks fail, a rollback offered; and a rollback PR opened or merged,
which is a step of its application's episode (portal.notifications.episode_steps).

Delivery records each as a `DeliveryEvent` row (portal.delivery.announcements), as the store
records a state change as a StateChange row; the minute's pass (`emit_delivery_events`, run by
`notifications.send_due` before it sends) claims each unconsumed row once — a conditional
UPDATE, so of several workers one gets it — and emits its event. The event key names the
episode (the row's key), so the same fact found again adds nothing but a delivery for a rule
made since.
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse
from django.utils import timezone

from portal.delivery import announcements, rollbacks
from portal.delivery.deployments import Progress
from portal.delivery.models import DeliveryEvent, PullRequest
from portal.kernel.timestamps import utc_stamp
from portal.notifications.episode_steps import rollback_pr_step
from portal.notifications.events import Event, EventKind, emit, links, portal_url


def checks_failed_event(pr: PullRequest) -> Event:
    """Forge tracking marks a portal PR's failing checks once (checks_failed_notified_at);
    that mark names the episode, so a PR whose checks fail again later is a new one."""
    failed_at = pr.checks_failed_notified_at or timezone.now()
    subject = ", ".join(pr.services or []) or pr.image
    where = f"#{pr.number}" if pr.number else pr.branch
    return Event(
        kind=EventKind.PR_CHECKS_FAILED,
        key=announcements.checks_failed_key(pr),
        title=f"Checks failing on {where}: {pr.title}",
        summary=f"The checks of the pull request moving {subject} to {pr.to_version} fail.",
        started_at=failed_at,
        environment=pr.environment,
        services=tuple(pr.services or []),
        facts=(("Pull request", f"{where}: {pr.title}"), ("Repository", pr.repository)),
        links=links(("Pull request", pr.url or None), ("Delivery", portal_url(reverse("delivery")))),
        details={"pull_request": {"id": pr.pk, "number": pr.number, "url": pr.url, "checks": pr.checks}},
    )


def not_deployed_event(pr: PullRequest, state: Progress, now: datetime) -> Event:
    subject = ", ".join(pr.services or []) or pr.image
    merged_at = pr.merged_at or now
    since = utc_stamp(merged_at)
    where = f"#{pr.number}" if pr.number else pr.branch
    facts = [("Pull request", f"{where}: {pr.title}"), ("Merged", since), ("Version", pr.to_version)]
    if pr.environment:
        facts.append(("Environment", pr.environment))
    facts += [(w.cluster, w.reason) for w in state.waiting]
    return Event(
        kind=EventKind.MERGED_NOT_DEPLOYED,
        key=announcements.not_deployed_key(pr),
        title=f"{subject} {pr.to_version} merged but not deployed{f' in {pr.environment}' if pr.environment else ''}",
        summary=f"Merged {since}, not running yet: {state.why}",
        started_at=merged_at,
        environment=pr.environment,
        cluster=state.waiting[0].cluster if len(state.waiting) == 1 else "",
        services=tuple(pr.services or []),
        facts=tuple(facts),
        causes=tuple(w.reason for w in state.waiting),
        links=links(("Delivery", portal_url(reverse("delivery"))), ("Pull request", pr.url or None)),
        details={"pull_request": {"id": pr.pk, "number": pr.number, "url": pr.url, "to_version": pr.to_version},
                 "waiting": [{"cluster": w.cluster, "reason": w.reason} for w in state.waiting]},
    )


def rollback_event(offer: rollbacks.RollbackOffer) -> Event:
    since = utc_stamp(offer.failing_since)
    return Event(
        kind=EventKind.ROLLBACK_OFFERED,
        key=offer.event_key,
        title=f"Rollback offered: {offer.subject} {offer.current} → {offer.previous} on {offer.cluster}",
        summary=f"{offer.app} is {offer.failure} since {since}, after {offer.current} replaced {offer.previous}.",
        started_at=offer.failing_since,
        environment=offer.environment,
        cluster=offer.cluster,
        services=(offer.service,),
        facts=(
            ("Application", offer.app),
            ("Running", offer.current),
            ("Roll back to", offer.previous),
            ("Replaced at", utc_stamp(offer.replaced_at)),
            ("Failing since", since),
        ),
        causes=(f"{offer.current} replaced {offer.previous}",),
        links=links(
            ("Preview rollback PR", portal_url(rollbacks.preview_url(offer))),
            ("Service", portal_url(reverse("service", args=[offer.service]))),
        ),
        details={"rollback": {"service": offer.service, "cluster": offer.cluster, "from": offer.current,
                              "to": offer.previous, "app": offer.app}},
    )


# Rollback PRs opened and merged: steps of the episode of the application they roll back.
STEP_KINDS = (DeliveryEvent.ROLLBACK_PR_OPENED, DeliveryEvent.ROLLBACK_PR_MERGED)
# Rows claimed per pass; the rest wait for the next minute.
BATCH = 500


def event_of(row: DeliveryEvent) -> Event:
    """The notification event of one recorded delivery fact."""
    if row.kind == DeliveryEvent.ROLLBACK_OFFERED:
        return rollback_event(announcements.offer_of(row))
    assert row.pull_request is not None  # a PR's events go with it (CASCADE)
    if row.kind == DeliveryEvent.PR_CHECKS_FAILED:
        return checks_failed_event(row.pull_request)
    return not_deployed_event(row.pull_request, announcements.progress_of(row), row.seen_at)


def emit_delivery_events(at: datetime | None = None) -> int:
    """Claim the delivery events not consumed yet, each once, and emit them; how many."""
    at = at or timezone.now()
    unclaimed = DeliveryEvent.objects.filter(processed__isnull=True)
    emitted = 0
    for row_id in list(unclaimed.order_by("id").values_list("id", flat=True)[:BATCH]):
        if not DeliveryEvent.objects.filter(pk=row_id, processed__isnull=True).update(processed=at):
            continue  # another worker has it
        row = DeliveryEvent.objects.select_related("pull_request").get(pk=row_id)
        if row.kind in STEP_KINDS:
            rollback_pr_step(row)  # a step of an application's episode, not an episode of its own
        else:
            emit(event_of(row), at=row.seen_at, app_id=row.app_id)
        emitted += 1
    return emitted
