"""Gitea's REST API v1 as 1.21 serves it: paged trees, ChangeFiles, labels by id only."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from tests.fakes.forges.base import Comment, FakeServer, GitModel, Pull, ReleaseEntry, Request, Response, iso


class FakeGitea(FakeServer):
    prefix = "/api/v1"

    def __init__(self, model: GitModel, token: str, version: str = "1.21.11") -> None:
        self.version = version
        self.org_labels: list[dict[str, Any]] | None = []  # None: the owner is a user, not an organisation
        super().__init__(model, token)

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"token {self.token}"

    def error(self, status: int, message: str) -> Response:
        return Response(status, {"message": message, "url": f"{self.url}/api/swagger"})

    def setup_routes(self) -> None:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
        self.route("GET", r"/version", lambda request: Response(200, {"version": self.version}))
        self.route("GET", repo, self.get_repo)
        self.route("GET", repo + r"/branches/(?P<branch>.+)", self.get_branch)
        self.route("POST", repo + r"/branches", self.create_branch)
        self.route("DELETE", repo + r"/branches/(?P<branch>.+)", self.delete_branch)
        self.route("GET", repo + r"/git/trees/(?P<sha>\w+)", self.tree)
        self.route("GET", repo + r"/contents/(?P<path>.+)", self.get_contents)
        self.route("POST", repo + r"/contents", self.change_files)
        self.route("GET", repo + r"/pulls", self.list_pulls)
        self.route("POST", repo + r"/pulls", self.create_pull)
        self.route("GET", repo + r"/pulls/(?P<number>\d+)", self.get_pull)
        self.route("POST", repo + r"/pulls/(?P<number>\d+)/requested_reviewers", self.request_reviewers)
        self.route("GET", repo + r"/labels", self.list_labels)
        self.route("POST", repo + r"/labels", self.create_label)
        self.route("GET", r"/orgs/(?P<org>[^/]+)/labels", self.list_org_labels)
        self.route("POST", repo + r"/issues/(?P<number>\d+)/labels", self.add_labels)
        self.route("POST", repo + r"/issues/(?P<number>\d+)/comments", self.create_comment)
        self.route("PATCH", repo + r"/issues/comments/(?P<comment_id>\d+)", self.update_comment)
        self.route("GET", repo + r"/commits/(?P<sha>\w+)/statuses", self.statuses)
        self.route("GET", repo + r"/releases", self.list_releases)

    def names_labels(self) -> bool:
        major, minor = (int(x) for x in self.version.split(".")[:2])
        return (major, minor) >= (1, 22)

    def pull_json(self, pull: Pull) -> dict[str, Any]:
        sha = self.model.branches.get(pull.head, pull.head_sha)
        return {
            "id": 5000 + pull.number,
            "number": pull.number,
            "title": pull.title,
            "body": pull.body,
            "state": pull.state,
            "merged": pull.merged_at is not None,
            "merged_at": iso(pull.merged_at),
            "closed_at": iso(pull.closed_at),
            "created_at": iso(pull.created_at),
            "html_url": f"https://gitea.example/{self.model.owner}/{self.model.name}/pulls/{pull.number}",
            "head": {"ref": pull.head, "sha": sha, "label": pull.head},
            "base": {"ref": pull.base, "sha": self.model.branches[pull.base], "label": pull.base},
            "labels": [next(lb for lb in self.all_labels() if lb["name"] == n) for n in pull.labels],
            "user": {"login": pull.author},
        }

    def all_labels(self) -> list[dict[str, Any]]:
        return self.model.labels + (self.org_labels or [])

    def get_repo(self, request: Request, owner: str, name: str) -> Response:
        if (owner, name) != (self.model.owner, self.model.name):
            return self.error(404, "The target couldn't be found.")
        return Response(
            200,
            {
                "id": 7,
                "name": name,
                "full_name": f"{owner}/{name}",
                "owner": {"login": owner},
                "html_url": f"https://gitea.example/{owner}/{name}",
                "default_branch": self.model.default_branch,
            },
        )

    def get_branch(self, request: Request, owner: str, name: str, branch: str) -> Response:
        if branch not in self.model.branches:
            return self.error(404, f"branch does not exist [name: {branch}]")
        return Response(200, {"name": branch, "commit": {"id": self.model.branches[branch]}})

    def create_branch(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        new, old = body["new_branch_name"], body.get("old_ref_name") or body.get("old_branch_name")
        if old not in self.model.branches:
            return self.error(404, f"The old branch does not exist [name: {old}]")
        if new in self.model.branches:
            return self.error(409, f"The branch already exists [name: {new}]")
        self.model.branches[new] = self.model.branches[old]
        return Response(201, {"name": new, "commit": {"id": self.model.branches[new]}})

    def delete_branch(self, request: Request, owner: str, name: str, branch: str) -> Response:
        if branch not in self.model.branches:
            return self.error(404, "branch does not exist")
        del self.model.branches[branch]
        return Response(204)

    def tree(self, request: Request, owner: str, name: str, sha: str) -> Response:
        commit = self.model.commits.get(sha)
        if commit is None:
            return self.error(404, "sha not found")
        rows = [
            {"path": p, "mode": mode, "type": "blob", "size": len(self.model.blobs[blob]), "sha": blob}
            for p, (mode, blob) in sorted(commit.files.items())
        ]
        page = int(request.query.get("page") or 1)
        size = min(int(request.query.get("per_page") or 1000), 3)  # small pages: every walk crosses one
        chunk = rows[(page - 1) * size : page * size]
        return Response(
            200,
            {"sha": sha, "tree": chunk, "truncated": page * size < len(rows), "page": page, "total_count": len(rows)},
        )

    def get_contents(self, request: Request, owner: str, name: str, path: str) -> Response:
        ref = request.query.get("ref") or self.model.default_branch
        commit = self.model.commit_at(ref)
        if commit is None:
            return self.error(404, f"object does not exist [id: {ref}, rel_path: ]")
        files = self.model.commits[commit].files
        if path not in files:
            return self.error(404, f"object does not exist [id: , rel_path: {path}]")
        blob = files[path][1]
        return Response(
            200,
            {
                "type": "file",
                "encoding": "base64",
                "path": path,
                "name": path.rsplit("/", 1)[-1],
                "sha": blob,
                "size": len(self.model.blobs[blob]),
                "content": base64.b64encode(self.model.blobs[blob]).decode(),
                "last_commit_sha": commit,
            },
        )

    def change_files(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        branch = body["branch"]
        if branch not in self.model.branches:
            return self.error(404, f"branch does not exist [name: {branch}]")
        parent = self.model.branches[branch]
        files = dict(self.model.commits[parent].files)
        for change in body["files"]:
            path = change["path"]
            if change["operation"] != "update" or path not in files:
                return self.error(422, f"file does not exist [path: {path}]")
            if change.get("sha") != files[path][1]:
                return self.error(422, f"sha does not match [given: {change.get('sha')}, expected: {files[path][1]}]")
            files[path] = (files[path][0], self.model.put_blob(base64.b64decode(change["content"])))
        sha = self.model.commit(files, [parent], body["message"])
        self.model.branches[body.get("new_branch") or branch] = sha
        return Response(201, {"commit": {"sha": sha}, "files": []})

    def list_pulls(self, request: Request, owner: str, name: str) -> Response:
        self.count_list(request, f"{owner}/{name}")
        state = request.query.get("state", "open")
        pulls = [p for p in self.model.pulls if state == "all" or p.state == state]
        chunk, headers = self.page(request, pulls, size_param="limit")
        return Response(200, [self.pull_json(p) for p in chunk], headers)

    def page(self, request: Request, items: list[Any], page_param: str = "page", size_param: str = "limit"):
        # Gitea honours the asked page size (up to its MAX_RESPONSE_ITEMS, 50 by default).
        size = min(int(request.query.get(size_param) or 30), 50)
        number = int(request.query.get(page_param) or 1)
        return items[(number - 1) * size : number * size], {"X-Total-Count": str(len(items))}

    def create_pull(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        head, base = body["head"], body["base"]
        existing = next((p for p in self.model.open_pulls() if p.head == head and p.base == base), None)
        if existing:
            return self.error(
                409,
                f"pull request already exists for these targets [id: {9000 + existing.number}, "
                f"issue_id: {7000 + existing.number}, head_repo_id: 1, base_repo_id: 1, "
                f"head_branch: {head}, base_branch: {base}]",
            )
        if head not in self.model.branches:
            return self.error(404, "The head branch does not exist")
        pull = self.model.add_pull(
            body["title"], head, base, body=body.get("body") or "", created_at=datetime.now(UTC).replace(microsecond=0)
        )
        return Response(201, self.pull_json(pull))

    def get_pull(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        if pull is None:
            return self.error(404, "pull request does not exist")
        return Response(200, self.pull_json(pull))

    def request_reviewers(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        body = request.json()
        for user in body.get("reviewers") or []:
            if user not in self.model.users:
                return self.error(422, f"user does not exist [uid: 0, name: {user}]")
        for team in body.get("team_reviewers") or []:
            if team not in self.model.teams:
                return self.error(404, f"team does not exist [name: {team}]")
        pull.reviewers += body.get("reviewers") or []
        pull.team_reviewers += body.get("team_reviewers") or []
        return Response(201, [])

    def list_labels(self, request: Request, owner: str, name: str) -> Response:
        chunk, headers = self.page(request, self.model.labels)
        return Response(200, chunk, headers)

    def list_org_labels(self, request: Request, org: str) -> Response:
        if self.org_labels is None:
            return self.error(404, "GetOrgByName")
        chunk, headers = self.page(request, self.org_labels)
        return Response(200, chunk, headers)

    def create_label(self, request: Request, owner: str, name: str) -> Response:
        body = request.json()
        label = {"id": 100 + len(self.all_labels()), "name": body["name"], "color": body["color"].lstrip("#")}
        self.model.labels.append(label)
        return Response(201, label)

    def add_labels(self, request: Request, owner: str, name: str, number: str) -> Response:
        pull = self.model.pull(int(number))
        wanted = request.json()["labels"]
        by_id = {lb["id"]: lb["name"] for lb in self.all_labels()}
        for item in wanted:
            if isinstance(item, str) and not self.names_labels():
                return self.error(422, "[]: json: cannot unmarshal string into Go value of type int64")
            label = by_id.get(item) if isinstance(item, int) else item
            if label is None:
                return self.error(422, f"label does not exist [id: {item}]")
            if label not in pull.labels:
                pull.labels.append(label)
        return Response(200, [lb for lb in self.all_labels() if lb["name"] in pull.labels])

    def statuses(self, request: Request, owner: str, name: str, sha: str) -> Response:
        rows = [{"id": i, "status": s, "context": f"ci/{i}", "target_url": f"https://ci.example/{sha}/{i}"}
                for i, s in enumerate(self.model.statuses.get(sha, []))]
        chunk, headers = self.page(request, rows)
        return Response(200, chunk, headers)

    def release_json(self, number: int, release: ReleaseEntry) -> dict[str, Any]:
        page = f"https://gitea.example/{self.model.owner}/{self.model.name}/releases/tag/{release.tag}"
        return {
            "id": number,
            "tag_name": release.tag,
            "target_commitish": "main",
            "name": release.title,
            "body": release.body,
            "url": f"{self.api}/repos/{self.model.owner}/{self.model.name}/releases/{number}",
            "html_url": page if release.web_url == "" else release.web_url,
            "tarball_url": f"{page}.tar.gz",
            "zipball_url": f"{page}.zip",
            "draft": release.draft,
            "prerelease": release.prerelease,
            "created_at": iso(release.published_at),
            "published_at": iso(release.published_at),
            "author": {"login": "release-bot"},
            "assets": [],
        }

    def list_releases(self, request: Request, owner: str, name: str) -> Response:
        if (owner, name) != (self.model.owner, self.model.name):
            return self.error(404, "repository does not exist")
        listed = [(i + 1, r) for i, r in enumerate(self.model.releases)][::-1]  # newest first
        # Writers see drafts unless they ask `draft=false`.
        if request.query.get("draft") == "false":
            listed = [(number, r) for number, r in listed if not r.draft]
        chunk, headers = self.page(request, listed)
        return Response(200, [self.release_json(number, r) for number, r in chunk], headers)

    # --- comments (a pull request's are its issue's) -------------------------------------

    def comment_json(self, comment: Comment) -> dict[str, Any]:
        web = f"{self.url}/{self.model.owner}/{self.model.name}"
        return {
            "id": comment.id,
            "html_url": f"{web}/pulls/{comment.number}#issuecomment-{comment.id}",
            "pull_request_url": f"{web}/pulls/{comment.number}",
            "issue_url": "",
            "user": {"id": self.model.users.get(comment.author, 1), "login": comment.author},
            "original_author": "",
            "original_author_id": 0,
            "body": comment.body,
            "assets": [],
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
        }

    def create_comment(self, request: Request, owner: str, name: str, number: str) -> Response:
        if self.model.pull(int(number)) is None:
            return self.error(404, "The target couldn't be found.")
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return self.error(422, "[Body]: Required")
        return Response(201, self.comment_json(self.model.add_comment(int(number), body["body"])))

    def update_comment(self, request: Request, owner: str, name: str, comment_id: str) -> Response:
        comment = self.model.comment(int(comment_id))
        if comment is None:
            return self.error(404, "The target couldn't be found.")
        comment.body = request.json()["body"]
        comment.updated_at = datetime.now(UTC).replace(microsecond=0)
        return Response(200, self.comment_json(comment))
