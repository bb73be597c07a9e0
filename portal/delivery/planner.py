"""The one pull request planner: changes in, the branch, title, description, commit and edits out.

A pull request carries one change or several (services of one application, ticked lines
on the Updates page) to one repository, branch, environment and path; a single change is
a group of one, planned by the same code. Each change is planned over the files as the
previous ones left them (`forges.edits.retag_files`), and the edits are merged per file,
so a reviewer sees one diff per file. `plan` is pure: no forge, no database; the branch
prefix comes from settings (PORTAL_BRANCH_PREFIX) unless given.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.conf import settings

from forges.edits import FileEdit, file_edit, retag_files
from forges.forge import TreeEntry
from forges.pins import Pin
from portal.imagerefs import parse_image
from portal.timestamps import utc_stamp

UPGRADE = "upgrade"
PROMOTION = "promotion"
ROLLBACK = "rollback"
KINDS = (UPGRADE, PROMOTION, ROLLBACK)
VERBS = {UPGRADE: "update", PROMOTION: "promote", ROLLBACK: "roll back"}
DEFAULT_BRANCH_PREFIX = "portal/"
MAX_BRANCH = 180  # longer names are cut and end in a digest of the whole, so they stay unique
MAX_TITLE = 300  # the stored title's length
CLOSING = "Opened by the GitOps portal, which never merges: review, then merge when ready."

_REF_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class Change:
    """Move one image (the services it is) from one version to another in one environment."""

    kind: str  # UPGRADE, PROMOTION or ROLLBACK
    services: tuple[str, ...]
    environment: str
    repository: str  # the repository URL as the GitOps tool holds it
    base_branch: str  # the branch the GitOps application follows
    path: str  # the application's path in the repository
    image: str
    from_version: str
    to_version: str
    clusters: tuple[str, ...] = ()
    release_notes: str = ""
    failure: str = ""  # rollback: what went wrong
    failing_since: datetime | None = None  # rollback: since when

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown change kind {self.kind!r}")


@dataclass
class Preview:
    """A pull request as it would be opened. `change` is the group as one (services and
    clusters of all; one version when all agree, else each service's, comma-separated)."""

    change: Change
    branch: str
    title: str
    description: str
    commit_message: str
    edits: list[FileEdit] = field(default_factory=list)
    digest_pinned: list[Pin] = field(default_factory=list)  # left for a person
    problems: list[str] = field(default_factory=list)  # pins that could not be rewritten, and why

    @property
    def can_open(self) -> bool:
        return bool(self.edits)

    @property
    def diff(self) -> str:
        return "".join(edit.diff for edit in self.edits)


def group_of(changes: Change | Sequence[Change]) -> tuple[Change, ...]:
    return (changes,) if isinstance(changes, Change) else tuple(changes)


def branch_prefix(configured: str | None = None) -> str:
    """The configured prefix (settings.PORTAL_BRANCH_PREFIX unless given), ending in "/" or "-"."""
    prefix = (settings.PORTAL_BRANCH_PREFIX if configured is None else configured) or DEFAULT_BRANCH_PREFIX
    return prefix if prefix.endswith(("/", "-")) else prefix + "/"


def branch_name(changes: Change | Sequence[Change], prefix: str | None = None) -> str:
    """`portal/<service>-<version>[-<service>-<version>…]-<environment>`, safe for `git check-ref-format`."""
    group = group_of(changes)
    parts = [_ref_part(f"{subject}-{c.to_version}") for c in group for subject in c.services or (_short_image(c),)]
    environment = group[0].environment
    name = "-".join(parts + ([_ref_part(environment)] if environment else []))
    if len(name) > MAX_BRANCH:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = f"{name[: MAX_BRANCH - 20].rstrip('-.')}-{digest}"
    return branch_prefix(prefix) + name


def title_for(changes: Change | Sequence[Change]) -> str:
    group = group_of(changes)
    first = group[0]
    where = f" in {first.environment}" if first.environment else ""
    if first.kind == PROMOTION:
        moves = ", ".join(f"{_subject(c)} {c.to_version}" for c in group)
        return f"Promote {moves} to {first.environment or 'the next environment'}"[:MAX_TITLE]
    moves = ", ".join(f"{_subject(c)} to {c.to_version}" for c in group)
    verb = "Roll back" if first.kind == ROLLBACK else "Update"
    return f"{verb} {moves}{where}"[:MAX_TITLE]


def combined(changes: Change | Sequence[Change]) -> Change:
    """The group as one change, for the stored row and the audit log."""
    group = group_of(changes)
    first = group[0]
    services = tuple(s for c in group for s in c.services)
    clusters = tuple(dict.fromkeys(cl for c in group for cl in c.clusters))
    # One version when all agree; otherwise each service's, so the stored row still says what moved.
    to_versions = {c.to_version for c in group}
    from_versions = {c.from_version for c in group}
    to_version = first.to_version if len(to_versions) == 1 else ",".join(c.to_version for c in group)[:128]
    from_version = first.from_version if len(from_versions) == 1 else ",".join(c.from_version for c in group)[:128]
    return replace(first, services=services, clusters=clusters, to_version=to_version, from_version=from_version)


def plan(
    changes: Change | Sequence[Change],
    entries: Sequence[TreeEntry],
    files: Mapping[str, str],
    prefix: str | None = None,
) -> Preview:
    """The preview of the changes over the files under their path (path -> text). Pure."""
    group = group_of(changes)
    current = dict(files)
    digest_pinned: list[Pin] = []
    problems: list[str] = []
    touched: list[str] = []
    for change in group:
        step = retag_files(current, entries, change.image, change.from_version, change.to_version, change.path)
        digest_pinned += step.digest_pinned
        # In a group, each problem says whose it is.
        problems += [f"{', '.join(change.services)}: {p}" if len(group) > 1 else p for p in step.problems]
        for edit in step.edits:
            current[edit.path] = edit.after
            if edit.path not in touched:
                touched.append(edit.path)
    by_path = {entry.path: entry for entry in entries}
    edits = [file_edit(path, files[path], current[path], by_path.get(path)) for path in sorted(touched)]
    title = title_for(group)
    return Preview(
        change=combined(group),
        branch=branch_name(group, prefix),
        title=title,
        description=describe(group, edits, digest_pinned, problems),
        commit_message=f"{title}\n\n{_summary(group)}.\n",
        edits=edits,
        digest_pinned=digest_pinned,
        problems=problems,
    )


def describe(
    changes: Sequence[Change], edits: Sequence[FileEdit], digest_pinned: Sequence[Pin], problems: Sequence[str]
) -> str:
    """The pull request's description: what, where and why, the files, what was left, the notes."""
    lines = _what(changes)
    if edits:
        lines += ["", "Files changed:"]
        lines += [
            f"- `{edit.path}` (line{'s' if len(edit.lines) > 1 else ''} {', '.join(str(c.line) for c in edit.lines)})"
            for edit in edits
        ]
    if digest_pinned:
        lines += ["", "Pinned by digest, left for a person to update:"]
        lines += [f"- `{pin.path}` line {pin.line}" for pin in digest_pinned]
    if problems:
        lines += ["", "Not changed:"] + [f"- {problem}" for problem in problems]
    for change in changes:
        if change.release_notes.strip():
            whose = f"{', '.join(change.services)} " if len(changes) > 1 else ""
            lines += ["", f"Release notes for {whose}{change.to_version}:", "", quoted(change.release_notes)]
    lines += ["", CLOSING]
    return "\n".join(lines) + "\n"


def quoted(text: str) -> str:
    """`text` as a Markdown block quote, so text written elsewhere reads as a quotation."""
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())


