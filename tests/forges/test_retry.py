"""forges.retry: one policy for every forge client, over real HTTP against the forge fakes.

Reads are repeated after 502/503/504 and lost connections; writes never are (they may
have happened); rate limits are waited out for any method, `Retry-After` in either form.
The policy's sleeper records the waits and its clock is fixed, so nothing sleeps.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from forges.forge import Forge, ForgeError
from forges.hosts import forge_for
from forges.retry import RetryPolicy
from tests.fakes.forges.base import FakeServer, Fault, GitModel
from tests.fakes.forges.gitea import FakeGitea
from tests.fakes.forges.github import FakeGitHub
from tests.fakes.forges.gitlab import FakeGitLab

TOKEN = "tok-5c1d9e7a3b8f2046-never-shown"
NOW = 1_767_600_000.0  # the injected clock: 2026-01-05 08:00 UTC
KINDS = ("github", "gitlab", "gitea")
BRANCH_PATH = {"github": r"/branches/main$", "gitlab": r"/repository/branches/main$", "gitea": r"/branches/main$"}
BRANCH_CREATE = {"github": ("POST", r"/git/refs$"), "gitlab": ("POST", r"/repository/branches$"),
                 "gitea": ("POST", r"/branches$")}


@dataclass
class Client:
    kind: str
    server: FakeServer
    sleeps: list[float] = field(default_factory=list)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_attempts=4, max_wait=600, sleeper=self.sleeps.append, clock=lambda: NOW)

    def forge(self, url: str | None = None) -> Forge:
        base = url or self.server.url
        environ = {
            "github": {"PORTAL_GITOPS_GITHUB_API": f"{base}/api/v3" if url else self.server.api,
                       "PORTAL_GITOPS_TOKEN": TOKEN},
            "gitlab": {"PORTAL_GITLAB_URL": base, "PORTAL_GITOPS_GITLAB_TOKEN": TOKEN},
            "gitea": {"PORTAL_GITEA_URL": base, "PORTAL_GITOPS_GITEA_TOKEN": TOKEN},
        }[self.kind]
        return forge_for(f"{base}/acme/gitops.git", environ, policy=self.policy(), demo=False)

    def requests(self, method: str, path: str) -> int:
        return len(self.server.requests_matching(method, path))


def closed_port() -> int:
    """A local port nothing listens on (bound, read, released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=KINDS)
def client(request: pytest.FixtureRequest) -> Iterator[Client]:
    model = GitModel("acme", "gitops", {"README.md": "acme/gitops\n"})
    fake = {"github": FakeGitHub, "gitlab": FakeGitLab, "gitea": FakeGitea}[request.param]
    with fake(model, TOKEN) as server:
        yield Client(request.param, server)


def test_a_read_answered_503_then_200_is_retried_once(client: Client) -> None:
    client.server.faults.append(Fault("GET", BRANCH_PATH[client.kind], 503, body={"message": "unavailable"}))

    assert client.forge().branch_head("main") == client.server.model.branches["main"]

    assert client.requests("GET", BRANCH_PATH[client.kind]) == 2
    assert client.sleeps == [1.0]


def test_a_write_that_failed_with_503_is_not_sent_again(client: Client) -> None:
    method, path = BRANCH_CREATE[client.kind]
    client.server.faults.append(Fault(method, path, 503, body={"message": "unavailable"}))

    with pytest.raises(ForgeError) as raised:
        client.forge().create_branch("portal/x", "main")

    assert raised.value.status == 503
    assert client.requests(method, path) == 1
    assert client.sleeps == []
    assert "portal/x" not in client.server.model.branches


def test_a_500_is_a_forge_bug_and_not_retried(client: Client) -> None:
    client.server.faults.append(Fault("GET", BRANCH_PATH[client.kind], 500, body={"message": "boom"}, times=9))

    with pytest.raises(ForgeError) as raised:
        client.forge().branch_head("main")

    assert raised.value.status == 500
    assert client.requests("GET", BRANCH_PATH[client.kind]) == 1


def test_retry_after_as_an_http_date_is_honoured(client: Client) -> None:
    when = format_datetime(datetime.fromtimestamp(NOW + 20, UTC), usegmt=True)  # "Mon, 05 Jan 2026 08:00:20 GMT"
    client.server.faults.append(Fault("GET", BRANCH_PATH[client.kind], 429, {"Retry-After": when}, {"message": "slow"}))

    assert client.forge().branch_head("main") == client.server.model.branches["main"]

    assert client.sleeps == [20.0]


def test_a_rate_limited_write_is_sent_again_because_it_was_refused(client: Client) -> None:
    method, path = BRANCH_CREATE[client.kind]
    client.server.faults.append(Fault(method, path, 429, {"Retry-After": "3"}, {"message": "slow down"}))

    client.forge().create_branch("portal/x", "main")

    assert client.requests(method, path) == 2
    assert client.sleeps == [3.0]
    assert "portal/x" in client.server.model.branches


@pytest.mark.parametrize("kind", KINDS)
def test_a_read_from_a_forge_that_cannot_be_reached_is_retried_within_the_bound(kind: str) -> None:
    model = GitModel("acme", "gitops", {"README.md": "acme/gitops\n"})
    fake = {"github": FakeGitHub, "gitlab": FakeGitLab, "gitea": FakeGitea}[kind](model, TOKEN)
    client = Client(kind, fake)  # never started: nothing listens on the port below
    nobody = f"http://127.0.0.1:{closed_port()}"

    with pytest.raises(ForgeError) as raised:
        client.forge(nobody).branch_head("main")

    assert "cannot reach the forge" in str(raised.value)
    assert TOKEN not in str(raised.value)
    assert client.sleeps == [1.0, 2.0, 4.0]  # max_attempts=4: three waits, then give up
