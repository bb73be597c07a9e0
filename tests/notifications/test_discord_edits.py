"""Discord webhooks edit their message as an episode moves on: posted with `?wait=true` (the
answer carries the message id), each step a PATCH of that message; a deleted message is
replaced by a new one, said in it; a 429 waits for Retry-After. Against a Discord webhook fake."""

from __future__ import annotations

from datetime import timedelta

import pytest

from portal.delivery import announcements
from portal.delivery.models import PullRequest
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, ChatMessage, Delivery, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.chat_apis import DiscordWebhook
from tests.notifications.store_rows import state_change
from tests.notifications.test_slack_app import T0, degraded_checkout, rollback_pr

pytestmark = pytest.mark.django_db


@pytest.fixture
def discord(catalog):
    with DiscordWebhook() as hook:
        channel = Channel.objects.create(name="ops-discord", kind=Channel.Kind.DISCORD, url=hook.url)
        Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel)
        yield hook


def test_the_episode_message_is_edited_by_each_step(catalog, discord):
    app = degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    [message] = discord.messages
    assert discord.requests == [("POST", f"/api/webhooks/{discord.WEBHOOK_ID}/{discord.token}?wait=true")]
    assert ChatMessage.objects.get().message_id == message.id

    pr = rollback_pr()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=15))
    scan_and_send(T0 + timedelta(minutes=16))
    state_change(app, "health", "Degraded", "Healthy", T0 + timedelta(minutes=25))
    scan_and_send(T0 + timedelta(minutes=26))

    assert [m for m, _ in discord.requests] == ["POST", "PATCH", "PATCH"]
    assert discord.requests[1][1].endswith(f"/messages/{message.id}")
    assert len(discord.messages) == 1 and message.edits == 2
    [embed] = message.embeds
    assert "**Now:** Recovered: checkout-prod is in sync and healthy on prod-eu-1" in embed["description"]
    assert "Rollback PR #12 opened: checkout 1.7.0 → 1.6.2" in embed["description"]
    assert embed["color"] == 0x12B76A  # over


def test_a_deleted_message_is_replaced_and_a_rate_limit_waits(catalog, discord):
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    [first] = discord.messages
    discord.delete(first.id)
    discord.rate_limit(90)

    pr = rollback_pr()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=15))
    at = T0 + timedelta(minutes=16)
    scan_and_send(at)
    step = Delivery.objects.get(step__isnull=False)
    assert (step.status, step.next_attempt_at) == ("pending", at + timedelta(minutes=1, seconds=30))
    scan_and_send(at + timedelta(seconds=90))
    [replacement] = discord.live()
    assert replacement.id != first.id
    assert "could not be updated (Discord: HTTP 404" in replacement.embeds[0]["description"]
    assert ChatMessage.objects.get().message_id == replacement.id
    pr.state = PullRequest.State.MERGED
    pr.save()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=20))
    scan_and_send(T0 + timedelta(minutes=21))
    assert replacement.edits == 1 and "could not be updated" not in replacement.embeds[0]["description"]
