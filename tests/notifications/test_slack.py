"""Slack: the exact Block Kit payload with URL buttons, posted to a local receiver; what
each kind of failure does to a delivery (permanent, transient, bounded retries, timeouts);
and the webhook URL never in a log line or on the page."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.urls import reverse

from gitops.models import VersionChange
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.senders import MAX_ATTEMPTS, scan_and_send
from tests.fakes.receivers import HttpReceiver
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
AT = T0 + timedelta(minutes=15)
SHA = "4f1d2c3b5a6978877665544332211aabbccddeef"
HOOK_PATH = "/services/T0000/B0000/s3cr3tXoXoXoTOKEN"


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


@pytest.fixture
def slack(receiver, catalog) -> Channel:
    channel = Channel.objects.create(name="ops-slack", kind=Channel.Kind.SLACK, url=receiver.url(HOOK_PATH))
    Rule.objects.create(name="prod apps", kinds=[EventKind.APP_ATTENTION], channel=channel, environment=catalog.prod)
    return channel


@pytest.fixture
def degraded(catalog):
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
                 now=T0, since=timedelta(0), first_seen=T0 - timedelta(days=2), synced_revision=SHA)
    VersionChange.objects.create(service=catalog.payments, environment=catalog.prod, cluster=catalog.prod_eu,
                                 app=app, from_version="2.4.0", to_version="2.5.0", at=T0 - timedelta(hours=1))
    return app


def test_the_message_is_block_kit_with_url_buttons(receiver, slack, degraded):
    report = scan_and_send(AT)
    assert (report.sent, report.retrying, report.failed) == (1, 0, 0)
    [request] = receiver.requests
    assert request.path == HOOK_PATH
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == {
        "text": "payments-prod is Degraded on prod-eu-1: Degraded on prod-eu-1, an hour after 2.5.0 replaced 2.4.0",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "payments-prod is Degraded on prod-eu-1"}},
            {"type": "section", "text": {"type": "mrkdwn",
                                         "text": "Degraded on prod-eu-1, an hour after 2.5.0 replaced 2.4.0"}},
            {"type": "section", "fields": [
                {"type": "mrkdwn", "text": "*Environment*\nprod"},
                {"type": "mrkdwn", "text": "*Cluster*\nprod-eu-1"},
                {"type": "mrkdwn", "text": "*Application*\nargocd/payments-prod"},
                {"type": "mrkdwn", "text": "*Sync*\nSynced"},
                {"type": "mrkdwn", "text": "*Health*\nDegraded"},
                {"type": "mrkdwn", "text": "*Since*\n2026-03-02 12:00 UTC"},
                {"type": "mrkdwn", "text": "*Services*\npayments"},
                {"type": "mrkdwn", "text": "*Synced commit*\n4f1d2c3"},
            ]},
            {"type": "actions", "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "Rollback PR → 2.4.0"},
                 "url": f"http://127.0.0.1:8000/pr/preview?kind=rollback&mode=grouped&item={degraded.pk}"
                        "%3Apayments%3A2.4.0%3A2.5.0", "action_id": "link-0", "style": "primary"},
                {"type": "button", "text": {"type": "plain_text", "text": "Open in portal"},
                 "url": "http://127.0.0.1:8000/services/payments", "action_id": "link-1"},
                {"type": "button", "text": {"type": "plain_text", "text": "Synced commit"},
                 "url": f"https://github.com/acme/gitops/commit/{SHA}", "action_id": "link-2"},
            ]},
        ],
    }
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.sent_at) == ("sent", 1, AT)
    scan_and_send(AT + timedelta(minutes=1))
    assert len(receiver.requests) == 1


def test_untrusted_names_cannot_become_slack_links_or_mentions(receiver, slack, catalog):
    seeded(catalog.prod_eu, "x", health="Degraded", now=T0, since=timedelta(0), first_seen=T0,
           health_message="<!channel> see <https://evil.example|here> & more")
    scan_and_send(AT)
    fields = receiver.requests[0].json()["blocks"][2]["fields"]
    assert {"type": "mrkdwn", "text": "*Message*\n&lt;!channel&gt; see &lt;https://evil.example|here&gt; &amp; more"} \
        in fields


def test_a_404_is_permanent_and_shown_with_the_last_error(receiver, slack, degraded, client, users):
    receiver.respond(404)
    report = scan_and_send(AT)
    assert report.failed == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error, delivery.last_error_permanent) == (
        "failed", "HTTP 404: invalid_payload", True)
    scan_and_send(AT + timedelta(hours=1))
    assert len(receiver.requests) == 1  # never tried again

    client.force_login(users["viewer"])
    html = client.get(reverse("notifications")).content.decode()
    assert "HTTP 404: invalid_payload" in html and "(permanent)" in html
    assert HOOK_PATH not in html and "s3cr3t" not in html


@pytest.mark.parametrize("status", [429, 500, 503])
def test_429_and_5xx_are_transient_and_retried_later(receiver, slack, degraded, status):
    receiver.respond(status)
    assert scan_and_send(AT).retrying == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error_permanent) == ("pending", False)
    assert delivery.last_error.startswith(f"HTTP {status}")
    assert delivery.next_attempt_at == AT + timedelta(minutes=1)

    scan_and_send(AT + timedelta(seconds=30))  # not due yet
    assert len(receiver.requests) == 1
    assert scan_and_send(AT + timedelta(minutes=1)).sent == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, len(receiver.requests)) == ("sent", 2, 2)


def test_retries_are_bounded(receiver, slack, degraded):
    receiver.respond(*[500] * 10)
    at = AT
    for _ in range(10):
        scan_and_send(at)
        at += timedelta(hours=1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", MAX_ATTEMPTS)
    assert len(receiver.requests) == MAX_ATTEMPTS


def test_a_timeout_is_transient(receiver, slack, degraded):
    receiver.hang()
    with override_settings(PORTAL_NOTIFY_TIMEOUT=0.3):
        assert scan_and_send(AT).retrying == 1
    delivery = Delivery.objects.get()
    assert (delivery.last_error, delivery.last_error_permanent) == ("no answer within 0.3 s", False)


def test_a_refused_connection_is_transient(slack, degraded):
    # The receiver is stopped: nothing listens on its port any more.
    with HttpReceiver() as gone:
        url = gone.url(HOOK_PATH)
    Channel.objects.filter(pk=slack.pk).update(url=url)
    scan_and_send(AT)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error, delivery.last_error_permanent) == (
        "pending", "connection failed: Connection refused", False)
    assert Channel.objects.get().last_error == "connection failed: Connection refused"


def test_no_log_line_carries_the_webhook_url(receiver, slack, degraded, caplog):
    caplog.set_level(logging.DEBUG)
    receiver.respond(500, 404)
    scan_and_send(AT)
    scan_and_send(AT + timedelta(minutes=5))
    assert "notification to channel" in caplog.text  # the failures were logged...
    assert "s3cr3t" not in caplog.text and HOOK_PATH not in caplog.text  # ...without the URL
