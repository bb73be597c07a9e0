"""Celery tasks really travel through a broker and come back, with a real worker thread."""

from __future__ import annotations

import os
from queue import Empty

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from kombu import Connection
from kombu.transport import filesystem

from portal import filebroker
from portal.celery import app as portal_app
from portal.kernel.catalog.tasks import ping
from tests.fixtures.celery_state import restored_celery_state


# An embedded worker makes its app the current and default app, writes `include` into the
# config and sets up logging: `celery_state` puts all of it back for the tests that follow.
def test_task_round_trips_through_the_configured_broker(celery_state):
    transport = portal_app.connection_for_write().transport_cls
    if os.environ.get("REDIS_URL"):
        assert transport == "redis", "REDIS_URL is set, so the portal must use Redis"
    else:
        assert transport == "portal.filebroker:Transport"
        assert portal_app.connection_for_write().transport.__class__ is filebroker.Transport
    with start_worker(portal_app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        assert ping.delay("configured").get(timeout=20) == "pong:configured"


def test_task_round_trips_through_the_serverless_broker(tmp_path, celery_state):
    queue = tmp_path / "queue"
    queue.mkdir()
    app = Celery("serverless", broker="filesystem://", backend=f"file://{tmp_path / 'results'}")
    app.conf.broker_transport = "portal.filebroker:Transport"
    (tmp_path / "results").mkdir()
    (tmp_path / "control").mkdir()
    app.conf.broker_transport_options = {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "control_folder": str(tmp_path / "control"),
    }

    @app.task(name="serverless.add")
    def add(a: int, b: int) -> int:
        return a + b

    with start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        assert add.delay(2, 3).get(timeout=20) == 5


def _channel(transport: type, folder) -> filesystem.Channel:
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "control_folder": str(folder)}
    return Connection(transport=transport, transport_options=options).channel()


class _ReadWhileWriting:
    """A file whose write first lets a reader look into the queue folder, as a worker polling
    between a producer's open and its write does."""

    def __init__(self, real, reader):
        self._real, self._reader = real, reader
        self.seen: list[object] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._real.close()

    def write(self, data):
        try:
            self.seen.append(self._reader._get("celery"))
        except Empty:
            self.seen.append(Empty)
        except ValueError as exc:  # kombu's own transport: an empty file taken and decoded
            self.seen.append(exc)
        return self._real.write(data)

    def fileno(self):
        return self._real.fileno()

    def close(self):
        self._real.close()


@pytest.mark.parametrize("transport, whole", [(filebroker.Transport, True), (filesystem.Transport, False)])
def test_a_worker_polling_while_a_message_is_written_never_takes_it_half_written(
    tmp_path, monkeypatch, transport, whole
):
    writer, reader = _channel(transport, tmp_path), _channel(transport, tmp_path)
    spies: list[_ReadWhileWriting] = []
    real_open = open

    def spying_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        if "w" in mode and str(path).startswith(str(tmp_path)):
            spies.append(_ReadWhileWriting(f, reader))
            return spies[-1]
        return f

    monkeypatch.setattr("builtins.open", spying_open)
    writer._put("celery", {"body": "hello"})
    monkeypatch.undo()

    if whole:
        assert [s.seen for s in spies] == [[Empty]]  # nothing to take while it is written
        assert reader._get("celery") == {"body": "hello"}  # and once written, it is there whole
        assert os.listdir(tmp_path) == []
    else:  # the race this transport closes, shown on kombu's own
        assert isinstance(spies[0].seen[0], ValueError)


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
