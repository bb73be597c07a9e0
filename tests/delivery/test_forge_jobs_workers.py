"""The pull request job with real processes as production runs them: `celery worker -Q forge` and
`celery beat` (the reconciler) on Redis and PostgreSQL, the GitHub fake on 127.0.0.1.

- A worker SIGKILLed (its whole process group, as an OOM kill or a node loss does) after the
  branch, and after the pull request: a new worker's run, queued by the reconciler once the lease
  passed, continues or adopts; one branch, one pull request, the page says "opened"/"linked".
- A secondary rate limit (GitHub's 403 with `retry-after`): the page says until when it waits,
  then the pull request opens; no request of the page's takes 2 s.
The lease and reconciler period are shortened (3 s, 2 s) and the limit's wait is 8 s, not 120 s:
the mechanism is the same, only the clock shorter."""

from __future__ import annotations

import html
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from portal.delivery import forge_jobs
from portal.delivery.models import PullRequest
from tests.dburl import database_url
from tests.fakes.forges.base import Hold
from tests.fakes.forges.github import secondary_rate_limit
from tests.fakes.forges.harness import BRANCH, PR_CREATE, Harness, serving
from tests.fixtures.celery_state import production_broker_url

ROOT = Path(__file__).resolve().parents[2]
LEASE, RECONCILE = 3, 2
SETTLE = 60  # seconds within which a killed job must be resolved (lease + period + a run, many times over)

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def broker() -> Iterator[object]:
    url = production_broker_url()
    import redis

    client = redis.Redis.from_url(url)
    _clear(client)
    yield client
    _clear(client)


def _clear(client: object) -> None:
    for pattern in ("forge*", "unacked*", "_kombu*", "portal:claim:*"):
        for key in client.scan_iter(pattern):  # type: ignore[attr-defined]
            client.delete(key)  # type: ignore[attr-defined]


@pytest.fixture
def github(monkeypatch, broker) -> Iterator[Harness]:
    with serving("github", monkeypatch) as harness:
        monkeypatch.setattr(settings, "PORTAL_BRANCH_PREFIX", "portal/")
        yield harness


class Processes:
    """Worker and beat processes, each in its own process group (killed whole, like a pod)."""

    def __init__(self, tmp: Path, harness: Harness) -> None:
        url = os.environ["REDIS_URL"]
        self.tmp = tmp
        self.env = {
            **os.environ,
            **harness.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": url,
            "CELERY_BROKER_URL": url,
            "PORTAL_VAR_DIR": str(tmp),
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "PORTAL_BRANCH_PREFIX": "portal/",
            "PORTAL_FORGE_JOB_LEASE": str(LEASE),
            "PORTAL_FORGE_RECONCILE_INTERVAL": str(RECONCILE),
            "PORTAL_FORGE_JOB_INLINE_WAIT": "1",
        }
        self.env.pop("PORTAL_DEMO", None)
        self.running: list[subprocess.Popen] = []

    def start(self, name: str, *command: str) -> subprocess.Popen:
        log = (self.tmp / f"{name}.log").open("a")
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", *command],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.running.append(process)
        return process

    def worker(self) -> subprocess.Popen:
        return self.start("worker", "worker", "-Q", "forge", "-c", "1", "--loglevel", "INFO")

    def beat(self) -> subprocess.Popen:
        return self.start("beat", "beat", "--loglevel", "INFO", "-s", str(self.tmp / "beat-schedule"))

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + "\n".join(p.read_text().splitlines()[-25:]) for p in sorted(self.tmp.glob("*.log"))
        )


@pytest.fixture
def processes(tmp_path: Path, github: Harness) -> Iterator[Processes]:
    made = Processes(tmp_path, github)
    try:
        yield made
    finally:
        made.stop()


def warmed(client, users) -> None:
    """Logged in, and the page rendered once unmeasured: a fresh test process's first request
    compiles templates and imports views (seconds on a shared 2-core machine), which a served
    portal's warm workers have long done."""
    client.force_login(users["viewer"])
    client.get(reverse("pr-opened-rows") + "?id=0")


def queued(harness: Harness) -> PullRequest:
    """What pr-open does: the row claimed and its job queued, within a request's time."""
    started = time.monotonic()
    [result] = forge_jobs.queue_opens([(harness.change(),)], None)
    assert time.monotonic() - started < 2
    assert result.pull_request is not None, result.message
    return result.pull_request


def page(client, row: PullRequest, slowest: list[float]) -> str:
    started = time.monotonic()
    text = html.unescape(client.get(reverse("pr-opened-rows") + f"?id={row.pk}").content.decode())
    slowest.append(time.monotonic() - started)
    return text


def until(condition, processes: Processes, seconds: float = SETTLE) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s\n{processes.logs()}"
        time.sleep(0.2)  # waiting for a condition, not for time to pass


@pytest.mark.parametrize(
    ("killed_after", "path", "outcome"),
    [
        ("the branch", r"/git/refs$", "opened #1"),
        ("the pull request", PR_CREATE["github"], "linked #1"),
    ],
)
def test_a_worker_killed_while_opening_is_resumed_without_a_second_branch_or_pull_request(
    github: Harness, processes: Processes, client, users, killed_after: str, path: str, outcome: str
) -> None:
    warmed(client, users)
    hold = Hold("POST", path)
    github.server.holds.append(hold)
    processes.beat()
    worker = processes.worker()
    row = queued(github)

    assert hold.reached.wait(timeout=SETTLE), processes.logs()  # the forge applied it; no answer yet
    processes.kill(worker)
    hold.release.set()
    processes.worker()  # the orchestrator's replacement
    slowest: list[float] = []
    until(lambda: outcome in page(client, row, slowest), processes)

    row.refresh_from_db()
    assert (row.state, row.number) == ("open", 1)
    assert [b for b in github.model.branches if b.startswith("portal/")] == [BRANCH]
    assert len(github.model.pulls) == 1
    assert len(github.model.commits_between("main", BRANCH)) == 1
    # Asked of the forge once in all: the run after a kill past it found the pull request instead.
    assert len(github.server.requests_matching("POST", PR_CREATE["github"])) == 1, killed_after
    assert max(slowest) < 2


def test_a_secondary_rate_limit_is_shown_with_its_end_then_the_pull_request_opens(
    github: Harness, processes: Processes, client, users
) -> None:
    warmed(client, users)
    github.server.faults.append(secondary_rate_limit("POST", PR_CREATE["github"], retry_after=8))
    processes.worker()
    row = queued(github)
    slowest: list[float] = []

    until(lambda: "rate limit until" in page(client, row, slowest), processes)
    row.refresh_from_db()
    assert row.waiting_until is not None
    text = page(client, row, slowest)
    assert f"waiting for GitHub's rate limit until {row.waiting_until:%H:%M:%S} UTC" in text
    assert github.model.pulls == []

    until(lambda: "opened #1" in page(client, row, slowest), processes)
    row.refresh_from_db()
    assert row.opened_at is not None
    assert len(github.model.pulls) == 1
    assert [b for b in github.model.branches if b.startswith("portal/")] == [BRANCH]
    assert max(slowest) < 2, max(slowest)
