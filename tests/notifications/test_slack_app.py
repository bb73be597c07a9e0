"""Slack app channels: one message per episode, posted with chat.postMessage, updated with
chat.update as the episode moves on (rollback PR opened, merged, recovered), each step also a
reply in its thread; a message Slack will not update is replaced once; a rate limit is retried
after Slack's Retry-After. Against a Slack Web API fake over HTTP, through slack_sdk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from slack_sdk import WebClient

from portal.delivery import announcements
from portal.delivery.models import PullRequest
from portal.notifications.events import EventKind
from portal.notifications.forms import ChannelForm
from portal.notifications.models import Channel, ChatMessage, Delivery, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.chat_apis import SlackWebAPI
from tests.notifications.store_rows import seeded, state_change

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
TOKEN = "xoxb-1111-2222-SlackB0tT0ken"
CONVERSATION = "C0PORTAL01"


@pytest.fixture
def slack(monkeypatch):
    monkeypatch.setenv("PORTAL_TEST_SLACK_TOKEN", TOKEN)
    with SlackWebAPI(TOKEN, (CONVERSATION,)) as api, override_settings(PORTAL_SLACK_API_URL=api.base_url):
        yield api


@pytest.fixture
def channel(catalog) -> Channel:
    channel = Channel.objects.create(name="ops-slack-app", kind=Channel.Kind.SLACK_APP,
                                     token_env="PORTAL_TEST_SLACK_TOKEN", chat_channel=CONVERSATION)
    Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel)
    return channel


def degraded_checkout(catalog):
    return seeded(catalog.prod_eu, "checkout-prod", service=catalog.checkout, health="Degraded", now=T0,
                  since=timedelta(0), first_seen=T0 - timedelta(days=1))


def rollback_pr(state: str = PullRequest.State.OPEN) -> PullRequest:
    return PullRequest.objects.create(
        kind=PullRequest.Kind.ROLLBACK, services=["checkout"], environment="prod", clusters=["prod-eu-1"],
        repository="https://github.com/acme/gitops", forge_kind="github", number=12,
        url="https://github.com/acme/gitops/pull/12", title="Roll back checkout to 1.6.2 in prod",
        branch="portal/checkout-1.6.2-prod", base_branch="main", state=state, opened_at=T0 + timedelta(minutes=15),
        from_version="1.7.0", to_version="1.6.2",
    )


def texts_of(blocks: list[dict]) -> str:
    found = []
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict):
            found.append(text["text"])
        found += [e.get("text", "") for e in block.get("elements", []) if isinstance(e, dict)]
    return "\n".join(str(t) for t in found)


def test_one_episode_is_one_message_updated_three_times_with_thread_replies(catalog, slack, channel):
    app = degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    [message] = slack.top_level(CONVERSATION)
    assert "checkout-prod is Degraded on prod-eu-1" in message.text
    assert ChatMessage.objects.get().message_id == message.ts

    pr = rollback_pr()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=15))
    scan_and_send(T0 + timedelta(minutes=16))
    pr.state, pr.merged_at = PullRequest.State.MERGED, T0 + timedelta(minutes=20)
    pr.save()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=21))
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=22))  # found again: no second step
    scan_and_send(T0 + timedelta(minutes=22))
    state_change(app, "health", "Degraded", "Healthy", T0 + timedelta(minutes=25))
    scan_and_send(T0 + timedelta(minutes=26))

    [message] = slack.top_level(CONVERSATION)
    assert message.edits == 3
    shown = texts_of(message.blocks)
    assert "*Now:* Recovered: checkout-prod is in sync and healthy on prod-eu-1" in shown
    assert "Rollback PR #12 opened: checkout 1.7.0 → 1.6.2" in shown
    assert "Rollback PR #12 merged: checkout 1.7.0 → 1.6.2" in shown
    # The thread, as a Slack client reads it.
    replies = WebClient(token=TOKEN, base_url=slack.base_url).conversations_replies(channel=CONVERSATION,
                                                                                   ts=message.ts)
    assert [m["text"] for m in replies["messages"][1:]] == [
        "Rollback PR #12 opened: checkout 1.7.0 → 1.6.2 <https://github.com/acme/gitops/pull/12|Open>",
        "Rollback PR #12 merged: checkout 1.7.0 → 1.6.2 <https://github.com/acme/gitops/pull/12|Open>",
        "Recovered: checkout-prod is in sync and healthy on prod-eu-1",
    ]
    assert all(m["thread_ts"] == message.ts for m in replies["messages"][1:])
    assert [m for m, _ in slack.calls] == ["chat.postMessage", *["chat.update", "chat.postMessage"] * 3,
                                           "conversations.replies"]
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}


def test_a_deleted_message_is_replaced_once_and_the_channel_says_so(catalog, slack, channel):
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    [first] = slack.top_level(CONVERSATION)
    slack.delete(CONVERSATION, first.ts)

    pr = rollback_pr()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=15))
    scan_and_send(T0 + timedelta(minutes=16))
    [replacement] = slack.top_level(CONVERSATION)
    assert replacement.ts != first.ts
    note = "could not be updated (Slack: message_not_found); this one replaces it"
    assert note in texts_of(replacement.blocks)
    assert [m.text for m in slack.thread(CONVERSATION, replacement.ts)][0].startswith("Rollback PR #12 opened")
    stored = ChatMessage.objects.get()
    assert stored.message_id == replacement.ts and stored.replaced_at == T0 + timedelta(minutes=16)
    channel.refresh_from_db()
    assert note in channel.last_error

    # The next step updates the replacement, without saying it again.
    pr.state = PullRequest.State.MERGED
    pr.save()
    announcements.rollback_pr_step(pr, T0 + timedelta(minutes=20))
    scan_and_send(T0 + timedelta(minutes=21))
    [replacement] = slack.top_level(CONVERSATION)
    assert replacement.edits == 1 and note not in texts_of(replacement.blocks)
    assert "*Now:* Rollback PR #12 merged" in texts_of(replacement.blocks)


def test_a_rate_limited_update_is_retried_after_retry_after(catalog, slack, channel):
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    slack.rate_limit("chat.update", 300)
    announcements.rollback_pr_step(rollback_pr(), T0 + timedelta(minutes=15))
    at = T0 + timedelta(minutes=16)
    scan_and_send(at)
    step = Delivery.objects.get(step__isnull=False)
    assert (step.status, step.next_attempt_at) == ("pending", at + timedelta(seconds=300))
    assert "ratelimited" in step.last_error and not step.last_error_permanent

    scan_and_send(at + timedelta(seconds=299))
    assert [m for m, _ in slack.calls].count("chat.update") == 1  # not asked again before then
    scan_and_send(at + timedelta(seconds=300))
    step.refresh_from_db()
    assert step.status == "sent"
    [message] = slack.top_level(CONVERSATION)
    assert message.edits == 1 and len(slack.thread(CONVERSATION, message.ts)) == 1


def test_a_missing_token_fails_for_good_and_names_only_the_variable(catalog, slack, channel, monkeypatch):
    monkeypatch.delenv("PORTAL_TEST_SLACK_TOKEN")
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and delivery.last_error_permanent
    assert "PORTAL_TEST_SLACK_TOKEN" in delivery.last_error
    assert slack.calls == []


def test_a_refused_token_is_a_permanent_error_without_the_token(catalog, slack, channel, monkeypatch):
    monkeypatch.setenv("PORTAL_TEST_SLACK_TOKEN", "xoxb-not-the-one")
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == ("failed", "Slack: invalid_auth")


def test_channels_that_only_post_hear_of_an_episode_once(catalog, slack, channel):
    webhook = Channel.objects.create(name="hook", kind=Channel.Kind.SLACK, url="http://127.0.0.1:9/hook")
    Rule.objects.create(name="hook", kinds=[EventKind.APP_ATTENTION], channel=webhook)
    degraded_checkout(catalog)
    emitted = T0 + timedelta(minutes=12)
    scan_and_send(emitted)
    announcements.rollback_pr_step(rollback_pr(), T0 + timedelta(minutes=15))
    scan_and_send(T0 + timedelta(minutes=16))
    assert not Delivery.objects.filter(channel=webhook, step__isnull=False).exists()
    assert Delivery.objects.filter(channel=channel, step__isnull=False).count() == 1


def test_the_form_takes_a_variable_name_and_a_conversation_never_a_token(db):
    form = ChannelForm(data={"name": "app", "kind": "slack_app", "token_env": "SLACK_BOT_TOKEN",
                             "chat_channel": "C0PORTAL01"})
    assert form.is_valid(), form.errors
    saved = form.save()
    assert (saved.url, saved.secret, saved.token_env) == ("", "", "SLACK_BOT_TOKEN")
    assert saved.masked_target() == "Slack conversation C0PORTAL01, token from $SLACK_BOT_TOKEN"
    refused = ChannelForm(data={"name": "bad", "kind": "slack_app", "token_env": TOKEN, "chat_channel": "#ops"})
    assert not refused.is_valid()
    assert set(refused.errors) == {"token_env", "chat_channel"}


def test_the_notifications_page_shows_steps_and_the_replacement_never_the_token(catalog, slack, channel, client,
                                                                                users):
    degraded_checkout(catalog)
    scan_and_send(T0 + timedelta(minutes=12))
    [first] = slack.top_level(CONVERSATION)
    slack.delete(CONVERSATION, first.ts)
    announcements.rollback_pr_step(rollback_pr(), T0 + timedelta(minutes=15))
    scan_and_send(T0 + timedelta(minutes=16))
    client.force_login(users["admin"])
    page = client.get("/notifications/").content.decode()
    assert "Update: Rollback PR #12 opened: checkout 1.7.0 → 1.6.2" in page
    assert "this one replaces it" in page  # the channel's status says it
    assert "Slack conversation C0PORTAL01, token from $PORTAL_TEST_SLACK_TOKEN" in page
    assert TOKEN not in page
