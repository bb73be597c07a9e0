"""The Celery app: configured from Django settings (CELERY_*, beat schedule and queues included),
tasks autodiscovered from every installed app's `tasks` module.

It also keeps the *claims* on queued work, so that periodic fan-outs never queue a piece of
work (a cluster's poll, a repository's pins) that is already waiting or running: the fan-out
takes a claim with an expiry before it queues, the task gives it back when it ends. A claim
lives where the broker lives, because only the broker's reach is shared by every producer and
worker: in Redis next to the queues (`SET NX PX`, an atomic take) when the broker is Redis,
and in files beside the filesystem broker's folders (one machine, `flock` makes take atomic)
in the embedded run. Its expiry is the safety net for a worker that died holding it.
"""

from __future__ import annotations

import fcntl
import gc
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun, worker_process_init
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _freeze_startup_objects(**_: object) -> None:
    """What a worker process has loaded before its first task (Django, every app's modules, the
    task registry) lives as long as the process: out of the cycle collector's sight, so a poll
    that allocates a cluster's objects does not make every full collection walk it again (as
    portal.wsgi does for the web's processes)."""
    gc.collect()
    gc.freeze()


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(sender: Task | None = None, **_: object) -> None:
    """A task is to a worker what a request is to the web: before and after it, database
    connections that are past CONN_MAX_AGE, broken, or left in a failed state are closed (Django's
    own request signals do the same), and the next use opens a fresh one. Celery's fixup no longer
    closes them all every task (settings.CELERY_DB_REUSE_MAX). An eager task runs inside its
    caller, whose connection (and transaction) is not the task's to close."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    close_old_connections()


@app.on_after_configure.connect
def _ensure_broker_folders(sender: Celery, **_: object) -> None:
    # kombu's filesystem transport does not create its folders itself.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
    backend = sender.conf.result_backend or ""
    if backend.startswith("file://"):
        os.makedirs(backend[len("file://") :], exist_ok=True)


# --- claims on queued work ------------------------------------------------------------------


class Claims(Protocol):
    def take(self, key: str, seconds: float) -> str | None:
        """A new claim on `key` for `seconds`: its token, or None while someone else holds it."""

    def extend(self, key: str, token: str, seconds: float) -> bool:
        """Hold the claim `token` for `seconds` from now; False when it is no longer ours."""

    def release(self, key: str, token: str) -> None:
        """Give the claim back (only our own: an expired claim someone else took again stays)."""

    def holder(self, key: str) -> str | None:
        """The token currently holding `key`, if any (for tests and diagnostics)."""


# Compare-and-set on the token, in Redis itself: a claim that expired and was taken again by
# another producer is theirs, never extended or deleted by the late owner.
_EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class RedisClaims:
    """Claims as Redis keys with a TTL, on the broker's own server."""

    PREFIX = "portal:claim:"

    def __init__(self, url: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=10)

    def take(self, key: str, seconds: float) -> str | None:
        token = uuid.uuid4().hex
        taken = self._redis.set(self.PREFIX + key, token, nx=True, px=_millis(seconds))
        return token if taken else None

    def extend(self, key: str, token: str, seconds: float) -> bool:
        return bool(self._redis.eval(_EXTEND, 1, self.PREFIX + key, token, _millis(seconds)))

    def release(self, key: str, token: str) -> None:
        self._redis.eval(_RELEASE, 1, self.PREFIX + key, token)

    def holder(self, key: str) -> str | None:
        value = self._redis.get(self.PREFIX + key)
        return value.decode() if isinstance(value, bytes) else value


class FileClaims:
    """Claims as small files `<token> <expires at>` in one folder, for a broker without a server.

    Every read-and-write happens under an exclusive `flock` of the folder's lock file, so
    producers and workers on the machine (the only ones a filesystem broker has) agree."""

    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self.folder = Path(folder)
        self.clock = clock

    def take(self, key: str, seconds: float) -> str | None:
        token = uuid.uuid4().hex
        with self._locked():
            if self._current(key) is not None:
                return None
            self._write(key, token, seconds)
        return token

    def extend(self, key: str, token: str, seconds: float) -> bool:
        with self._locked():
            if self._current(key) != token:
                return False
            self._write(key, token, seconds)
        return True

    def release(self, key: str, token: str) -> None:
        with self._locked():
            if self._current(key) == token:
                self._path(key).unlink(missing_ok=True)

    def holder(self, key: str) -> str | None:
        with self._locked():
            return self._current(key)

    def _path(self, key: str) -> Path:
        return self.folder / quote(key, safe="")

    def _current(self, key: str) -> str | None:
        try:
            token, expires = self._path(key).read_text().split()
        except (FileNotFoundError, ValueError):
            return None
        return token if float(expires) > self.clock() else None

    def _write(self, key: str, token: str, seconds: float) -> None:
        self._path(key).write_text(f"{token} {self.clock() + seconds}")

    def _locked(self) -> _FolderLock:
        return _FolderLock(self.folder)


class _FolderLock:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._fd = -1

    def __enter__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


_claims: dict[str, Claims] = {}


def claims() -> Claims:
    """The claim store of the configured broker (one client per process and broker URL)."""
    from django.conf import settings

    broker = app.conf.broker_url or ""
    where = broker if broker.startswith(("redis://", "rediss://")) else str(Path(settings.VAR_DIR) / "claims")
    if where not in _claims:
        _claims[where] = RedisClaims(where) if where.startswith("redis") else FileClaims(Path(where))
    return _claims[where]


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000))
