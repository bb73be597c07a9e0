"""One interface for every Git host, and the HTTP manners all of them share.

A `Forge` is bound to one repository. It reads (tree, files, branch heads, pull
requests, checks, published releases) and writes only what a pull request needs (a branch, one commit on
it, the pull request, its reviewers and labels, and removing the branch again when an
open fails half way). It has no merge and no way to push to an existing branch other
than the one it created: the portal proposes, people merge. Besides the pull request itself it
writes one comment on it and keeps that comment up to date (the rendered diff).

Rate limits and transient errors are handled in one place, `forges.retry`, by the same
policy for every client; `RateLimited` is the error it raises past its bound.
"""

from __future__ import annotations

import abc
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from forges import treecache
from forges.pins.sites import pin_format
from forges.repourls import RepoRef
from portal.kernel.redaction import redact as redact_credentials

log = logging.getLogger(__name__)

# Pull request states, as the portal stores them (GitLab's "opened"/"locked" map here).
OPEN = "open"
MERGED = "merged"
CLOSED = "closed"

# Checks, folded from whatever the forge reports.
PASS = "pass"
RUNNING = "running"
FAIL = "fail"
NONE = "none"

# Release notes matter for the versions people move to, which are recent: the
# newest hundred releases are plenty, and one or two pages on every forge.
MAX_RELEASES = 100
# A full commit SHA (SHA-1, or SHA-256 in a repository using it): a revision that names itself.
_COMMIT_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def is_commit_sha(ref: str) -> bool:
    """Whether `ref` is a full commit SHA. Every reading method taking a `branch` also takes one:
    a rollback reads what Git pinned at a commit a GitOps tool's history names, not at a branch."""
    return bool(_COMMIT_SHA.match(ref))


class ForgeError(Exception):
    """A forge refused or failed. The message never holds a token (see `redact`)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ForgeError):
    pass


class BranchExists(ForgeError):
    pass


class PullRequestExists(ForgeError):
    pass


class RateLimited(ForgeError):
    """The forge asked us to wait longer than the policy allows (or too often)."""

    def __init__(self, message: str, wait: float | None = None, status: int | None = None) -> None:
        super().__init__(message, status)
        self.wait = wait


class NotConfigured(ForgeError):
    pass


class WritesRefused(ForgeError):
    """This forge only reads (the demo forge)."""


class ChecksUnreadable(ForgeError):
    """The token may read the pull request but none of its head commit's checks.

    A GitHub fine-grained token with only Contents and Pull requests permissions answers 403
    on check runs and on commit statuses: the checks are unknown, the pull request is not."""


@dataclass(frozen=True)
class TreeEntry:
    path: str
    sha: str  # blob SHA; Gitea needs it to update a file
    mode: str = "100644"
    size: int | None = None


@dataclass(frozen=True)
class FileChange:
    path: str
    content: str
    sha: str = ""  # blob SHA the change was made against
    mode: str = "100644"


@dataclass(frozen=True)
class PullRequestInfo:
    number: int
    url: str
    title: str
    state: str  # OPEN, MERGED or CLOSED
    head_branch: str
    base_branch: str
    head_sha: str = ""
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class ReleaseInfo:
    """One published release of a repository (drafts are never listed)."""

    tag: str
    title: str
    url: str  # the release's web page: http(s), given by the forge or built from the repository's
    body: str  # the notes as the forge holds them (Markdown, unrendered)
    published_at: datetime | None = None
    prerelease: bool = False


def newest_first(releases: Iterable[ReleaseInfo]) -> list[ReleaseInfo]:
    """Newest publication first; releases without a date keep their order, after the dated ones."""
    return sorted(
        releases,
        key=lambda r: (r.published_at is not None, r.published_at.timestamp() if r.published_at else 0.0),
        reverse=True,  # Python's sort stays stable in reverse: equal keys keep the forge's order
    )


def release_link(given: str | None, repo: RepoRef, tag: str) -> str:
    """The web page a forge gave for a release when it is http(s); else the one built from its parts."""
    try:
        parts = urlsplit(given or "")
    except ValueError:
        parts = urlsplit("")
    if parts.scheme in ("http", "https") and parts.hostname:
        return given or ""
    return repo.release_page(tag) or ""


@dataclass(frozen=True)
class Outcome:
    """What a best-effort step did: names applied and names skipped with why."""

    applied: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)


def fold_checks(states: Iterable[str]) -> str:
    """The worst of several PASS/RUNNING/FAIL results; NONE when there are none."""
    seen = set(states)
    for state in (FAIL, RUNNING, PASS):
        if state in seen:
            return state
    return NONE


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` without `secrets` or any credential a forge may echo (portal.kernel.redaction)."""
    return redact_credentials(text, secrets)


