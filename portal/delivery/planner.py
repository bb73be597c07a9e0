"""The one pull request planner: changes in, the branch, title, description, commit and edits out.

A pull request carries one change or several (services of one application, ticked lines
on the Updates page) to one repository, branch and environment, whatever their paths; a
single change is a group of one, planned by the same code. Each change is planned over
the files as the previous ones left them, and the edits are merged per file, so a reviewer
sees one diff per file and one commit. Where the change lands is `forges.pins.tree_edit_result`
given the application's object (what it builds: kustomize bases, Helm value files, `$ref`
sources, a HelmRelease's values); a change whose application object is not known (a row
written without it) falls back to every pin of the image under its path
(`forges.edits.retag_files`).
`plan` is pure: no forge, no database; the branch prefix comes from settings
(PORTAL_BRANCH_PREFIX) unless given.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings

from forges.edits import FileEdit, file_edit, retag_files
from forges.forge import TreeEntry
from forges.pins import Edit, Pin, tree_edit_result
from portal.imagerefs import parse_image
from portal.releases.vulns import SupplyChainDiff
from portal.releases.vulns import describe as describe_supply_chain
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
    base_branch: str  # the branch the pull request goes into (as followed, until the preview resolves it)
    path: str  # the folder in the repository where the pin lives
    image: str
    from_version: str
    to_version: str
    clusters: tuple[str, ...] = ()
    release_notes: str = ""
    failure: str = ""  # rollback: what went wrong
    failing_since: datetime | None = None  # rollback: since when
    apps: tuple[int, ...] = ()  # the GitOpsApp rows the change lands in
    supply_chain: SupplyChainDiff | None = None  # vulnerabilities and licences from the two images' SBOMs

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
    apps = tuple(dict.fromkeys(a for c in group for a in c.apps))
    # One version when all agree; otherwise each service's, so the stored row still says what moved.
    to_versions = {c.to_version for c in group}
    from_versions = {c.from_version for c in group}
    to_version = first.to_version if len(to_versions) == 1 else ",".join(c.to_version for c in group)[:128]
    from_version = first.from_version if len(from_versions) == 1 else ",".join(c.from_version for c in group)[:128]
    return replace(
        first, services=services, clusters=clusters, apps=apps, to_version=to_version, from_version=from_version
    )


def plan(
    changes: Change | Sequence[Change],
    entries: Sequence[TreeEntry],
    files: Mapping[str, str],
    prefix: str | None = None,
    objects: Mapping[int, Mapping[str, Any]] | None = None,
) -> Preview:
    """The preview of the changes over the files (path -> text; a mapping that reads on demand
    is read only where the changes look). `objects` maps an application id to its object as
    the cluster holds it. Pure."""
    group = group_of(changes)
    edited: dict[str, str] = {}
    current = _Edited(edited, files)
    digest_pinned: list[Pin] = []
    problems: list[str] = []
    touched: list[str] = []
    for change in group:
        app = _object_of(change, objects or {})
        if app is not None:
            texts, found, left = _tree_step(current, app, change)
        else:
            texts, found, left, pinned = _path_step(current, entries, change)
            digest_pinned += pinned
        # In a group, each problem says whose it is.
        problems += [f"{', '.join(change.services)}: {p}" if len(group) > 1 else p for p in left]
        for path in found:
            edited[path] = texts[path]
            if path not in touched:
                touched.append(path)
    by_path = {entry.path: entry for entry in entries}
    edits = [file_edit(path, files[path], edited[path], by_path.get(path)) for path in sorted(touched)]
    edits = [edit for edit in edits if edit.lines]
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


class _Edited(Mapping[str, str]):
    """The files as the changes planned so far left them; a file is read only when looked at."""

    def __init__(self, edited: Mapping[str, str], files: Mapping[str, str]) -> None:
        self._edited = edited
        self._files = files

    def __getitem__(self, path: str) -> str:
        return self._edited[path] if path in self._edited else self._files[path]

    def __contains__(self, path: object) -> bool:
        return path in self._edited or path in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def _object_of(change: Change, objects: Mapping[int, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The application object to plan with: one whose spec is known."""
    for app_id in change.apps:
        app = objects.get(app_id)
        if app and isinstance(app.get("spec"), Mapping) and app["spec"]:
            return app
    return None


