"""The web page of the commit an application last applied, built only from parsed parts."""

from __future__ import annotations

from functools import lru_cache

from forges import repourls, revisions


@lru_cache(maxsize=2048)  # a fleet has few repositories and many apps on each
def _repo(repo_url: str) -> repourls.RepoRef | None:
    return repourls.parse_repo_url(repo_url)


def synced_commit(tool: str, revision: str, chart: str = "", source_ref: str = "") -> str | None:
    """The commit SHA an Argo CD or Flux revision names, or None (chart version, digest, tag)."""
    if tool == "flux":
        # Flux keeps "<SourceKind>/<name>" as the primary source's ref: it settles sha256 revisions.
        return revisions.flux_commit(revision, source_ref.partition("/")[0] or None)
    return revisions.argocd_commit(revision, "helm" if chart else None)


def commit_url(tool: str, repo_url: str, revision: str, chart: str = "", source_ref: str = "") -> str | None:
    repo = _repo(repo_url or "")
    if repo is None:
        return None
    sha = synced_commit(tool, revision, chart, source_ref)
    return repourls.commit_url(repo, sha) if sha else None
