"""forges.repourls: clone URLs in every form -> RepoRef -> http(s) web links."""

import pytest

from forges.repourls import parse_repo_url

HOSTS = {
    "ghe.corp.example": "github",
    "gitlab.example.com": "gitlab",
    "https://example.com/gitlab": "gitlab",
    "https://gitea.example.com/gitea": "gitea",
    "forgejo.internal:3000": "forgejo",
    "bb.example.com": "bitbucket-server",
}
SHA = "0647aea75b85755411b007a290b9321668370be5"


@pytest.mark.parametrize(
    "url, owner, name, kind, web",
    [
        ("https://github.com/acme/gitops.git", "acme", "gitops", "github", "https://github.com/acme/gitops"),
        ("https://github.com/acme/gitops", "acme", "gitops", "github", "https://github.com/acme/gitops"),
        ("https://github.com/acme/gitops/", "acme", "gitops", "github", "https://github.com/acme/gitops"),
        ("git@github.com:acme/gitops.git", "acme", "gitops", "github", "https://github.com/acme/gitops"),
        ("ssh://git@github.com/acme/gitops.git", "acme", "gitops", "github", "https://github.com/acme/gitops"),
        (
            "https://x-access-token:TOKEN@github.com/acme/gitops.git",
            "acme",
            "gitops",
            "github",
            "https://github.com/acme/gitops",
        ),
        (
            "https://github.com/acme/gitops/tree/main/apps/api",
            "acme",
            "gitops",
            "github",
            "https://github.com/acme/gitops",
        ),
        ("https://github.com/acme/repo.js.git", "acme", "repo.js", "github", "https://github.com/acme/repo.js"),
        ("https://github.com/acme/x.git.git", "acme", "x.git", "github", "https://github.com/acme/x.git"),
        ("https://ghe.corp.example/acme/gitops", "acme", "gitops", "github", "https://ghe.corp.example/acme/gitops"),
        (
            "git@gitlab.com:group/sub/proj.git",
            "group/sub",
            "proj",
            "gitlab",
            "https://gitlab.com/group/sub/proj",
        ),
        (
            "https://gitlab.com/group/sub/proj/-/tree/main/k8s",
            "group/sub",
            "proj",
            "gitlab",
            "https://gitlab.com/group/sub/proj",
        ),
        (
            "ssh://git@gitlab.example.com:2222/group/proj.git",
            "group",
            "proj",
            "gitlab",
            "https://gitlab.example.com/group/proj",
        ),
        (
            "https://example.com/gitlab/group/proj.git",
            "group",
            "proj",
            "gitlab",
            "https://example.com/gitlab/group/proj",
        ),
        (
            "https://gitea.example.com/gitea/owner/repo.git",
            "owner",
            "repo",
            "gitea",
            "https://gitea.example.com/gitea/owner/repo",
        ),
        (
            "gitea@forgejo.internal:owner/repo.git",
            "owner",
            "repo",
            "forgejo",
            "https://forgejo.internal:3000/owner/repo",
        ),
        (
            "http://forgejo.internal:3000/owner/repo",
            "owner",
            "repo",
            "forgejo",
            "http://forgejo.internal:3000/owner/repo",
        ),
        ("https://codeberg.org/owner/repo.git", "owner", "repo", "forgejo", "https://codeberg.org/owner/repo"),
        ("https://bitbucket.org/ws/repo.git", "ws", "repo", "bitbucket", "https://bitbucket.org/ws/repo"),
        ("git@bitbucket.org:ws/repo.git", "ws", "repo", "bitbucket", "https://bitbucket.org/ws/repo"),
        (
            "https://bb.example.com/scm/PROJ/repo.git",
            "PROJ",
            "repo",
            "bitbucket-server",
            "https://bb.example.com/projects/PROJ/repos/repo/browse",
        ),
        (
            "ssh://git@bb.example.com:7999/proj/repo.git",
            "PROJ",
            "repo",
            "bitbucket-server",
            "https://bb.example.com/projects/PROJ/repos/repo/browse",
        ),
        (
            "https://bb.example.com/scm/~jdoe/dotfiles.git",
            "~jdoe",
            "dotfiles",
            "bitbucket-server",
            "https://bb.example.com/users/jdoe/repos/dotfiles/browse",
        ),
    ],
)
def test_parse_repo_url(url, owner, name, kind, web):
    ref = parse_repo_url(url, HOSTS)
    assert ref is not None
    assert (ref.owner, ref.name, ref.kind) == (owner, name, kind)
    assert ref.web_url == web
    assert "TOKEN" not in repr(ref)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "file:///srv/git/gitops.git",
        "javascript:alert(1)//github.com/a/b",
        "ftp://github.com/acme/gitops.git",
        "https://unknown.example/acme/gitops.git",  # a host that is not configured
        "https://github.com/acme",  # no repository
        "https://github.com/../etc/passwd",
        "https://github.com/acme/git ops",
        "https://github.com/acme/%2e%2e",
        "https://github.com:99999/acme/gitops",
        "https://dev.azure.com/org/proj/_git/repo",
        "https://org@dev.azure.com/org/proj/_git/repo",
        "https://org.visualstudio.com/proj/_git/repo",
        "git@ssh.dev.azure.com:v3/org/proj/repo",
        "org@vs-ssh.visualstudio.com:v3/org/proj/repo",
        "https://gitea.example.com/owner/repo.git",  # outside the configured /gitea base
        "https://github.com/acme/gitops\n.git",
    ],
)
def test_parse_repo_url_rejects(url):
    assert parse_repo_url(url, HOSTS) is None


