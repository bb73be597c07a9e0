"""The pins of single files: read every pin in a set of files (`scan`, `find`), change one
image's tag in one file (`retag`, `retag_with_reason`), and show a change as a diff.

The pin shapes, and the quoting rule for numeric-looking tags, are described in `forges.pins`;
the site readers and the splice are `forges.pins.sites`. Nothing is ever re-serialised.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.pins.formats import FormatError
from forges.pins.sites import TAG, EditRefused, Pin, Site, edit_sites, image_name, pin_format, read_sites, to_pin

__all__ = ["RetagResult", "TreeScan", "find", "retag", "retag_with_reason", "scan", "unified_diff"]


@dataclass(frozen=True)
class RetagResult:
    text: str
    changed: bool
    reason: str  # why nothing changed; "" when changed
    locations: tuple[Pin, ...] = ()  # the pins that were (or, refused, would have been) changed


@dataclass
class TreeScan:
    pins: list[Pin] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why it could not be read


def retag(text: str, file_name: str, image: str, from_tag: str, to_tag: str) -> str:
    """The file with only `image`'s tag changed from `from_tag` to `to_tag`; else unchanged."""
    return retag_with_reason(text, file_name, image, from_tag, to_tag).text


def retag_with_reason(text: str, file_name: str, image: str, from_tag: str, to_tag: str) -> RetagResult:
    """Like `retag`, and say why nothing changed, or where it changed."""

    def refuse(reason: str, sites: Iterable[Site] = ()) -> RetagResult:
        return RetagResult(text, False, reason, tuple(to_pin(file_name, text, s) for s in sites))

    wanted = image_name(image)
    if wanted is None:
        return refuse(f"{image!r} is not an image name")
    for tag in (from_tag, to_tag):
        if not TAG.fullmatch(tag or ""):
            return refuse(f"{tag!r} is not a valid image tag")
    if from_tag == to_tag:
        return refuse(f"{wanted} is already at {to_tag}")
    fmt = pin_format(file_name)
    if fmt is None:
        return refuse(f"{file_name}: not a file type that pins images (YAML, JSON or HCL)")
    try:
        sites = read_sites(text, fmt)
    except FormatError as error:
        return refuse(f"{file_name}: {error}")

    same_image = [s for s in sites if s.name == wanted]
    targets = [s for s in same_image if s.tag == from_tag and not s.digest]
    if not targets:
        if any(s.digest and s.tag in (from_tag, "") for s in same_image):
            return refuse(f"{wanted} is pinned by digest in {file_name}; a tag change does not apply")
        return refuse(f"{wanted} is not pinned at {from_tag} in {file_name}")
    try:
        new_text = edit_sites(text, fmt, sites, targets, from_tag, to_tag)
    except EditRefused as refused:
        message = str(refused)
        separator = " " if message.startswith("line ") else ": "
        return refuse(f"{file_name}{separator}{message}", targets)
    return RetagResult(new_text, True, "", tuple(to_pin(file_name, text, s) for s in targets))


def scan(files: MappingType[str, str]) -> TreeScan:
    """Every image pin in a tree given as path -> text (Helm `templates/` excluded)."""
    result = TreeScan()
    for path in sorted(files):
        fmt = pin_format(path)
        if fmt is None or _is_helm_template(path, files):
            continue
        text = files[path]
        try:
            sites = read_sites(text, fmt)
        except FormatError as error:
            result.skipped[path] = str(error)
            continue
        pins = [to_pin(path, text, site) for site in sites]
        result.pins.extend(sorted(pins, key=lambda p: (p.line, p.column)))
    return result


def find(files: MappingType[str, str], image: str, tag: str | None = None) -> list[Pin]:
    """The pins of `image` (at `tag`, when given) in a tree given as path -> text."""
    wanted = image_name(image)
    if wanted is None:
        return []
    return [p for p in scan(files).pins if p.image == wanted and (tag is None or p.tag == tag)]


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    """A `git diff`-style unified diff of one file, for the PR preview; "" when equal."""
    if before == after:
        return ""
    lines = difflib.unified_diff(
        _split_lines(before), _split_lines(after), fromfile=f"a/{path}", tofile=f"b/{path}", n=context
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _is_helm_template(path: str, files: MappingType[str, str]) -> bool:
    # Chart templates are Go templates that sometimes parse as YAML; never read them.
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if part == "templates":
            chart_dir = "/".join(parts[:index])
            prefix = f"{chart_dir}/" if chart_dir else ""
            if f"{prefix}Chart.yaml" in files or f"{prefix}Chart.yml" in files:
                return True
    return False


def _split_lines(text: str) -> list[str]:
    # Split on "\n" only, as git does; str.splitlines would also split on \r, \x0c, \x1c….
    lines = text.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result
