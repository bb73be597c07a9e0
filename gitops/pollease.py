"""A poll's lock as a lease: short, renewed from a thread while the poll runs, capped by the poll's
own time limit.

Why a lease and not one long lock: a lock held for the longest a poll may take (five minutes
before) outlives a worker killed mid-poll (SIGKILL, OOM, a node drained) by that long, and the
cluster is not polled meanwhile. Renewed every third of `seconds`, the lock lapses `seconds`
after its worker stopped, whatever killed it, and the next beat tick's poll takes it over
(`ClusterPoll.acquire` records the dead poll as interrupted). The same thread renews the poll's
Redis claim (`gitops.tasks`), so the tick can queue the cluster again as soon as both lapse.

Why capped at the hard time limit plus one lease: a poll never runs past Celery's hard limit (its
process is killed there), so a lock renewed beyond it could only belong to a poll that is stuck
where the limit cannot reach it (the solo pool has no time limits); it lapses anyway.

A thread, because the poll's own thread may sit for many seconds in one list call or one store
transaction, where no code of ours runs. The thread has its own database connection (Django's are
per thread), closed when it stops. A renewal that fails (the database or Redis away for a moment)
is logged and tried again at the next beat; if they keep failing the lease lapses, which is the
safe way round: at worst a second worker polls the cluster, and the store's writes are idempotent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connections
from django.utils import timezone

from gitops.clusterpoll import ClusterPoll

log = logging.getLogger(__name__)

RENEWALS_PER_LEASE = 3


@dataclass(frozen=True)
class Lease:
    """How long a poll's lock lasts unrenewed (`seconds`), the longest it may last in all (`cap`,
    from the poll's start), and what else to renew with it (the Redis claim; False: not ours)."""

    seconds: float
    cap: float
    also: Callable[[], bool] | None = None

    @property
    def every(self) -> float:
        return self.seconds / RENEWALS_PER_LEASE

    def until(self, started: datetime, now: datetime) -> datetime:
        return min(now + timedelta(seconds=self.seconds), started + timedelta(seconds=self.cap))

    @contextmanager
    def kept(self, cluster_id: int, token: str, started: datetime) -> Iterator[Heartbeat]:
        """Renew the lock (and `also`) until the block ends."""
        beat = Heartbeat(self, cluster_id, token, started)
        beat.start()
        try:
            yield beat
        finally:
            beat.stop()


class Heartbeat(threading.Thread):
    def __init__(self, lease: Lease, cluster_id: int, token: str, started: datetime) -> None:
        super().__init__(name=f"poll-lease-{cluster_id}", daemon=True)
        self.lease, self.cluster_id, self.token, self.started = lease, cluster_id, token, started
        self.renewals = 0
        self.lost = False  # the lock lapsed and another poll took it: it is theirs now
        self._stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopped.wait(self.lease.every) and not self.lost:
                self.beat(timezone.now())
        finally:
            connections.close_all()  # this thread's own connections

    def beat(self, now: datetime) -> None:
        """One renewal of the lock and of `also`; a failure is logged, the next beat tries again."""
        try:
            if not ClusterPoll.renew(self.cluster_id, self.token, self.lease.until(self.started, now)):
                self.lost = True
                log.warning("the poll lock of cluster %s was taken over: this poll is presumed dead", self.cluster_id)
                return
            if self.lease.also is not None and not self.lease.also():
                log.warning("the poll claim of cluster %s lapsed before its poll ended", self.cluster_id)
            self.renewals += 1
        except Exception:  # noqa: BLE001 - the database or Redis away: the lease lapses if it lasts
            log.warning(
                "could not renew the poll lease of cluster %s; retrying in %.1f s",
                self.cluster_id,
                self.lease.every,
                exc_info=True,
            )

    def stop(self) -> None:
        self._stopped.set()
        # A renewal under way is one statement with its own timeouts; never wait for it longer
        # than a beat: the poll is over, and an unjoined daemon thread ends with its next check.
        self.join(timeout=self.lease.every)
