"""One interface for every Git host, and the HTTP manners all of them share.

A `Forge` is bound to one repository. It reads (tree, files, branch heads, pull
requests, checks, published releases) and writes only what a pull request needs (a branch, one commit on
it, the pull request, its reviewers and labels, and removing the branch again when an
open fails half way). It has no merge and no way to push to an existing branch other
than the one it created: the portal proposes, people merge.

Rate limits and transient errors are handled in one place, `RetryPolicy`: a forge
says "wait" (GitHub: 403/429 with `Retry-After`, `X-RateLimit-Remaining: 0` or a
secondary-limit message; GitLab and a proxy in front of Gitea: 429) and the policy
sleeps through an injected sleeper until the reset, within a bound; past the bound it
raises `RateLimited` instead of blocking a worker for an hour. 5xx answers are retried
only for requests that are safe to repeat.
"""

from __future__ import annotations

import abc
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from forges.pins import pin_format
from forges.repourls import RepoRef, release_url

log = logging.getLogger(__name__)

# Pull request states, as the portal stores them (GitLab's "opened"/"locked" map here).
OPEN = "open"
MERGED = "merged"
CLOSED = "closed"

# Checks, folded from whatever the forge reports.
PASS = "pass"
RUNNING = "running"
FAIL = "fail"
NONE = "none"

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

# Release notes matter for the versions a service may move to, which are recent: the
# newest hundred releases are plenty, and one or two pages on every forge.
MAX_RELEASES = 100


class ForgeError(Exception):
    """A forge refused or failed. The message never holds a token (see `redact`)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ForgeError):
    pass


class BranchExists(ForgeError):
    pass


class PullRequestExists(ForgeError):
    pass


class RateLimited(ForgeError):
    """The forge asked us to wait longer than the policy allows (or too often)."""

    def __init__(self, message: str, wait: float | None = None, status: int | None = None) -> None:
        super().__init__(message, status)
        self.wait = wait


class NotConfigured(ForgeError):
    pass


class WritesRefused(ForgeError):
    """This forge only reads (the demo forge)."""


@dataclass(frozen=True)
class TreeEntry:
    path: str
    sha: str  # blob SHA; Gitea needs it to update a file
    mode: str = "100644"
    size: int | None = None


@dataclass(frozen=True)
class FileChange:
    path: str
    content: str
    sha: str = ""  # blob SHA the change was made against
    mode: str = "100644"


@dataclass(frozen=True)
class PullRequestInfo:
    number: int
    url: str
    title: str
    state: str  # OPEN, MERGED or CLOSED
    head_branch: str
    base_branch: str
    head_sha: str = ""
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class ReleaseInfo:
    """One published release of a repository (drafts are never listed)."""

    tag: str
    title: str
    url: str  # the release's web page: http(s), given by the forge or built from the repository's
    body: str  # the notes as the forge holds them (Markdown, unrendered)
    published_at: datetime | None = None
    prerelease: bool = False


def newest_first(releases: Iterable[ReleaseInfo]) -> list[ReleaseInfo]:
    """Newest publication first; releases without a date keep their order, after the dated ones."""
    return sorted(
        releases,
        key=lambda r: (r.published_at is not None, r.published_at.timestamp() if r.published_at else 0.0),
        reverse=True,  # Python's sort stays stable in reverse: equal keys keep the forge's order
    )


def release_page(given: str | None, repo: RepoRef, tag: str) -> str:
    """The web page a forge gave for a release when it is http(s); else the one built from its parts."""
    try:
        parts = urlsplit(given or "")
    except ValueError:
        parts = urlsplit("")
    if parts.scheme in ("http", "https") and parts.hostname:
        return given or ""
    return release_url(repo, tag) or ""


@dataclass(frozen=True)
class Outcome:
    """What a best-effort step did: names applied and names skipped with why."""

    applied: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)


def fold_checks(states: Iterable[str]) -> str:
    """The worst of several PASS/RUNNING/FAIL results; NONE when there are none."""
    seen = set(states)
    for state in (FAIL, RUNNING, PASS):
        if state in seen:
            return state
    return NONE


def redact(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def error_message(body: Any) -> str:
    """The human part of a forge's error body (`message` string/list/map, or `error`)."""
    if isinstance(body, bytes | bytearray):
        try:
            body = json.loads(body.decode("utf-8", "replace"))
        except ValueError:
            return body.decode("utf-8", "replace")[:300]
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return body[:300]
    if not isinstance(body, dict):
        return str(body)[:300] if body is not None else ""
    message = body.get("message", body.get("error", ""))
    if isinstance(message, list):
        message = "; ".join(str(m) for m in message)
    elif isinstance(message, dict):
        message = "; ".join(f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in message.items())
    details = [e.get("message", "") for e in body.get("errors") or [] if isinstance(e, dict) and e.get("message")]
    text = str(message)
    if details:
        text = f"{text}: {'; '.join(details)}" if text else "; ".join(details)
    return text[:300]


