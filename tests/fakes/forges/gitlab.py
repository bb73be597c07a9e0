"""GitLab's REST v4 (the shapes python-gitlab reads): projects addressed by URL-encoded path."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from tests.fakes.forges.base import Comment, FakeServer, GitModel, Pull, ReleaseEntry, Request, Response, iso


class FakeGitLab(FakeServer):
    prefix = "/api/v4"

    def __init__(self, model: GitModel, token: str) -> None:
        self.one_reviewer_only = False  # GitLab Free: more than one reviewer is refused
        super().__init__(model, token)

    def authorised(self, request: Request) -> bool:
        return request.headers.get("private-token") == self.token

    def error(self, status: int, message: Any) -> Response:
        return Response(status, {"message": message})

    def setup_routes(self) -> None:
        project = r"/projects/(?P<project>[^/]+)"
        self.route("GET", project, self.get_project)
        self.route("GET", project + r"/repository/branches/(?P<branch>[^/]+)", self.get_branch)
        self.route("POST", project + r"/repository/branches", self.create_branch)
        self.route("DELETE", project + r"/repository/branches/(?P<branch>[^/]+)", self.delete_branch)
        self.route("GET", project + r"/repository/tree", self.tree)
        self.route("GET", project + r"/repository/files/(?P<path>[^/]+)", self.get_file)
        self.route("POST", project + r"/repository/commits", self.create_commit)
        self.route("GET", project + r"/merge_requests", self.list_mrs)
        self.route("POST", project + r"/merge_requests", self.create_mr)
        self.route("GET", project + r"/merge_requests/(?P<iid>\d+)", self.get_mr)
        self.route("PUT", project + r"/merge_requests/(?P<iid>\d+)", self.update_mr)
        self.route("POST", project + r"/merge_requests/(?P<iid>\d+)/notes", self.create_note)
        self.route("PUT", project + r"/merge_requests/(?P<iid>\d+)/notes/(?P<note_id>\d+)", self.update_note)
        self.route("GET", project + r"/releases", self.list_releases)
        self.route("GET", r"/users", self.users)

    def known(self, project: str) -> bool:
        return project == f"{self.model.owner}/{self.model.name}"

    def mr_json(self, pull: Pull) -> dict[str, Any]:
        merged = pull.merged_at is not None
        state = "merged" if merged else ("closed" if pull.state == "closed" else "opened")
        sha = self.model.branches.get(pull.head, pull.head_sha)
        status = self.model.pipelines.get(sha)
        return {
            "id": 1000 + pull.number,
            "iid": pull.number,
            "title": pull.title,
            "description": pull.body,
            "state": state,
            "source_branch": pull.head,
            "target_branch": pull.base,
            "sha": sha,
            "web_url": f"https://gitlab.example/{self.model.owner}/{self.model.name}/-/merge_requests/{pull.number}",
            "merged_at": iso(pull.merged_at),
            "closed_at": iso(pull.closed_at),
            "created_at": iso(pull.created_at),
            "labels": list(pull.labels),
            "reviewers": [{"id": self.model.users[r], "username": r} for r in pull.reviewers],
            "author": {"username": pull.author},
            "head_pipeline": {
                "id": 77, "sha": sha, "status": status,
                "web_url": f"https://gitlab.example/{self.model.owner}/{self.model.name}/-/pipelines/77",
            } if status else None,
        }

    def get_project(self, request: Request, project: str) -> Response:
        if not self.known(project):
            return self.error(404, "404 Project Not Found")
        owner, name = self.model.owner, self.model.name
        return Response(
            200,
            {
                "id": 42,
                "name": name,
                "path": name,
                "path_with_namespace": f"{owner}/{name}",
                "web_url": f"https://gitlab.example/{owner}/{name}",
                "default_branch": self.model.default_branch,
            },
        )

    def get_branch(self, request: Request, project: str, branch: str) -> Response:
        if not self.known(project) or branch not in self.model.branches:
            return self.error(404, "404 Branch Not Found")
        return Response(200, {"name": branch, "commit": {"id": self.model.branches[branch]}})

    def create_branch(self, request: Request, project: str) -> Response:
        body = request.json()
        if body["branch"] in self.model.branches:
            return self.error(400, "Branch already exists")
        if body["ref"] not in self.model.branches:
            return self.error(400, "Invalid reference name")
        self.model.branches[body["branch"]] = self.model.branches[body["ref"]]
        return Response(201, {"name": body["branch"], "commit": {"id": self.model.branches[body["branch"]]}})

    def delete_branch(self, request: Request, project: str, branch: str) -> Response:
        if branch not in self.model.branches:
            return self.error(404, "404 Branch Not Found")
        del self.model.branches[branch]
        return Response(204)

    def tree(self, request: Request, project: str) -> Response:
        ref = request.query.get("ref", "main")
        commit = self.model.commit_at(ref)
        if commit is None:
            return self.error(404, "404 Tree Not Found")
        path = request.query.get("path", "").strip("/")
        files = self.model.commits[commit].files
        rows = [
            {"id": blob, "name": p.rsplit("/", 1)[-1], "type": "blob", "path": p, "mode": mode}
            for p, (mode, blob) in sorted(files.items())
            if not path or p.startswith(path + "/")
        ]
        directories = sorted({p.rsplit("/", 1)[0] for p in (r["path"] for r in rows) if "/" in p})
        rows += [
            {"id": "0" * 40, "name": d.rsplit("/", 1)[-1], "type": "tree", "path": d, "mode": "040000"}
            for d in directories
            if not path or d.startswith(path + "/")
        ]
        if not rows:
            return self.error(404, "404 Tree Not Found")
        chunk, headers = self.page(request, rows)
        return Response(200, chunk, headers)

    def get_file(self, request: Request, project: str, path: str) -> Response:
        ref = request.query.get("ref", "main")
        commit = self.model.commit_at(ref)
        files = self.model.commits[commit].files if commit is not None else {}
        if path not in files:
            return self.error(404, "404 File Not Found")
        blob = files[path][1]
        return Response(
            200,
            {
                "file_name": path.rsplit("/", 1)[-1],
                "file_path": path,
                "encoding": "base64",
                "content": base64.b64encode(self.model.blobs[blob]).decode(),
                "ref": ref,
                "blob_id": blob,
                "commit_id": commit,
                "last_commit_id": commit,
                "size": len(self.model.blobs[blob]),
            },
        )

    def create_commit(self, request: Request, project: str) -> Response:
        body = request.json()
        branch = body["branch"]
        if branch not in self.model.branches:
            return self.error(400, "You can only create or edit files when you are on a branch")
        parent = self.model.branches[branch]
        files = dict(self.model.commits[parent].files)
        for action in body["actions"]:
            if action["action"] != "update" or action["file_path"] not in files:
                return self.error(400, "A file with this name doesn't exist")
            mode = files[action["file_path"]][0]
            files[action["file_path"]] = (mode, self.model.put_blob(action["content"].encode()))
        sha = self.model.commit(files, [parent], body["commit_message"])
        self.model.branches[branch] = sha
        return Response(201, {"id": sha, "short_id": sha[:8], "title": body["commit_message"].splitlines()[0]})

    def list_mrs(self, request: Request, project: str) -> Response:
        self.count_list(request, project)
        wanted = request.query.get("state", "all")
        pulls = [p for p in self.model.pulls if wanted == "all" or self.mr_json(p)["state"] == wanted]
        chunk, headers = self.page(request, pulls)
        return Response(200, [self.mr_json(p) for p in chunk], headers)

    def create_mr(self, request: Request, project: str) -> Response:
        body = request.json()
        head = body["source_branch"]
        existing = next((p for p in self.model.open_pulls() if p.head == head), None)
        if existing:
            return self.error(
                409, [f"Another open merge request already exists for this source branch: !{existing.number}"]
            )
        if head not in self.model.branches:
            return self.error(422, {"source_branch": ["is invalid"]})
        pull = self.model.add_pull(
            body["title"],
            head,
            body["target_branch"],
            body=body.get("description") or "",
            created_at=datetime.now(UTC).replace(microsecond=0),
        )
        return Response(201, self.mr_json(pull))

    def get_mr(self, request: Request, project: str, iid: str) -> Response:
        pull = self.model.pull(int(iid))
        if pull is None:
            return self.error(404, "404 Not found")
        return Response(200, self.mr_json(pull))

    def update_mr(self, request: Request, project: str, iid: str) -> Response:
        pull = self.model.pull(int(iid))
        if pull is None:
            return self.error(404, "404 Not found")
        body = request.json()
        if "reviewer_ids" in body:
            if self.one_reviewer_only and len(body["reviewer_ids"]) > 1:
                return self.error(400, {"reviewers": ["maximum size of reviewers is 1"]})
            names = {v: k for k, v in self.model.users.items()}
            pull.reviewers = [names[i] for i in body["reviewer_ids"]]
        for label in (body.get("add_labels") or "").split(","):
            if label and label not in pull.labels:
                pull.labels.append(label)
        return Response(200, self.mr_json(pull))

    def users(self, request: Request) -> Response:
        name = request.query.get("username", "")
        found = [{"id": i, "username": n, "state": "active"} for n, i in self.model.users.items() if n == name]
        return Response(200, found)

    def release_json(self, release: ReleaseEntry) -> dict[str, Any]:
        page = f"https://gitlab.example/{self.model.owner}/{self.model.name}/-/releases/{release.tag}"
        data: dict[str, Any] = {
            "tag_name": release.tag,
            "name": release.title or release.tag,
            "description": release.body,
            "created_at": iso(release.published_at),
            "released_at": iso(release.published_at),
            "upcoming_release": False,
            "author": {"username": "release-bot"},
            "commit_path": f"/{self.model.owner}/{self.model.name}/-/commit/{'0' * 40}",
            "tag_path": f"/{self.model.owner}/{self.model.name}/-/tags/{release.tag}",
            "assets": {"count": 0, "sources": [], "links": []},
        }
        if release.web_url is not None:
            data["_links"] = {"self": page if release.web_url == "" else release.web_url}
        return data

    def list_releases(self, request: Request, project: str) -> Response:
        if not self.known(project):
            return self.error(404, "404 Project Not Found")
        # GitLab has no drafts: every release is listed, by released_at, newest first.
        listed = [r for r in self.model.releases_newest_first() if not r.draft]
        chunk, headers = self.page(request, listed)
        return Response(200, [self.release_json(r) for r in chunk], headers)

    # --- notes (a merge request's comments) ----------------------------------------------

    def note_json(self, note: Comment) -> dict[str, Any]:
        return {
            "id": note.id,
            "type": None,
            "body": note.body,
            "author": {"id": self.model.users.get(note.author, 1), "username": note.author, "state": "active"},
            "created_at": iso(note.created_at),
            "updated_at": iso(note.updated_at),
            "system": False,
            "noteable_id": 1000 + note.number,
            "noteable_type": "MergeRequest",
            "noteable_iid": note.number,
            "resolvable": False,
            "confidential": False,
            "internal": False,
        }

    def create_note(self, request: Request, project: str, iid: str) -> Response:
        if self.model.pull(int(iid)) is None:
            return self.error(404, "404 Not found")
        body = request.json()
        if not isinstance(body, dict) or not body.get("body"):
            return self.error(400, "400 Bad request - body is missing")
        return Response(201, self.note_json(self.model.add_comment(int(iid), body["body"])))

    def update_note(self, request: Request, project: str, iid: str, note_id: str) -> Response:
        note = self.model.comment(int(note_id))
        if note is None or note.number != int(iid):
            return self.error(404, "404 Not found")
        note.body = request.json()["body"]
        note.updated_at = datetime.now(UTC).replace(microsecond=0)
        return Response(200, self.note_json(note))
