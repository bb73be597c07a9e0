"""What the three fake forges share: a threaded HTTP server on 127.0.0.1, routing, scripted
faults (rate limits, 5xx), a request log, and an in-memory Git model with real blob SHAs."""

from __future__ import annotations

import abc
import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def git_sha(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


def iso(at: datetime | None) -> str | None:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at else None


@dataclass
class Commit:
    sha: str
    files: dict[str, tuple[str, str]]  # path -> (mode, blob sha)
    parents: list[str]
    message: str


@dataclass
class Pull:
    number: int
    title: str
    body: str
    head: str
    base: str
    head_sha: str
    author: str = "portal-bot"
    state: str = "open"  # open | closed
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    created_at: datetime = field(default_factory=lambda: datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    labels: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)
    team_reviewers: list[str] = field(default_factory=list)


@dataclass
class Comment:
    """A conversation comment on a pull request (GitHub and Gitea: its issue's; GitLab: a note)."""

    id: int
    number: int  # the pull request's number (GitLab: its iid)
    body: str
    author: str = "portal-bot"
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))


@dataclass
class ReleaseEntry:
    """A release as a test sets it up; each forge's fake answers it in its own shape."""

    tag: str
    title: str = ""
    body: str = ""
    published_at: datetime | None = field(default_factory=lambda: datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    draft: bool = False
    prerelease: bool = False
    web_url: str | None = ""  # "": the forge's usual page; None: the forge names none (old GitLab)


class GitModel:
    """Branches, commits and blobs of one repository, plus its pull requests, CI and releases."""

    def __init__(self, owner: str, name: str, files: dict[str, str], branch: str = "main") -> None:
        self.owner, self.name = owner, name
        self.default_branch = branch  # what the repository's HEAD names; `trunk` in some tests
        self.blobs: dict[str, bytes] = {}
        self.commits: dict[str, Commit] = {}
        self.branches: dict[str, str] = {}
        self.pulls: list[Pull] = []
        self.labels: list[dict[str, Any]] = []
        self.users: dict[str, int] = {"portal-bot": 1}
        self.teams: set[str] = set()  # team slugs of the owning organisation
        self.check_runs: dict[str, list[dict[str, Any]]] = {}  # sha -> GitHub check runs
        self.statuses: dict[str, list[str]] = {}  # sha -> commit status states
        self.pipelines: dict[str, str] = {}  # sha -> GitLab pipeline status
        self.releases: list[ReleaseEntry] = []  # oldest first, as they were made
        self.comments: list[Comment] = []
        tree = {path: ("100644", self.put_blob(text.encode())) for path, text in files.items()}
        self.branches[branch] = self.commit(tree, [], "initial")

    def put_blob(self, data: bytes) -> str:
        sha = git_sha("blob", data)
        self.blobs[sha] = data
        return sha

    def commit(self, files: dict[str, tuple[str, str]], parents: list[str], message: str) -> str:
        payload = json.dumps([sorted(files.items()), parents, message]).encode()
        sha = git_sha("commit", payload)
        self.commits[sha] = Commit(sha, dict(files), parents, message)
        return sha

    def commit_at(self, ref: str) -> str | None:
        """The commit a ref names, as every forge reads one: a branch, or a commit's own SHA."""
        return self.branches.get(ref) or (ref if ref in self.commits else None)

    def files_at(self, branch: str) -> dict[str, str]:
        commit = self.commits[self.branches[branch]]
        return {path: self.blobs[sha].decode() for path, (_mode, sha) in commit.files.items()}

    def commits_between(self, base: str, head: str) -> list[Commit]:
        """Commits on `head` that are not on `base` (first-parent walk is enough here)."""
        stop = self.branches[base]
        sha, found = self.branches[head], []
        while sha and sha != stop:
            commit = self.commits[sha]
            found.append(commit)
            sha = commit.parents[0] if commit.parents else ""
        return found

    def add_pull(self, title: str, head: str, base: str = "main", **extra: Any) -> Pull:
        head_sha = self.branches.get(head, self.branches[base])
        pull = Pull(len(self.pulls) + 1, title, extra.pop("body", ""), head, base, head_sha, **extra)
        self.pulls.append(pull)
        return pull

    def add_release(self, tag: str, **extra: Any) -> ReleaseEntry:
        release = ReleaseEntry(tag, **extra)
        self.releases.append(release)
        return release

    def releases_newest_first(self) -> list[ReleaseEntry]:
        """The order every forge lists releases in: the most recently made first."""
        return list(reversed(self.releases))

    def add_comment(self, number: int, body: str) -> Comment:
        # Ids are global on every forge (not per pull request), and never start at 1 in practice.
        comment = Comment(2_000_000 + len(self.comments) + 1, number, body)
        self.comments.append(comment)
        return comment

    def comment(self, comment_id: int) -> Comment | None:
        return next((c for c in self.comments if c.id == comment_id), None)

    def comments_on(self, number: int) -> list[Comment]:
        return [c for c in self.comments if c.number == number]

    def pull(self, number: int) -> Pull | None:
        return next((p for p in self.pulls if p.number == number), None)

    def open_pulls(self) -> list[Pull]:
        return [p for p in self.pulls if p.state == "open"]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Fault:
    """Answer the next `times` requests that match with this status, headers and body."""

    method: str
    path: str  # regex searched in the path
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    times: int = 1


@dataclass
class Hold:
    """After applying the next request that matches, hold its answer until `release` is set
    (`reached` says it was applied): a client killed meanwhile never learns what happened."""

    method: str
    path: str  # regex searched in the path
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    used: bool = False


Route = tuple[str, re.Pattern[str], Callable[..., Response]]


class FakeServer(abc.ABC):
    """A threaded HTTP server; subclasses add routes and the forge's error shapes."""

    prefix = ""

    def __init__(self, model: GitModel, token: str) -> None:
        self.model = model
        self.token = token
        self.faults: list[Fault] = []
        self.holds: list[Hold] = []
        self.log: list[tuple[str, str, int]] = []  # method, path, status answered
        # Listings of pull requests per repository ("owner/name"): a call is its first page,
        # however many pages follow, so "one list call per repository" is counted as written.
        self.list_calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.routes: list[Route] = []
        self.per_page = 2  # small pages so every list crosses a page boundary
        self.setup_routes()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                request = Request(
                    self.command, parts.path, query, {k.lower(): v for k, v in self.headers.items()}, body
                )
                response = server.dispatch(request)
                payload = b"" if response.body is None else json.dumps(response.body).encode()
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def api(self) -> str:
        return self.url + self.prefix

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()

    def route(self, method: str, pattern: str, handler: Callable[..., Response]) -> None:
        self.routes.append((method, re.compile("^" + self.prefix + pattern + "$"), handler))

    @abc.abstractmethod
    def setup_routes(self) -> None:
        """Register the forge's endpoints with `route`."""

    @abc.abstractmethod
    def authorised(self, request: Request) -> bool:
        """Whether the request carries the token the way this forge expects it."""

    def error(self, status: int, message: str) -> Response:
        return Response(status, {"message": message})

    def dispatch(self, request: Request) -> Response:
        with self.lock:
            response = self._dispatch(request)
            self.log.append((request.method, request.path, response.status))
            hold = next((h for h in self.holds if not h.used and h.method == request.method
                         and re.search(h.path, request.path)), None)
            if hold is not None:
                hold.used = True
        if hold is not None:  # outside the lock: other clients are served meanwhile
            hold.reached.set()
            hold.release.wait(timeout=120)
        return response

    def _dispatch(self, request: Request) -> Response:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and re.search(fault.path, request.path):
                fault.times -= 1
                return Response(fault.status, fault.body, dict(fault.headers))
        if not self.authorised(request):
            return self.error(401, "Bad credentials")
        for method, pattern, handler in self.routes:
            match = pattern.match(request.path)
            if match and method == request.method:
                args = {k: unquote(v) for k, v in match.groupdict().items()}
                return handler(request, **args)
        return self.error(404, "Not Found")

    def page(self, request: Request, items: list[Any], page_param: str = "page", size_param: str = "per_page"):
        size = int(request.query.get(size_param) or self.per_page)
        size = min(size, self.per_page)
        number = int(request.query.get(page_param) or 1)
        chunk = items[(number - 1) * size : number * size]
        last = max(1, -(-len(items) // size))
        headers = {"X-Total-Pages": str(last), "X-Total-Count": str(len(items)), "X-Total": str(len(items))}
        if number < last:
            query = {**request.query, page_param: str(number + 1), size_param: str(size)}
            link = self.url + request.path + "?" + "&".join(f"{k}={v}" for k, v in query.items())
            headers["Link"] = f'<{link}>; rel="next"'
        return chunk, headers

    def count_list(self, request: Request, repository: str) -> None:
        """Count one listing of `repository`'s pull requests (its first page only)."""
        if str(request.query.get("page") or "1") == "1":
            self.list_calls[repository] = self.list_calls.get(repository, 0) + 1

    def requests_matching(self, method: str, pattern: str) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if entry[0] == method and re.search(pattern, entry[1])]
