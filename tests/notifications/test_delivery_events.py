"""Delivery's announcements as rows (portal.delivery.announcements) consumed by notifications
(portal.notifications.delivery_events): each row claimed once, the same fact found again one
episode (and a delivery for a rule made meanwhile), and the words as the facts recorded them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from portal.delivery import announcements
from portal.delivery.deployments import Progress, Waiting
from portal.delivery.models import DeliveryEvent, PullRequest
from portal.delivery.rollbacks import RollbackOffer
from portal.notifications.delivery_events import emit_delivery_events, event_of, not_deployed_event, rollback_event
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Episode, Rule

pytestmark = pytest.mark.django_db


def pull_request(**fields) -> PullRequest:
    now = timezone.now()
    values = dict(kind="upgrade", services=["checkout"], environment="prod", image="ghcr.io/acme/checkout",
                  from_version="1.6.0", to_version="1.7.0", repository="https://github.com/acme/gitops", number=7,
                  branch="portal/checkout-1.7.0-prod", url="https://github.com/acme/gitops/pull/7",
                  title="Update checkout to 1.7.0 in prod", state="open", checks="fail", opened_at=now,
                  checks_failed_notified_at=now - timedelta(minutes=3), forge_kind="github")
    values.update(fields)
    return PullRequest.objects.create(**values)


def rule(name: str, kind: str) -> Rule:
    channel = Channel.objects.create(name=f"{name}-channel", kind=Channel.Kind.WEBHOOK)
    return Rule.objects.create(name=name, kinds=[kind], channel=channel)


def test_a_row_is_claimed_once_and_the_same_fact_found_again_is_one_episode():
    first = rule("ops", EventKind.PR_CHECKS_FAILED)
    pr = pull_request()
    now = timezone.now()
    announcements.checks_failed(pr, now)
    assert emit_delivery_events(now) == 1
    assert emit_delivery_events(now) == 0  # claimed: nothing left
    episode = Episode.objects.get(kind=EventKind.PR_CHECKS_FAILED)
    assert episode.key == announcements.checks_failed_key(pr) == DeliveryEvent.objects.get().key

    later = rule("later", EventKind.PR_CHECKS_FAILED)  # made while the checks still fail
    announcements.checks_failed(pr, now + timedelta(minutes=10))  # the next tracking run finds it again
    assert DeliveryEvent.objects.count() == 1
    assert emit_delivery_events(now + timedelta(minutes=10)) == 1
    assert Episode.objects.filter(kind=EventKind.PR_CHECKS_FAILED).count() == 1
    assert sorted(Delivery.objects.values_list("rule_id", flat=True)) == sorted([first.pk, later.pk])


def test_merged_not_deployed_is_worded_from_where_it_waited_when_recorded():
    pr = pull_request(state="merged", merged_at=timezone.now() - timedelta(hours=2), checks="pass")
    progress = Progress(targets=["prod-eu-1", "prod-us-1"], running=["prod-us-1"],
                        waiting=[Waiting("prod-eu-1", "a sync window holds it")])
    at = timezone.now()
    announcements.merged_not_deployed(pr, progress, at)
    row = DeliveryEvent.objects.select_related("pull_request").get()
    assert announcements.progress_of(row) == progress
    assert event_of(row) == not_deployed_event(pr, progress, at)


def test_a_rollback_offer_comes_back_as_it_was_offered():
    offer = RollbackOffer(app_id=3, app="checkout-prod", cluster="prod-eu-1", environment="prod", service="checkout",
                          current="1.7.0", previous="1.6.0", replaced_at=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
                          failing_since=datetime(2026, 3, 1, 9, 5, tzinfo=UTC), failure="Degraded: deadline")
    announcements.rollback_offered(offer, None, timezone.now())
    row = DeliveryEvent.objects.get()
    assert row.key == offer.event_key
    assert announcements.offer_of(row) == offer
    assert event_of(row) == rollback_event(offer)