def _tree_step(
    current: Mapping[str, str], app: Mapping[str, Any], change: Change
) -> tuple[dict[str, str], list[str], list[str]]:
    result = tree_edit_result(current, app, change.image, change.from_version, change.to_version, path=change.path)
    by_file: dict[str, list[Edit]] = {}
    for edit in result.edits:
        by_file.setdefault(edit.path, []).append(edit)
    texts: dict[str, str] = {}
    problems = list(result.reasons)
    for path, edits in by_file.items():
        text, stale = with_lines(current[path], edits)
        if stale:
            problems.append(f"{path} line {stale.line} is not what was read; left as it is")
            continue
        texts[path] = text
    return texts, list(texts), problems


def _path_step(
    current: Mapping[str, str], entries: Sequence[TreeEntry], change: Change
) -> tuple[dict[str, str], list[str], list[str], list[Pin]]:
    # Only the files under the change's own path: the same image pinned in another folder of
    # the repository (another environment) is not this change's pin.
    own = {path: current[path] for path in current if under(path, change.path)}
    step = retag_files(own, entries, change.image, change.from_version, change.to_version, change.path)
    texts = {edit.path: edit.after for edit in step.edits}
    return texts, list(texts), step.problems, step.digest_pinned


def with_lines(text: str, edits: Sequence[Edit]) -> tuple[str, Edit | None]:
    """`text` with each edit's line replaced, every line ending kept; the first edit whose
    `before` is not the line found, if any (then `text` is returned unchanged)."""
    lines = text.splitlines(keepends=True)
    for edit in edits:
        index = edit.line - 1
        if not 0 <= index < len(lines):
            return text, edit
        line = lines[index]
        body = line.rstrip("\r\n")
        if body.lstrip("\ufeff") != edit.before.lstrip("\ufeff"):
            return text, edit
        bom = "\ufeff" if body.startswith("\ufeff") and not edit.after.startswith("\ufeff") else ""
        lines[index] = bom + edit.after + line[len(body) :]
    return "".join(lines), None


def under(path: str, folder: str) -> bool:
    """`path` is `folder` or inside it ("" is the whole repository)."""
    folder = folder.strip("/")
    return not folder or path == folder or path.startswith(folder + "/")


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
    lines += supply_chain_section(changes)
    for change in changes:
        if change.release_notes.strip():
            whose = f"{', '.join(change.services)} " if len(changes) > 1 else ""
            lines += ["", f"Release notes for {whose}{change.to_version}:", "", quoted(change.release_notes)]
    lines += ["", CLOSING]
    return "\n".join(lines) + "\n"


def supply_chain_section(changes: Sequence[Change]) -> list[str]:
    """Known vulnerabilities fixed and brought (brought back, for a rollback) and licences to look
    at, per change, from `portal.releases.vulns`; a change without the facts adds nothing."""
    lines: list[str] = []
    for change in changes:
        if change.supply_chain is None:
            continue
        section = describe_supply_chain(change.supply_chain, change.kind)
        if len(changes) > 1:
            section[0] = f"{', '.join(change.services)}: {section[0]}"
        lines += ["", *section]
    return lines


def quoted(text: str) -> str:
    """`text` as a Markdown block quote, so text written elsewhere reads as a quotation."""
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())


def _what(changes: Sequence[Change]) -> list[str]:
    first = changes[0]
    verb = VERBS[first.kind]
    if len(changes) > 1:
        paths = {c.path for c in changes}
        where = f"`{first.path or '/'}` on `{first.base_branch}`" if len(paths) == 1 else f"on `{first.base_branch}`"
        lines = [f"**What**: {verb} {len(changes)} services in environment `{first.environment or '-'}` ({where}):", ""]
        return lines + [
            f"- {', '.join(c.services)} (`{c.image}`): `{c.from_version}` → `{c.to_version}`"
            + (f" in `{c.path or '/'}`" if len(paths) > 1 else "")
            for c in changes
        ]
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