@dataclass
class RetryPolicy:
    """How long and how often to wait on a forge. Sleeper and clock are injectable for tests."""

    max_attempts: int = 5  # requests in all, the first included
    max_wait: float = 900.0  # the longest single wait; a later reset raises RateLimited
    backoff: float = 1.0  # first wait after a 5xx or a limit with no hint; doubles each time
    secondary_wait: float = 60.0  # GitHub's advice for a secondary limit without Retry-After
    sleeper: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time

    def wait_before_retry(
        self, method: str, status: int, headers: Mapping[str, str], body: Any, attempt: int
    ) -> float | None:
        """Seconds to wait before trying again, None to give up now; RateLimited past the bound."""
        limited = self._rate_limit_wait(status, headers, body, attempt)
        if limited is not None:
            if limited > self.max_wait:
                raise RateLimited(
                    f"rate limited (HTTP {status}); the limit resets in {limited:.0f} s, "
                    f"longer than the {self.max_wait:.0f} s this portal waits",
                    wait=limited,
                    status=status,
                )
            if attempt >= self.max_attempts:
                raise RateLimited(f"still rate limited (HTTP {status}) after {attempt} attempts", status=status)
            return limited
        if status in (500, 502, 503, 504) and method.upper() in SAFE_METHODS and attempt < self.max_attempts:
            return self.backoff * 2 ** (attempt - 1)
        return None

    def _rate_limit_wait(self, status: int, headers: Mapping[str, str], body: Any, attempt: int) -> float | None:
        if status not in (403, 429):
            return None
        lowered = {k.lower(): v for k, v in headers.items()}
        retry_after = lowered.get("retry-after", "")
        if retry_after.strip().isdigit():
            return float(retry_after)
        message = error_message(body).lower()
        secondary = "secondary rate limit" in message or "abuse" in message
        remaining = lowered.get("x-ratelimit-remaining", lowered.get("ratelimit-remaining", ""))
        reset = lowered.get("x-ratelimit-reset", lowered.get("ratelimit-reset", ""))
        if remaining.strip() == "0" and reset.strip().isdigit() and not secondary:
            # Epoch seconds; plus one because the reset happens somewhere in that second.
            return max(0.0, int(reset) - self.clock()) + 1
        if secondary:
            return self.secondary_wait
        if status == 429 or "rate limit" in message:
            return self.backoff * 2 ** (attempt - 1)
        return None  # a plain 403: permissions, not a limit

    def call(
        self,
        method: str,
        send: Callable[[], Any],
        describe: Callable[[BaseException], tuple[int, Mapping[str, str], Any] | None],
    ) -> Any:
        """Run `send` until it succeeds or the policy gives up; `describe` reads an error's status."""
        attempt = 1
        while True:
            try:
                return send()
            except RateLimited:
                raise
            except Exception as error:
                facts = describe(error)
                if facts is None:
                    raise
                status, headers, body = facts
                wait = self.wait_before_retry(method, status, headers, body, attempt)
                if wait is None:
                    raise
            log.info("forge answered %s; retrying in %.0f s (attempt %d)", status, wait, attempt)
            self.sleeper(wait)
            attempt += 1


