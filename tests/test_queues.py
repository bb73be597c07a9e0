"""Queues and routing: every task lands on its queue, periodic tasks expire before their next
tick, the worker command lines keep polls apart from forge work, and (with the real worker
processes of docker-compose.yml on Redis) a forge backlog of 10,000 tasks does not delay a poll.
What was queued is read from kombu's in-memory transport (`memory_broker`,
tests/fixtures/celery_state.py): a real broker round trip without a server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from portal.celery import app
from portal.embedded import worker_commands
from tests.dburl import database_url
from tests.fixtures.celery_state import MemoryBroker, production_broker_url

ROOT = Path(__file__).resolve().parents[1]
QUEUES = {"poll", "forge", "registry", "notify"}


# --- routing and expiry ---------------------------------------------------------------------


def queue_of(task: str) -> str:
    return app.amqp.router.route({}, task)["queue"].name


@pytest.fixture(autouse=True)
def _tasks_registered() -> None:
    app.loader.import_default_modules()  # what a worker does at start: every app's `tasks` module


def test_the_declared_queues_are_poll_forge_registry_and_notify():
    assert {queue.name for queue in app.conf.task_queues} == QUEUES
    assert app.conf.task_default_queue in QUEUES
    # Bound each to its own exchange and key: a message sent to one queue reaches no other.
    bindings = {(q.exchange.name, q.routing_key) for q in app.amqp.queues.values()}
    assert bindings == {(name, name) for name in QUEUES}


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("gitops.poll_all", "poll"),
        ("gitops.poll_cluster", "poll"),
        ("gitops.refresh_sync_windows", "poll"),
        ("delivery.read_due_git_pins", "forge"),
        ("delivery.read_repository_pins", "forge"),
        ("delivery.track_pull_requests", "forge"),
        ("delivery.open_automatic_prs", "forge"),
        ("releases.poll_all_registries", "registry"),
        ("releases.poll_registry", "registry"),
        ("notifications.send_due", "notify"),
        ("delivery.track_deployments", "notify"),
        ("delivery.refresh_placements", "notify"),
    ],
)
def test_each_task_is_routed_to_its_queue(task: str, queue: str):
    assert task in app.tasks, f"{task} is not a registered task"
    assert queue_of(task) == queue


def test_every_registered_portal_task_goes_to_a_declared_queue():
    names = [name for name in app.tasks if not name.startswith("celery.")]
    assert names
    assert {name: queue_of(name) for name in names if queue_of(name) not in QUEUES} == {}


def test_no_task_keeps_its_result_but_the_round_trip_check():
    """Nothing reads a poll's or a pin read's return value back; kept, 500 clusters polled
    every minute would leave 720,000 results a day in the result backend."""
    names = [name for name in app.tasks if not name.startswith("celery.")]
    assert {name for name in names if not app.tasks[name].ignore_result} == {"portal.ping"}


def test_every_periodic_task_expires_before_its_next_tick():
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        expires = entry.get("options", {}).get("expires")
        assert expires is not None and 0 < expires < entry["schedule"], name
        assert queue_of(entry["task"]) in QUEUES, name


def test_beat_publishes_each_periodic_task_on_its_queue_with_its_expiry(memory_broker: MemoryBroker):
    from celery.beat import Scheduler

    scheduler = Scheduler(app, lazy=True)  # beat's own publishing code, without its schedule file
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        scheduler.apply_async(scheduler.Entry(name=name, app=app, **entry), advance=False)

    queued = {queue: memory_broker.take(queue) for queue in sorted(QUEUES)}
    published = {q.task: (queue, q.expires) for queue, messages in queued.items() for q in messages}
    assert set(published) == {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        queue, expires = published[entry["task"]]
        assert queue == queue_of(entry["task"]) and expires is not None, entry["task"]


# --- the worker command lines ---------------------------------------------------------------


def consumed(command: list[str]) -> set[str]:
    flag = "--queues" if "--queues" in command else "-Q"
    assert flag in command, f"a worker that names no queues consumes only the default one: {command}"
    return set(command[command.index(flag) + 1].split(","))


def compose_workers() -> dict[str, list[str]]:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    worker = ["celery", "-A", "portal", "worker"]
    return {name: spec["command"] for name, spec in services.items() if spec.get("command", [])[:4] == worker}


@pytest.mark.parametrize("source", ["docker-compose.yml", "portal/embedded.py"])
def test_polls_have_a_worker_of_their_own_and_every_queue_is_consumed(source: str):
    commands = list(compose_workers().values()) if source == "docker-compose.yml" else worker_commands()
    queues = [consumed(command) for command in commands]
    assert {"poll"} in queues, "polls must not share worker processes with forge work"
    assert set().union(*queues) == QUEUES
    background = next(command for command in commands if "forge" in consumed(command))
    order = background[background.index("--queues") + 1].split(",")
    assert order.index("notify") < order.index("forge")  # asked in this order (priority strategy)


def test_redis_asks_queues_in_the_order_given_and_takes_one_message_per_free_process():
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    if not settings.BROKER_IS_REDIS:
        pytest.skip("the serverless broker orders nothing: the separate poll worker is the guarantee")
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["queue_order_strategy"] == "priority"
    assert settings.CELERY_WORKER_DISABLE_PREFETCH is True


# --- the real workers: a forge backlog does not delay a poll --------------------------------

BACKLOG = 10_000


def _copy_message(broker: Any, queue: str, copies: int) -> None:
    """`copies` more of the one message on `queue`, as kombu's Redis transport holds them (a
    JSON envelope pushed on the queue's list), each with a task id and delivery tag of its own."""
    (only,) = broker.lrange(queue, 0, -1)
    envelope = json.loads(only)
    pipeline = broker.pipeline(transaction=False)
    for _ in range(copies):
        task_id = str(uuid.uuid4())
        envelope["headers"]["id"] = envelope["headers"]["root_id"] = task_id
        envelope["properties"]["correlation_id"] = task_id
        envelope["properties"]["delivery_tag"] = str(uuid.uuid4())
        pipeline.lpush(queue, json.dumps(envelope))
    pipeline.execute()


