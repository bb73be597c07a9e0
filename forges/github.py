"""GitHub and GitHub Enterprise (Server and ghe.com) through PyGithub.

PyGithub's own retry and throttling sleep on the wall clock, so both are switched off
(`retry=0`, no pauses between requests) and every call goes through `forges.retry.RetryPolicy`,
which reads the same signals (Retry-After, X-RateLimit-Remaining/Reset, the
secondary-limit message) with an injectable sleeper. Each call is a closure that reads
every attribute it needs, so PyGithub's lazy objects never fetch outside the policy.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from github import Auth, Github, GithubException, InputGitTreeElement

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
    ChecksUnreadable,
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
    fold_checks,
    is_commit_sha,
    newest_first,
    redact,
    release_link,
)
from forges.repourls import GITHUB, RepoRef
from forges.retry import RetryPolicy

DEFAULT_API = "https://api.github.com"
_T = TypeVar("_T")
_LABEL_COLOUR = "ededed"
_FAILED_CONCLUSIONS = {"failure", "cancelled", "timed_out", "action_required", "stale", "startup_failure"}


class GitHubForge(Forge):
    kind = GITHUB

    def __init__(self, repo: RepoRef, token: str, api_url: str = DEFAULT_API, policy: RetryPolicy | None = None):
        self.repo = repo
        self.policy = policy or RetryPolicy()
        self._token = token
        self._gh = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            retry=0,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        self._repo = self._gh.get_repo(repo.path)
        self._host = urlsplit(api_url).hostname or ""

    def _remaining(self) -> float | None:
        """The rate-limit remaining PyGithub kept from the last answer's headers (-1: none yet)."""
        return float(self._gh.requester.rate_limiting[0])

    # --- plumbing ----------------------------------------------------------------------

    def _call(self, method: str, what: str, fn: Callable[[], _T]) -> _T:
        try:
            return self.policy.call(method, fn, _describe, host=self._host, remaining=self._remaining)
        except GithubException as error:
            raise self._translate(error, what) from None
        except requests.RequestException as error:
            # PyGithub lets the transport's errors through; only their kind is told (a URL may
            # name more than a host).
            raise ForgeError(f"GitHub: {what}: cannot reach the forge: {type(error).__name__}") from None

    def _translate(self, error: GithubException, what: str) -> ForgeError:
        message = redact(f"GitHub: {what}: {error.status} {error_message(error.data)}".strip(), [self._token])
        if error.status == 404:
            return NotFound(message, error.status)
        return ForgeError(message, error.status)

    # --- reading -------------------------------------------------------------------------

    def read_default_branch(self) -> str:
        return self._call("GET", "repository", lambda: self._repo.default_branch)

    def branch_head(self, branch: str) -> str:
        if is_commit_sha(branch):
            return branch  # the trees and contents APIs take a commit where they take a branch
        return self._call("GET", f"branch {branch}", lambda: self._repo.get_branch(branch).commit.sha)

    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        return self._tree_at(self.branch_head(branch), path.strip("/"), f"tree at {branch}")

    def commit_tree(self, commit: str) -> list[TreeEntry]:
        return self._tree_at(commit, "", f"tree at {commit[:12]}")

    def _tree_at(self, head: str, prefix: str, what: str) -> list[TreeEntry]:
        def read() -> list[TreeEntry]:
            commit = self._repo.get_git_commit(head)
            tree = self._repo.get_git_tree(commit.tree.sha, recursive=True)
            if tree.raw_data.get("truncated"):
                return self._walk(commit.tree.sha, "", prefix)
            return [_entry(e.path, e.sha, e.mode, e.size) for e in tree.tree if e.type == "blob"]

        entries = self._call("GET", what, read)
        return [e for e in entries if not prefix or e.path == prefix or e.path.startswith(prefix + "/")]

    def _walk(self, sha: str, base: str, prefix: str) -> list[TreeEntry]:
        # A recursive tree past GitHub's limit (100,000 entries / 7 MB) comes back
        # truncated; walk only the directories on the way to and under `prefix`.
        found: list[TreeEntry] = []
        for element in self._repo.get_git_tree(sha).tree:
            full = f"{base}{element.path}"
            if element.type == "blob":
                found.append(_entry(full, element.sha, element.mode, element.size))
            elif element.type == "tree" and (prefix.startswith(full + "/") or _under(full, prefix)):
                found.extend(self._walk(element.sha, full + "/", prefix))
        return found

    def read_file(self, path: str, branch: str) -> str:
        def read() -> str:
            content = self._repo.get_contents(path, ref=branch)
            if isinstance(content, list):
                raise ForgeError(f"GitHub: {path} is a directory")
            if content.encoding == "base64":
                return content.decoded_content.decode("utf-8")
            # Over 1 MB the contents API leaves `content` empty: read the blob instead.
            blob = self._repo.get_git_blob(content.sha)
            return base64.b64decode(blob.content).decode("utf-8")

        return self._call("GET", f"file {path} at {branch}", read)

    def open_pull_requests(self) -> list[PullRequestInfo]:
        return self._call("GET", "open pull requests", lambda: [_pr(p) for p in self._repo.get_pulls(state="open")])

    def pull_request(self, number: int) -> PullRequestInfo:
        return self._call("GET", f"pull request #{number}", lambda: _pr(self._repo.get_pull(number)))

    def checks(self, pr: PullRequestInfo) -> str:
        sha = pr.head_sha or self.pull_request(pr.number).head_sha
        commit = self._repo.get_commit(sha)  # lazy: no request
        # Check runs need the "Checks" permission, commit statuses "Commit statuses"; a
        # fine-grained token often has neither (403). Each is read on its own, so one that
        # is refused leaves the other, and both refused are "checks unknown", never an error
        # that would hide the pull request's state.
        runs = self._readable(
            f"check runs of #{pr.number}",
            lambda: [_check_run(run.status, run.conclusion) for run in commit.get_check_runs()],
        )
        statuses = self._readable(f"commit statuses of #{pr.number}", lambda: _combined(commit.get_combined_status()))
        if runs is None and statuses is None:
            raise ChecksUnreadable(
                f"GitHub: checks of #{pr.number} unknown: the token may read neither check runs "
                "(Checks: read) nor commit statuses (Commit statuses: read)",
                403,
            )
        return fold_checks([*(runs or []), *(statuses or [])])

    def failing_check_url(self, pr: PullRequestInfo) -> str:
        sha = pr.head_sha or self.pull_request(pr.number).head_sha
        commit = self._repo.get_commit(sha)  # lazy: no request

        def runs() -> list[str]:
            return [
                run.html_url or ""
                for run in commit.get_check_runs()
                if _check_run(run.status, run.conclusion) == FAIL
            ]

        def statuses() -> list[str]:
            combined = commit.get_combined_status()
            return [s.target_url or "" for s in combined.statuses if s.state in ("failure", "error")]

        for found in (self._readable(f"check runs of #{pr.number}", runs),
                      self._readable(f"commit statuses of #{pr.number}", statuses)):
            link = next((url for url in found or [] if url), "")
            if link:
                return link
        return ""

    def _readable(self, what: str, fn: Callable[[], list[str]]) -> list[str] | None:
        """`fn`'s answer, or None when the token is not allowed to read it (403; 404 for a
        token that may not see the endpoint at all)."""
        try:
            return self._call("GET", what, fn)
        except ForgeError as error:
            if error.status in (403, 404):
                return None
            raise

    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        def read() -> list[ReleaseInfo]:
            found: list[ReleaseInfo] = []
            # The list is paged lazily, newest first: no page is read once there are enough.
            for release in self._repo.get_releases() if limit > 0 else ():
                if release.draft:  # listed only to those who may push, and not published
                    continue
                found.append(
                    ReleaseInfo(
                        tag=release.tag_name,
                        title=release.name or release.tag_name,
                        url=release_link(release.html_url, self.repo, release.tag_name),
                        body=release.body or "",
                        published_at=release.published_at,
                        prerelease=bool(release.prerelease),
                    )
                )
                if len(found) >= limit:
                    break
            return newest_first(found)

        return self._call("GET", "releases", read)

    # --- writing -------------------------------------------------------------------------

    def create_branch(self, branch: str, from_branch: str) -> str:
        head = self.branch_head(from_branch)
        try:
            self._call(
                "POST", f"create branch {branch}", lambda: self._repo.create_git_ref(f"refs/heads/{branch}", head)
            )
        except ForgeError as error:
            if error.status == 422 and "exists" in str(error).lower():
                raise BranchExists(str(error), 422) from None
            raise
        return head

    def delete_branch(self, branch: str) -> None:
        self._call("DELETE", f"delete branch {branch}", lambda: self._ref(branch).delete())

    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        head = self.branch_head(branch)

        def write() -> str:
            parent = self._repo.get_git_commit(head)
            elements = [InputGitTreeElement(c.path, c.mode or "100644", "blob", content=c.content) for c in changes]
            tree = self._repo.create_git_tree(elements, base_tree=parent.tree)
            commit = self._repo.create_git_commit(message, tree, [parent])
            # force=False: the ref moves only if it is still at `head`, never rewinds.
            self._ref(branch).edit(commit.sha, force=False)
            return commit.sha

        return self._call("POST", f"commit on {branch}", write)

    def _ref(self, branch: str) -> Any:
        ref = self._repo.get_git_ref(f"heads/{branch}")
        # PyGithub's lazy ref points at GET's /git/ref/ path; the answer carries the
        # /git/refs/ URL that PATCH and DELETE are documented on.
        if not ref.object.sha:
            raise NotFound(f"GitHub: branch {branch} not found", 404)
        return ref

    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        try:
            return self._call(
                "POST",
                f"open pull request from {head}",
                lambda: _pr(self._repo.create_pull(base=base, head=head, title=title, body=body)),
            )
        except ForgeError as error:
            if error.status == 422 and "already exists" in str(error).lower():
                raise PullRequestExists(str(error), 422) from None
            raise

    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        people = [r for r in reviewers if not r.startswith("@")]
        teams = {r: r.rsplit("/", 1)[-1] for r in reviewers if r.startswith("@") and "/" in r}
        skipped = {r: "not a team name (@org/team)" for r in reviewers if r.startswith("@") and "/" not in r}
        if not people and not teams:
            return Outcome((), skipped)

        def ask(users: list[str], slugs: list[str]) -> None:
            pull = self._repo.get_pull(number)
            pull.create_review_request(reviewers=users, team_reviewers=slugs)

        try:
            self._call("POST", f"reviewers of #{number}", lambda: ask(people, list(teams.values())))
            return Outcome(tuple(people) + tuple(teams), skipped)
        except ForgeError as error:
            if error.status != 422:
                raise
        # One unknown or non-collaborator name fails the whole request: ask one by one.
        applied: list[str] = []
        for name in [*people, *teams]:
            users: list[str] = [name] if name in people else []
            slugs: list[str] = [] if name in people else [teams[name]]
            try:
                self._call("POST", f"reviewer {name} of #{number}", functools.partial(ask, users, slugs))
                applied.append(name)
            except ForgeError as error:
                if error.status not in (404, 422):
                    raise
                skipped[name] = str(error)
        return Outcome(tuple(applied), skipped)

    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        if not labels:
            return Outcome()

        def write() -> None:
            existing = {label.name.lower() for label in self._repo.get_labels()}
            for name in labels:
                # Adding an unknown label creates it anyway, but that is undocumented.
                if name.lower() not in existing:
                    self._repo.create_label(name, _LABEL_COLOUR)
            self._repo.get_pull(number).add_to_labels(*labels)

        self._call("POST", f"labels of #{number}", write)
        return Outcome(tuple(labels))

    # A pull request's conversation comments are its issue's comments (`/issues/{n}/comments`);
    # review comments sit on lines of the diff and are not what is kept up to date here.
    def create_comment(self, number: int, body: str) -> str:
        return self._call(
            "POST", f"comment on #{number}", lambda: str(self._repo.get_issue(number).create_comment(body).id)
        )

    def update_comment(self, number: int, comment_id: str, body: str) -> None:
        def write() -> None:
            self._repo.get_issue(number).get_comment(int(comment_id)).edit(body)

        self._call("PATCH", f"comment {comment_id} on #{number}", write)