def _what(changes: Sequence[Change]) -> list[str]:
    first = changes[0]
    verb = VERBS[first.kind]
    if len(changes) > 1:
        return [
            f"**What**: {verb} {len(changes)} services in environment `{first.environment or '-'}` "
            f"(`{first.path or '/'}` on `{first.base_branch}`):",
            "",
        ] + [f"- {', '.join(c.services)} (`{c.image}`): `{c.from_version}` → `{c.to_version}`" for c in changes]
    clusters = f", clusters {', '.join(f'`{c}`' for c in first.clusters)}" if first.clusters else ""
    return [
        f"**What**: {verb} `{first.image}` from `{first.from_version}` to `{first.to_version}` "
        f"({', '.join(first.services) or first.image}).",
        f"**Where**: environment `{first.environment or '-'}`{clusters}; "
        f"`{first.path or '/'}` on `{first.base_branch}`.",
        f"**Why**: {_why(first)}",
    ]


def _why(change: Change) -> str:
    if change.kind == ROLLBACK:
        since = f" since {utc_stamp(change.failing_since)}" if change.failing_since else ""
        what = change.failure.strip() or "the new version is failing"
        return f"{change.from_version} is failing{since}: {what}. This returns to {change.to_version}."
    if change.kind == PROMOTION:
        return f"{change.to_version} has run in the environment before {change.environment or 'this one'}."
    return f"{change.to_version} is the newest release the version policy accepts."


def _summary(changes: Sequence[Change]) -> str:
    if len(changes) == 1:
        change = changes[0]
        verb = VERBS[change.kind].capitalize()
        return f"{verb} {change.image} from {change.from_version} to {change.to_version}"
    return "; ".join(f"{', '.join(c.services)} {c.from_version} -> {c.to_version}" for c in changes)


def _subject(change: Change) -> str:
    return ", ".join(change.services) or _short_image(change)


def _short_image(change: Change) -> str:
    ref = parse_image(change.image)
    return ref.repository.rsplit("/", 1)[-1] if ref else change.image


def _ref_part(text: str) -> str:
    cleaned = _REF_UNSAFE.sub("-", text).strip("-.")
    return re.sub(r"\.{2,}", ".", cleaned).removesuffix(".lock") or "x"
