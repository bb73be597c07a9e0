"""The one retry policy for forge HTTP, used by the GitHub, GitLab and Gitea clients alike.

What is repeated, and what never is:

- a rate limit (GitHub: 403/429 with `Retry-After`, `X-RateLimit-Remaining: 0` +
  `X-RateLimit-Reset`, or the secondary-limit message; GitLab and a proxy in front of
  Gitea: 429) is waited out for any method: the forge refused the request, so nothing
  happened yet. `Retry-After` is honoured in both its forms (seconds, HTTP date). A wait
  longer than `max_wait` raises `RateLimited` instead of blocking a worker for an hour;
- 502, 503, 504 and connection errors are retried only for reads (GET, HEAD, OPTIONS).
  A write that failed that way may have been applied behind the proxy, so it is never
  sent twice: a second branch, commit or pull request is worse than a reported error.
  (PUT and DELETE are idempotent in HTTP, but a repeated one that had happened answers
  404/409/422 and turns a success into a failure, so they are not repeated either.) A
  500 is a bug on the forge's side, not a hiccup, and is not retried;
- every wait goes through an injected `sleeper`, every "now" through an injected
  `clock`, so tests never sleep; attempts are bounded by `max_attempts`, with backoff
  doubling from `backoff` when the forge gives no hint.

The libraries' own retries are switched off rather than configured, because none does
all of this: PyGithub's `GithubRetry` and python-gitlab's `obey_rate_limit` /
`retry_transient_errors` sleep with `time.sleep` (no injectable clock), both repeat POSTs
(GithubRetry adds POST to urllib3's allowed methods; python-gitlab's transient retry
ignores the verb), and a plain urllib3 `Retry` knows neither GitHub's reset header nor
its secondary limits nor a bound that raises. So GitHub calls go through
`RetryPolicy.call` (PyGithub built with `retry=0`), and GitLab and Gitea get a
`RetryingSession` (python-gitlab takes it as its `session`).

Every answer, retries included, is counted here for /metrics (`portal.kernel.metrics`): by host
and status class, with the rate-limit remaining the forge last stated. The session sees each
HTTP answer; PyGithub's calls are counted per attempt, with the remaining count its requester
keeps from the last answer's headers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from forges.forge import ForgeError, RateLimited, error_message
from portal.kernel.metrics import FORGE_RATE_LIMIT_REMAINING, forge_answered

log = logging.getLogger(__name__)

# Requests that change nothing on the forge: the only ones repeated after a 5xx or a lost connection.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Answers from a proxy or a forge restarting: worth a second read.
TRANSIENT_STATUSES = frozenset({502, 503, 504})


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
        if status in TRANSIENT_STATUSES:
            return self.wait_before_reading_again(method, attempt)
        return None

    def wait_before_reading_again(self, method: str, attempt: int) -> float | None:
        """The backoff before repeating a read that failed in passing; None for a write or past the bound."""
        if method.upper() in READ_METHODS and attempt < self.max_attempts:
            return self.backoff * 2 ** (attempt - 1)
        return None

    def _rate_limit_wait(self, status: int, headers: Mapping[str, str], body: Any, attempt: int) -> float | None:
        if status not in (403, 429):
            return None
        lowered = {k.lower(): v for k, v in headers.items()}
        retry_after = self._retry_after(lowered.get("retry-after", ""))
        if retry_after is not None:
            return retry_after
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

    def _retry_after(self, value: str) -> float | None:
        """`Retry-After` as seconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3)."""
        text = value.strip()
        if text.isdigit():
            return float(text)
        if not text:
            return None
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - self.clock())

    def call(
        self,
        method: str,
        send: Callable[[], Any],
        describe: Callable[[BaseException], tuple[int, Mapping[str, str], Any] | None],
        host: str = "",
        remaining: Callable[[], float | None] = lambda: None,
    ) -> Any:
        """Run `send` until it succeeds or the policy gives up; `describe` reads an error's status.

        For a client that raises instead of answering (PyGithub): a connection error is
        retried like a transient status, so for reads only. Each attempt is counted against
        `host` (when given), with the rate-limit `remaining` the client last saw.
        """
        attempt = 1
        while True:
            try:
                result = send()
                self._count(host, 200, remaining)
                return result
            except RateLimited:
                raise
            except requests.ConnectionError:
                self._count(host, None, remaining)
                wait = self.wait_before_reading_again(method, attempt)
                if wait is None:
                    raise
            except Exception as error:
                facts = describe(error)
                if facts is None:
                    raise
                status, headers, body = facts
                self._count(host, status, remaining, headers)
                wait = self.wait_before_retry(method, status, headers, body, attempt)
                if wait is None:
                    raise
            log.info("forge did not answer %s; retrying in %.0f s (attempt %d)", method, wait, attempt)
            self.sleeper(wait)
            attempt += 1

    @staticmethod
    def _count(host: str, status: int | None, remaining: Callable[[], float | None], headers: object = None) -> None:
        if not host:
            return
        forge_answered(host, status, headers)
        left = remaining()
        if left is not None and left >= 0:
            FORGE_RATE_LIMIT_REMAINING.labels(host=host.lower()).set(left)


class RetryingSession(requests.Session):
    """A requests session that applies `RetryPolicy` to every request it sends (GitLab, Gitea)."""

    def __init__(self, policy: RetryPolicy, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.policy = policy
        self._secrets = tuple(s for s in secrets if s)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        method = request.method or "GET"
        host = urlsplit(request.url or "").hostname or ""
        attempt = 1
        while True:
            try:
                response = super().send(request, **kwargs)
            except requests.ConnectionError as error:
                forge_answered(host, None)
                wait = self.policy.wait_before_reading_again(method, attempt)
                if wait is None:
                    # Only the kind of error: its text names the URL, and a URL may carry a token.
                    raise ForgeError(f"cannot reach the forge: {type(error).__name__}") from None
            else:
                forge_answered(host, response.status_code, response.headers)
                wait_or_none = self.policy.wait_before_retry(
                    method, response.status_code, response.headers, response.content, attempt
                )
                if wait_or_none is None:
                    return response
                wait = wait_or_none
                response.close()
            log.info("forge did not answer %s; retrying in %.0f s (attempt %d)", method, wait, attempt)
            self.policy.sleeper(wait)
            attempt += 1
