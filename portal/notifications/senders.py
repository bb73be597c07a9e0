"""Turn pending deliveries into messages, each exactly once.

A delivery row exists before anything is sent (unique per episode and rule). A worker
claims it with one conditional UPDATE (pending, not leased by someone else): of several
workers only one gets the row. A worker that crashes after claiming leaves a lease that
expires, and the next scan sends it. Transient errors come back with a growing delay,
at most MAX_ATTEMPTS times (not before a rate-limited receiver's Retry-After); a permanent
error fails the delivery at once. A channel that edits its messages (a Slack app, Discord)
goes through portal.notifications.chat_messages: one message per episode, updated per step.

Every database step here is one short statement in autocommit (no transaction held
across a send), so on the embedded SQLite a writer waits for another's lock within the
busy timeout instead of failing; nothing needs retrying around "database is locked".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from portal.kernel.metrics import NOTIFICATIONS
from portal.kernel.redaction import redact
from portal.notifications import chat_messages
from portal.notifications.channels import EditingTransport, TransportError, transport_for
from portal.notifications.delivery_events import emit_delivery_events
from portal.notifications.events import Event, EventKind, Link, base_url
from portal.notifications.models import Channel, Delivery
from portal.notifications.statechanges import gitops_pass

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
# Longer than the slowest send (HTTP timeout, SMTP): a live worker never loses its claim.
LEASE = timedelta(minutes=5)
BATCH = 200

def retry_delay(attempts: int) -> timedelta:
    """1, 2, 4, 8 minutes after the 1st, 2nd, 3rd, 4th failure."""
    return timedelta(minutes=2 ** max(0, attempts - 1))


@dataclass
class SendReport:
    sent: int = 0
    retrying: int = 0
    failed: int = 0


def claim(delivery_id: int, at: datetime) -> bool:
    claimable = Q(lease_until__isnull=True) | Q(lease_until__lte=at)
    updated = (
        Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=at)
        .filter(claimable)
        .update(lease_until=at + LEASE, attempts=F("attempts") + 1, last_attempt_at=at)
    )
    return updated == 1


def attempt(delivery: Delivery, at: datetime) -> str:
    """Send one claimed delivery; record the outcome on it and on its channel."""
    channel = delivery.channel
    retry_after: float | None = None
    try:
        transport = transport_for(channel, clock=lambda: at)
        if isinstance(transport, EditingTransport):
            chat_messages.send(delivery, transport, at)
        elif delivery.step_id is not None:
            raise TransportError("the channel no longer edits messages: the step is not sent", permanent=True)
        else:
            transport.notify(delivery.episode.event)
    except TransportError as exc:
        error, permanent = redact(exc.message, channel.secrets()), exc.permanent
        retry_after = exc.retry_after
    except Exception as exc:  # a defect in a transport must not stop the other deliveries
        logger.exception("notification delivery %s failed unexpectedly", delivery.pk)
        error, permanent = f"internal error: {type(exc).__name__}", False
    else:
        _record_sent(delivery, at)
        NOTIFICATIONS.labels(channel=channel.kind, outcome="sent").inc()
        return Delivery.Status.SENT
    NOTIFICATIONS.labels(channel=channel.kind, outcome="failed").inc()
    give_up = permanent or delivery.attempts >= MAX_ATTEMPTS
    status = Delivery.Status.FAILED if give_up else Delivery.Status.PENDING
    _record_error(delivery, at, status, error, permanent, retry_after)
    # Channel and episode ids only: the channel's URL is a credential.
    logger.warning(
        "notification to channel %s for episode %s: %s (%s, attempt %s)",
        channel.pk, delivery.episode_id, error, "permanent" if permanent else "transient", delivery.attempts,
    )
    return status


def _record_sent(delivery: Delivery, at: datetime) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.SENT, sent_at=at, lease_until=None, last_error="", last_error_permanent=False
    )
    Channel.objects.filter(pk=delivery.channel_id).update(last_sent_at=at)


def _record_error(delivery: Delivery, at: datetime, status: str, error: str, permanent: bool,
                  retry_after: float | None = None) -> None:
    # A receiver that said when to come back (HTTP 429 Retry-After) is not asked before then.
    delay = max(retry_delay(delivery.attempts), timedelta(seconds=retry_after or 0))
    Delivery.objects.filter(pk=delivery.pk).update(
        status=status,
        lease_until=None,
        next_attempt_at=at + delay,
        last_error=error,
        last_error_permanent=permanent,
    )
    Channel.objects.filter(pk=delivery.channel_id).update(last_error=error, last_error_at=at)


def deliver_pending(at: datetime | None = None) -> SendReport:
    at = at or timezone.now()
    report = SendReport()
    due = list(
        Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=at)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=at))
        .order_by("next_attempt_at", "id")
        .values_list("id", flat=True)[:BATCH]
    )
    for delivery_id in due:
        if not claim(delivery_id, at):
            continue  # another worker has it
        delivery = Delivery.objects.select_related("episode", "channel", "step").get(pk=delivery_id)
        outcome = attempt(delivery, at)
        if outcome == Delivery.Status.SENT:
            report.sent += 1
        elif outcome == Delivery.Status.FAILED:
            report.failed += 1
        else:
            report.retrying += 1
    return report


def scan_and_send(at: datetime | None = None) -> SendReport:
    """The beat task's body: emit the gitops episodes due as of `at` and the events delivery
    recorded, then send what is pending."""
    at = at or timezone.now()
    gitops_pass(at)
    emit_delivery_events(at)
    return deliver_pending(at)


def sample_event(channel: Channel, at: datetime, sample: str = "") -> Event:
    """What "Send test" sends: the sample alert `sample` (portal.notifications.samples, worded
    as a real one), or without one a plain "the channel works" message."""
    if sample:
        from portal.notifications.samples import sample as sample_alert

        return sample_alert(sample, at)
    return Event(
        kind=EventKind.TEST,
        key=f"test:{channel.pk}:{at.isoformat()}",
        title="Test notification from the GitOps portal",
        summary=f"The channel “{channel.name}” works: this is what notifications look like here.",
        started_at=at,
        facts=(("Channel", channel.name), ("Kind", channel.get_kind_display())),
        links=(Link("Open notifications", base_url() + reverse("notifications")),),
    )


def send_test(channel: Channel, at: datetime | None = None, sample: str = "") -> str | None:
    """Send a test message now, once (no retry: a person is waiting); None when it went out."""
    at = at or timezone.now()
    event = sample_event(channel, at, sample)
    try:
        transport_for(channel, clock=lambda: at).notify(event)
    except TransportError as exc:
        error = redact(exc.message, channel.secrets())
        Channel.objects.filter(pk=channel.pk).update(last_error=error, last_error_at=at)
        return error
    Channel.objects.filter(pk=channel.pk).update(last_sent_at=at)
    return None
