"""`make run`: the whole portal on one machine with nothing installed but Python.

Migrates, loads the demo fleet, creates the local demo admin, then runs the web
server and a Celery worker with embedded beat (serverless filesystem broker) side by
side. Ctrl-C (or SIGTERM) stops both and waits for them.
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

    children = [
        subprocess.Popen([*MANAGE, "runserver", address, "--noreload"], cwd=ROOT),
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--beat", "--loglevel", "INFO",
             "--concurrency", "2", "--without-gossip", "--without-mingle"],
            cwd=ROOT,
        ),
    ]
    print(f"\nPortal: http://{address}/  (Ctrl-C stops the web server and the worker)\n", flush=True)

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
