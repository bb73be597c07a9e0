"""Container image references, normalised the way Docker and kustomize read them.

`nginx:1.25` is `docker.io/library/nginx:1.25`; a first path component is a registry
host only when it has a dot or a port, or is `localhost`. Both the collectors (what
runs) and the pin finder (what Git says) compare images through `parse_image`, so a
workload and a manifest agree on what "the same image" means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")


@dataclass(frozen=True)
class ImageRef:
    registry: str  # "docker.io", "ghcr.io", "localhost:5000"
    repository: str  # path inside the registry: "library/nginx", "acme/checkout"
    tag: str  # "" when absent
    digest: str  # "sha256:…" or ""

    @property
    def name(self) -> str:
        """Fully qualified image name without tag or digest: `docker.io/library/nginx`."""
        return f"{self.registry}/{self.repository}"

    @property
    def version(self) -> str:
        """What a person calls the running version: the tag, else the digest."""
        return self.tag or self.digest

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_image(reference: str) -> ImageRef | None:
    """Parse an image reference; None when it is not one (empty, spaces, bad tag)."""
    ref = (reference or "").strip()
    if not ref or any(ch.isspace() for ch in ref) or ref.startswith(("/", ":", "@")):
        return None
    digest = ""
    if "@" in ref:
        ref, digest = ref.split("@", 1)
        if not _DIGEST.match(digest):
            return None
    tag = ""
    last_slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > last_slash:
        ref, tag = ref[:colon], ref[colon + 1 :]
        if not _TAG.match(tag):
            return None
    if not ref or ref.endswith("/") or "//" in ref:
        return None
    registry, repository = split_registry(ref)
    return ImageRef(registry=registry, repository=repository, tag=tag, digest=digest)


def split_registry(name: str) -> tuple[str, str]:
    """`ghcr.io/acme/app` -> (`ghcr.io`, `acme/app`); `nginx` -> (`docker.io`, `library/nginx`)."""
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first.lower(), rest
    else:
        registry, repository = DOCKER_HUB, name
    if registry in _HUB_ALIASES:
        registry = DOCKER_HUB
        if "/" not in repository:
            repository = f"library/{repository}"
    return registry, repository


def normalise_name(name: str) -> str:
    """The canonical image name (no tag/digest) for a repository as a person writes it."""
    parsed = parse_image(name)
    if parsed is None:
        return name.strip()
    return parsed.name