def error_message(body: Any) -> str:
    """The human part of a forge's error body (`message` string/list/map, or `error`), redacted."""
    if isinstance(body, bytes | bytearray):
        try:
            body = json.loads(body.decode("utf-8", "replace"))
        except ValueError:
            return redact_credentials(body.decode("utf-8", "replace"))[:300]
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return redact_credentials(body)[:300]
    if not isinstance(body, dict):
        return redact_credentials(str(body))[:300] if body is not None else ""
    message = body.get("message", body.get("error", ""))
    if isinstance(message, list):
        message = "; ".join(str(m) for m in message)
    elif isinstance(message, dict):
        message = "; ".join(f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in message.items())
    details = [e.get("message", "") for e in body.get("errors") or [] if isinstance(e, dict) and e.get("message")]
    text = str(message)
    if details:
        text = f"{text}: {'; '.join(details)}" if text else "; ".join(details)
    return redact_credentials(text)[:300]


class TreeFiles(Mapping[str, str]):
    """The files of one tree by path; each is read from the forge the first time its text is
    asked for, then kept. Listing the paths reads nothing. `paths` maps each path to its blob
    SHA where the tree named one: a text read before under that SHA (`forges.treecache`) is not
    read again."""

    def __init__(self, forge: Forge, branch: str, paths: Mapping[str, str] | Iterable[str]) -> None:
        self._forge = forge
        self._branch = branch  # a branch, or the commit SHA the tree was read at
        blobs = dict(paths) if isinstance(paths, Mapping) else dict.fromkeys(paths, "")
        self._paths = list(blobs)
        self._blobs = blobs
        self._texts: dict[str, str] = {}

    def __getitem__(self, path: str) -> str:
        if path not in self._blobs:
            raise KeyError(path)
        if path not in self._texts:
            self._texts[path] = treecache.commits.text(
                self._forge.cache_key, self._blobs[path], lambda: self._forge.read_file(path, self._branch)
            )
        return self._texts[path]

    def __contains__(self, path: object) -> bool:
        return path in self._blobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    @property
    def read(self) -> list[str]:
        """The paths whose text was read so far."""
        return list(self._texts)


