"""Host -> forge and token from the settings (or a given environment); the retry policy's arithmetic; error bodies."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from forges import weblinks
from forges.forge import FAIL, NONE, PASS, RUNNING, NotConfigured, RateLimited, error_message, fold_checks
from forges.gitea import GiteaForge
from forges.github import GitHubForge
from forges.gitlab import GitLabForge
from forges.hosts import forge_for, host_kinds
from forges.retry import RetryPolicy

SECRET = "tok-registry-0a1b2c3d"
ENV = {
    "PORTAL_GITOPS_GITHUB_API": "https://ghe.corp.example/api/v3",
    "PORTAL_GITOPS_TOKEN": SECRET,
    "PORTAL_GITLAB_URL": "https://gitlab.corp.example",
    "PORTAL_GITOPS_GITLAB_TOKEN": SECRET,
    "PORTAL_GITEA_URL": "https://example.com/gitea",
    "PORTAL_GITOPS_GITEA_TOKEN": SECRET,
}


@pytest.mark.parametrize(
    ("url", "cls", "path"),
    [
        ("git@ghe.corp.example:acme/gitops.git", GitHubForge, "acme/gitops"),
        ("https://gitlab.corp.example/platform/deploy/gitops.git", GitLabForge, "platform/deploy/gitops"),
        ("ssh://git@gitlab.corp.example:2222/platform/gitops.git", GitLabForge, "platform/gitops"),
        ("https://example.com/gitea/acme/gitops.git", GiteaForge, "acme/gitops"),
    ],
)
def test_each_repository_goes_to_the_forge_of_its_host(url: str, cls: type, path: str) -> None:
    forge = forge_for(url, ENV, demo=False)

    assert isinstance(forge, cls) and forge.repo.path == path


def test_api_bases_name_their_web_hosts() -> None:
    assert host_kinds({})["github.com"] == "github"
    assert host_kinds({})["gitlab.com"] == "gitlab"
    assert host_kinds({"PORTAL_GITOPS_GITHUB_API": "https://api.acme.ghe.com"})["acme.ghe.com"] == "github"
    assert host_kinds(ENV) == {
        "ghe.corp.example": "github",
        "gitlab.corp.example": "gitlab",
        "https://example.com/gitea": "gitea",
    }


def test_without_an_environ_the_forges_come_from_the_settings(settings: Any) -> None:
    for name, value in ENV.items():
        setattr(settings, name, value)

    forge = forge_for("https://gitlab.corp.example/platform/gitops.git", demo=False)

    assert isinstance(forge, GitLabForge) and forge.repo.path == "platform/gitops"


def test_a_self_hosted_forge_configured_for_its_client_gets_links_without_forge_hosts(settings: Any) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    settings.PORTAL_FORGE_HOSTS = {}
    settings.PORTAL_GITLAB_URL = "https://git.corp.example"
    assert weblinks.commit_url("git@git.corp.example:platform/gitops.git", sha) == (
        f"https://git.corp.example/platform/gitops/-/commit/{sha}"
    )
    # A forge the portal only links to is still named by PORTAL_FORGE_HOSTS.
    settings.PORTAL_FORGE_HOSTS = {"code.corp.example": "gitea"}
    assert weblinks.commit_url("https://code.corp.example/acme/app.git", sha) == (
        f"https://code.corp.example/acme/app/commit/{sha}"
    )


def test_a_missing_token_or_forge_is_named_without_any_secret() -> None:
    with pytest.raises(NotConfigured, match="no token for github.com .*: set PORTAL_GITOPS_TOKEN"):
        forge_for("https://github.com/acme/gitops", {}, demo=False)
    with pytest.raises(NotConfigured, match="no forge is configured for github.com"):
        forge_for("https://github.com/acme/gitops", ENV, demo=False)
    with pytest.raises(NotConfigured) as raised:
        forge_for(f"https://x-access-token:{SECRET}@bitbucket.org/acme/gitops.git", ENV, demo=False)
    assert SECRET not in str(raised.value)
    with pytest.raises(NotConfigured) as raised:
        forge_for(f"https://x-access-token:{SECRET}@unknown.example/acme/gitops.git", ENV, demo=False)
    assert SECRET not in str(raised.value)


def policy(**kwargs: object) -> RetryPolicy:
    return RetryPolicy(clock=lambda: 1000.0, sleeper=lambda s: None, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "variable", "host"),
    [
        ("https://ghe.corp.example/acme/gitops.git", "PORTAL_GITOPS_TOKEN", "ghe.corp.example"),
        ("https://gitlab.corp.example/platform/gitops.git", "PORTAL_GITOPS_GITLAB_TOKEN", "gitlab.corp.example"),
        ("https://example.com/gitea/acme/gitops.git", "PORTAL_GITOPS_GITEA_TOKEN", "example.com"),
    ],
)
@pytest.mark.parametrize("unset", ["missing", "empty"])
def test_a_missing_token_names_its_variable_and_host_never_a_token(url: str, variable: str, host: str,
                                                                  unset: str) -> None:
    # The other forges' tokens are set: none of them may appear, and the wording fits a read
    # (release notes, pins) as well as a write.
    env = {name: value for name, value in ENV.items() if name != variable}
    if unset == "empty":
        env[variable] = ""
    credentialed = url.replace("https://", f"https://x-access-token:{SECRET}@")

    for repository in (url, credentialed):
        with pytest.raises(NotConfigured) as raised:
            forge_for(repository, env, demo=False)
        message = str(raised.value)
        assert message.startswith(f"no token for {host} (") and message.endswith(f": set {variable}")
        assert SECRET not in message and "write" not in message


def test_policy_waits() -> None:
    p = policy(max_attempts=3, max_wait=120)
    primary = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1060"}
    assert p.wait_before_retry("GET", 403, primary, {"message": "API rate limit exceeded"}, 1) == 61
    assert p.wait_before_retry("POST", 429, {"Retry-After": "12"}, b"", 1) == 12
    assert p.wait_before_retry("POST", 403, {}, {"message": "You have exceeded a secondary rate limit"}, 1) == 60
    assert p.wait_before_retry("GET", 429, {}, b"", 2) == 2  # no hint: exponential backoff
    assert p.wait_before_retry("GET", 403, {}, {"message": "Resource not accessible by integration"}, 1) is None
    assert p.wait_before_retry("GET", 502, {}, b"", 2) == 2
    assert p.wait_before_retry("GET", 502, {}, b"", 3) is None  # the bound
    assert p.wait_before_retry("POST", 502, {}, b"", 1) is None  # a write may have happened
    assert p.wait_before_retry("GET", 404, {}, b"", 1) is None
    with pytest.raises(RateLimited):
        p.wait_before_retry("GET", 429, {"Retry-After": "121"}, b"", 1)
    with pytest.raises(RateLimited):
        p.wait_before_retry("GET", 429, {"Retry-After": "1"}, b"", 3)


def test_checks_fold_to_the_worst() -> None:
    assert fold_checks([]) == NONE
    assert fold_checks([PASS, PASS]) == PASS
    assert fold_checks([PASS, RUNNING]) == RUNNING
    assert fold_checks([RUNNING, FAIL, PASS]) == FAIL


def test_error_bodies_of_every_shape() -> None:
    assert (
        error_message({"message": "Validation Failed", "errors": [{"message": "A pull request already exists"}]})
        == "Validation Failed: A pull request already exists"
    )
    assert (
        error_message(b'{"message": ["Another open merge request already exists: !12"]}')
        == "Another open merge request already exists: !12"
    )
    assert error_message({"message": {"source_branch": ["is invalid"]}}) == "source_branch: is invalid"
    assert error_message({"error": "insufficient_scope"}) == "insufficient_scope"
    assert error_message(b"<html>502</html>") == "<html>502</html>"


# --- two forges on one host name, told apart by port (issue 19, defect 6) --------------


def test_github_and_gitlab_on_two_ports_of_one_host_each_serve_their_own_repository() -> None:
    from tests.fakes.forges.harness import running

    with (
        running("github", {"README.md": "served by the GitHub fake\n"}) as github,
        running("gitlab", {"README.md": "served by the GitLab fake\n"}) as gitlab,
    ):
        assert urlsplit(github.server.url).hostname == urlsplit(gitlab.server.url).hostname == "127.0.0.1"
        env = {**github.environ, **gitlab.environ}
        assert host_kinds(env) == {github.server.url: "github", gitlab.server.url: "gitlab"}

        on_github = forge_for(github.repository, env, demo=False)
        on_gitlab = forge_for(gitlab.repository, env, demo=False)

        assert isinstance(on_github, GitHubForge) and isinstance(on_gitlab, GitLabForge)
        # Over HTTP: each client reads from the server on its own port.
        assert on_github.read_file("README.md", "main") == "served by the GitHub fake\n"
        assert on_gitlab.read_file("README.md", "main") == "served by the GitLab fake\n"
        # A third port on the same host is neither forge.
        with pytest.raises(NotConfigured):
            forge_for("http://127.0.0.1:1/acme/gitops.git", env, demo=False)


def test_links_point_at_the_port_of_the_forge_that_serves_the_repository(settings: Any, monkeypatch: Any) -> None:
    from tests.fakes.forges.harness import serving

    sha = "0647aea75b85755411b007a290b9321668370be5"
    settings.PORTAL_FORGE_HOSTS = {}
    with serving("github", monkeypatch) as github, serving("gitlab", monkeypatch) as gitlab:
        assert weblinks.commit_url(github.repository, sha) == f"{github.server.url}/acme/gitops/commit/{sha}"
        assert weblinks.commit_url(gitlab.repository, sha) == f"{gitlab.server.url}/acme/gitops/-/commit/{sha}"
        assert weblinks.compare_url(gitlab.repository, "main", "portal/checkout-1.7.0-prod") == (
            f"{gitlab.server.url}/acme/gitops/-/compare/main...portal/checkout-1.7.0-prod"
        )
        assert weblinks.repository_url(github.repository) == f"{github.server.url}/acme/gitops"


def test_forge_hosts_entries_may_name_a_port(settings: Any) -> None:
    sha = "0647aea75b85755411b007a290b9321668370be5"
    # As PORTAL_FORGE_HOSTS="git.corp.example=github,git.corp.example:5556=gitlab" reads.
    settings.PORTAL_FORGE_HOSTS = dict(
        item.split("=", 1) for item in "git.corp.example=github,git.corp.example:5556=gitlab".split(",")
    )
    assert weblinks.commit_url("https://git.corp.example:5556/group/sub/proj.git", sha) == (
        f"https://git.corp.example:5556/group/sub/proj/-/commit/{sha}"
    )
    assert weblinks.commit_url("https://git.corp.example/acme/app.git", sha) == (
        f"https://git.corp.example/acme/app/commit/{sha}"
    )
    # An SSH port says nothing about the web port: the forge on the default port.
    assert weblinks.commit_url("git@git.corp.example:acme/app.git", sha) == (
        f"https://git.corp.example/acme/app/commit/{sha}"
    )
    assert weblinks.commit_url("https://git.corp.example:5557/acme/app.git", sha) is None
