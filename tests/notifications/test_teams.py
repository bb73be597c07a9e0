"""Microsoft Teams: an Adaptive Card with Action.OpenUrl buttons, posted to a local receiver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitops.models import VersionChange
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.receivers import HttpReceiver
from tests.notifications.store_rows import seeded

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
OLD = "9a8b7c6d5e4f30211223344556677889900aabbc"
NEW = "4f1d2c3b5a6978877665544332211aabbccddeef"
HOOK_PATH = "/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=TeamsS1gnature"


def test_the_message_is_an_adaptive_card_with_open_url_actions(catalog):
    with HttpReceiver() as receiver:
        channel = Channel.objects.create(name="ops-teams", kind=Channel.Kind.TEAMS, url=receiver.url(HOOK_PATH))
        Rule.objects.create(name="payments", kinds=[EventKind.APP_ATTENTION], channel=channel,
                            service=catalog.payments)
        app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0",
                     sync="OutOfSync", now=T0, since=timedelta(0), first_seen=T0 - timedelta(days=2),
                     synced_revision=NEW, previous_synced_revision=OLD, revision_changed_at=T0)
        VersionChange.objects.create(service=catalog.payments, environment=catalog.prod, cluster=catalog.prod_eu,
                                     app=app, from_version="2.4.0", to_version="2.5.0", at=T0)
        scan_and_send(T0 + timedelta(minutes=10))
    [request] = receiver.requests
    assert request.path == HOOK_PATH
    changes = f"https://github.com/acme/gitops/compare/{OLD}...{NEW}"
    assert request.json() == {
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": None,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "text": "payments-prod is OutOfSync on prod-eu-1", "weight": "Bolder",
                     "size": "Medium", "wrap": True},
                    {"type": "TextBlock", "wrap": True,
                     "text": "Out of sync on prod-eu-1, less than a minute after 2.5.0 replaced 2.4.0"},
                    {"type": "FactSet", "facts": [
                        {"title": "Environment", "value": "prod"},
                        {"title": "Cluster", "value": "prod-eu-1"},
                        {"title": "Application", "value": "argocd/payments-prod"},
                        {"title": "Sync", "value": "OutOfSync"},
                        {"title": "Health", "value": "Healthy"},
                        {"title": "Since", "value": "2026-03-02 12:00 UTC"},
                        {"title": "Services", "value": "payments"},
                        {"title": "Synced commit", "value": "4f1d2c3"},
                    ]},
                ],
                "actions": [
                    {"type": "Action.OpenUrl", "title": "Open in portal",
                     "url": "http://127.0.0.1:8000/services/payments"},
                    {"type": "Action.OpenUrl", "title": "Changes", "url": changes},
                    {"type": "Action.OpenUrl", "title": "Synced commit",
                     "url": f"https://github.com/acme/gitops/commit/{NEW}"},
                ],
            },
        }],
    }
    assert Delivery.objects.get().status == "sent"


def test_a_workflow_that_answers_202_counts_as_sent(catalog):
    with HttpReceiver() as receiver:
        receiver.respond(202)
        channel = Channel.objects.create(name="ops-teams", kind=Channel.Kind.TEAMS, url=receiver.url(HOOK_PATH))
        Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
        seeded(catalog.prod_eu, "payments-prod", health="Degraded", now=T0, since=timedelta(0), first_seen=T0)
        assert scan_and_send(T0 + timedelta(minutes=10)).sent == 1
