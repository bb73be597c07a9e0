"""The GitHub fake holding many repositories at once, for the fleet benchmark's forge mode
(bench/fleet_forge.py runs it as a process) and the tests that check it: a request for
/api/v3/repos/OWNER/NAME/… is answered from that repository's Git model, and every request is
counted by repository and by what it asks for (GET /_bench/counts answers the counts)."""

from __future__ import annotations

import re

from tests.fakes.forges.base import GitModel, Request, Response
from tests.fakes.forges.github import FakeGitHub

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
