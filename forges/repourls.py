"""Repository URLs as GitOps tools hold them, normalised; web links built from the parts.

Argo CD and Flux store clone URLs (`git@github.com:acme/gitops.git`,
`ssh://git@gitlab.example.com:2222/group/sub/proj.git`, `https://…/proj.git`).
`parse_repo_url` reduces any of them to a `RepoRef`: host, owner path, name and forge
kind. Web links are built only from a `RepoRef` (its `web_url`, `commit_page`,
`compare_page`, `release_page`), with percent-encoded refs and paths,
and are always http(s); anything that does not parse cleanly gives None, never a link
built from raw text.

Which forge a self-hosted host runs cannot be read from its URL, so callers pass a
mapping of host -> kind (`"git.corp.example": "gitlab"`); a key may also be a base URL
with a sub-path (`"https://example.com/gitea": "gitea"`) or a web port
(`"gitea.local:3000"`). Public hosts are known without configuration.

An http(s) URL is matched by host and port, so two forges may share a host name on
different ports: a key with a port serves only that port, a key without one only the
default port of the URL's scheme. An SSH or git port says nothing about the web port, so
such a URL matches any key of its host, a key without a port first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

GITHUB = "github"
GITLAB = "gitlab"
GITEA = "gitea"
FORGEJO = "forgejo"
BITBUCKET = "bitbucket"  # Bitbucket Cloud
BITBUCKET_SERVER = "bitbucket-server"  # Bitbucket Server / Data Center
KINDS = (GITHUB, GITLAB, GITEA, FORGEJO, BITBUCKET, BITBUCKET_SERVER)

PUBLIC_HOSTS: dict[str, str] = {
    "github.com": GITHUB,
    "gitlab.com": GITLAB,
    "bitbucket.org": BITBUCKET,
    "codeberg.org": FORGEJO,
    "gitea.com": GITEA,
}

_AZURE_HOSTS = ("dev.azure.com", "ssh.dev.azure.com", "visualstudio.com")
_URL_SCHEMES = {"https", "http", "ssh", "git+ssh", "ssh+git", "git"}
_SCP = re.compile(r"(?:(?P<user>[A-Za-z0-9._~-]+)@)?(?P<host>[A-Za-z0-9.-]+):(?P<path>[^/].*|/.+)")
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_HOST = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
_SHA = re.compile(r"[0-9a-fA-F]{7,64}")
_WEB_PORTS = {"https": 443, "http": 80}


@dataclass(frozen=True)
class RepoRef:
    host: str  # lowercased host name, without any port
    owner: str  # owner path as written: `acme`, `group/sub`; the project key on Bitbucket Server
    name: str  # repository name without `.git`
    kind: str  # one of KINDS
    web_root: str  # `https://host[:port][/sub-path]`, the forge's web base

    @property
    def path(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        """For comparing repositories: forges treat owner and name case-insensitively."""
        return (self.host, self.owner.lower(), self.name.lower())

    @property
    def web_url(self) -> str:
        """The repository's own page."""
        if self.kind == BITBUCKET_SERVER:
            return f"{_base(self)}/browse"
        return _base(self)

    # The pages below are spelled per forge kind here, once; `forges.weblinks` gives them
    # for a clone URL as the portal's configuration reads it.

    def commit_page(self, sha: str) -> str | None:
        """The page of one commit; None when `sha` is not a commit hash."""
        if not _SHA.fullmatch(sha or ""):
            return None
        sha = sha.lower()
        if self.kind == GITLAB:
            return f"{_base(self)}/-/commit/{sha}"
        if self.kind in (BITBUCKET, BITBUCKET_SERVER):
            return f"{_base(self)}/commits/{sha}"
        return f"{_base(self)}/commit/{sha}"

    def compare_page(self, base: str, head: str) -> str:
        """The forge's comparison of `head` against `base` (branches, tags or commits)."""
        if self.kind == GITLAB:
            return f"{_base(self)}/-/compare/{_ref(base)}...{_ref(head)}"
        if self.kind == BITBUCKET:
            # Bitbucket Cloud lists the newer ref first, separated by an encoded CR.
            return f"{_base(self)}/branches/compare/{_ref(head)}%0D{_ref(base)}"
        if self.kind == BITBUCKET_SERVER:
            query = urlencode({"sourceBranch": _qualified(head), "targetBranch": _qualified(base)})
            return f"{_base(self)}/compare/commits?{query}"
        return f"{_base(self)}/compare/{_ref(base)}...{_ref(head)}"

    def release_page(self, tag: str) -> str | None:
        """The page of the release made from `tag`; None on Bitbucket, which has no releases."""
        if self.kind == GITLAB:
            return f"{_base(self)}/-/releases/{_ref(tag)}"
        if self.kind in (GITHUB, GITEA, FORGEJO):
            return f"{_base(self)}/releases/tag/{_ref(tag)}"
        return None