def _clear_queues(broker: Any) -> None:
    """The portal's queues (each priority step's list too), unacked messages and claims."""
    patterns = [*(f"{queue}*" for queue in QUEUES), "unacked*", "portal:claim:*"]
    for pattern in patterns:
        for key in broker.scan_iter(pattern):
            broker.delete(key)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_forge_backlog_of_ten_thousand_tasks_does_not_delay_a_poll(tmp_path: Path):
    url = production_broker_url()
    import redis

    from gitops.tasks import poll_cluster
    from portal.delivery.tasks import read_repository_pins
    from portal.kernel.catalog.models import Cluster, Environment
    from portal.kernel.catalog.tasks import ping

    broker = redis.Redis.from_url(url)
    _clear_queues(broker)  # no message or claim from an earlier run
    cluster = Cluster.objects.create(
        name="dev-eu-1", environment=Environment.objects.create(name="dev", order=0),
        connection=Cluster.Connection.MANIFESTS, manifests_path=str(ROOT / "examples" / "clusters" / "dev-eu-1"),
    )
    # The backlog first, then the poll: a worker taking messages first in, first out would
    # run all 10,000 forge tasks before it. One forge task is sent as the portal sends it (its
    # routing lands it on "forge"); the rest are copies of its message, each with its own task
    # id and delivery tag, pushed in one pipeline (sending 10,000 took 10 s of the busy suite's CPU).
    with app.producer_or_acquire() as producer:
        read_repository_pins.apply_async(("https://github.com/acme/gitops.git", "main", []), producer=producer)
        _copy_message(broker, "forge", BACKLOG - 1)
        poll_cluster.apply_async((cluster.pk,), producer=producer)
        notified = ping.apply_async(("after the backlog",), producer=producer)  # the notify queue
    assert (broker.llen("forge"), broker.llen("poll"), broker.llen("notify")) == (BACKLOG, 1, 1)

    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": url, "CELERY_BROKER_URL": url,
           "PORTAL_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "portal.settings"}
    env.pop("PORTAL_DEMO", None)
    logs = {name: tmp_path / f"{name}.log" for name in compose_workers()}
    workers = [
        subprocess.Popen([sys.executable, "-m", "celery", *command[1:]], cwd=ROOT, env=env,
                         stdout=logs[name].open("w"), stderr=subprocess.STDOUT)
        for name, command in compose_workers().items()
    ]

    def tails() -> str:
        return "\n".join(f"--- {name}\n" + "\n".join(log.read_text().splitlines()[-15:]) for name, log in logs.items())
    left: dict[str, int] = {}  # forge tasks still queued when each one finished
    try:
        deadline = time.monotonic() + 120
        while len(left) < 2:
            assert time.monotonic() < deadline, f"only {sorted(left)} ran within two minutes\n{tails()}"
            assert all(w.poll() is None for w in workers), f"a worker exited\n{tails()}"
            if "poll" not in left and Cluster.objects.filter(pk=cluster.pk, poll__last_poll_at__isnull=False).exists():
                left["poll"] = broker.llen("forge")
            if "notify" not in left and notified.ready():
                left["notify"] = broker.llen("forge")
            time.sleep(0.05)  # waiting for a condition, not for time to pass
    finally:
        for worker in workers:
            _stop(worker)
        _clear_queues(broker)

    cluster.refresh_from_db()
    assert cluster.poll.last_ok_at is not None, cluster.poll.last_error
    assert notified.get(timeout=5) == "pong:after the backlog"
    done = {task: BACKLOG - queued for task, queued in left.items()}
    # FIFO would have finished every forge task first; the poll and the notification each went
    # ahead of most of them (the poll in its own worker, the notification by queue order).
    assert done["poll"] < BACKLOG // 2 and done["notify"] < BACKLOG // 2, f"forge tasks run before: {done}"
