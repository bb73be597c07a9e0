"""Which forge serves a repository, and with which token: all from portal.settings.

    PORTAL_GITOPS_TOKEN          + PORTAL_GITOPS_GITHUB_API (default https://api.github.com)
    PORTAL_GITOPS_GITLAB_TOKEN   + PORTAL_GITLAB_URL        (default https://gitlab.com)
    PORTAL_GITOPS_GITEA_TOKEN    + PORTAL_GITEA_URL         (Gitea or Forgejo; no default)

Each API base names one host (a GitHub API base its web host: `api.github.com` is
github.com, `https://HOST/api/v3` is HOST, `api.SUB.ghe.com` is SUB.ghe.com), so
several forges can be configured at once and a repository URL goes to the forge of its
host. A GitLab or Gitea base with a sub-path (`https://example.com/gitea`) is matched
with that sub-path, and a base with a port (`http://127.0.0.1:5556`) serves only that
port, so GitHub and GitLab may share a host name. The same hosts, plus the link-only
PORTAL_FORGE_HOSTS, are what web links are built for (`link_hosts`), so a self-hosted
forge is configured once; a PORTAL_FORGE_HOSTS entry may name a port too
(`git.corp:5556=gitlab`).

Functions that take `environ` read those names from it instead (tests, and a caller that
holds its own configuration); without it they read the settings. Tokens are read when a
forge is built and never stored elsewhere. In demo mode every repository reads from the
local demo repository instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from forges.forge import Forge, NotConfigured
from forges.repourls import FORGEJO, GITEA, GITHUB, GITLAB, RepoRef, parse_repo_url, serves
from forges.retry import RetryPolicy

GITHUB_TOKEN = "PORTAL_GITOPS_TOKEN"
GITLAB_TOKEN = "PORTAL_GITOPS_GITLAB_TOKEN"
GITEA_TOKEN = "PORTAL_GITOPS_GITEA_TOKEN"
GITHUB_API = "PORTAL_GITOPS_GITHUB_API"
GITLAB_URL = "PORTAL_GITLAB_URL"
GITEA_URL = "PORTAL_GITEA_URL"


@dataclass(frozen=True)
class ForgeConfig:
    kind: str
    host_key: str  # what `parse_repo_url` matches: `github.com`, `https://example.com/gitea`
    api_url: str  # GitHub: the REST base; GitLab and Gitea: the instance root
    token_env: str


def configured(environ: Mapping[str, str] | None = None) -> list[ForgeConfig]:
    env = _settings() if environ is None else environ
    configs = []
    github_api = (env.get(GITHUB_API) or "https://api.github.com").rstrip("/")
    configs.append(ForgeConfig(GITHUB, _github_host(github_api), github_api, GITHUB_TOKEN))
    gitlab_url = (env.get(GITLAB_URL) or "https://gitlab.com").rstrip("/")
    configs.append(ForgeConfig(GITLAB, _host_key(gitlab_url), gitlab_url, GITLAB_TOKEN))
    gitea_url = (env.get(GITEA_URL) or "").rstrip("/")
    if gitea_url:
        configs.append(ForgeConfig(GITEA, _host_key(gitea_url), gitea_url, GITEA_TOKEN))
    return configs


def host_kinds(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """host (or base URL) -> forge kind, the mapping `forges.repourls.parse_repo_url` takes."""
    return {config.host_key: config.kind for config in configured(environ)}


def parse(url: str, environ: Mapping[str, str] | None = None) -> RepoRef | None:
    return parse_repo_url(url, host_kinds(environ))


def repository_key(url: str) -> str:
    """One repository however its URL is written (`.git` or not, any case of owner and name,
    clone or web URL): what reads of one repository are grouped and found by."""
    ref = parse(url)
    return "/".join(ref.key) if ref is not None else url.strip().lower().removesuffix(".git").rstrip("/")


def link_hosts() -> dict[str, str]:
    """Hosts web links are built for: the link-only PORTAL_FORGE_HOSTS, then every configured forge's."""
    from django.conf import settings

    return {**settings.PORTAL_FORGE_HOSTS, **host_kinds()}


def _settings() -> dict[str, str]:
    """The forge settings under their variables' names, as `environ` would hold them."""
    from django.conf import settings

    names = (GITHUB_API, GITLAB_URL, GITEA_URL, GITHUB_TOKEN, GITLAB_TOKEN, GITEA_TOKEN)
    return {name: getattr(settings, name) for name in names}


def forge_for(
    repository: str,
    environ: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    demo: bool | None = None,
) -> Forge:
    """The forge client for a repository URL; NotConfigured when no forge or token serves it."""
    if demo is None:
        from django.conf import settings

        demo = bool(getattr(settings, "DEMO_MODE", False))
    if demo:
        from forges.demo import DemoForge

        return DemoForge.for_repository(repository)
    env = _settings() if environ is None else environ
    ref = parse(repository, env)
    if ref is None:
        raise NotConfigured(f"{_safe(repository)} is not a repository on a configured forge")
    config = _config_for(ref, configured(env))
    if config is None:
        raise NotConfigured(f"no forge is configured for {ref.host} ({ref.kind})")
    token = env.get(config.token_env, "")
    if not token:
        # Names the variable, never a value; worded for reads (pins, release notes) and writes alike.
        raise NotConfigured(f"no token for {ref.host} ({ref.kind}): set {config.token_env}")
    if config.kind == GITHUB:
        from forges.github import GitHubForge

        return GitHubForge(ref, token, config.api_url, policy)
    if config.kind == GITLAB:
        from forges.gitlab import GitLabForge

        return GitLabForge(ref, token, config.api_url, policy)
    from forges.gitea import GiteaForge

    return GiteaForge(ref, token, config.api_url, policy)


def _config_for(ref: RepoRef, configs: list[ForgeConfig]) -> ForgeConfig | None:
    # By host, port and sub-path: two forges may share a host name on different ports.
    kind = GITEA if ref.kind == FORGEJO else ref.kind
    for config in configs:
        if config.kind == kind and serves(config.host_key, ref):
            return config
    return None


def _github_host(api_url: str) -> str:
    parts = urlsplit(api_url)
    host = (parts.hostname or "").lower()
    if host == "api.github.com":
        return "github.com"
    if host.startswith("api.") and host.endswith(".ghe.com"):
        return host[len("api.") :]
    # GitHub Enterprise Server: https://HOST/api/v3 serves the repositories of HOST.
    return f"{parts.scheme}://{parts.netloc}" if parts.port else host


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    if parts.path.strip("/") or parts.port:
        return url
    return (parts.hostname or "").lower()


def _safe(url: str) -> str:
    # A clone URL may carry credentials (`https://x-access-token:…@host/…`): never echo them.
    parts = urlsplit(url) if "://" in url else None
    if parts is not None and parts.hostname:
        return f"{parts.scheme}://{parts.hostname}{parts.path}"
    return url.split("@", 1)[-1]
