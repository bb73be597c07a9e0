"""Exactly once per episode and rule: four workers scanning the same flapping episode at the
same clock ticks, a transient failure retried, and a worker that died after claiming."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from gitops.models import StateChange
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Episode, Rule
from portal.notifications.senders import LEASE, claim, deliver_pending, scan_and_send
from portal.notifications.statechanges import emit_gitops_events
from tests.fakes.receivers import HttpReceiver
from tests.fixtures.fleet import make_catalog
from tests.notifications.store_rows import seeded

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
WORKERS = 4
# (minutes after T0, new health): the app flaps but never gets back to healthy.
FLAPS = {13: "Progressing", 14: "Degraded", 15: "Progressing", 16: "Degraded"}


def flap(app_id: int, minute: int) -> None:
    from gitops.models import GitOpsApp

    health = FLAPS.get(minute)
    if health is None:
        return
    app = GitOpsApp.objects.get(pk=app_id)
    at = T0 + timedelta(minutes=minute)
    StateChange.objects.create(cluster_id=app.cluster_id, app=app, object_key=f"argo/Application/argocd/{app.name}",
                               field="health", old=app.health_status, new=health, at=at)
    app.health_status, app.health_since = health, at
    app.save(update_fields=["health_status", "health_since"])


@pytest.mark.django_db(transaction=True)
def test_four_workers_over_a_flapping_episode_deliver_once_per_rule():
    catalog = make_catalog()
    with HttpReceiver() as receiver:
        # The webhook answers 500 first: its delivery is retried on a later tick, by whichever worker.
        receiver.respond(500, path="/hook")
        slack = Channel.objects.create(name="slack", kind=Channel.Kind.SLACK, url=receiver.url("/slack"))
        hook = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/hook"), secret="k")
        Rule.objects.create(name="to slack", kinds=[EventKind.APP_ATTENTION], channel=slack)
        Rule.objects.create(name="to hook", kinds=[EventKind.APP_ATTENTION], channel=hook,
                            environment=catalog.prod)
        app = seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded", now=T0,
                     since=timedelta(0), first_seen=T0 - timedelta(days=1))
        upcoming = iter(range(10, 18))
        now = {"minute": 0}

        def next_tick() -> None:
            # Runs once per tick, when every worker has finished the previous one: the clock
            # moves and the app may flap.
            now["minute"] = next(upcoming)
            flap(app.id, now["minute"])

        barrier = threading.Barrier(WORKERS, action=next_tick)
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                for _ in range(8):
                    barrier.wait()
                    scan_and_send(T0 + timedelta(minutes=now["minute"]))
            except BaseException as exc:  # reported below: a worker's failure must fail the test
                errors.append(exc)
                barrier.abort()
            finally:
                connection.close()

        threads = [threading.Thread(target=worker, name=f"worker-{i}") for i in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        paths = Counter(r.path for r in receiver.requests)

    assert Episode.objects.count() == 1
    assert Episode.objects.get().started_at == T0
    assert paths == {"/slack": 1, "/hook": 2}  # one message each; the webhook's first answer was a 500
    deliveries = {d.rule.name: d for d in Delivery.objects.select_related("rule")}
    assert {name: (d.status, d.attempts) for name, d in deliveries.items()} == {
        "to slack": ("sent", 1),
        "to hook": ("sent", 2),
    }


@pytest.mark.django_db
def test_a_worker_that_died_after_claiming_is_replaced_once_the_lease_ends():
    catalog = make_catalog()
    with HttpReceiver() as receiver:
        channel = Channel.objects.create(name="slack", kind=Channel.Kind.SLACK, url=receiver.url("/slack"))
        Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
        seeded(catalog.prod_eu, "payments-prod", health="Degraded", now=T0, since=timedelta(0), first_seen=T0)
        at = T0 + timedelta(minutes=10)
        emit_gitops_events(at)
        delivery = Delivery.objects.get()
        assert delivery.status == "pending"  # the row exists before anything is sent
        assert claim(delivery.pk, at)  # a worker claims it... and crashes before sending

        assert not claim(delivery.pk, at + timedelta(minutes=1))  # held: nobody else may send
        assert scan_and_send(at + timedelta(minutes=1)).sent == 0
        assert receiver.requests == []

        after_lease = at + LEASE + timedelta(seconds=1)
        assert deliver_pending(after_lease).sent == 1
        assert deliver_pending(after_lease + timedelta(minutes=1)).sent == 0
        assert len(receiver.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("sent", 2)


@pytest.mark.django_db
def test_the_database_refuses_a_second_delivery_for_the_same_episode_and_rule():
    from django.db import IntegrityError, transaction

    catalog = make_catalog()
    channel = Channel.objects.create(name="slack", kind=Channel.Kind.SLACK, url="http://127.0.0.1:9/x")
    Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seeded(catalog.prod_eu, "payments-prod", health="Degraded", now=T0, since=timedelta(0), first_seen=T0)
    emit_gitops_events(T0 + timedelta(minutes=10))
    delivery = Delivery.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Delivery.objects.create(episode=delivery.episode, rule=delivery.rule, channel=channel, created_at=T0,
                                next_attempt_at=T0)
