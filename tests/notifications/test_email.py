"""E-mail: HTML and plain text through Django's backend, checked in locmem's outbox and on a
real SMTP server on 127.0.0.1 (aiosmtpd); an SMTP 5xx is permanent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.test import override_settings

from gitops.models import VersionChange
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.receivers import SmtpReceiver
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SHA = "4f1d2c3b5a6978877665544332211aabbccddeef"


@pytest.fixture
def email_rule(catalog) -> Rule:
    channel = Channel.objects.create(name="oncall", kind=Channel.Kind.EMAIL,
                                     recipients="oncall@example.com, sre@example.com")
    return Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel, environment=catalog.prod)


@pytest.fixture
def degraded(catalog):
    app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
                 now=T0, since=timedelta(0), first_seen=T0 - timedelta(days=2), synced_revision=SHA,
                 health_message="<script>alert(1)</script> rollout stuck")
    VersionChange.objects.create(service=catalog.payments, environment=catalog.prod, cluster=catalog.prod_eu,
                                 app=app, from_version="2.4.0", to_version="2.5.0", at=T0 - timedelta(hours=1))
    return app


@override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
                   DEFAULT_FROM_EMAIL="portal@example.com")
def test_locmem_gets_text_and_html(email_rule, degraded):
    assert scan_and_send(T0 + timedelta(minutes=10)).sent == 1
    [message] = mail.outbox
    assert message.subject == "[prod] payments-prod is Degraded on prod-eu-1"
    assert message.to == ["oncall@example.com", "sre@example.com"]
    assert message.from_email == "portal@example.com"
    text = message.body
    assert text.startswith("payments-prod is Degraded on prod-eu-1\n\nDegraded on prod-eu-1, an hour after 2.5.0 "
                           "replaced 2.4.0\n")
    assert "Open in portal: http://127.0.0.1:8000/services/payments\n" in text
    assert f"Synced commit: https://github.com/acme/gitops/commit/{SHA}\n" in text
    assert "Message: <script>alert(1)</script> rollout stuck" in text  # plain text is not HTML
    [(html, mimetype)] = message.alternatives
    assert mimetype == "text/html"
    assert '<a href="http://127.0.0.1:8000/services/payments"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert Delivery.objects.get().status == "sent"


def test_a_real_smtp_server_receives_a_multipart_message(email_rule, degraded):
    with SmtpReceiver() as smtp, override_settings(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1", EMAIL_PORT=smtp.port,
        EMAIL_USE_TLS=False, EMAIL_USE_SSL=False, EMAIL_HOST_USER="", EMAIL_HOST_PASSWORD="",
        DEFAULT_FROM_EMAIL="portal@example.com",
    ):
        assert scan_and_send(T0 + timedelta(minutes=10)).sent == 1
    [message] = smtp.messages
    assert smtp.mailbox.envelopes == [("portal@example.com", ["oncall@example.com", "sre@example.com"])]
    assert message["Subject"] == "[prod] payments-prod is Degraded on prod-eu-1"
    assert message.get_content_type() == "multipart/alternative"
    parts = {part.get_content_type(): part.get_payload(decode=True).decode() for part in message.get_payload()}
    assert set(parts) == {"text/plain", "text/html"}
    assert "Degraded on prod-eu-1, an hour after 2.5.0 replaced 2.4.0" in parts["text/plain"]
    assert '<a href="http://127.0.0.1:8000/services/payments"' in parts["text/html"]


def test_recipients_refused_with_5xx_is_permanent(email_rule, degraded):
    with SmtpReceiver(reject_recipients=True) as smtp, override_settings(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1", EMAIL_PORT=smtp.port,
        EMAIL_USE_TLS=False, EMAIL_USE_SSL=False, EMAIL_HOST_USER="", EMAIL_HOST_PASSWORD="",
    ):
        assert scan_and_send(T0 + timedelta(minutes=10)).failed == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error, delivery.last_error_permanent) == (
        "failed", "SMTP refused every recipient (550, 550)", True)
    assert smtp.messages == []


def test_no_smtp_server_is_transient(email_rule, degraded):
    with SmtpReceiver() as gone:
        port = gone.port
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1",
                           EMAIL_PORT=port, EMAIL_USE_TLS=False, EMAIL_USE_SSL=False):
        assert scan_and_send(T0 + timedelta(minutes=10)).retrying == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error, delivery.last_error_permanent) == (
        "pending", "SMTP failed: Connection refused", False)
