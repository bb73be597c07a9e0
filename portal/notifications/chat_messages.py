"""One chat message per episode and channel, updated in place as the episode moves on.

For a channel that edits what it posted (`EditingTransport`: a Slack app, a Discord webhook):
- the episode's first delivery posts the message and keeps its id (`ChatMessage`); a retry
  after that post went out updates it rather than posting a second one;
- each later step's delivery updates that message to show every step so far, then replies
  in its thread (Slack) with that one step;
- a message the chat refuses to update (deleted, too old: `MessageRefused`) is replaced by a
  new one, said once: in the new message and on the channel's status; later steps update
  the new one.

A step waits for the episode's first message (still pending: retried later, as any transient
error); when that first delivery failed for good, the step posts the message itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from portal.notifications.channels import EditingTransport, MessageRefused, TransportError
from portal.notifications.events import Event, Step
from portal.notifications.models import Channel, ChatMessage, Delivery


def send(delivery: Delivery, transport: EditingTransport, at: datetime) -> None:
    """Deliver `delivery` (an episode's first message, or one of its steps) through `transport`."""
    episode = delivery.episode
    event = episode.event
    steps = [step.as_step() for step in episode.steps.all()]
    message = ChatMessage.objects.filter(episode=episode, channel=delivery.channel).first()
    if delivery.step is None:
        if message is not None and message.message_id:
            _update(delivery, message, transport, event, steps, at)
        else:
            _post(delivery, message, transport, event, steps, at)
        return
    first = Delivery.objects.filter(episode=episode, rule_id=delivery.rule_id, step__isnull=True).first()
    if first is not None and first.status == Delivery.Status.PENDING:
        raise TransportError("waits for the episode's first message to go out")
    if message is None or not message.message_id:
        message = _post(delivery, message, transport, event, steps, at)
    else:
        message = _update(delivery, message, transport, event, steps, at)
    if message.message_id:
        transport.reply(message.message_id, event, delivery.step.as_step())


def _post(delivery: Delivery, message: ChatMessage | None, transport: EditingTransport, event: Event,
          steps: Sequence[Step], at: datetime, note: str = "") -> ChatMessage:
    """A new message for the episode; `message`, its earlier one if any, then points at it."""
    message_id = transport.post_message(event, steps, note)
    if message is None:
        message, _ = ChatMessage.objects.update_or_create(
            episode=delivery.episode, channel=delivery.channel,
            defaults={"message_id": message_id, "posted_at": at},
        )
        return message
    message.message_id, message.posted_at = message_id, at
    if note:
        message.replaced_at = at
    message.save(update_fields=["message_id", "posted_at", "replaced_at"])
    return message


def _update(delivery: Delivery, message: ChatMessage, transport: EditingTransport, event: Event,
            steps: Sequence[Step], at: datetime) -> ChatMessage:
    try:
        transport.update_message(message.message_id, event, steps)
    except MessageRefused as refused:
        note = f"The first message of this alert could not be updated ({refused.message}); this one replaces it."
        message = _post(delivery, message, transport, event, steps, at, note=note)
        # The channel's status says it too, once: the page shows its last error.
        Channel.objects.filter(pk=message.channel_id).update(last_error=note, last_error_at=at)
        return message
    message.updated_at = at
    message.save(update_fields=["updated_at"])
    return message
