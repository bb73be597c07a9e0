"""The forge of bench/fleet.py's forge mode: the test suite's GitHub fake holding many repositories.

    python bench/fleet_forge.py SPEC.json      (the token in the environment variable SPEC names)

It is `tests.fakes.forges.fleet_github.FleetGitHub`, the suite's GitHub fake (GitHub Enterprise
Server's REST v3 under /api/v3, the shapes PyGithub reads), answering for every repository of the spec instead of one: a
request for /api/v3/repos/OWNER/NAME/… is answered from that repository's Git model. It runs as
a process of its own, so its CPU is neither the portal's nor the bench's. It prints its port
on the first line of stdout, then serves until SIGTERM.

It counts every request by repository and by what it asks for — `tree` is
GET …/git/trees/<sha>, the one read the portal's pin batching promises to make at most once per
repository and revision every 10 minutes — and answers the counts (JSON, no token needed) at
GET /_bench/counts.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.forges.base import GitModel  # noqa: E402 - after the path
from tests.fakes.forges.fleet_github import FleetGitHub  # noqa: E402


def main() -> None:
    spec: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    token = os.environ[spec["token_env"]]
    models = {}
    for repository, files in spec["repositories"].items():
        owner, name = repository.split("/")
        models[(owner, name)] = GitModel(owner, name, files, branch="main")
    server = FleetGitHub(models, token)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        print(server.httpd.server_address[1], flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