def test_owner_and_name_compare_case_insensitively_but_display_as_written():
    upper = parse_repo_url("https://github.com/Acme/GitOps.git")
    lower = parse_repo_url("git@github.com:acme/gitops.git")
    assert upper.key == lower.key
    assert upper.web_url == "https://github.com/Acme/GitOps"


def test_configuration_overrides_a_public_host():
    ref = parse_repo_url("https://gitlab.com/a/b", {"gitlab.com": "gitea"})
    assert ref.kind == "gitea"


@pytest.mark.parametrize(
    "url, commit, compare",
    [
        (
            "git@github.com:acme/gitops.git",
            f"https://github.com/acme/gitops/commit/{SHA}",
            "https://github.com/acme/gitops/compare/main...renovate/api-1.x",
        ),
        (
            "git@gitlab.com:group/sub/proj.git",
            f"https://gitlab.com/group/sub/proj/-/commit/{SHA}",
            "https://gitlab.com/group/sub/proj/-/compare/main...renovate/api-1.x",
        ),
        (
            "https://gitea.example.com/gitea/owner/repo.git",
            f"https://gitea.example.com/gitea/owner/repo/commit/{SHA}",
            "https://gitea.example.com/gitea/owner/repo/compare/main...renovate/api-1.x",
        ),
        (
            "git@bitbucket.org:ws/repo.git",
            f"https://bitbucket.org/ws/repo/commits/{SHA}",
            "https://bitbucket.org/ws/repo/branches/compare/renovate/api-1.x%0Dmain",
        ),
        (
            "https://bb.example.com/scm/PROJ/repo.git",
            f"https://bb.example.com/projects/PROJ/repos/repo/commits/{SHA}",
            "https://bb.example.com/projects/PROJ/repos/repo/compare/commits?"
            "sourceBranch=refs%2Fheads%2Frenovate%2Fapi-1.x&targetBranch=refs%2Fheads%2Fmain",
        ),
    ],
)
def test_web_links_per_forge(url, commit, compare):
    ref = parse_repo_url(url, HOSTS)
    assert ref.commit_page(SHA) == commit
    assert ref.compare_page("main", "renovate/api-1.x") == compare


def test_links_encode_hostile_refs_and_refuse_non_commits():
    ref = parse_repo_url("https://github.com/acme/gitops")
    assert ref.commit_page("javascript:alert(1)") is None
    assert ref.commit_page("main") is None
    assert ref.compare_page("main", "x?y#z") == "https://github.com/acme/gitops/compare/main...x%3Fy%23z"
    for link in (ref.web_url, ref.compare_page("a", "b")):
        assert link.startswith("https://")


# Two forges on one host name, told apart by port; a key without a port is the default port.
PORTS = {
    "git.corp.example": "github",
    "git.corp.example:5556": "gitlab",
    "http://127.0.0.1:5555": "github",
    "http://127.0.0.1:5556/gitlab": "gitlab",
}


@pytest.mark.parametrize(
    "url, kind, web",
    [
        ("https://git.corp.example/acme/app.git", "github", "https://git.corp.example/acme/app"),
        ("https://git.corp.example:443/acme/app.git", "github", "https://git.corp.example/acme/app"),
        ("http://git.corp.example/acme/app.git", "github", "http://git.corp.example/acme/app"),
        ("https://git.corp.example:5556/group/sub/proj.git", "gitlab", "https://git.corp.example:5556/group/sub/proj"),
        ("http://git.corp.example:5556/group/proj", "gitlab", "http://git.corp.example:5556/group/proj"),
        # An SSH port is not a web port: the key without a port serves it.
        ("git@git.corp.example:acme/app.git", "github", "https://git.corp.example/acme/app"),
        ("ssh://git@git.corp.example:2222/acme/app.git", "github", "https://git.corp.example/acme/app"),
        ("http://127.0.0.1:5555/acme/gitops.git", "github", "http://127.0.0.1:5555/acme/gitops"),
        ("http://127.0.0.1:5556/gitlab/acme/gitops.git", "gitlab", "http://127.0.0.1:5556/gitlab/acme/gitops"),
    ],
)
def test_a_host_key_with_a_port_serves_only_that_port(url, kind, web):
    ref = parse_repo_url(url, PORTS)
    assert ref is not None and (ref.kind, ref.web_url) == (kind, web)


@pytest.mark.parametrize(
    "url",
    [
        "https://git.corp.example:5557/acme/app.git",  # no forge on that port
        "http://127.0.0.1/acme/gitops.git",  # the default port is not 5555
        "http://127.0.0.1:5556/acme/gitops.git",  # outside the /gitlab base of that port
        "https://github.com:8443/acme/gitops",  # a public host serves its default port only
    ],
)
def test_a_port_no_key_names_is_no_forge(url):
    assert parse_repo_url(url, PORTS) is None
