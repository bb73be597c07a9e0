"""Discord: one embed (title, cause, facts, links in the text), no mentions, posted to a local receiver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.receivers import HttpReceiver
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SHA = "4f1d2c3b5a6978877665544332211aabbccddeef"
HOOK_PATH = "/api/webhooks/1234567890/DiscordT0kenValue"


def test_the_message_is_an_embed_without_mentions(catalog):
    with HttpReceiver() as receiver:
        receiver.respond(204)
        channel = Channel.objects.create(name="ops-discord", kind=Channel.Kind.DISCORD, url=receiver.url(HOOK_PATH))
        Rule.objects.create(name="eu", kinds=[EventKind.APP_ATTENTION], channel=channel, cluster=catalog.prod_eu)
        seeded(catalog.prod_eu, "checkout-prod", service=catalog.checkout, health="Missing", now=T0,
               since=timedelta(0), first_seen=T0 - timedelta(days=1), synced_revision=SHA,
               health_message="@everyone look")
        scan_and_send(T0 + timedelta(minutes=12))
    [request] = receiver.requests
    assert request.path == HOOK_PATH + "?wait=true"  # Discord answers with the message, to edit it later
    portal = "http://127.0.0.1:8000/services/checkout"
    commit = f"https://github.com/acme/gitops/commit/{SHA}"
    assert request.json() == {
        "username": "GitOps portal",
        "allowed_mentions": {"parse": []},
        "embeds": [{
            "title": "checkout-prod is Missing on prod-eu-1",
            "description": f"Missing on prod-eu-1 since 2026-03-02 12:00 UTC\n\n"
                           f"[Open in portal]({portal}) · [Synced commit]({commit})",
            "url": portal,
            "color": 0xD92D20,
            "fields": [
                {"name": "Environment", "value": "prod", "inline": True},
                {"name": "Cluster", "value": "prod-eu-1", "inline": True},
                {"name": "Application", "value": "argocd/checkout-prod", "inline": True},
                {"name": "Sync", "value": "Synced", "inline": True},
                {"name": "Health", "value": "Missing", "inline": True},
                {"name": "Since", "value": "2026-03-02 12:00 UTC", "inline": True},
                {"name": "Services", "value": "checkout", "inline": True},
                {"name": "Synced commit", "value": "4f1d2c3", "inline": True},
                {"name": "Message", "value": "@everyone look", "inline": True},
            ],
            "timestamp": "2026-03-02T12:00:00+00:00",
        }],
    }
    assert Delivery.objects.get().status == "sent"
