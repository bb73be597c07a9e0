"""GitLab (gitlab.com or self-managed) through python-gitlab.

python-gitlab's own rate-limit handling sleeps on the wall clock and its transient retry
repeats writes, so it gets a `forges.retry.RetryingSession` instead: 429 with Retry-After
(or RateLimit-Reset) and transient 5xx on reads are waited out there, with the injected
sleeper, and past the bound the session raises `RateLimited`, which python-gitlab lets
through untouched (it never sees a 429 to sleep on itself).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import islice
from typing import Any, TypeVar

import gitlab
from gitlab.exceptions import GitlabError

from forges.forge import (
    CLOSED,
    FAIL,
    MAX_RELEASES,
    MERGED,
    NONE,
    OPEN,
    PASS,
    RUNNING,
    BranchExists,
    FileChange,
    Forge,
    ForgeError,
    NotFound,
    Outcome,
    PullRequestExists,
    PullRequestInfo,
    ReleaseInfo,
    TreeEntry,
    error_message,
    is_commit_sha,
    newest_first,
    redact,
    release_link,
)
from forges.repourls import GITLAB, RepoRef
from forges.retry import RetryingSession, RetryPolicy
from portal.kernel.timestamps import parse_time

DEFAULT_URL = "https://gitlab.com"
_T = TypeVar("_T")
_PIPELINE = {
    "success": PASS,
    "failed": FAIL,
    "canceled": FAIL,
    "created": RUNNING,
    "waiting_for_resource": RUNNING,
    "preparing": RUNNING,
    "pending": RUNNING,
    "running": RUNNING,
    "scheduled": RUNNING,
    "manual": RUNNING,  # a manual job blocks the pipeline until someone starts it
    "skipped": NONE,
}


class GitLabForge(Forge):
    kind = GITLAB

    def __init__(self, repo: RepoRef, token: str, url: str = DEFAULT_URL, policy: RetryPolicy | None = None):
        self.repo = repo
        self.policy = policy or RetryPolicy()
        self._token = token
        session = RetryingSession(self.policy, secrets=[token])
        self._gl = gitlab.Gitlab(url.rstrip("/"), private_token=token, session=session, per_page=100)
        self._project = self._gl.projects.get(repo.path, lazy=True)

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except GitlabError as error:
            message = f"GitLab: {what}: {error.response_code or ''} {error_message(error.response_body or b'')}"
            if not error.response_body:
                message = f"GitLab: {what}: {error}"
            message = redact(message.strip(), [self._token])
            if error.response_code == 404:
                raise NotFound(message, 404) from None
            raise ForgeError(message, error.response_code) from None

    # --- reading -------------------------------------------------------------------------

    def read_default_branch(self) -> str:
        return self._call("project", lambda: self._gl.projects.get(self.repo.path).default_branch)

    def branch_head(self, branch: str) -> str:
        if is_commit_sha(branch):
            return branch  # the tree and files APIs take a commit where they take a branch
        return self._call(f"branch {branch}", lambda: self._project.branches.get(branch).commit["id"])

    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        rows = self._call(
            f"tree at {branch}",
            lambda: self._project.repository_tree(path=path.strip("/"), ref=branch, recursive=True, get_all=True),
        )
        return [TreeEntry(r["path"], r["id"], r.get("mode") or "100644") for r in rows if r["type"] == "blob"]

    def commit_tree(self, commit: str) -> list[TreeEntry]:
        return self.tree("", commit)  # GitLab takes a commit SHA wherever it takes a ref

    def read_file(self, path: str, branch: str) -> str:
        return self._call(
            f"file {path} at {branch}", lambda: self._project.files.get(file_path=path, ref=branch).decode().decode()
        )

    def open_pull_requests(self) -> list[PullRequestInfo]:
        rows = self._call("open merge requests", lambda: self._project.mergerequests.list(state="opened", get_all=True))
        return [_mr(m.attributes) for m in rows]

    def pull_request(self, number: int) -> PullRequestInfo:
        return _mr(self._call(f"merge request !{number}", lambda: self._project.mergerequests.get(number).attributes))

    def checks(self, pr: PullRequestInfo) -> str:
        mr = self._call(f"merge request !{pr.number}", lambda: self._project.mergerequests.get(pr.number).attributes)
        pipeline = mr.get("head_pipeline") or {}
        return _PIPELINE.get(pipeline.get("status", ""), NONE)

    def failing_check_url(self, pr: PullRequestInfo) -> str:
        mr = self._call(f"merge request !{pr.number}", lambda: self._project.mergerequests.get(pr.number).attributes)
        pipeline = mr.get("head_pipeline") or {}
        failed = _PIPELINE.get(pipeline.get("status", ""), NONE) == FAIL
        return str(pipeline.get("web_url") or "") if failed else ""

    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        def read() -> list[dict[str, Any]]:
            # An iterator reads page after page only as far as it is walked. GitLab has no
            # drafts; a release dated in the future ("upcoming") is listed like the others.
            rows = self._project.releases.list(iterator=True, order_by="released_at", sort="desc")
            return [row.attributes for row in islice(rows, max(limit, 0))]

        return newest_first(_release(data, self.repo) for data in self._call("releases", read))

    # --- writing -------------------------------------------------------------------------

    def create_branch(self, branch: str, from_branch: str) -> str:
        try:
            created = self._call(
                f"create branch {branch}",
                lambda: self._project.branches.create({"branch": branch, "ref": from_branch}),
            )
        except ForgeError as error:
            if error.status == 400 and "already exists" in str(error).lower():
                raise BranchExists(str(error), 400) from None
            raise
        return created.commit["id"]

    def delete_branch(self, branch: str) -> None:
        self._call(f"delete branch {branch}", lambda: self._project.branches.delete(branch))

    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        actions = [{"action": "update", "file_path": c.path, "content": c.content} for c in changes]
        data = {"branch": branch, "commit_message": message, "actions": actions}
        return self._call(f"commit on {branch}", lambda: self._project.commits.create(data).id)

    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        data = {
            "source_branch": head,
            "target_branch": base,
            "title": title,
            "description": body,
            "remove_source_branch": True,
        }
        try:
            return _mr(
                self._call(
                    f"open merge request from {head}", lambda: self._project.mergerequests.create(data).attributes
                )
            )
        except ForgeError as error:
            # 409 means "another open merge request exists"; the text may be localised.
            if error.status == 409:
                raise PullRequestExists(str(error), 409) from None
            raise

    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        skipped: dict[str, str] = {}
        ids: dict[str, int] = {}
        for name in reviewers:
            if name.startswith("@"):
                # GitLab has no group reviewers over REST (approval rules and CODEOWNERS do that).
                skipped[name] = "GitLab takes people as reviewers, not groups"
                continue
            users = self._call(f"user {name}", functools.partial(self._gl.users.list, username=name, get_all=False))
            if users:
                ids[name] = users[0].id
            else:
                skipped[name] = "no such GitLab user"
        if not ids:
            return Outcome((), skipped)
        update = self._project.mergerequests.update
        try:
            self._call(f"reviewers of !{number}", lambda: update(number, {"reviewer_ids": list(ids.values())}))
            return Outcome(tuple(ids), skipped)
        except ForgeError as error:
            if error.status not in (400, 403, 422) or len(ids) == 1:
                raise
        # More than one reviewer is a paid feature: keep the first, report the rest.
        first, *rest = ids
        self._call(f"reviewer {first} of !{number}", lambda: update(number, {"reviewer_ids": [ids[first]]}))
        skipped.update({name: "this GitLab allows one reviewer per merge request" for name in rest})
        return Outcome((first,), skipped)

    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        if not labels:
            return Outcome()
        # add_labels keeps the labels already there; GitLab creates unknown project labels.
        self._call(
            f"labels of !{number}",
            lambda: self._project.mergerequests.update(number, {"add_labels": ",".join(labels)}),
        )
        return Outcome(tuple(labels))

    # A merge request's comments are its notes (`/merge_requests/:iid/notes`).
    def create_comment(self, number: int, body: str) -> str:
        notes = self._project.mergerequests.get(number, lazy=True).notes
        return self._call(f"note on !{number}", lambda: str(notes.create({"body": body}).id))

    def update_comment(self, number: int, comment_id: str, body: str) -> None:
        notes = self._project.mergerequests.get(number, lazy=True).notes
        self._call(f"note {comment_id} on !{number}", lambda: notes.update(int(comment_id), {"body": body}))


def _mr(data: dict[str, Any]) -> PullRequestInfo:
    state = {"opened": OPEN, "merged": MERGED}.get(data.get("state", ""), CLOSED)
    return PullRequestInfo(
        number=int(data["iid"]),
        url=data.get("web_url", ""),
        title=data.get("title", ""),
        state=state,
        head_branch=data.get("source_branch", ""),
        base_branch=data.get("target_branch", ""),
        head_sha=data.get("sha") or "",
        merged_at=parse_time(data.get("merged_at")),
        closed_at=parse_time(data.get("closed_at")),
        created_at=parse_time(data.get("created_at")),
    )


def _release(data: dict[str, Any], repo: RepoRef) -> ReleaseInfo:
    tag = data.get("tag_name") or ""
    # `_links.self` is the release's web page; older GitLab versions leave it out.
    links = data.get("_links") or {}
    return ReleaseInfo(
        tag=tag,
        title=data.get("name") or tag,
        url=release_link(links.get("self"), repo, tag),
        body=data.get("description") or "",
        published_at=parse_time(data.get("released_at") or data.get("created_at")),
    )
