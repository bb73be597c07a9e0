"""Workloads that run outside Kubernetes: Nomad jobs, Docker containers, Compose and Swarm
services, ECS services — with no GitOps tool, but with their image pinned in Git.

Their owners name where in labels (Nomad job/group/task `meta`, Docker and Compose and Swarm
labels, ECS tags): `portal.git.repo` (the repository URL), `portal.git.path` (a file, or a
folder of files, that pins the image) and `portal.git.branch` (when not the default one). Each
reader turns its platform's API answers into the same WorkloadRow a Kubernetes workload becomes,
so the store maps them to services by image and keeps their running versions exactly as it does
for Deployments; the Git location rides along on the workload. There is no sync state here: no
"out of sync", no Git pins from a GitOps tool, no rollback offer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitops.rows import ContainerImage, WorkloadRow
from portal.kernel.imagerefs import parse_image

NOMAD_JOB = "NomadJob"
CONTAINER = "Container"
COMPOSE_SERVICE = "ComposeService"
SWARM_SERVICE = "SwarmService"
ECS_SERVICE = "ECSService"
PLATFORM_KINDS: frozenset[str] = frozenset({NOMAD_JOB, CONTAINER, COMPOSE_SERVICE, SWARM_SERVICE, ECS_SERVICE})

GIT_REPO, GIT_PATH, GIT_BRANCH = "portal.git.repo", "portal.git.path", "portal.git.branch"
_REPO = re.compile(r"^(https://[^\s/]+/[^\s]+|ssh://[^\s]+|git@[^\s:]+:[^\s]+)$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")


class PlatformError(Exception):
    """The platform could not be read at all (unreachable, refused): the cluster goes stale."""


@dataclass(frozen=True)
class GitLocation:
    repo: str
    path: str
    branch: str = ""  # empty: the repository's default branch


def git_location(labels: dict[str, str], warnings: list[str], where: str) -> GitLocation | None:
    """The Git location the labels name, or None; a malformed one is skipped with a warning
    (the strings come from the platform and are not trusted)."""
    repo, path, branch = (str(labels.get(k) or "").strip() for k in (GIT_REPO, GIT_PATH, GIT_BRANCH))
    if not repo and not path:
        return None
    if not repo or not path:
        warnings.append(f"{where}: {GIT_REPO} and {GIT_PATH} go together; only one is set")
        return None
    if len(repo) > 500 or not _REPO.match(repo):
        warnings.append(f"{where}: {GIT_REPO} is not a repository URL")
        return None
    parts = path.strip("/").split("/")
    if len(path) > 500 or any(p in ("", ".", "..") for p in parts) or path.startswith("/"):
        warnings.append(f"{where}: {GIT_PATH} must be a relative path inside the repository")
        return None
    if branch and not _BRANCH.match(branch):
        warnings.append(f"{where}: {GIT_BRANCH} is not a branch name")
        return None
    return GitLocation(repo=repo, path="/".join(parts), branch=branch)


def as_dict(value: object) -> dict:
    """A value from a platform's JSON that should be an object, or {} when it is not."""
    return value if isinstance(value, dict) else {}


def container(name: str, image: str, row: WorkloadRow) -> ContainerImage:
    parsed = parse_image(image)
    if parsed is None:
        row.warnings.append(f"container {name}: {image!r} is not an image reference")
        return ContainerImage(name, image, "", "", "", "")
    return ContainerImage(container=name, image=image, registry=parsed.registry, repository=parsed.repository,
                          tag=parsed.tag, digest=parsed.digest)


def with_git(row: WorkloadRow, location: GitLocation | None) -> WorkloadRow:
    if location is not None:
        row.git_repo, row.git_path, row.git_branch = location.repo, location.path, location.branch
    return row


@dataclass
class PlatformRead:
    """What one read of a platform gave: workloads of the kinds listed completely."""

    workloads: list[WorkloadRow] = field(default_factory=list)
    listed: set[str] = field(default_factory=set)
    unavailable: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# What a service's members add so the portal knows where its image is pinned, per platform.
_LINES = {
    "nomad": 'meta {{\n  "portal.git.repo" = "{repo}"\n  "portal.git.path" = "{path}"\n}}',
    "docker": 'labels:\n  portal.git.repo: "{repo}"\n  portal.git.path: "{path}"',
    "swarm": 'deploy:\n  labels:\n    portal.git.repo: "{repo}"\n    portal.git.path: "{path}"',
    "ecs": 'aws ecs tag-resource --resource-arn <service ARN> --tags \\\n'
           '  key=portal.git.repo,value={repo} key=portal.git.path,value={path}',
}
PLATFORM_OF_KIND = {NOMAD_JOB: "nomad", CONTAINER: "docker", COMPOSE_SERVICE: "docker", SWARM_SERVICE: "swarm",
                    ECS_SERVICE: "ecs"}


def lines_to_add(kind: str, repo: str = "https://github.com/<org>/<repo>", path: str = "<file that pins the image>"
                 ) -> str:
    """The lines that tell the portal where a workload of `kind` pins its image."""
    return _LINES[PLATFORM_OF_KIND[kind]].format(repo=repo, path=path)