def parse_repo_url(url: str, hosts: Mapping[str, str] | None = None) -> RepoRef | None:
    """Normalise a clone or web URL; None when it is not a repository on a known forge."""
    text = (url or "").strip()
    if not text or any(ch.isspace() or ord(ch) < 0x20 for ch in text):
        return None
    parsed = _split(text)
    if parsed is None:
        return None
    scheme, host, port, path = parsed
    if not _HOST.fullmatch(host) or any(host == h or host.endswith("." + h) for h in _AZURE_HOSTS):
        return None
    segments = path.strip("/").split("/") if path.strip("/") else []
    match = _match_host(scheme, host, port, segments, {**PUBLIC_HOSTS, **(hosts or {})})
    if match is None:
        return None
    kind, base = match
    if kind not in KINDS:
        return None
    segments = segments[len(base.sub_path) :]
    if segments and segments[-1].endswith(".git"):
        segments[-1] = segments[-1][: -len(".git")]
    owner_name = _owner_and_name(kind, segments)
    if owner_name is None:
        return None
    owner, name = owner_name
    web_root = _web_root(scheme, host, port, base)
    return RepoRef(host=host, owner=owner, name=name, kind=kind, web_root=web_root)


# --- parsing -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Base:
    scheme: str  # "" when the configuration gave a bare host
    port: int | None
    sub_path: tuple[str, ...]


def _split(text: str) -> tuple[str, str, int | None, str] | None:
    if "://" in text:
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        if scheme not in _URL_SCHEMES or not parts.hostname or parts.query and scheme not in ("http", "https"):
            return None
        return scheme, parts.hostname.lower(), port, parts.path
    match = _SCP.fullmatch(text)
    if match is None:
        return None
    return "scp", match["host"].lower(), None, match["path"]


def _parse_base(key: str) -> tuple[str, _Base] | None:
    text = key.strip()
    if "://" not in text:
        text = "//" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("", "http", "https") or not parts.hostname:
        return None
    sub_path = tuple(s for s in parts.path.split("/") if s)
    return parts.hostname.lower(), _Base(parts.scheme, port, sub_path)


def _match_host(
    scheme: str, host: str, port: int | None, segments: list[str], hosts: Mapping[str, str]
) -> tuple[str, _Base] | None:
    # The longest configured sub-path that prefixes the URL's path wins; among equals, for
    # a URL whose port does not choose, the key without a port (the forge's default port).
    best: tuple[str, _Base] | None = None
    for key, kind in hosts.items():
        parsed = _parse_base(key)
        if parsed is None or parsed[0] != host:
            continue
        base = parsed[1]
        if tuple(segments[: len(base.sub_path)]) != base.sub_path or not _port_fits(scheme, port, base):
            continue
        if best is None or (len(base.sub_path), base.port is None) > (len(best[1].sub_path), best[1].port is None):
            best = (kind, base)
    return best


