"""A cluster whose poll is queued or running is not queued again (gitops.tasks.poll_all), through
a real broker (kombu's in-memory transport) and a real poll held in flight by the Kubernetes API
emulator; and the claims behind it (portal.celery), on files and on Redis."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from gitops import kinds
from gitops.models import ClusterPoll
from gitops.tasks import poll_all, poll_claim_key, poll_cluster, queued_seconds
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster
from portal.kernel.claims import Claims, FileClaims, RedisClaims, claims
from tests.fakes.kube_emulator import Fault
from tests.fixtures.celery_state import MemoryBroker
from tests.gitops.test_poll import demo_objects

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"


@pytest.fixture
def fleet(db):
    """The demo fleet: clusters read from manifest folders."""
    load_fleet(ROOT / "examples" / "fleet.yaml")


@pytest.fixture
def api_cluster(fleet, kube_emulator, monkeypatch):
    """prod-eu-1 of the demo fleet, served by the Kubernetes API emulator (URL + token)."""
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.get(name="prod-eu-1")

# --- the claims ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_600_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["files", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Claims]:
    if request.param == "files":
        yield FileClaims(tmp_path / "claims")
        return
    request.applymarker(pytest.mark.redis)
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL not set: the file claims above cover this run")
    redis_claims = RedisClaims(url)
    yield redis_claims
    for key in redis_claims._redis.scan_iter(RedisClaims.PREFIX + "test:*"):
        redis_claims._redis.delete(key)


def test_a_claim_is_taken_once_until_released(store: Claims):
    token = store.take("test:poll:1", 60)
    assert token is not None
    assert store.take("test:poll:1", 60) is None
    assert store.holder("test:poll:1") == token
    assert store.take("test:poll:2", 60) is not None  # another cluster is another claim

    store.release("test:poll:1", "someone-else")
    assert store.take("test:poll:1", 60) is None  # only the holder gives it back
    store.release("test:poll:1", token)
    assert store.holder("test:poll:1") is None
    assert store.take("test:poll:1", 60) is not None


def test_only_the_holder_extends_a_claim(store: Claims):
    token = store.take("test:poll:3", 60)
    assert token is not None
    assert store.extend("test:poll:3", token, 300) is True
    assert store.extend("test:poll:3", "someone-else", 300) is False
    store.release("test:poll:3", token)
    assert store.extend("test:poll:3", token, 300) is False  # released: no longer ours


def test_a_file_claim_expires_and_then_belongs_to_whoever_takes_it_next(tmp_path: Path):
    clock = Clock()
    store = FileClaims(tmp_path / "claims", clock=clock)
    first = store.take("poll:7", 54)
    clock.now += 53
    assert store.take("poll:7", 54) is None
    clock.now += 2  # a worker died holding it: the expiry frees it
    second = store.take("poll:7", 54)
    assert second is not None and second != first
    assert store.extend("poll:7", first, 300) is False  # the late owner cannot take it back
    store.release("poll:7", first)
    assert store.holder("poll:7") == second


@pytest.mark.redis
def test_a_redis_claim_carries_its_expiry_in_redis():
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL not set")
    store = RedisClaims(url)
    token = store.take("test:poll:ttl", 54)
    try:
        ttl = store._redis.pttl(RedisClaims.PREFIX + "test:poll:ttl")
        assert 53_000 < ttl <= 54_000
        assert store.extend("test:poll:ttl", token or "", 300)
        assert store._redis.pttl(RedisClaims.PREFIX + "test:poll:ttl") > 299_000
    finally:
        store.release("test:poll:ttl", token or "")


# --- poll_all ----------------------------------------------------------------------------------


def polls_of(queued: list, cluster_id: int) -> list:
    return [q for q in queued if q.task == "gitops.poll_cluster" and q.args == [cluster_id]]


@pytest.mark.django_db(transaction=True)
def test_poll_all_twice_while_a_poll_is_queued_or_running_queues_it_once(
    memory_broker: MemoryBroker, api_cluster: Cluster, kube_emulator, monkeypatch
):
    others = list(Cluster.objects.filter(enabled=True).exclude(connection=Cluster.Connection.NONE)
                  .exclude(pk=api_cluster.pk).values_list("pk", flat=True))
    before = timezone.now()

    assert poll_all() == 1 + len(others)
    assert poll_all() == 0  # every cluster is still queued
    queued = memory_broker.take("poll")
    assert len(polls_of(queued, api_cluster.pk)) == 1
    assert sorted(q.args[0] for q in queued) == sorted([api_cluster.pk, *others])
    # The message expires with its claim, before the next tick: under a backlog the next tick
    # replaces it instead of adding one.
    (message,) = polls_of(queued, api_cluster.pk)
    expires = datetime.fromisoformat(message.expires)
    assert before < expires <= timezone.now() + timedelta(seconds=queued_seconds())

    # The queued poll starts and is held mid-read by the API server: it is running.
    release = threading.Event()
    fault = kube_emulator.fail(kinds.kinds_for(kinds.ARGOCD)[0], Fault.delay(release, times=1))
    results: list[dict] = []

    def worker() -> None:
        try:
            results.append(poll_cluster.apply(args=message.args, kwargs=message.kwargs).get())
        finally:
            connection.close()  # this thread's own database connection

    running = threading.Thread(target=worker)
    running.start()
    try:
        assert fault.reached.wait(30), "the poll never reached the API server"
        claims().release(poll_claim_key(api_cluster.pk), "not-the-holder")  # a stray release changes nothing
        assert poll_all() == 0 and poll_all() == 0
        assert polls_of(memory_broker.take("poll"), api_cluster.pk) == []
    finally:
        release.set()
        running.join(60)
    assert results and results[0]["ok"], results

    # Polled: its claim is given back, the next tick queues it again (and only it).
    assert poll_all() == 1
    assert [q.args for q in memory_broker.take("poll")] == [[api_cluster.pk]]


@pytest.mark.django_db(transaction=True)
def test_poll_all_queues_every_cluster_the_portal_reads_and_no_other(memory_broker: MemoryBroker, fleet):
    Cluster.objects.filter(name="prod-eu-1").update(enabled=False)
    queued = {q.args[0] for q in memory_broker.take("poll")} if poll_all() else set()
    names = set(Cluster.objects.filter(pk__in=queued).values_list("name", flat=True))
    # prod-sa-1 is read through the hub's Argo CD only (connection "none"); prod-eu-1 is turned off.
    assert "prod-sa-1" not in names and "prod-eu-1" not in names
    assert names == set(Cluster.objects.filter(enabled=True).exclude(connection=Cluster.Connection.NONE)
                        .values_list("name", flat=True))


@pytest.mark.django_db(transaction=True)
def test_poll_all_queues_the_longest_unread_clusters_first(memory_broker: MemoryBroker, fleet):
    """Under a backlog the polls a tick could not start expire and the next tick queues them all
    again: the clusters read longest ago go first, so none is starved by a fixed order."""
    readable = Cluster.objects.filter(enabled=True).exclude(connection=Cluster.Connection.NONE).order_by("id")
    ids = list(readable.values_list("pk", flat=True))
    assert len(ids) >= 3
    now = timezone.now()
    never, *polled = ids[::-1]  # the highest id has never been read; the others were, lowest id last
    for minutes, pk in enumerate(polled):
        ClusterPoll.objects.update_or_create(cluster_id=pk,
                                             defaults={"last_poll_at": now - timedelta(minutes=10 + minutes)})
    ClusterPoll.objects.filter(pk=never).delete()  # never polled: no row

    assert poll_all() == len(ids)
    assert [q.args[0] for q in memory_broker.take("poll")] == [never, *reversed(polled)]


def test_a_claim_left_by_a_dead_worker_expires_and_the_cluster_is_queued_again(
    memory_broker: MemoryBroker, fleet, settings
):
    cluster = Cluster.objects.get(name="prod-eu-1")
    store = claims()
    assert isinstance(store, FileClaims)
    clock = Clock()
    store.clock = clock
    try:
        assert poll_all() > 0
        memory_broker.take("poll")  # taken by a worker that then died: nothing gives the claim back
        assert poll_all() == 0
        clock.now += queued_seconds() + 1
        assert poll_all() > 0
        assert len(polls_of(memory_broker.take("poll"), cluster.pk)) == 1
    finally:
        store.clock = FileClaims(store.folder).clock


@pytest.mark.django_db
def test_a_poll_queued_without_a_claim_still_polls(fleet, settings, tmp_path: Path):
    """"Poll now" on /clusters queues a bare poll: it runs (the poll's own lock keeps it single)."""
    settings.VAR_DIR = tmp_path
    cluster = Cluster.objects.get(name="dev-eu-1")
    report = poll_cluster.apply(args=(cluster.pk,)).get()
    assert report["cluster"] == "dev-eu-1"
    assert claims().holder(poll_claim_key(cluster.pk)) is None
