"""What commit a GitOps tool says it applied, read from its revision strings.

Flux writes a source artifact's revision as `<ref>@<algo>:<hash>`: `main@sha1:<sha>`
and `refs/tags/v1@sha1:<sha>` for Git, `sha1:<sha>` for a detached commit,
`v1.0@sha256:<digest>` and `sha256:<digest>` for OCI artifacts and Buckets (a content
digest, not a commit). Flux before v2.0 wrote `main/<sha>` and `<tag>/<digest hex>`.
Helm charts carry a chart version, `1.2.3` or `1.2.3+<12 hex of a commit>`.

Argo CD records a full commit SHA for Git sources, the chart version for Helm
sources, and `sha256:<digest>` for OCI sources; a tag or branch name only appears in
`targetRevision`, never as the applied revision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEX = re.compile(r"[0-9a-fA-F]+")
_SHA1_LENGTH = 40
_SHA256_LENGTH = 64
_SHORT_COMMIT = 7
_SHORT_DIGEST = 12  # the length `docker images` shows
_GIT_KINDS = {"gitrepository", "git"}
_NON_GIT_KINDS = {"ocirepository", "bucket", "helmchart", "helmrepository", "oci", "helm"}


@dataclass(frozen=True)
class Revision:
    raw: str
    ref: str = ""  # branch or tag as written: `main`, `refs/tags/v1.0`, `v1.0` (OCI tag)
    commit: str | None = None  # the full Git commit SHA, lowercased, when the revision names one
    digest: str = ""  # `sha256:<hex>` of an OCI artifact or bucket
    version: str = ""  # a Helm chart version

    @property
    def short(self) -> str:
        """A display form: `main@1a2b3c4`, `1a2b3c4`, `v1.0@sha256:0123456789ab`, `1.2.3`."""
        ref = _display_ref(self.ref)
        if self.commit:
            core = self.commit[:_SHORT_COMMIT]
        elif self.digest:
            algorithm, _, value = self.digest.partition(":")
            core = f"{algorithm}:{value[:_SHORT_DIGEST]}"
        else:
            return self.version or self.raw.strip()
        return f"{ref}@{core}" if ref else core


def parse_flux_revision(revision: str, source_kind: str | None = None) -> Revision:
    """Read a Flux source/applied revision; `source_kind` (e.g. `GitRepository`) settles `sha256`."""
    raw = revision or ""
    text = raw.strip()
    kind = (source_kind or "").lower()
    git = kind in _GIT_KINDS
    not_git = kind in _NON_GIT_KINDS
    if not text:
        return Revision(raw)
    ref, at, checksum = text.rpartition("@")
    if not at:
        ref, checksum = "", text
    if _is_checksum(checksum):
        algorithm, _, value = checksum.partition(":")
        algorithm = algorithm.lower()
        if not _HEX.fullmatch(value):
            return Revision(raw, ref=ref)
        value = value.lower()
        if algorithm == "sha1" and len(value) == _SHA1_LENGTH and not not_git:
            return Revision(raw, ref=ref, commit=value)
        if algorithm == "sha256" and len(value) == _SHA256_LENGTH:
            # Git repositories in SHA-256 object format also say sha256; only the kind tells.
            if git:
                return Revision(raw, ref=ref, commit=value)
            return Revision(raw, ref=ref, digest=f"sha256:{value}")
        # A checksum that names no commit here (abbreviated, or on a non-Git source).
        return Revision(raw, ref=ref, digest=f"{algorithm}:{value}")
    # Flux v0.x: `<branch>/<sha>` for Git, `<tag>/<digest hex>` for OCI.
    ref, slash, tail = text.rpartition("/")
    if slash and _HEX.fullmatch(tail):
        return _bare_hash(raw, ref, tail.lower(), git, not_git)
    if _HEX.fullmatch(text):
        return _bare_hash(raw, "", text.lower(), git, not_git)
    if "+" in text or kind in ("helmchart", "helm"):
        return Revision(raw, version=text)
    return Revision(raw, ref=text)


def parse_argocd_revision(revision: str, source_type: str | None = None) -> Revision:
    """Read an Argo CD `status.sync.revision` (or one of `revisions`); `source_type`: git/helm/oci."""
    raw = revision or ""
    text = raw.strip()
    kind = (source_type or "").lower()
    if not text:
        return Revision(raw)
    if text.lower().startswith("sha256:") and _HEX.fullmatch(text[7:]):
        return Revision(raw, digest=text.lower())
    if kind == "helm":
        return Revision(raw, version=text)
    if kind != "oci" and _HEX.fullmatch(text) and len(text) in (_SHA1_LENGTH, _SHA256_LENGTH):
        return Revision(raw, commit=text.lower())
    if _looks_like_version(text):
        return Revision(raw, version=text)
    return Revision(raw, ref=text)


def flux_commit(revision: str, source_kind: str | None = None) -> str | None:
    """The commit a Flux revision names, or None (OCI digest, chart version, empty)."""
    return parse_flux_revision(revision, source_kind).commit


def argocd_commit(revision: str, source_type: str | None = None) -> str | None:
    """The commit an Argo CD revision names, or None (chart version, tag, digest)."""
    return parse_argocd_revision(revision, source_type).commit


def short_revision(revision: str) -> str:
    """A short display form of any revision string, read the Flux way (a superset of Argo CD's)."""
    return parse_flux_revision(revision).short


def _is_checksum(text: str) -> bool:
    algorithm, colon, value = text.partition(":")
    return bool(colon) and algorithm.lower() in ("sha1", "sha256", "sha384", "sha512") and bool(value)


def _bare_hash(raw: str, ref: str, value: str, git: bool, not_git: bool) -> Revision:
    if len(value) == _SHA1_LENGTH and not not_git:
        return Revision(raw, ref=ref, commit=value)
    if len(value) == _SHA256_LENGTH:
        if git:
            return Revision(raw, ref=ref, commit=value)
        return Revision(raw, ref=ref, digest=f"sha256:{value}")
    return Revision(raw, ref=f"{ref}/{value}" if ref else value)


def _looks_like_version(text: str) -> bool:
    return bool(re.fullmatch(r"v?\d+(\.\d+){0,2}([-+][0-9A-Za-z.+-]+)?", text))


def _display_ref(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


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
