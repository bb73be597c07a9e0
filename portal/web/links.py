"""Web links for what pages show: commits, compares, Argo CD's UI. Only http(s) URLs built
from parsed parts; a cluster-provided string never becomes a link by itself."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from django.conf import settings


def safe_http_url(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.geturl()


def argocd_app_url(namespace: str, name: str) -> str | None:
    """The application in Argo CD's UI: /applications/<app namespace>/<name>."""
    base = safe_http_url(settings.PORTAL_ARGOCD_URL or "")
    if not base:
        return None
    return f"{base.rstrip('/')}/applications/{quote(namespace, safe='')}/{quote(name, safe='')}"


def _repo(repo_url: str):
    try:
        from forges import repourls
    except ImportError:  # the forge layer is optional for reading pages
        return None, None
    return repourls, repourls.parse_repo_url(repo_url) if hasattr(repourls, "parse_repo_url") else None


def commit_url(repo_url: str, revision: str) -> str | None:
    repourls, repo = _repo(repo_url)
    if repo is None:
        return None
    commit = commit_of(revision)
    if not commit:
        return None
    return safe_http_url(repourls.commit_url(repo, commit) or "")


def compare_url(repo_url: str, old: str, new: str) -> str | None:
    repourls, repo = _repo(repo_url)
    if repo is None:
        return None
    base, head = commit_of(old), commit_of(new)
    if not base or not head or base == head:
        return None
    return safe_http_url(repourls.compare_url(repo, base, head) or "")


def commit_of(revision: str) -> str | None:
    try:
        from forges.revisions import commit_of as parse
    except ImportError:
        return None
    return parse(revision)
