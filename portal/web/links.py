"""Web links for what pages show: commits, compares, Argo CD's UI. Only http(s) URLs built
from parsed parts; a cluster-provided string never becomes a link by itself."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import quote, urlsplit

from django.conf import settings

from forges import repourls
from forges.revisions import argocd_commit, flux_commit


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


def commit_of(revision: str, tool: str = "flux", chart: str = "", source_ref: str = "") -> str | None:
    """The commit a synced revision names, or None (chart version, OCI digest, tag).

    Flux keeps "<SourceKind>/<name>" as the primary source's ref, which settles what a
    sha256 revision is; an Argo CD app with a chart synced a chart version, not a commit.
    """
    if not revision:
        return None
    if tool == "argo":
        return argocd_commit(revision, "helm" if chart else None)
    return flux_commit(revision, source_ref.partition("/")[0] or None)


@lru_cache(maxsize=4096)  # a fleet has few repositories and many apps on each
def _parse(repo_url: str, hosts: tuple[tuple[str, str], ...]) -> repourls.RepoRef | None:
    return repourls.parse_repo_url(repo_url, dict(hosts))


def _repo(repo_url: str) -> repourls.RepoRef | None:
    return _parse(repo_url or "", tuple(sorted(settings.PORTAL_FORGE_HOSTS.items())))


def commit_url(repo_url: str, revision: str, tool: str = "flux", chart: str = "", source_ref: str = "") -> str | None:
    repo, commit = _repo(repo_url), commit_of(revision, tool, chart, source_ref)
    if repo is None or not commit:
        return None
    return safe_http_url(repourls.commit_url(repo, commit))


def compare_url(repo_url: str, old: str, new: str, tool: str = "flux", chart: str = "") -> str | None:
    repo = _repo(repo_url)
    base, head = commit_of(old, tool, chart), commit_of(new, tool, chart)
    if repo is None or not base or not head or base == head:
        return None
    return safe_http_url(repourls.compare_url(repo, base, head))


def repository_url(url: str) -> str | None:
    """A repository's web page from the URL an admin wrote (web or clone form); None unless http(s).

    A repository on a known forge links to its page as `forges.repourls` builds it; any other
    http(s) URL links as written, less credentials, query and fragment."""
    repo = _repo(url)
    if repo is not None:
        return safe_http_url(repourls.repo_url(repo))
    safe = safe_http_url((url or "").strip())
    if safe is None:
        return None
    parts = urlsplit(safe)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return f"{parts.scheme}://{netloc}{quote(parts.path, safe='/%~')}"


def app_commit_url(app) -> str | None:  # a stored GitOpsApp
    return commit_url(app.repo_url, app.synced_revision, app.tool, app.chart, _source_ref(app))


def app_compare_url(app) -> str | None:
    if not app.previous_synced_revision:
        return None
    return compare_url(app.repo_url, app.previous_synced_revision, app.synced_revision, app.tool, app.chart)


def _source_ref(app) -> str:
    sources = app.sources or []
    return (sources[0].get("ref") or "") if sources and isinstance(sources[0], dict) else ""