def _port_fits(scheme: str, port: int | None, base: _Base) -> bool:
    if scheme not in _WEB_PORTS:
        return True  # an SSH or git port is never the web port
    actual = _WEB_PORTS[scheme] if port is None else port
    return actual == (_WEB_PORTS[scheme] if base.port is None else base.port)


def serves(key: str, ref: RepoRef) -> bool:
    """Whether the host key (`host`, `host:port`, a base URL) is the forge root `ref` was found
    under: same host, web port and sub-path. `forges.hosts` picks a forge's client with it."""
    parsed = _parse_base(key)
    if parsed is None or parsed[0] != ref.host:
        return False
    base = parsed[1]
    root = urlsplit(ref.web_root)
    root_port = _WEB_PORTS[root.scheme] if root.port is None else root.port
    key_port = _WEB_PORTS[base.scheme or root.scheme] if base.port is None else base.port
    return key_port == root_port and tuple(s for s in root.path.split("/") if s) == base.sub_path


def _owner_and_name(kind: str, segments: list[str]) -> tuple[str, str] | None:
    if kind == GITLAB:
        if "-" in segments:
            segments = segments[: segments.index("-")]
        return _checked(segments[:-1], segments[-1:]) if len(segments) >= 2 else None
    if kind == BITBUCKET_SERVER:
        return _bitbucket_server(segments)
    # GitHub, Gitea/Forgejo and Bitbucket Cloud have exactly owner/repo; anything after
    # it is a pasted web page (`/tree/main/apps`, `/src/branch/main`).
    return _checked(segments[:1], segments[1:2]) if len(segments) >= 2 else None


def _bitbucket_server(segments: list[str]) -> tuple[str, str] | None:
    lowered = [s.lower() for s in segments]
    if lowered[:1] == ["scm"]:
        segments = segments[1:]
    elif len(segments) >= 4 and lowered[0] in ("projects", "users") and lowered[2] == "repos":
        owner = segments[1] if lowered[0] == "projects" else f"~{segments[1]}"
        segments = [owner, segments[3]]
    if len(segments) != 2:
        return None
    owner, name = segments
    personal = owner.startswith("~")
    checked = _checked([owner[1:] if personal else owner], [name])
    if checked is None:
        return None
    return (owner if personal else owner.upper()), name


def _checked(owner: list[str], name: list[str]) -> tuple[str, str] | None:
    parts = owner + name
    if not owner or len(name) != 1 or not all(_SEGMENT.fullmatch(p) for p in parts):
        return None
    return "/".join(owner), name[0]


def _web_root(scheme: str, host: str, port: int | None, base: _Base) -> str:
    # An SSH port is never the web port; an http(s) URL keeps its scheme and port.
    if base.scheme:
        web_scheme, web_port = base.scheme, base.port
    elif scheme in ("http", "https"):
        web_scheme, web_port = scheme, port
    else:
        web_scheme, web_port = "https", base.port
    default = _WEB_PORTS[web_scheme]
    netloc = host if web_port in (None, default) else f"{host}:{web_port}"
    sub_path = "".join(f"/{s}" for s in base.sub_path)
    return f"{web_scheme}://{netloc}{sub_path}"


# --- building ----------------------------------------------------------------------


def _base(ref: RepoRef) -> str:
    owner = quote(ref.owner, safe="/~")
    name = quote(ref.name, safe="")
    if ref.kind == BITBUCKET_SERVER:
        if owner.startswith("~"):
            return f"{ref.web_root}/users/{owner[1:]}/repos/{name}"
        return f"{ref.web_root}/projects/{owner}/repos/{name}"
    return f"{ref.web_root}/{owner}/{name}"


def _ref(revision: str) -> str:
    # Branch names may hold `/`, `#`, `?` and `%`; only `/` may stay literal in a path.
    return quote(revision, safe="/")


def _qualified(branch: str) -> str:
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"
