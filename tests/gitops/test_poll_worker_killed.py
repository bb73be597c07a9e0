"""A poll worker SIGKILLed mid-poll (issue 37): real `celery -A portal worker -Q poll` processes on
Redis and PostgreSQL, polling a cluster the Kubernetes emulator serves, its Applications list
held open for the one poll that is killed.

Two poll workers run, as in production (one dies, the other goes on). The test ticks `poll_all`
every interval, as beat does. It checks that the cluster is polled again within a lease and one
interval of the kill (the lease: how long a dead worker's lock and claim outlive it), and that
from the kill to the new good poll neither the store nor /clusters ever calls the cluster fresh,
and that they say "poll interrupted" meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops import kinds
from gitops.clusterpoll import INTERRUPTED, OK, POLLING, ClusterPoll
from gitops.polling import poll
from gitops.tasks import poll_all
from portal.kernel.catalog.models import Cluster, Environment
from tests.dburl import database_url
from tests.fakes.kube_emulator import Fault, KubeEmulator
from tests.fixtures.celery_state import production_broker_url
from tests.gitops.test_poll import TOKEN_ENV, demo_objects

ROOT = Path(__file__).resolve().parents[2]
INTERVAL = 3.0  # the poll interval here (beat's tick)
LEASE = 1.5  # PORTAL_POLL_LEASE_SECONDS for the workers
PICKUP = 1.0  # a queued message reaching an idle worker and its poll starting, on a busy 2-core machine
BOOT = 60.0  # the most two workers may take to start on a loaded machine (a failure, not a wait)

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _clear(broker) -> None:
    for pattern in ("poll*", "unacked*", "portal:claim:*", "_kombu*"):
        for key in broker.scan_iter(pattern):
            broker.delete(key)


class Worker:
    """`celery -A portal worker -Q poll` as docker-compose.yml runs it, in a session of its own so
    that SIGKILL takes its prefork child with it, as a killed pod's would go."""

    def __init__(self, name: str, folder: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = folder / f"{name}.log"
        self.heartbeat = folder / f"{name}.heartbeat"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "--loglevel",
            "INFO",
            "--queues",
            "poll",
            "--concurrency",
            "1",
            "--hostname",
            f"{name}@%h",
        ]
        env = {**env, "PORTAL_WORKER_HEARTBEAT_FILE": str(self.heartbeat)}
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
        )

    def ready(self) -> bool:
        return self.heartbeat.exists()  # touched at worker_ready (portal/celery.py)

    def received_a_poll(self) -> bool:
        return any("gitops.poll_cluster" in line and "received" in line for line in self.log.read_text().splitlines())

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return f"--- {self.name}\n" + "\n".join(self.log.read_text().splitlines()[-20:])


@pytest.fixture
def served_cluster(kube_emulator: KubeEmulator, monkeypatch) -> Cluster:
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    return Cluster.objects.create(
        name="prod-eu-1",
        environment=Environment.objects.create(name="prod", order=0),
        connection=Cluster.Connection.API,
        api_url=kube_emulator.url,
        token_env=TOKEN_ENV,
    )


def test_a_poll_worker_killed_mid_poll_is_polled_again_within_an_interval_and_never_fresh_meanwhile(
    served_cluster: Cluster, kube_emulator: KubeEmulator, client, users, tmp_path: Path, settings
):
    url = production_broker_url()
    import redis

    settings.PORTAL_POLL_INTERVAL = INTERVAL  # poll_all's claims and message expiry follow it
    broker = redis.Redis.from_url(url)
    _clear(broker)
    good = poll(served_cluster)  # a good poll first: the cluster reads as fresh before the kill
    assert good.ok, good.error
    before = ClusterPoll.objects.get(pk=served_cluster.pk)
    assert before.state(timezone.now()).kind == OK

    application = next(spec for spec in kinds.KINDS if spec.kind == "Application")
    held = threading.Event()
    stuck = kube_emulator.fail(application, Fault.delay(held, times=1))  # the next poll hangs mid-read
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": url,
        "CELERY_BROKER_URL": url,
        "PORTAL_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PORTAL_POLL_INTERVAL": f"{INTERVAL:g}",
        "PORTAL_POLL_LEASE_SECONDS": f"{LEASE:g}",
        "PORTAL_POLL_TIME_LIMIT": "30",
    }
    env.pop("PORTAL_DEMO", None)
    workers = [Worker("poll-a", tmp_path, env), Worker("poll-b", tmp_path, env)]
    client.force_login(users["viewer"])
    try:
        deadline = time.monotonic() + BOOT
        while not all(worker.ready() for worker in workers):
            assert time.monotonic() < deadline, "\n".join(w.tail() for w in workers)
            assert all(w.process.poll() is None for w in workers), "\n".join(w.tail() for w in workers)
            time.sleep(0.05)  # waiting for a condition

        ticks = Ticks()
        ticks.run_due()  # the first tick queues the poll that will hang
        while not stuck.reached.wait(0.05):
            assert time.monotonic() < deadline, "\n".join(w.tail() for w in workers)
            ticks.run_due()
        # Mid-poll: the lock is taken, the poll under way. Not fresh: its data is the last poll's.
        assert ClusterPoll.objects.get(pk=served_cluster.pk).state(timezone.now()).kind == POLLING
        victim = next(w for w in workers if w.received_a_poll())
        victim.kill()
        killed_at = timezone.now()

        until = killed_at + timedelta(seconds=30)
        seen = watch_until_polled_again(served_cluster, client, ticks, before.last_ok_at, until)
    finally:
        held.set()
        for worker in workers:
            worker.stop()
        _clear(broker)

    after = ClusterPoll.objects.get(pk=served_cluster.pk)
    assert after.last_ok_at is not None and after.last_ok_at == after.poll_started_at
    recovered_in = (after.poll_started_at - killed_at).total_seconds()
    assert 0 < recovered_in <= LEASE + INTERVAL + PICKUP, recovered_in
    assert OK not in seen["store"] and OK not in seen["page"], seen
    assert INTERRUPTED in seen["store"] and INTERRUPTED in seen["page"], seen
    assert after.state(timezone.now()).kind == OK and after.interrupted_at is None


class Ticks:
    """beat's `poll-all-clusters` entry: poll_all every INTERVAL, on a fixed cadence."""

    def __init__(self) -> None:
        self.next = time.monotonic()

    def run_due(self) -> None:
        if time.monotonic() >= self.next:
            poll_all()
            self.next += INTERVAL


def watch_until_polled_again(
    cluster: Cluster, client, ticks: Ticks, last_ok: datetime | None, until: datetime
) -> dict[str, set[str]]:
    """Every state the store and /clusters showed from the kill until a new good poll landed. The
    page is read before the row, so a page read while the row still holds the old good poll was
    rendered before the new one."""
    seen: dict[str, set[str]] = {"store": set(), "page": set()}
    while True:
        assert timezone.now() < until, f"not polled again by {until}: {seen}"
        ticks.run_due()
        html = client.get(reverse("clusters")).content.decode()
        row = ClusterPoll.objects.get(pk=cluster.pk)
        if row.last_ok_at != last_ok:
            return seen
        seen["store"].add(row.state(timezone.now()).kind)
        seen["page"].update(
            state for state in (OK, INTERRUPTED, POLLING, "stale", "never") if f'data-poll-state="{state}"' in html
        )
        time.sleep(0.05)  # waiting for a condition