class Forge(abc.ABC):
    """One repository on one Git host."""

    kind: str
    repo: RepoRef
    _default_branch: str | None = None  # what `default_branch` was told, once

    # --- reading ---------------------------------------------------------------------

    def default_branch(self) -> str:
        """The branch the repository's HEAD names: what `HEAD` (or no revision) means to Argo CD
        and Flux. Asked once per client, then kept: it changes only when someone renames it."""
        if self._default_branch is None:
            self._default_branch = self.read_default_branch()
        return self._default_branch

    @abc.abstractmethod
    def read_default_branch(self) -> str:
        """Ask the forge for the repository's default branch (see `default_branch`)."""

    @abc.abstractmethod
    def branch_head(self, branch: str) -> str:
        """The commit SHA a branch points at (a full commit SHA: itself); NotFound when there is no
        such branch."""

    @abc.abstractmethod
    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        """Every file (blob) under `path` ("" for the whole repository) at a branch's head."""

    @abc.abstractmethod
    def read_file(self, path: str, branch: str) -> str:
        """One file's text at a branch."""

    def read_files(self, paths: Iterable[str], branch: str) -> dict[str, str]:
        return {path: self.read_file(path, branch) for path in paths}

    def pin_files(self, path: str, branch: str) -> tuple[list[TreeEntry], dict[str, str]]:
        """The tree under `path` and the text of every file that can hold an image pin."""
        entries = self.tree(path, branch)
        wanted = [e.path for e in entries if pin_format(e.path) is not None]
        return entries, self.read_files(wanted, branch)

    @abc.abstractmethod
    def commit_tree(self, commit: str) -> list[TreeEntry]:
        """Every file (blob) of the whole repository at a commit SHA."""

    @property
    def cache_key(self) -> tuple[str, ...]:
        """This repository in `forges.treecache`: its forge (by web root, port included) and name."""
        return (self.kind, self.repo.web_root, *self.repo.key)

    def tree_files(self, branch: str) -> tuple[list[TreeEntry], TreeFiles]:
        """The whole tree at a branch's head, and its pin-holding files read only when asked for:
        what an application builds (kustomize bases, `$values` files) can be anywhere in the
        repository, but it is rarely more than a handful of its files. The head is asked every
        time (one call); the tree and texts of a commit read before come from `forges.treecache`,
        and every file is read at that commit, so tree and texts always agree."""
        head = self.branch_head(branch)
        entries = list(treecache.commits.tree(self.cache_key, head, lambda: self.commit_tree(head)))
        return entries, TreeFiles(self, head, {e.path: e.sha for e in entries if pin_format(e.path) is not None})

    @abc.abstractmethod
    def open_pull_requests(self) -> list[PullRequestInfo]:
        """Every open pull/merge request of the repository (all pages)."""

    def find_pull_request(self, title: str) -> PullRequestInfo | None:
        """The open pull request with exactly this title (case-insensitive), if any."""
        wanted = title.strip().lower()
        return next((pr for pr in self.open_pull_requests() if pr.title.strip().lower() == wanted), None)

    @abc.abstractmethod
    def pull_request(self, number: int) -> PullRequestInfo:
        """One pull request's current state."""

    @abc.abstractmethod
    def checks(self, pr: PullRequestInfo) -> str:
        """PASS, RUNNING, FAIL or NONE for the pull request's head commit; ChecksUnreadable
        when the token may read none of them."""

    def failing_check_url(self, pr: PullRequestInfo) -> str:
        """The web page of one failing check of the pull request's head commit (a check run, a
        commit status's details, a pipeline); "" when none is known. Asked only once checks are
        seen failing, so a passing pull request costs no request."""
        return ""

    @abc.abstractmethod
    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        """The repository's published releases, newest first, at most `limit`; drafts left out."""

    # --- writing (only what one pull request needs) ----------------------------------

    @abc.abstractmethod
    def create_branch(self, branch: str, from_branch: str) -> str:
        """Create `branch` at `from_branch`'s head; BranchExists when it is already there."""

    @abc.abstractmethod
    def delete_branch(self, branch: str) -> None:
        """Remove a branch this portal created (cleanup after a failed open)."""

    @abc.abstractmethod
    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        """One commit on `branch` that changes every file in `changes`; the commit SHA."""

    @abc.abstractmethod
    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        """Open a pull request from `head` into `base`; PullRequestExists when one is open."""

    @abc.abstractmethod
    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        """Ask people (`alice`) and teams (`@org/team`) to review; unknown names are skipped."""

    @abc.abstractmethod
    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        """Add labels by name (created when missing)."""

    @abc.abstractmethod
    def create_comment(self, number: int, body: str) -> str:
        """Add a comment (Markdown) to pull request `number`; the forge's id of the comment."""

    @abc.abstractmethod
    def update_comment(self, number: int, comment_id: str, body: str) -> None:
        """Replace the body of a comment this portal wrote on pull request `number`; NotFound
        when it is gone (someone deleted it)."""
