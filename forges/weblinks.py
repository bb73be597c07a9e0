"""Web pages of a repository, a commit and a compare on the forge that serves a clone URL.

The one definition of these links for everything above forges (pages, API, notifications,
releases): each parses the clone URL as the portal's configuration reads it and asks the
`RepoRef` for its page (`forges.repourls` spells the pages per forge kind). Only http(s) URLs
built from a parsed `RepoRef`; any other repository URL links as written, less credentials,
query and fragment. Self-hosted forges are the configured ones and PORTAL_FORGE_HOSTS
(`forges.hosts.link_hosts`)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import quote, urlsplit

from forges import hosts, repourls
from portal.kernel.links import safe_http_url


@lru_cache(maxsize=4096)  # a fleet has few repositories and many apps on each
def _parse(repo_url: str, hosts: tuple[tuple[str, str], ...]) -> repourls.RepoRef | None:
    return repourls.parse_repo_url(repo_url, dict(hosts))


def _repo(repo_url: str) -> repourls.RepoRef | None:
    return _parse(repo_url or "", tuple(sorted(hosts.link_hosts().items())))


def commit_url(repo_url: str, commit: str | None) -> str | None:
    repo = _repo(repo_url)
    if repo is None or not commit:
        return None
    return safe_http_url(repo.commit_page(commit))


def compare_url(repo_url: str, base: str | None, head: str | None) -> str | None:
    repo = _repo(repo_url)
    if repo is None or not base or not head or base == head:
        return None
    return safe_http_url(repo.compare_page(base, head))


def repository_url(url: str) -> str | None:
    """A repository's web page from the URL an admin wrote (web or clone form); None unless http(s)."""
    repo = _repo(url)
    if repo is not None:
        return safe_http_url(repo.web_url)
    safe = safe_http_url((url or "").strip())
    if safe is None:
        return None
    parts = urlsplit(safe)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return f"{parts.scheme}://{netloc}{quote(parts.path, safe='/%~')}"