def _describe(error: BaseException) -> tuple[int, Mapping[str, str], Any] | None:
    if isinstance(error, GithubException):
        return error.status, error.headers or {}, error.data
    return None


def _entry(path: str, sha: str, mode: str, size: int | None) -> TreeEntry:
    return TreeEntry(path=path, sha=sha, mode=mode or "100644", size=size)


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _pr(pull: Any) -> PullRequestInfo:
    # merged_at is in list answers too; `merged` is not, and reading it would fetch each PR.
    if pull.merged_at is not None:
        state = MERGED
    elif pull.state == "closed":
        state = CLOSED
    else:
        state = OPEN
    return PullRequestInfo(
        number=pull.number,
        url=pull.html_url,
        title=pull.title,
        state=state,
        head_branch=pull.head.ref,
        base_branch=pull.base.ref,
        head_sha=pull.head.sha,
        merged_at=pull.merged_at,
        closed_at=pull.closed_at,
        created_at=pull.created_at,
    )


def _combined(combined: Any) -> list[str]:
    # A repository that only uses Actions has a combined status of "pending" with no
    # statuses at all: that is "no statuses", not "running".
    if not combined.total_count:
        return []
    return [{"success": PASS, "pending": RUNNING}.get(combined.state, FAIL)]


def _check_run(status: str | None, conclusion: str | None) -> str:
    if status != "completed":
        return RUNNING
    if conclusion in _FAILED_CONCLUSIONS:
        return FAIL
    return PASS if conclusion in ("success", "neutral", "skipped") else NONE
