"""One running fake forge plus the portal's client for it, built through the registry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from forges.forge import Forge
from forges.hosts import forge_for
from forges.retry import RetryPolicy
from portal.delivery.planner import Change
from tests.fakes.forges.base import FakeServer, GitModel
from tests.fakes.forges.gitea import FakeGitea
from tests.fakes.forges.github import FakeGitHub
from tests.fakes.forges.gitlab import FakeGitLab

KINDS = ("github", "gitlab", "gitea")
TOKEN = "tok-3f9a7c1e5b2d4a60-never-shown"
NOW = 1_767_600_000.0  # the injected clock: 2026-01-05 08:00 UTC
DIGEST = "sha256:" + "ab" * 32
PROD = "apps/checkout/overlays/prod"  # where CHANGE lands
BRANCH = "portal/checkout-1.7.0-prod"  # the branch the planner names for CHANGE
# The request paths of each forge's API, for faults aimed at one step.
BRANCH_PATH = {"github": r"/branches/main$", "gitlab": r"/repository/branches/main$", "gitea": r"/branches/main$"}
PR_CREATE = {"github": r"/pulls$", "gitlab": r"/merge_requests$", "gitea": r"/pulls$"}
COMMIT = {"github": r"/git/commits$", "gitlab": r"/repository/commits$", "gitea": r"/contents$"}

FILES = {
    "apps/checkout/overlays/prod/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n"
        'images:\n  - name: ghcr.io/acme/checkout\n    newTag: "1.6.0" # bumped by the portal\n'
    ),
    "apps/checkout/overlays/prod/values.yaml": (
        "replicaCount: 3\nimage:\n  repository: ghcr.io/acme/checkout\n  tag: 1.6.0\n  pullPolicy: IfNotPresent\n"
    ),
    "apps/checkout/overlays/prod/migrations.yaml": (
        f"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n"
        f"        - name: migrate\n          image: ghcr.io/acme/checkout:1.6.0@{DIGEST}\n"
    ),
    "apps/checkout/overlays/staging/kustomization.yaml": (
        "resources:\n  - ../../base\nimages:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.7.0\n"
    ),
    "apps/checkout/base/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: checkout\nspec:\n  template:\n    spec:\n"
        "      containers:\n        - name: checkout\n          image: ghcr.io/acme/checkout\n"
    ),
    "README.md": "acme/gitops\n",
}

CHANGE = Change(
    kind="upgrade",
    services=("checkout",),
    environment="prod",
    clusters=("prod-eu-1",),
    repository="",  # filled per forge
    base_branch="main",
    path="apps/checkout/overlays/prod",
    image="ghcr.io/acme/checkout",
    from_version="1.6.0",
    to_version="1.7.0",
    release_notes="- Faster checkout\n- Fixes #42",
)


@dataclass
class Harness:
    kind: str
    server: FakeServer
    forge: Forge
    repository: str
    environ: dict[str, str]
    sleeps: list[float] = field(default_factory=list)

    @property
    def model(self) -> GitModel:
        return self.server.model

    def change(self, **overrides: object) -> Change:
        values = {**CHANGE.__dict__, "repository": self.repository, **overrides}
        return Change(**values)  # type: ignore[arg-type]

    def new_forge(self) -> Forge:
        return forge_for(self.repository, self.environ, policy=self.policy(), demo=False)

    def new_forge_with(self, policy: RetryPolicy) -> Forge:
        """A client for the fake with another retry policy (the job's, which raises long waits)."""
        return forge_for(self.repository, self.environ, policy=policy, demo=False)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_attempts=4, max_wait=600, sleeper=self.sleeps.append, clock=lambda: NOW)


def server_for(kind: str, model: GitModel) -> FakeServer:
    return {"github": FakeGitHub, "gitlab": FakeGitLab, "gitea": FakeGitea}[kind](model, TOKEN)


def environ_for(kind: str, server: FakeServer) -> dict[str, str]:
    if kind == "github":
        return {"PORTAL_GITOPS_GITHUB_API": server.api, "PORTAL_GITOPS_TOKEN": TOKEN}
    if kind == "gitlab":
        return {"PORTAL_GITLAB_URL": server.url, "PORTAL_GITOPS_GITLAB_TOKEN": TOKEN}
    return {"PORTAL_GITEA_URL": server.url, "PORTAL_GITOPS_GITEA_TOKEN": TOKEN}


@contextmanager
def serving(
    kind: str, monkeypatch: Any, files: dict[str, str] | None = None, default_branch: str = "main"
) -> Iterator[Harness]:
    """`running`, with the fake's URL and token in the environment for the test (as an
    operator would set them) and in the settings read from it, so `forges.hosts.forge_for` finds it."""
    from django.conf import settings

    with running(kind, files, default_branch) as harness:
        for name, value in harness.environ.items():
            monkeypatch.setenv(name, value)
            monkeypatch.setattr(settings, name, value)
        yield harness


@contextmanager
def running(kind: str, files: dict[str, str] | None = None, default_branch: str = "main") -> Iterator[Harness]:
    """A fake forge holding `files` (FILES unless given) on its default branch (`main` unless given)."""
    model = GitModel("acme", "gitops", dict(FILES if files is None else files), branch=default_branch)
    model.users.update({"alice": 2, "bob": 3})
    model.teams.add("platform")
    with server_for(kind, model) as server:
        environ = environ_for(kind, server)
        repository = f"{server.url}/acme/gitops.git"
        harness = Harness(kind, server, None, repository, environ)  # type: ignore[arg-type]
        harness.forge = harness.new_forge()
        yield harness


def set_checks(forge: Harness, sha: str, state: str) -> None:
    """What each forge reports when the checks of commit `sha` pass, run or fail."""
    model = forge.model
    if forge.kind == "github":
        run = {"pass": ("completed", "success"), "running": ("in_progress", None), "fail": ("completed", "failure")}
        status, conclusion = run[state]
        model.check_runs[sha] = [{"id": 1, "name": "build", "status": status, "conclusion": conclusion,
                                  "html_url": f"https://github.example/acme/gitops/runs/{sha[:8]}"}]
    elif forge.kind == "gitlab":
        model.pipelines[sha] = {"pass": "success", "running": "running", "fail": "failed"}[state]
    else:
        model.statuses[sha] = [{"pass": "success", "running": "pending", "fail": "failure"}[state]]
