"""Gitea and Forgejo, 1.20 or newer, over their REST API v1 with requests.

1.20 is the floor because one commit over several files needs `POST /contents`
(ChangeFiles, Gitea #24887). Labels are sent by id, which every version takes (names
only from 1.22). The open-PR list has no head filter before 1.22, so it is read in
full and filtered here.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

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
    fold_checks,
    is_commit_sha,
    newest_first,
    redact,
    release_link,
)
from forges.repourls import GITEA, RepoRef
from forges.retry import RetryingSession, RetryPolicy
from portal.kernel.timestamps import parse_time

_PAGE = 50
_MAX_PAGES = 1000  # a bound on any paged walk, far beyond a real repository
_LABEL_COLOUR = "#ededed"
_STATUS = {"success": PASS, "pending": RUNNING, "failure": FAIL, "error": FAIL, "warning": PASS}
_TIMEOUT = 30.0


class GiteaForge(Forge):
    kind = GITEA

    def __init__(self, repo: RepoRef, token: str, url: str, policy: RetryPolicy | None = None):
        self.repo = repo
        self.policy = policy or RetryPolicy()
        self._token = token
        self._api = url.rstrip("/") + "/api/v1"
        self._base = f"{self._api}/repos/{quote(repo.owner, safe='')}/{quote(repo.name, safe='')}"
        self._session = RetryingSession(self.policy, secrets=[token])
        self._session.headers.update({"Authorization": f"token {token}", "Accept": "application/json"})

    # --- plumbing ----------------------------------------------------------------------

    def _request(self, method: str, path: str, what: str, ok: tuple[int, ...] = (200,), **kwargs: Any) -> Any:
        url = path if path.startswith("http") else f"{self._base}{path}"
        response = self._session.request(method, url, timeout=_TIMEOUT, **kwargs)
        if response.status_code not in ok:
            message = redact(f"Gitea: {what}: {response.status_code} {error_message(response.content)}", [self._token])
            if response.status_code == 404:
                raise NotFound(message.strip(), 404)
            raise ForgeError(message.strip(), response.status_code)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _paged(self, path: str, what: str, params: dict[str, Any] | None = None) -> list[Any]:
        items: list[Any] = []
        for page in range(1, _MAX_PAGES + 1):
            chunk = self._request("GET", path, what, params={**(params or {}), "page": page, "limit": _PAGE})
            items.extend(chunk or [])
            if not chunk or len(chunk) < _PAGE:
                break
        return items

    # --- reading -------------------------------------------------------------------------

    def read_default_branch(self) -> str:
        return self._request("GET", "", "repository")["default_branch"]

    def branch_head(self, branch: str) -> str:
        if is_commit_sha(branch):
            return branch  # the trees and contents APIs take a commit where they take a branch
        return self._request("GET", f"/branches/{quote(branch, safe='')}", f"branch {branch}")["commit"]["id"]

    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        return self._tree_at(self.branch_head(branch), path.strip("/"), branch)

    def commit_tree(self, commit: str) -> list[TreeEntry]:
        return self._tree_at(commit, "", commit[:12])

    def _tree_at(self, head: str, prefix: str, branch: str) -> list[TreeEntry]:
        entries: list[TreeEntry] = []
        # The recursive tree is paged; `truncated` says whether another page follows.
        for page in range(1, _MAX_PAGES + 1):
            answer = self._request(
                "GET",
                f"/git/trees/{head}",
                f"tree at {branch}",
                params={"recursive": "true", "page": page, "per_page": 1000},
            )
            for item in answer.get("tree") or []:
                if item["type"] == "blob" and (not prefix or item["path"].startswith(prefix + "/")):
                    entries.append(TreeEntry(item["path"], item["sha"], item.get("mode") or "100644", item.get("size")))
            if not answer.get("truncated"):
                break
        return entries

    def read_file(self, path: str, branch: str) -> str:
        answer = self._request("GET", f"/contents/{quote(path)}", f"file {path} at {branch}", params={"ref": branch})
        if not isinstance(answer, dict) or answer.get("type") != "file":
            raise ForgeError(f"Gitea: {path} is not a file")
        return base64.b64decode(answer.get("content") or "").decode("utf-8")

    def open_pull_requests(self) -> list[PullRequestInfo]:
        return [_pr(p) for p in self._paged("/pulls", "open pull requests", {"state": "open"})]

    def pull_request(self, number: int) -> PullRequestInfo:
        return _pr(self._request("GET", f"/pulls/{int(number)}", f"pull request #{number}"))

    def checks(self, pr: PullRequestInfo) -> str:
        sha = pr.head_sha or self.pull_request(pr.number).head_sha
        statuses = self._paged(f"/commits/{sha}/statuses", f"checks of #{pr.number}")
        # Several runs of one context: only the newest counts (the list is newest first).
        latest: dict[str, str] = {}
        for status in statuses:
            latest.setdefault(status.get("context", ""), status.get("status") or status.get("state") or "")
        return fold_checks(_STATUS.get(state, NONE) for state in latest.values())

    def failing_check_url(self, pr: PullRequestInfo) -> str:
        sha = pr.head_sha or self.pull_request(pr.number).head_sha
        statuses = self._paged(f"/commits/{sha}/statuses", f"checks of #{pr.number}")
        latest: dict[str, dict] = {}
        for status in statuses:  # newest first: a context's newest run counts
            latest.setdefault(status.get("context", ""), status)
        for status in latest.values():
            if _STATUS.get(status.get("status") or status.get("state") or "", NONE) == FAIL:
                if status.get("target_url"):
                    return str(status["target_url"])
        return ""

    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        found: list[ReleaseInfo] = []
        for page in range(1, _MAX_PAGES + 1):
            if len(found) >= limit:
                break
            # `draft=false` asks the server to leave drafts out; versions that ignore it list
            # them to writers, so they are skipped here as well.
            chunk = self._request(
                "GET", "/releases", "releases", params={"draft": "false", "page": page, "limit": _PAGE}
            )
            found += [_release(item, self.repo) for item in chunk or [] if not item.get("draft")]
            if not chunk or len(chunk) < _PAGE:
                break
        return newest_first(found[: max(limit, 0)])

    # --- writing -------------------------------------------------------------------------

    def create_branch(self, branch: str, from_branch: str) -> str:
        try:
            answer = self._request(
                "POST",
                "/branches",
                f"create branch {branch}",
                ok=(201,),
                json={"new_branch_name": branch, "old_ref_name": from_branch},
            )
        except ForgeError as error:
            if error.status == 409:
                raise BranchExists(str(error), 409) from None
            raise
        return answer["commit"]["id"]

    def delete_branch(self, branch: str) -> None:
        self._request("DELETE", f"/branches/{quote(branch, safe='')}", f"delete branch {branch}", ok=(204,))

    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        files = []
        for change in changes:
            if not change.sha:
                raise ForgeError(f"Gitea: updating {change.path} needs the SHA of the blob it replaces")
            content = base64.b64encode(change.content.encode("utf-8")).decode("ascii")
            files.append({"operation": "update", "path": change.path, "content": content, "sha": change.sha})
        answer = self._request(
            "POST",
            "/contents",
            f"commit on {branch}",
            ok=(201,),
            json={"branch": branch, "message": message, "files": files},
        )
        return answer["commit"]["sha"]

    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        try:
            answer = self._request(
                "POST",
                "/pulls",
                f"open pull request from {head}",
                ok=(201,),
                json={"head": head, "base": base, "title": title, "body": body},
            )
        except ForgeError as error:
            # The 409 names a global issue id, not the PR's index: callers look it up by head.
            if error.status == 409:
                raise PullRequestExists(str(error), 409) from None
            raise
        return _pr(answer)

    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        people = [r for r in reviewers if not r.startswith("@")]
        teams = {r: r.rsplit("/", 1)[-1] for r in reviewers if r.startswith("@") and "/" in r}
        skipped = {r: "not a team name (@org/team)" for r in reviewers if r.startswith("@") and "/" not in r}
        path = f"/pulls/{int(number)}/requested_reviewers"

        def ask(users: list[str], names: list[str]) -> None:
            self._request(
                "POST", path, f"reviewers of #{number}", ok=(201,), json={"reviewers": users, "team_reviewers": names}
            )

        if not people and not teams:
            return Outcome((), skipped)
        try:
            ask(people, list(teams.values()))
            return Outcome(tuple(people) + tuple(teams), skipped)
        except ForgeError as error:
            if error.status not in (404, 422):
                raise
        applied: list[str] = []
        for name in [*people, *teams]:
            try:
                if name in people:
                    ask([name], [])
                else:
                    ask([], [teams[name]])
                applied.append(name)
            except ForgeError as error:
                if error.status not in (404, 422):
                    raise
                skipped[name] = str(error)
        return Outcome(tuple(applied), skipped)

    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        if not labels:
            return Outcome()
        known = {label["name"].lower(): label["id"] for label in self._paged("/labels", "labels")}
        try:
            org_labels = self._paged(f"{self._api}/orgs/{quote(self.repo.owner, safe='')}/labels", "labels")
        except NotFound:
            org_labels = []  # a repository owned by a user has no organisation labels
        for label in org_labels:
            known.setdefault(label["name"].lower(), label["id"])
        ids = []
        for name in labels:
            if name.lower() not in known:
                created = self._request(
                    "POST", "/labels", f"create label {name}", ok=(201,), json={"name": name, "color": _LABEL_COLOUR}
                )
                known[name.lower()] = created["id"]
            ids.append(known[name.lower()])
        # Ids, not names: Gitea and Forgejo before 1.22 take only ids.
        self._request("POST", f"/issues/{int(number)}/labels", f"labels of #{number}", json={"labels": ids})
        return Outcome(tuple(labels))

    # A pull request's comments are its issue's (`/issues/{index}/comments`); an edit goes to the
    # comment's own path, which carries no index.
    def create_comment(self, number: int, body: str) -> str:
        answer = self._request(
            "POST", f"/issues/{int(number)}/comments", f"comment on #{number}", ok=(201,), json={"body": body}
        )
        return str(answer["id"])

    def update_comment(self, number: int, comment_id: str, body: str) -> None:
        self._request(
            "PATCH", f"/issues/comments/{int(comment_id)}", f"comment {comment_id} on #{number}", ok=(200, 204),
            json={"body": body},
        )


def _pr(data: dict[str, Any]) -> PullRequestInfo:
    if data.get("merged") or data.get("merged_at"):
        state = MERGED
    elif data.get("state") == "closed":
        state = CLOSED
    else:
        state = OPEN
    head = data.get("head") or {}
    return PullRequestInfo(
        number=int(data["number"]),
        url=data.get("html_url", ""),
        title=data.get("title", ""),
        state=state,
        head_branch=head.get("ref", ""),
        base_branch=(data.get("base") or {}).get("ref", ""),
        head_sha=head.get("sha", ""),
        merged_at=parse_time(data.get("merged_at")),
        closed_at=parse_time(data.get("closed_at")),
        created_at=parse_time(data.get("created_at")),
    )


def _release(data: dict[str, Any], repo: RepoRef) -> ReleaseInfo:
    tag = data.get("tag_name") or ""
    return ReleaseInfo(
        tag=tag,
        title=data.get("name") or tag,
        url=release_link(data.get("html_url"), repo, tag),
        body=data.get("body") or "",
        published_at=parse_time(data.get("published_at") or data.get("created_at")),
        prerelease=bool(data.get("prerelease")),
    )
