"""One image's tag moved in a repository's files: the edits, previewed before anything is written.

`retag_files` is pure: given the files under a path (path -> text) it finds the image's
pins (`forges.pins.find`), rewrites each file that pins `from_tag` with
`forges.pins.retag_with_reason` (only the tag's characters change) and says what it left
alone and why. A pin by digest is reported and left for a person: a digest names one
build, and choosing the new build's digest is not ours to do. `FileEdit` is what
`forges.opening.open_pull_request` writes, so nothing reaches a forge unpreviewed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from forges.forge import TreeEntry
from forges.pins.file_pins import find, retag_with_reason, unified_diff
from forges.pins.layouts.line_edits import Edit, changed_lines
from forges.pins.sites import Pin

DEFAULT_MODE = "100644"


@dataclass(frozen=True)
class FileEdit:
    path: str
    before: str
    after: str
    diff: str
    lines: tuple[Edit, ...]  # the whole lines that differ
    sha: str = ""  # blob SHA of `before`
    mode: str = DEFAULT_MODE


@dataclass
class Retag:
    """What moving one image's tag does to a set of files."""

    edits: list[FileEdit] = field(default_factory=list)
    digest_pinned: list[Pin] = field(default_factory=list)  # left for a person
    problems: list[str] = field(default_factory=list)  # pins that could not be rewritten, and why


def file_edit(path: str, before: str, after: str, entry: TreeEntry | None = None) -> FileEdit:
    """The edit from `before` to `after`, keeping the blob SHA and mode the tree gave."""
    return FileEdit(
        path=path,
        before=before,
        after=after,
        diff=unified_diff(path, before, after),
        lines=tuple(changed_lines(path, before, after)),
        sha=entry.sha if entry else "",
        mode=entry.mode if entry else DEFAULT_MODE,
    )


def retag_files(
    files: Mapping[str, str],
    entries: Sequence[TreeEntry],
    image: str,
    from_tag: str,
    to_tag: str,
    where: str = "",
) -> Retag:
    """Move `image` from `from_tag` to `to_tag` in every file that pins it there. Pure.

    `where` names the searched path in the problems ("not pinned anywhere under `where`")."""
    by_path = {entry.path: entry for entry in entries}
    pins = find(files, image)
    found = Retag(digest_pinned=[p for p in pins if p.digest_pinned])
    at_from = sorted({p.path for p in pins if p.tag == from_tag and not p.digest_pinned})
    for path in at_from:
        result = retag_with_reason(files[path], path, image, from_tag, to_tag)
        if result.changed:
            found.edits.append(file_edit(path, files[path], result.text, by_path.get(path)))
        else:
            found.problems.append(result.reason)
    if not pins:
        found.problems.append(f"{image} is not pinned anywhere under `{where or '/'}`")
    elif not at_from and len(found.digest_pinned) < len(pins):
        pinned_at = ", ".join(sorted({p.version for p in pins if not p.digest_pinned}))
        found.problems.append(f"{image} is pinned at {pinned_at}, not at {from_tag}")
    return found
