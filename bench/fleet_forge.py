"""The forge of bench/fleet.py's forge mode: the test suite's GitHub fake holding many repositories.

    python bench/fleet_forge.py SPEC.json      (the token in the environment variable SPEC names)

It is `tests.forge_fakes.github.FakeGitHub` (GitHub Enterprise Server's REST v3 under /api/v3,
the shapes PyGithub reads), answering for every repository of the spec instead of one: a
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
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forge_fakes.base import GitModel, Request, Response  # noqa: E402 - after the path
from tests.forge_fakes.github import FakeGitHub  # noqa: E402

REPO = re.compile(r"^/api/v3/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)(?P<rest>/.*)?$")
COUNTS = "/_bench/counts"


def request_kind(rest: str, method: str) -> str:
    """What a repository request asks for, in the words the bench prints."""
    if not rest:
        return "repository"
    for prefix, kind in (("/git/trees", "tree"), ("/git/commits", "commit"), ("/branches", "branch"),
                         ("/git/blobs", "blob"), ("/contents", "contents"), ("/pulls", "pulls"),
                         ("/releases", "releases"), ("/git/refs", "refs"), ("/git/ref", "refs")):
        if rest.startswith(prefix):
            return kind if method == "GET" else f"{method} {kind}"
    return "other"


class FleetGitHub(FakeGitHub):
    """One FakeGitHub whose routes answer from the Git model of the repository in the path."""

    def __init__(self, models: dict[tuple[str, str], GitModel], token: str) -> None:
        self.models = models
        self.counts: dict[str, dict[str, int]] = {}  # "owner/name" -> kind -> requests
        self.statuses: dict[str, int] = {}
        super().__init__(next(iter(models.values())), token)
        self.per_page = 100  # GitHub's largest page: the portal's listings as production sees them

    def dispatch(self, request: Request) -> Response:
        if request.method == "GET" and request.path == COUNTS:
            with self.lock:
                return Response(200, {"repositories": self.counts, "statuses": self.statuses})
        match = REPO.match(request.path)
        with self.lock:
            model = self.models.get((match["owner"], match["name"])) if match else None
            if match is None or model is None:
                response = self.error(401, "Bad credentials") if not self.authorised(request) \
                    else self.error(404, "Not Found")
                where, kind = "(no such repository)", "other"
            else:
                self.model = model  # the routes read self.model; the lock makes this one request's
                response = self._dispatch(request)
                where, kind = f"{model.owner}/{model.name}", request_kind(match["rest"] or "", request.method)
            per_repo = self.counts.setdefault(where, {})
            per_repo[kind] = per_repo.get(kind, 0) + 1
            self.statuses[str(response.status)] = self.statuses.get(str(response.status), 0) + 1
            return response


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
