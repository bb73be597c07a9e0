"""Celery tasks really travel through a broker and come back, with a real worker thread."""

from __future__ import annotations

import os

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker

from portal.catalog.tasks import ping
from portal.celery import app as portal_app
from tests.fixtures.celery_state import restored_celery_state


# An embedded worker makes its app the current and default app, writes `include` into the
# config and sets up logging: `celery_state` puts all of it back for the tests that follow.
def test_task_round_trips_through_the_configured_broker(celery_state):
    transport = portal_app.connection_for_write().transport_cls
    if os.environ.get("REDIS_URL"):
        assert transport == "redis", "REDIS_URL is set, so the portal must use Redis"
    else:
        assert transport == "filesystem"
    with start_worker(portal_app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        assert ping.delay("configured").get(timeout=20) == "pong:configured"


def test_task_round_trips_through_the_serverless_broker(tmp_path, celery_state):
    queue = tmp_path / "queue"
    queue.mkdir()
    app = Celery("serverless", broker="filesystem://", backend=f"file://{tmp_path / 'results'}")
    (tmp_path / "results").mkdir()
    (tmp_path / "control").mkdir()
    app.conf.broker_transport_options = {
        "data_folder_in": str(queue), "data_folder_out": str(queue), "control_folder": str(tmp_path / "control"),
    }

    @app.task(name="serverless.add")
    def add(a: int, b: int) -> int:
        return a + b

    with start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        assert add.delay(2, 3).get(timeout=20) == 5


def test_config_set_in_a_test_is_taken_back_so_django_settings_apply_again(settings):
    with restored_celery_state():
        portal_app.conf.task_always_eager = True
        portal_app.conf.task_always_eager = False  # "restoring" by assignment still shadows the setting
    assert "task_always_eager" not in portal_app.conf.changes
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert portal_app.conf.task_always_eager is True
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert portal_app.conf.task_always_eager is False


def test_eager_celery_runs_tasks_in_process_and_leaves_nothing_behind(eager_celery):
    assert portal_app.conf.task_always_eager is True
    assert ping.delay("eager").get() == "pong:eager"


@pytest.mark.redis
def test_redis_broker_is_reachable_when_configured():
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL not set: the serverless broker test above covers this run")
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5)
    assert client.ping() is True  # fails (not skips) when REDIS_URL names an unreachable server
