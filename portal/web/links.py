"""Web links for what pages show: commits, compares, Argo CD's UI. Only http(s) URLs built
from parsed parts; a cluster-provided string never becomes a link by itself."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from django.conf import settings

from forges import repourls
from forges.revisions import flux_commit


def safe_http_url(url: str | None) -> str | None:
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.geturl()


def argocd_app_url(namespace: str, name: str) -> str | None:
    """The application in Argo CD's UI: /applications/<app namespace>/<name>."""
    base = safe_http_url(settings.PORTAL_ARGOCD_URL)
    if not base:
        return None
    return f"{base.rstrip('/')}/applications/{quote(namespace, safe='')}/{quote(name, safe='')}"


def commit_of(revision: str) -> str | None:
    """The commit a synced revision names (Argo CD sha, Flux `main@sha1:…`), or None."""
    return flux_commit(revision or "") if revision else None


def _repo(repo_url: str) -> repourls.RepoRef | None:
    return repourls.parse_repo_url(repo_url or "", settings.PORTAL_FORGE_HOSTS)


def commit_url(repo_url: str, revision: str) -> str | None:
    repo, commit = _repo(repo_url), commit_of(revision)
    if repo is None or not commit:
        return None
    return safe_http_url(repourls.commit_url(repo, commit))


def compare_url(repo_url: str, old: str, new: str) -> str | None:
    repo = _repo(repo_url)
    base, head = commit_of(old), commit_of(new)
    if repo is None or not base or not head or base == head:
        return None
    return safe_http_url(repourls.compare_url(repo, base, head))
