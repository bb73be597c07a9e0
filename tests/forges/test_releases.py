"""Each forge client reads a repository's releases over HTTP from its fake: newest first,
drafts left out, bounded, the web page of each; failures as the portal's forge errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from forges.demo import DemoForge
from forges.forge import Forge, ForgeError, NotFound, RateLimited
from forges.hosts import forge_for
from forges.repourls import GITHUB, RepoRef
from forges.retry import RetryPolicy
from tests.fakes.forges.base import FakeServer, Fault, GitModel
from tests.fakes.forges.harness import KINDS, NOW, TOKEN, environ_for, server_for

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
RELEASES_PATH = {"github": r"/repos/acme/checkout/releases$", "gitlab": r"/releases$", "gitea": r"/releases$"}
PAGE = {
    "github": "https://github.example/acme/checkout/releases/tag/v1.7.0",
    "gitlab": "https://gitlab.example/acme/checkout/-/releases/v1.7.0",
    "gitea": "https://gitea.example/acme/checkout/releases/tag/v1.7.0",
}


@dataclass
class Source:
    kind: str
    server: FakeServer
    model: GitModel
    environ: dict[str, str]
    sleeps: list[float] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.server.url}/acme/checkout"

    def forge(self, url: str | None = None, environ: dict[str, str] | None = None) -> Forge:
        policy = RetryPolicy(max_attempts=3, max_wait=60, sleeper=self.sleeps.append, clock=lambda: NOW)
        return forge_for(url or self.url, environ or self.environ, policy=policy, demo=False)

    def release_requests(self) -> int:
        return len(self.server.requests_matching("GET", RELEASES_PATH[self.kind]))


@pytest.fixture(params=KINDS)
def source(request: pytest.FixtureRequest) -> Iterator[Source]:
    model = GitModel("acme", "checkout", {"README.md": "checkout service\n"})
    with server_for(request.param, model) as server:
        yield Source(request.param, server, model, environ_for(request.param, server))


def test_releases_come_newest_first_with_title_notes_page_and_date(source: Source) -> None:
    source.model.add_release("v1.6.0", title="1.6.0", body="- Older", published_at=T0)
    source.model.add_release("v1.7.0-rc.1", body="Candidate", published_at=T0 + timedelta(days=1), prerelease=True)
    source.model.add_release("v1.7.0", title="Checkout 1.7.0", body="- Faster checkout\n- Fixes #42",
                             published_at=T0 + timedelta(days=2))
    source.model.add_release("v2.0.0", body="not published yet", draft=True, published_at=T0 + timedelta(days=3))

    releases = source.forge().releases()

    assert [r.tag for r in releases] == ["v1.7.0", "v1.7.0-rc.1", "v1.6.0"]  # the draft is left out
    newest = releases[0]
    assert (newest.title, newest.body) == ("Checkout 1.7.0", "- Faster checkout\n- Fixes #42")
    assert newest.url == PAGE[source.kind]
    assert newest.published_at == T0 + timedelta(days=2)
    assert releases[1].title == "v1.7.0-rc.1"  # no title: the tag stands for it
    # GitHub and Gitea flag pre-releases; GitLab has no such flag.
    assert releases[1].prerelease is (source.kind != "gitlab")


def test_a_release_without_a_web_page_links_the_one_built_from_the_repository(source: Source) -> None:
    source.model.add_release("v1.0.0", body="first", web_url=None)

    [release] = source.forge().releases()

    path = "/-/releases/v1.0.0" if source.kind == "gitlab" else "/releases/tag/v1.0.0"
    assert release.url == f"{source.url}{path}"


def test_the_read_is_bounded_and_stops_paging_when_it_has_enough(source: Source) -> None:
    for minor in range(7):
        source.model.add_release(f"v1.{minor}.0", body=f"minor {minor}", published_at=T0 + timedelta(days=minor))
    forge = source.forge()

    newest = forge.releases(limit=3)
    asked = source.release_requests()
    every = forge.releases()

    assert [r.tag for r in newest] == ["v1.6.0", "v1.5.0", "v1.4.0"]
    # The fakes answer two releases a page (Gitea honours 50): two pages hold three releases.
    assert asked == (1 if source.kind == "gitea" else 2)
    assert [r.tag for r in every] == [f"v1.{minor}.0" for minor in reversed(range(7))]


def test_an_unknown_repository_is_not_found(source: Source) -> None:
    with pytest.raises(NotFound):
        source.forge(url=f"{source.server.url}/acme/gone").releases()


def test_a_refused_token_is_an_error_that_never_shows_a_token(source: Source) -> None:
    wrong = "tok-wrong-0b1c2d3e4f"
    environ = {name: (wrong if value == TOKEN else value) for name, value in source.environ.items()}

    with pytest.raises(ForgeError) as raised:
        source.forge(environ=environ).releases()

    assert raised.value.status == 401
    assert wrong not in str(raised.value) and TOKEN not in str(raised.value)


def rate_limit(kind: str, wait: int) -> Fault:
    if kind == "github":
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + wait)}
        return Fault("GET", RELEASES_PATH[kind], 403, headers, {"message": "API rate limit exceeded for user ID 1."})
    return Fault("GET", RELEASES_PATH[kind], 429, {"Retry-After": str(wait)}, {"message": "429 Too Many Requests"})


def test_a_short_rate_limit_is_waited_out(source: Source) -> None:
    source.model.add_release("v1.0.0")
    source.server.faults.append(rate_limit(source.kind, 5))

    assert [r.tag for r in source.forge().releases()] == ["v1.0.0"]
    assert source.sleeps == [6.0 if source.kind == "github" else 5.0]


def test_a_long_rate_limit_raises_at_once(source: Source) -> None:
    source.server.faults.append(rate_limit(source.kind, 3600))

    with pytest.raises(RateLimited):
        source.forge().releases()
    assert source.sleeps == []


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreachable_forge_is_a_forge_error(kind: str) -> None:
    model = GitModel("acme", "checkout", {"README.md": "x\n"})
    with server_for(kind, model) as server:
        environ, url = environ_for(kind, server), f"{server.url}/acme/checkout"
    # The server is gone: nothing listens on its port any more.
    policy = RetryPolicy(max_attempts=2, sleeper=lambda seconds: None, clock=lambda: NOW)
    forge = forge_for(url, environ, policy=policy, demo=False)

    with pytest.raises(ForgeError, match="cannot reach the forge") as raised:
        forge.releases()
    assert TOKEN not in str(raised.value)


def test_the_demo_forge_has_no_releases(tmp_path: Path) -> None:
    # Its one repository is the demo GitOps repository: no service's code, no release notes.
    ref = RepoRef("github.com", "acme-shop", "checkout", GITHUB, "https://github.com")
    assert DemoForge(tmp_path, ref).releases() == []
