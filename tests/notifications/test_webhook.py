"""Generic webhook: the event as JSON, signed with HMAC-SHA256 over the body, with a timestamp
header the body repeats; a receiver verifies it with the per-channel secret."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from portal.notifications.channels import Webhook
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Episode, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.receivers import HttpReceiver
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SECRET = "whsec-0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def verify(secret: str, headers: dict[str, str], body: bytes, now: int, tolerance: int = 300) -> dict:
    """What a receiver does: check the signature, then that the signed timestamp is fresh."""
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, headers["X-Portal-Signature"]):
        raise ValueError("bad signature")
    payload = json.loads(body)
    if str(payload["timestamp"]) != headers["X-Portal-Timestamp"] or abs(now - payload["timestamp"]) > tolerance:
        raise ValueError("stale or mismatched timestamp")
    return payload


@pytest.fixture
def receiver():
    with HttpReceiver() as server:
        yield server


def test_the_body_is_the_event_and_the_signature_verifies(receiver, catalog, caplog):
    caplog.set_level(logging.DEBUG)
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/portal-events"),
                                     secret=SECRET)
    Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seeded(catalog.prod_us, "payments-prod", service=catalog.payments, health="Degraded", now=T0,
           since=timedelta(0), first_seen=T0 - timedelta(days=1))
    at = T0 + timedelta(minutes=10)
    scan_and_send(at)
    [request] = receiver.requests
    assert request.headers["X-Portal-Event"] == "app_attention"
    assert request.headers["X-Portal-Timestamp"] == str(int(at.timestamp()))

    payload = verify(SECRET, request.headers, request.body, now=int(at.timestamp()))
    assert payload["event"] == Episode.objects.get().payload
    assert payload["event"]["kind"] == "app_attention"
    assert payload["event"]["title"] == "payments-prod is Degraded on prod-us-1"
    assert payload["event"]["action_url"] == "http://127.0.0.1:8000/services/payments"
    assert payload["event"]["details"]["app"]["health_status"] == "Degraded"

    with pytest.raises(ValueError, match="bad signature"):
        verify("another-secret", request.headers, request.body, now=int(at.timestamp()))
    tampered = request.body.replace(b"Degraded", b"Healthy")
    with pytest.raises(ValueError, match="bad signature"):
        verify(SECRET, request.headers, tampered, now=int(at.timestamp()))
    with pytest.raises(ValueError, match="stale"):
        verify(SECRET, request.headers, request.body, now=int(at.timestamp()) + 3600)
    assert SECRET not in caplog.text and SECRET.encode() not in request.body


def test_the_timestamp_comes_from_the_clock(receiver):
    channel = Channel(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/x"), secret=SECRET)
    from portal.notifications.senders import sample_event

    fixed = datetime(2030, 1, 1, tzinfo=UTC)
    Webhook(channel, clock=lambda: fixed).notify(sample_event(channel, fixed))
    [request] = receiver.requests
    assert request.headers["X-Portal-Timestamp"] == str(int(fixed.timestamp()))
    assert verify(SECRET, request.headers, request.body, now=int(fixed.timestamp()))["event"]["kind"] == "test"


def test_a_webhook_without_a_secret_fails_permanently(receiver, catalog):
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/x"))
    Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seeded(catalog.prod_us, "payments-prod", health="Degraded", now=T0, since=timedelta(0), first_seen=T0)
    scan_and_send(T0 + timedelta(minutes=10))
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == ("failed", "the channel has no signing secret")
    assert receiver.requests == []


def test_a_response_body_echoing_the_secret_url_is_redacted(receiver, catalog):
    url = receiver.url("/hooks/EchoS3cret")
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=url, secret=SECRET)
    Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seeded(catalog.prod_us, "payments-prod", health="Degraded", now=T0, since=timedelta(0), first_seen=T0)
    transport = Webhook(channel)
    error = transport.error_for(400, f"unknown hook {url} (path /hooks/EchoS3cret)".encode())
    assert error.permanent
    assert "EchoS3cret" not in error.message and error.message.startswith("HTTP 400: unknown hook")
