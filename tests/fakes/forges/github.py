"""GitHub's REST v3 as GitHub Enterprise Server serves it under /api/v3 (the shapes PyGithub reads)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from tests.fakes.forges.base import (
    Comment,
    FakeServer,
    Fault,
    GitModel,
    Pull,
    ReleaseEntry,
    Request,
    Response,
    git_sha,
    iso,
)

# GitHub's answer to a secondary rate limit, as its REST API sends it (docs.github.com, "Rate
# limits for the REST API": 403 or 429, this message, and `retry-after` when it says how long).
SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach "
    "out to GitHub Support for help, please include the request ID 0C9E:2B5F:1D4A3C:1E9B7F:6774D2A1."
)


def secondary_rate_limit(method: str, path: str, retry_after: int, times: int = 1) -> Fault:
    """The next `times` matching requests answered with GitHub's secondary rate limit."""
    body = {"message": SECONDARY_LIMIT_MESSAGE,
            "documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}
    headers = {"retry-after": str(retry_after), "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4987",
               "x-ratelimit-used": "13", "x-ratelimit-resource": "core"}
    return Fault(method, path, 403, headers=headers, body=body, times=times)


class FakeGitHub(FakeServer):
    prefix = "/api/v3"

    def __init__(self, model: GitModel, token: str) -> None:
        self.trees: dict[str, dict[str, tuple[str, str]]] = {}
        self.truncate_trees = False  # answer recursive trees as GitHub does past its size limit
        super().__init__(model, token)

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization", "") in (f"token {self.token}", f"Bearer {self.token}")

    def error(self, status: int, message: str, errors: list[dict[str, Any]] | None = None) -> Response:
        body: dict[str, Any] = {"message": message, "documentation_url": "https://docs.github.com/rest"}
        if errors:
            body["errors"] = errors
            body["status"] = str(status)
        return Response(status, body)

    def setup_routes(self) -> None:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
        self.route("GET", repo, self.get_repo)
        self.route("GET", repo + r"/branches/(?P<branch>.+)", self.get_branch)
        self.route("GET", repo + r"/git/commits/(?P<sha>\w+)", self.get_commit)
        self.route("GET", repo + r"/git/trees/(?P<sha>\w+)", self.get_tree)
        self.route("GET", repo + r"/git/blobs/(?P<sha>\w+)", self.get_blob)
        self.route("GET", repo + r"/contents/(?P<path>.+)", self.get_contents)
        self.route("POST", repo + r"/git/refs", self.create_ref)
        self.route("GET", repo + r"/git/ref/heads/(?P<branch>.+)", self.get_ref)
        self.route("PATCH", repo + r"/git/refs/heads/(?P<branch>.+)", self.update_ref)
        self.route("DELETE", repo + r"/git/refs/heads/(?P<branch>.+)", self.delete_ref)
        self.route("POST", repo + r"/git/trees", self.create_tree)
        self.route("POST", repo + r"/git/commits", self.create_commit)
        self.route("GET", repo + r"/pulls", self.list_pulls)
        self.route("POST", repo + r"/pulls", self.create_pull)
        self.route("GET", repo + r"/pulls/(?P<number>\d+)", self.get_pull)
        self.route("POST", repo + r"/pulls/(?P<number>\d+)/requested_reviewers", self.request_reviewers)
        self.route("GET", repo + r"/labels", self.list_labels)
        self.route("POST", repo + r"/labels", self.create_label)
        self.route("POST", repo + r"/issues/(?P<number>\d+)/labels", self.add_labels)
        self.route("GET", repo + r"/issues/(?P<number>\d+)", self.get_issue)
        self.route("POST", repo + r"/issues/(?P<number>\d+)/comments", self.create_comment)
        self.route("GET", repo + r"/issues/comments/(?P<comment_id>\d+)", self.get_comment)
        self.route("PATCH", repo + r"/issues/comments/(?P<comment_id>\d+)", self.update_comment)
        self.route("GET", repo + r"/commits/(?P<sha>\w+)/check-runs", self.check_runs)
        self.route("GET", repo + r"/commits/(?P<sha>\w+)/status", self.combined_status)
        self.route("GET", repo + r"/releases", self.list_releases)

    # --- helpers ---------------------------------------------------------------------

    def base(self) -> str:
        return f"{self.api}/repos/{self.model.owner}/{self.model.name}"

    def tree_sha(self, files: dict[str, tuple[str, str]]) -> str:
        sha = git_sha("tree", json.dumps(sorted(files.items())).encode())
        self.trees[sha] = files
        return sha

    def commit_json(self, sha: str) -> dict[str, Any]:
        commit = self.model.commits[sha]
        return {
            "sha": sha,
            "url": f"{self.base()}/git/commits/{sha}",
            "message": commit.message,
            "tree": {"sha": self.tree_sha(commit.files), "url": f"{self.base()}/git/trees/x"},
            "parents": [{"sha": p, "url": f"{self.base()}/git/commits/{p}"} for p in commit.parents],
        }

    def pull_json(self, pull: Pull, full: bool = False) -> dict[str, Any]:
        owner = self.model.owner
        data = {
            "url": f"{self.base()}/pulls/{pull.number}",
            "issue_url": f"{self.base()}/issues/{pull.number}",
            "html_url": f"https://github.example/{owner}/{self.model.name}/pull/{pull.number}",
            "number": pull.number,
            "title": pull.title,
            "body": pull.body,
            "state": pull.state,
            "merged_at": iso(pull.merged_at),
            "closed_at": iso(pull.closed_at),
            "created_at": iso(pull.created_at),
            "updated_at": iso(pull.created_at),
            "draft": False,
            "user": {"login": pull.author},
            "head": {
                "ref": pull.head,
                "sha": self.model.branches.get(pull.head, pull.head_sha),
                "label": f"{owner}:{pull.head}",
            },
            "base": {"ref": pull.base, "sha": self.model.branches[pull.base], "label": f"{owner}:{pull.base}"},
            "labels": [{"name": n} for n in pull.labels],
            "requested_reviewers": [{"login": r} for r in pull.reviewers],
            "requested_teams": [{"slug": t} for t in pull.team_reviewers],
        }
        if full:
            data["merged"] = pull.merged_at is not None
        return data

    # --- git data --------------------------------------------------------------------

    def get_repo(self, request: Request, owner: str, name: str) -> Response:
        if (owner, name) != (self.model.owner, self.model.name):
            return self.error(404, "Not Found")
        return Response(
            200,
            {
                "id": 1296269,
                "name": name,
                "full_name": f"{owner}/{name}",
                "owner": {"login": owner},
                "private": True,
                "html_url": f"https://github.example/{owner}/{name}",
                "url": self.base(),
                "default_branch": self.model.default_branch,
            },
        )

    def get_branch(self, request: Request, owner: str, name: str, branch: str) -> Response:
        sha = self.model.branches.get(branch)
        if sha is None:
            return self.error(404, "Branch not found")
        return Response(
            200, {"name": branch, "protected": False, "commit": {"sha": sha, "url": f"{self.base()}/commits/{sha}"}}
        )

    def get_commit(self, request: Request, owner: str, name: str, sha: str) -> Response:
        if sha not in self.model.commits:
            return self.error(404, "Not Found")
        return Response(200, self.commit_json(sha))

    def get_tree(self, request: Request, owner: str, name: str, sha: str) -> Response:
        files = self.trees.get(sha)
        if files is None:
            return self.error(404, "Not Found")
        recursive = request.query.get("recursive") not in (None, "", "0", "false")
        entries: list[dict[str, Any]] = []
        directories: dict[str, dict[str, tuple[str, str]]] = {}
        for path, (mode, blob) in sorted(files.items()):
            if recursive or "/" not in path:
                entries.append(
                    {
                        "path": path,
                        "mode": mode,
                        "type": "blob",
                        "sha": blob,
                        "size": len(self.model.blobs[blob]),
                        "url": f"{self.base()}/git/blobs/{blob}",
                    }
                )
            parts = path.split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if not recursive and depth > 1:
                    break
                directories.setdefault(directory, {})[path[len(directory) + 1 :]] = (mode, blob)
        for directory, inner in sorted(directories.items()):
            entries.append(
                {
                    "path": directory,
                    "mode": "040000",
                    "type": "tree",
                    "sha": self.tree_sha(inner),
                    "url": f"{self.base()}/git/trees/x",
                }
            )
        truncated = recursive and self.truncate_trees
        if truncated:
            entries = entries[:1]
        return Response(
            200, {"sha": sha, "url": f"{self.base()}/git/trees/{sha}", "tree": entries, "truncated": truncated}
        )

    def get_blob(self, request: Request, owner: str, name: str, sha: str) -> Response:
        data = self.model.blobs.get(sha)
        if data is None:
            return self.error(404, "Not Found")
        return Response(
            200, {"sha": sha, "size": len(data), "encoding": "base64", "content": base64.b64encode(data).decode()}
        )

    def get_contents(self, request: Request, owner: str, name: str, path: str) -> Response:
        branch = request.query.get("ref") or self.model.default_branch
        commit = self.model.commit_at(branch)
        if commit is None:
            return self.error(404, f"No commit found for the ref {branch}")
        files = self.model.commits[commit].files
        if path not in files:
            return self.error(404, "Not Found")
        blob = files[path][1]
        data = self.model.blobs[blob]
        return Response(
            200,
            {
                "type": "file",
                "encoding": "base64",
                "size": len(data),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "sha": blob,
                "content": base64.encodebytes(data).decode(),
                "url": f"{self.base()}/contents/{path}",
            },
        )

    def create_ref(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        branch = body["ref"].removeprefix("refs/heads/")
        if branch in self.model.branches:
            return self.error(422, "Reference already exists")
        if body["sha"] not in self.model.commits:
            return self.error(422, "Object does not exist")
        self.model.branches[branch] = body["sha"]
        return Response(201, self.ref_json(branch))

    def ref_json(self, branch: str) -> dict[str, Any]:
        sha = self.model.branches[branch]
        return {
            "ref": f"refs/heads/{branch}",
            "url": f"{self.base()}/git/refs/heads/{branch}",
            "object": {"sha": sha, "type": "commit", "url": f"{self.base()}/git/commits/{sha}"},
        }

    def get_ref(self, request: Request, owner: str, name: str, branch: str) -> Response:
        if branch not in self.model.branches:
            return self.error(404, "Not Found")
        return Response(200, self.ref_json(branch))

    def update_ref(self, request: Request, owner: str, name: str, branch: str) -> Response:
        body = request.json()
        if branch not in self.model.branches:
            return self.error(422, "Reference does not exist")
        new = body["sha"]
        if not body.get("force") and self.model.branches[branch] not in self.model.commits[new].parents:
            return self.error(422, "Update is not a fast forward")
        self.model.branches[branch] = new
        return Response(200, self.ref_json(branch))

    def delete_ref(self, request: Request, owner: str, name: str, branch: str) -> Response:
        if branch not in self.model.branches:
            return self.error(422, "Reference does not exist")
        del self.model.branches[branch]
        return Response(204)

    def create_tree(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        files = dict(self.trees[body["base_tree"]]) if body.get("base_tree") else {}
        for element in body["tree"]:
            if element.get("sha", "") is None:
                files.pop(element["path"], None)
            elif "content" in element:
                files[element["path"]] = (element["mode"], self.model.put_blob(element["content"].encode()))
            else:
                files[element["path"]] = (element["mode"], element["sha"])
        sha = self.tree_sha(files)
        return Response(201, {"sha": sha, "url": f"{self.base()}/git/trees/{sha}", "tree": [], "truncated": False})

    def create_commit(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        sha = self.model.commit(self.trees[body["tree"]], list(body["parents"]), body["message"])
        return Response(201, self.commit_json(sha))

    # --- pull requests ---------------------------------------------------------------

    def list_pulls(self, request: Request, owner: str, name: str) -> Response:
        self.count_list(request, f"{owner}/{name}")
        state = request.query.get("state", "open")
        pulls = [p for p in self.model.pulls if state == "all" or p.state == state]
        chunk, headers = self.page(request, pulls)
        return Response(200, [self.pull_json(p) for p in chunk], headers)

    def create_pull(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        head, base = body["head"].split(":")[-1], body["base"]
        if head not in self.model.branches:
            return self.error(
                422, "Validation Failed", [{"resource": "PullRequest", "field": "head", "code": "invalid"}]
            )
        if any(p.head == head and p.base == base for p in self.model.open_pulls()):
            return self.error(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {owner}:{head}.",
                    }
                ],
            )
        if not self.model.commits_between(base, head):
            return self.error(
                422,
                "Validation Failed",
                [{"resource": "PullRequest", "code": "custom", "message": f"No commits between {base} and {head}"}],
            )
        pull = self.model.add_pull(
            body["title"], head, base, body=body.get("body") or "", created_at=datetime.now(UTC).replace(microsecond=0)
        )
        return Response(201, self.pull_json(pull, full=True))

    def get_pull(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        if pull is None:
            return self.error(404, "Not Found")
        return Response(200, self.pull_json(pull, full=True))

    def request_reviewers(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        if pull is None:
            return self.error(404, "Not Found")
        body = request.json()
        users, teams = body.get("reviewers") or [], body.get("team_reviewers") or []
        if any(u not in self.model.users or u == pull.author for u in users) or any(
            t not in self.model.teams for t in teams
        ):
            return self.error(
                422,
                "Reviews may only be requested from collaborators. One or more of the users or "
                "teams you specified is not a collaborator of the acme/gitops repository.",
            )
        pull.reviewers += users
        pull.team_reviewers += teams
        return Response(201, self.pull_json(pull, full=True))

    def list_labels(self, request: Request, owner: str, name: str) -> Response:
        chunk, headers = self.page(request, self.model.labels)
        return Response(200, chunk, headers)

    def create_label(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        if any(label["name"].lower() == body["name"].lower() for label in self.model.labels):
            return self.error(422, "Validation Failed", [{"resource": "Label", "code": "already_exists"}])
        label = {
            "id": len(self.model.labels) + 1,
            "name": body["name"],
            "color": body.get("color", "ededed"),
            "url": f"{self.base()}/labels/{body['name']}",
        }
        self.model.labels.append(label)
        return Response(201, label)

    def add_labels(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        if pull is None:
            return self.error(404, "Not Found")
        body = request.json()
        names = body["labels"] if isinstance(body, dict) else body
        for label in names:
            if label not in pull.labels:
                pull.labels.append(label)
        return Response(200, [{"name": n} for n in pull.labels])

    def check_runs(self, request: Request, owner: str, name: str, sha: str) -> Response:
        runs = self.model.check_runs.get(sha, [])
        return Response(200, {"total_count": len(runs), "check_runs": runs})

    def combined_status(self, request: Request, owner: str, name: str, sha: str) -> Response:
        states = self.model.statuses.get(sha, [])
        if not states:
            state = "pending"  # what GitHub answers for a commit with no legacy statuses
        elif "failure" in states or "error" in states:
            state = "failure"
        elif "pending" in states:
            state = "pending"
        else:
            state = "success"
        statuses = [{"state": s, "context": f"ci/{i}", "target_url": f"https://ci.example/{sha}/{i}"}
                    for i, s in enumerate(states)]
        return Response(200, {"state": state, "sha": sha, "total_count": len(states), "statuses": statuses})

    # --- releases --------------------------------------------------------------------

    def release_json(self, number: int, release: ReleaseEntry) -> dict[str, Any]:
        owner, name = self.model.owner, self.model.name
        page = f"https://github.example/{owner}/{name}/releases/tag/{release.tag}"
        return {
            "url": f"{self.base()}/releases/{number}",
            "html_url": page if release.web_url == "" else release.web_url,
            "id": number,
            "tag_name": release.tag,
            "target_commitish": "main",
            "name": release.title or None,
            "body": release.body or None,
            "draft": release.draft,
            "prerelease": release.prerelease,
            "created_at": iso(release.published_at),
            "published_at": None if release.draft else iso(release.published_at),
            "author": {"login": "release-bot"},
            "assets": [],
        }

    def list_releases(self, request: Request, owner: str, name: str) -> Response:
        if (owner, name) != (self.model.owner, self.model.name):
            return self.error(404, "Not Found")
        # Drafts are listed to whoever may push; the token here may.
        numbered = [(i + 1, r) for i, r in enumerate(self.model.releases)][::-1]  # newest first
        chunk, headers = self.page(request, numbered)
        return Response(200, [self.release_json(number, r) for number, r in chunk], headers)

    # --- conversation comments (a pull request is an issue for them) ----------------------

    def get_issue(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        if pull is None:
            return self.error(404, "Not Found")
        issue = {key: value for key, value in self.pull_json(pull).items() if key not in ("head", "base")}
        issue["url"] = f"{self.base()}/issues/{pull.number}"
        issue["comments"] = len(self.model.comments_on(pull.number))
        issue["pull_request"] = {"url": f"{self.base()}/pulls/{pull.number}",
                                 "html_url": self.pull_json(pull)["html_url"]}
        return Response(200, issue)

    def comment_json(self, comment: Comment) -> dict[str, Any]:
        owner, name = self.model.owner, self.model.name
        return {
            "id": comment.id,
            "node_id": f"IC_kwDO{comment.id}",
            "url": f"{self.base()}/issues/comments/{comment.id}",
            "html_url": f"https://github.example/{owner}/{name}/pull/{comment.number}#issuecomment-{comment.id}",
            "issue_url": f"{self.base()}/issues/{comment.number}",
            "body": comment.body,
            "user": {"login": comment.author, "id": self.model.users.get(comment.author, 1), "type": "Bot"},
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "author_association": "NONE",
        }

    def create_comment(self, request: Request, owner: str, name: str, number: str) -> Response:
        if self.model.pull(int(number)) is None:
            return self.error(404, "Not Found")
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return self.error(422, "Invalid request.\n\n\"body\" wasn't supplied.")
        return Response(201, self.comment_json(self.model.add_comment(int(number), body["body"])))

    def get_comment(self, request: Request, owner: str, name: str, comment_id: str) -> Response:
        comment = self.model.comment(int(comment_id))
        return Response(200, self.comment_json(comment)) if comment else self.error(404, "Not Found")

    def update_comment(self, request: Request, owner: str, name: str, comment_id: str) -> Response:
        comment = self.model.comment(int(comment_id))
        if comment is None:
            return self.error(404, "Not Found")
        comment.body = request.json()["body"]
        comment.updated_at = datetime.now(UTC).replace(microsecond=0)
        return Response(200, self.comment_json(comment))
