"""Claims on queued work, so that periodic fan-outs never queue a piece of work (a cluster's
poll, a repository's pins) that is already waiting or running.

The fan-out takes a claim with an expiry before it queues, the task gives it back when it ends.
A claim lives where the broker lives, because only the broker's reach is shared by every
producer and worker: in Redis next to the queues (`SET NX PX`, an atomic take) when the broker
is Redis, and in files beside the filesystem broker's folders (one machine, `flock` makes take
atomic) in the embedded run. Its expiry is the safety net for a worker that died holding it.
"""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import quote


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
    from celery import current_app
    from django.conf import settings

    # The running Celery app's own view of its broker (Django's setting, unless a test or the
    # embedded runner assigned another on the app's config).
    broker = current_app.conf.broker_url or ""
    where = broker if broker.startswith(("redis://", "rediss://")) else str(Path(settings.VAR_DIR) / "claims")
    if where not in _claims:
        _claims[where] = RedisClaims(where) if where.startswith("redis") else FileClaims(Path(where))
    return _claims[where]


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000))
