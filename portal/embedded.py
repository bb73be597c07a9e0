"""`make run`: the whole portal on one machine with nothing installed but Python.

Migrates, loads the demo fleet, creates the local demo admin, then runs the web
server and two Celery workers (polls with embedded beat; notifications, registry and forge
work) on the serverless filesystem broker, side by side. Ctrl-C (or SIGTERM) stops them all
and waits for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANAGE = [sys.executable, str(ROOT / "manage.py")]


def _step(args: list[str]) -> None:
    subprocess.run(args, check=True, cwd=ROOT)


def worker_commands() -> list[list[str]]:
    """The embedded run's workers, split as in production (docker-compose.yml): polls, with beat,
    in a worker of their own, so a forge backlog never delays a poll; everything else in a
    second one, notifications first. Both read the same serverless broker folder."""
    celery = [sys.executable, "-m", "celery", "-A", "portal", "worker", "--loglevel", "INFO",
              "--without-gossip", "--without-mingle"]
    return [
        [*celery, "--beat", "--queues", "poll", "--concurrency", "2", "--hostname", "poll@%h"],
        [*celery, "--queues", "notify,registry,forge", "--concurrency", "1", "--hostname", "background@%h"],
    ]


def main() -> int:
    os.environ.setdefault("PORTAL_DEMO", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    from django.conf import settings

    address = settings.PORTAL_ADDRESS
    _step([*MANAGE, "migrate", "--noinput", "-v", "0"])
    _step([*MANAGE, "load_demo"])
    _step([*MANAGE, "load_demo_releases"])  # the registries the demo names are out of reach
    # The demo applications' repository: examples/gitops-repo committed into a local bare
    # repository, which previews read through the demo forge (opening PRs stays off).
    _step([sys.executable, "-c", "import django; django.setup(); from forges.demo import build_demo_repo; "
           "print('Demo GitOps repository:', build_demo_repo())"])
    _step([*MANAGE, "ensure_demo_admin"])

    # The metrics folder is the running processes' (portal.kernel.metrics): a past run's files
    # would be added to this one's.
    for stale in Path(settings.PROMETHEUS_MULTIPROC_DIR).glob("*.db"):
        stale.unlink(missing_ok=True)
    children = [
        subprocess.Popen([*MANAGE, "runserver", address, "--noreload"], cwd=ROOT),
        *(subprocess.Popen(command, cwd=ROOT) for command in worker_commands()),
    ]
    # Where alerts link to as well (PORTAL_BASE_URL, derived from the address unless set).
    print(f"\nPortal: {settings.PORTAL_BASE_URL}/  (Ctrl-C stops the web server and the workers)\n", flush=True)

    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.5)
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT, None)]
    return 1 if failed and not stopping else 0


if __name__ == "__main__":
    sys.exit(main())
