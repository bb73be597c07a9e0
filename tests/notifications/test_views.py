"""/notifications/: admins configure channels and rules and send a test; viewers read; a
webhook URL or signing secret never appears on a page, in the audit log or in a log line
once saved."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from portal.kernel.audit.models import AuditLog
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Rule
from tests.fakes.receivers import HttpReceiver

pytestmark = pytest.mark.django_db

HOOK_PATH = "/services/T0/B0/VerySecretSlackToken"
SIGNING = "sig-secret-5f4e3d2c1b0a"


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


@pytest.fixture
def admin_client(client, users):
    client.force_login(users["admin"])
    return client


def pages(client, *urls: str) -> str:
    return "".join(client.get(url).content.decode() for url in urls)


def test_an_admin_adds_a_slack_channel_and_sees_it_masked(admin_client, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    url = receiver.url(HOOK_PATH)
    response = admin_client.post(reverse("notification-channel-form"),
                                 {"name": "ops-slack", "kind": "slack", "url": url, "recipients": ""})
    assert response.status_code == 302
    channel = Channel.objects.get()
    assert channel.url == url

    edit = f"{reverse('notification-channel-form')}?id={channel.pk}"
    html = pages(admin_client, reverse("notifications"), edit, "/admin/notifications/channel/",
                 f"/admin/notifications/channel/{channel.pk}/change/")
    port = url.split(":")[2].split("/")[0]
    assert f"http://127.0.0.1:{port}/••••" in html
    assert "VerySecretSlackToken" not in html and HOOK_PATH not in html

    # Saving again without a URL keeps the stored one.
    admin_client.post(edit, {"name": "ops", "kind": "slack", "url": "", "recipients": ""})
    channel.refresh_from_db()
    assert (channel.name, channel.url) == ("ops", url)
    audit = list(AuditLog.objects.values_list("action", "details"))
    assert audit[-1][0] == "notifications.channel_saved"
    assert "VerySecretSlackToken" not in str(audit)
    assert "VerySecretSlackToken" not in caplog.text


def test_a_form_with_an_error_does_not_echo_the_url_or_secret(admin_client):
    response = admin_client.post(reverse("notification-channel-form"), {
        "name": "hook", "kind": "webhook", "url": "ftp://example.com/VerySecretSlackToken", "secret": SIGNING,
    })
    assert response.status_code == 200
    html = response.content.decode()
    assert "Give an http(s) URL." in html
    assert "VerySecretSlackToken" not in html and SIGNING not in html
    assert not Channel.objects.exists()


def test_a_webhook_needs_a_secret_and_an_email_channel_needs_addresses(admin_client):
    response = admin_client.post(reverse("notification-channel-form"),
                                 {"name": "hook", "kind": "webhook", "url": "https://hooks.example.com/x"})
    assert "A signing secret is needed" in response.content.decode()
    response = admin_client.post(reverse("notification-channel-form"),
                                 {"name": "mail", "kind": "email", "recipients": "oncall@example.com, nope"})
    assert "“nope” is not an e-mail address." in response.content.decode()
    assert not Channel.objects.exists()


def test_the_test_button_sends_once_and_reports_the_error(admin_client, receiver):
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/in/Tok3n"),
                                     secret=SIGNING)
    response = admin_client.post(reverse("notification-channel-test"), {"id": channel.pk}, follow=True)
    assert "Test notification sent to “hook”." in response.content.decode()
    [request] = receiver.requests
    assert request.json()["event"]["kind"] == "test"
    assert request.json()["event"]["links"] == [
        {"label": "Open notifications", "url": "http://127.0.0.1:8000/notifications/"}
    ]

    receiver.respond(410)
    response = admin_client.post(reverse("notification-channel-test"), {"id": channel.pk}, follow=True)
    html = response.content.decode()
    assert "Test notification to “hook” failed: HTTP 410: invalid_payload" in html
    assert len(receiver.requests) == 2  # a test is tried once, even on failure
    channel.refresh_from_db()
    assert channel.last_error == "HTTP 410: invalid_payload"
    assert "Tok3n" not in html and SIGNING not in html


def test_an_admin_adds_a_rule(admin_client, catalog):
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url="https://hooks.slack.com/x")
    response = admin_client.post(reverse("notification-rule-form"), {
        "name": "prod payments", "kinds": [EventKind.APP_ATTENTION, EventKind.ROLLBACK_OFFERED],
        "environment": catalog.prod.pk, "service": catalog.payments.pk, "channel": channel.pk, "enabled": "on",
    })
    assert response.status_code == 302
    rule = Rule.objects.get()
    assert rule.kinds == ["app_attention", "rollback_offered"]
    assert (rule.environment, rule.cluster, rule.service) == (catalog.prod, None, catalog.payments)
    html = admin_client.get(reverse("notifications")).content.decode()
    assert "prod payments" in html and "environment prod" in html and "service payments" in html

    admin_client.post(reverse("notification-rule-delete"), {"id": rule.pk})
    assert not Rule.objects.exists()


def test_viewers_read_but_do_not_configure(client, users, receiver):
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url=receiver.url(HOOK_PATH))
    client.force_login(users["viewer"])
    response = client.get(reverse("notifications"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "ops" in html and "Send test notification" not in html and "Add a channel" not in html
    assert HOOK_PATH not in html
    for name in ("notification-channel-form", "notification-channel-test", "notification-channel-delete",
                 "notification-rule-form", "notification-rule-delete"):
        assert client.post(reverse(name), {"id": channel.pk}).status_code == 403
    client.force_login(users["member"])
    assert client.post(reverse("notification-channel-test"), {"id": channel.pk}).status_code == 403
    assert receiver.requests == []
    assert Channel.objects.filter(pk=channel.pk).exists()


def test_an_admin_deletes_a_channel(admin_client):
    channel = Channel.objects.create(name="ops", kind=Channel.Kind.SLACK, url="https://hooks.slack.com/x")
    assert admin_client.get(reverse("notification-channel-delete")).status_code == 302  # GET changes nothing
    assert Channel.objects.exists()
    admin_client.post(reverse("notification-channel-delete"), {"id": channel.pk})
    assert not Channel.objects.exists()
    assert admin_client.post(reverse("notification-channel-delete"), {"id": channel.pk}).status_code == 404
