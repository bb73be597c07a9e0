"""A change in Git, planned and previewed before anything is written.

`plan` is pure: given the files under the application's path it finds the image's
pins (`forges.pins.find`), rewrites each file with `forges.pins.retag_with_reason`
(only the tag's characters change) and writes the branch name, title and description.
`preview` only adds the reads from a forge. A pin by digest is reported and left for a
person: a digest names one build, and choosing the new build's digest is not ours to do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from forges.forge import Forge, TreeEntry
from forges.pins import Pin, find, retag_with_reason, unified_diff
from portal.catalog.images import parse_image

UPGRADE = "upgrade"
PROMOTION = "promotion"
ROLLBACK = "rollback"
KINDS = (UPGRADE, PROMOTION, ROLLBACK)
DEFAULT_BRANCH_PREFIX = "portal/"

_REF_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class Change:
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


@dataclass(frozen=True)
class ChangedLine:
    line: int
    before: str
    after: str


@dataclass(frozen=True)
class FileEdit:
    path: str
    before: str
    after: str
    diff: str
    lines: tuple[ChangedLine, ...]
    sha: str = ""  # blob SHA of `before`
    mode: str = "100644"


@dataclass
class Preview:
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


def branch_prefix(environ: Mapping[str, str] | None = None) -> str:
    prefix = (os.environ if environ is None else environ).get("PORTAL_BRANCH_PREFIX") or DEFAULT_BRANCH_PREFIX
    return prefix if prefix.endswith(("/", "-")) else prefix + "/"


def branch_name(change: Change, prefix: str | None = None) -> str:
    """`portal/<service>-<version>-<environment>`, made safe for `git check-ref-format`."""
    subject = "-".join(change.services) or _short_image(change.image)
    parts = [subject, change.to_version, change.environment]
    name = "-".join(_ref_part(p) for p in parts if p)
    return (prefix if prefix is not None else branch_prefix()) + name


def title_for(change: Change) -> str:
    subject = ", ".join(change.services) or _short_image(change.image)
    where = f" in {change.environment}" if change.environment else ""
    if change.kind == PROMOTION:
        return f"Promote {subject} {change.to_version} to {change.environment or 'the next environment'}"
    if change.kind == ROLLBACK:
        return f"Roll back {subject} to {change.to_version}{where}"
    return f"Update {subject} to {change.to_version}{where}"


def describe(change: Change, edits: Sequence[FileEdit], digest_pinned: Sequence[Pin], problems: Sequence[str]) -> str:
    subject = ", ".join(change.services) or change.image
    lines = [
        f"**What**: {_verb(change)} `{change.image}` from `{change.from_version}` to `{change.to_version}` "
        f"({subject}).",
        f"**Where**: environment `{change.environment or '-'}`"
        + (f", clusters {', '.join(f'`{c}`' for c in change.clusters)}" if change.clusters else "")
        + f"; `{change.path or '/'}` on `{change.base_branch}`.",
        f"**Why**: {_why(change)}",
    ]
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
        lines += ["", "Not changed:"]
        lines += [f"- {problem}" for problem in problems]
    if change.release_notes.strip():
        lines += ["", f"Release notes for {change.to_version}:", "", quoted(change.release_notes)]
    lines += ["", "Opened by the GitOps portal, which never merges: review, then merge when ready."]
    return "\n".join(lines) + "\n"


def quoted(text: str) -> str:
    """`text` as a Markdown block quote, so text written elsewhere reads as a quotation."""
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())


def plan(change: Change, entries: Sequence[TreeEntry], files: Mapping[str, str], prefix: str | None = None) -> Preview:
    """The preview of `change` over the files under its path (path -> text). Pure."""
    by_path = {entry.path: entry for entry in entries}
    pins = find(files, change.image)
    digest_pinned = [p for p in pins if p.digest_pinned]
    at_from = sorted({p.path for p in pins if p.tag == change.from_version and not p.digest_pinned})
    edits: list[FileEdit] = []
    problems: list[str] = []
    for path in at_from:
        result = retag_with_reason(files[path], path, change.image, change.from_version, change.to_version)
        if not result.changed:
            problems.append(result.reason)
            continue
        entry = by_path.get(path)
        edits.append(
            FileEdit(
                path=path,
                before=files[path],
                after=result.text,
                diff=unified_diff(path, files[path], result.text),
                lines=_changed_lines(files[path], result.text),
                sha=entry.sha if entry else "",
                mode=entry.mode if entry else "100644",
            )
        )
    if not pins:
        problems.append(f"{change.image} is not pinned anywhere under `{change.path or '/'}`")
    elif not at_from and len(digest_pinned) < len(pins):
        found = ", ".join(sorted({p.version for p in pins if not p.digest_pinned}))
        problems.append(f"{change.image} is pinned at {found}, not at {change.from_version}")
    title = title_for(change)
    return Preview(
        change=change,
        branch=branch_name(change, prefix),
        title=title,
        description=describe(change, edits, digest_pinned, problems),
        commit_message=f"{title}\n\n{_verb(change).capitalize()} {change.image} from {change.from_version} "
        f"to {change.to_version}.\n",
        edits=edits,
        digest_pinned=digest_pinned,
        problems=problems,
    )


def preview(forge: Forge, change: Change, prefix: str | None = None) -> Preview:
    """Read the files under the change's path at the followed branch and plan. Writes nothing."""
    entries, files = forge.pin_files(change.path, change.base_branch)
    return plan(change, entries, files, prefix)


def _verb(change: Change) -> str:
    return {UPGRADE: "update", PROMOTION: "promote", ROLLBACK: "roll back"}[change.kind]


def _why(change: Change) -> str:
    if change.kind == ROLLBACK:
        since = f" since {change.failing_since:%Y-%m-%d %H:%M} UTC" if change.failing_since else ""
        what = change.failure.strip() or "the new version is failing"
        return f"{change.from_version} is failing{since}: {what}. This returns to {change.to_version}."
    if change.kind == PROMOTION:
        return f"{change.to_version} has run in the environment before {change.environment or 'this one'}."
    return f"{change.to_version} is the newest release the version policy accepts."


def _changed_lines(before: str, after: str) -> tuple[ChangedLine, ...]:
    # A retag changes characters inside lines, never the number of lines.
    old, new = before.split("\n"), after.split("\n")
    return tuple(
        ChangedLine(number, a.rstrip("\r"), b.rstrip("\r"))
        for number, (a, b) in enumerate(zip(old, new, strict=False), start=1)
        if a != b
    )


def _short_image(image: str) -> str:
    ref = parse_image(image)
    return ref.repository.rsplit("/", 1)[-1] if ref else image


def _ref_part(text: str) -> str:
    cleaned = _REF_UNSAFE.sub("-", text).strip("-.")
    return re.sub(r"\.{2,}", ".", cleaned).removesuffix(".lock") or "x"
