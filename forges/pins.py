"""Image pins in a GitOps repository: find them, and change one image's tag in place.

A pin is one place in a file that fixes which tag (or digest) of an image runs:
- a whole reference in a string under an image key (`image: ghcr.io/acme/api:1.4.2`,
  `inline_image: …`, a Nomad/Terraform `image = "…"`, an ECS `"image": "…"`, and the
  `name=newName:tag` strings of Argo CD's `kustomize.images`),
- a Helm-values map: `repository` (+ optional `registry`) with `tag` or `version`, or
  `name` + `tag` under an image key; a non-empty `digest` overrides the tag,
- a kustomize `images:` entry: `newName` (else `name`) with `newTag` and/or `digest`. In
  one file (`retag`, `find`) the entry pins the image it renders; across a build
  (`tree_edits`) it is also the pin of the image it matches by `name`, which it overrides
  below it (`Pin.renamed_from`; `forges.layouts.kustomize`).

Files are read with a real parser that reports positions (`forges.pinformats`), and an
edit replaces only the characters of the old tag at the located offsets, so comments,
quotes, indentation, key order, other documents, CRLF and a BOM stay byte for byte.
Nothing is ever re-serialised.

Numeric-looking tags: when an edit leaves an unquoted YAML value (or a JSON/HCL
number) that would no longer read back as a string — `1.26`, `16`, `1e3`, `2024-01-15`,
`yes` — the new value is written in double quotes (`tag: 1.25` → `tag: "1.26"`).
Helm and kustomize would otherwise turn it into a number, and `1.30` would render as
`1.3`. That is the one case in which more than the tag's characters change.

The site readers and the splice live in `forges.pinsites` (shared with `forges.layouts`);
`tree_edits` / `chart_edits` — where a change lands across a repository, following what an
Argo CD Application or Flux object builds — live in `forges.layouts.tree` and are re-exported
here, as the public contract names them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.layouts.tree import (
    NOT_PINNED_TAIL,
    Edit,
    EditResult,
    chart_edit_result,
    chart_edits,
    tree_edit_result,
    tree_edits,
)
from forges.pinformats import FormatError
from forges.pinsites import (
    HCL,
    HELM,
    IMAGE,
    JSON,
    KUSTOMIZE,
    TAG,
    YAML,
    EditRefused,
    Pin,
    Site,
    edit_sites,
    image_name,
    pin_format,
    read_sites,
    to_pin,
)

__all__ = [
    "HCL",
    "HELM",
    "IMAGE",
    "JSON",
    "KUSTOMIZE",
    "NOT_PINNED_TAIL",
    "YAML",
    "Edit",
    "EditResult",
    "Pin",
    "RetagResult",
    "TreeScan",
    "chart_edit_result",
    "chart_edits",
    "find",
    "pin_format",
    "retag",
    "retag_with_reason",
    "scan",
    "tree_edit_result",
    "tree_edits",
    "unified_diff",
]


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