class RetryingSession(requests.Session):
    """A requests session that waits out rate limits and retries transient 5xx (GitLab, Gitea)."""

    def __init__(self, policy: RetryPolicy, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.policy = policy
        self._secrets = tuple(s for s in secrets if s)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        attempt = 1
        while True:
            try:
                response = super().send(request, **kwargs)
            except requests.ConnectionError as error:
                # Only the host part: a URL may carry a token in its query for some clients.
                if request.method not in SAFE_METHODS or attempt >= self.policy.max_attempts:
                    raise ForgeError(f"cannot reach the forge: {type(error).__name__}") from None
                wait = self.policy.backoff * 2 ** (attempt - 1)
            else:
                wait_or_none = self.policy.wait_before_retry(
                    request.method or "GET", response.status_code, response.headers, response.content, attempt
                )
                if wait_or_none is None:
                    return response
                wait = wait_or_none
                response.close()
            log.info("forge answered; retrying %s in %.0f s (attempt %d)", request.method, wait, attempt)
            self.policy.sleeper(wait)
            attempt += 1


class Forge(abc.ABC):
    """One repository on one Git host."""

    kind: str
    repo: RepoRef

    # --- reading ---------------------------------------------------------------------

    @abc.abstractmethod
    def branch_head(self, branch: str) -> str:
        """The commit SHA a branch points at; NotFound when there is no such branch."""

    @abc.abstractmethod
    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        """Every file (blob) under `path` ("" for the whole repository) at a branch's head."""

    @abc.abstractmethod
    def read_file(self, path: str, branch: str) -> str:
        """One file's text at a branch."""

    def read_files(self, paths: Iterable[str], branch: str) -> dict[str, str]:
        return {path: self.read_file(path, branch) for path in paths}

    def pin_files(self, path: str, branch: str) -> tuple[list[TreeEntry], dict[str, str]]:
        """The tree under `path` and the text of every file that can hold an image pin."""
        entries = self.tree(path, branch)
        wanted = [e.path for e in entries if pin_format(e.path) is not None]
        return entries, self.read_files(wanted, branch)

    @abc.abstractmethod
    def open_pull_requests(self) -> list[PullRequestInfo]:
        """Every open pull/merge request of the repository (all pages)."""

    def find_pull_request(self, title: str) -> PullRequestInfo | None:
        """The open pull request with exactly this title (case-insensitive), if any."""
        wanted = title.strip().lower()
        return next((pr for pr in self.open_pull_requests() if pr.title.strip().lower() == wanted), None)

    @abc.abstractmethod
    def pull_request(self, number: int) -> PullRequestInfo:
        """One pull request's current state."""

    @abc.abstractmethod
    def checks(self, pr: PullRequestInfo) -> str:
        """PASS, RUNNING, FAIL or NONE for the pull request's head commit."""

    @abc.abstractmethod
    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        """The repository's published releases, newest first, at most `limit`; drafts left out."""

    # --- writing (only what one pull request needs) ----------------------------------

    @abc.abstractmethod
    def create_branch(self, branch: str, from_branch: str) -> str:
        """Create `branch` at `from_branch`'s head; BranchExists when it is already there."""

    @abc.abstractmethod
    def delete_branch(self, branch: str) -> None:
        """Remove a branch this portal created (cleanup after a failed open)."""

    @abc.abstractmethod
    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        """One commit on `branch` that changes every file in `changes`; the commit SHA."""

    @abc.abstractmethod
    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        """Open a pull request from `head` into `base`; PullRequestExists when one is open."""

    @abc.abstractmethod
    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        """Ask people (`alice`) and teams (`@org/team`) to review; unknown names are skipped."""

    @abc.abstractmethod
    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        """Add labels by name (created when missing)."""
