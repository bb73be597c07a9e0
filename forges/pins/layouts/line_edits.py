"""How a located value becomes the edits of the contract: whole lines, before and after.

Every change in `forges.pins.layouts` ends here: pins found by the site readers are rewritten with
`forges.pins.sites.edit_sites` (which refuses what cannot be rewritten in place and reads the
result back), a single scalar (a Helm value, a chart version) with `splice`; either way only
the value's characters change, and the edit is reported as the whole lines that differ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.pins.formats import FormatError, Node, Scalar, yamltree
from forges.pins.layouts.kustomize import Candidate
from forges.pins.sites import HELM, EditRefused, Site, edit_sites, pin_format, read_sites, splice

# A chart version is a pin only when it is one exact (semver) version; anything else is a
# range the tool resolves by itself (`1.2.*`, `>=1.0.0`, `*`, `~1.2`, `1.x`).
_EXACT_VERSION = re.compile(r"v?\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


@dataclass(frozen=True)
class Edit:
    path: str
    line: int  # 1-based
    before: str  # the whole line, without its line ending
    after: str


@dataclass
class EditResult:
    edits: list[Edit] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # what was not edited, or not followed, and why


def is_exact_version(text: str) -> bool:
    return bool(_EXACT_VERSION.fullmatch(text))


def edit_pins(
    files: MappingType[str, str], pins: list[Candidate], from_tag: str, to_tag: str, result: EditResult
) -> None:
    by_file: dict[str, list[Candidate]] = {}
    for candidate in pins:
        by_file.setdefault(candidate.path, []).append(candidate)
    for path, candidates in by_file.items():
        text = files[path]
        fmt = pin_format(path) or "yaml"
        sites = read_sites(text, fmt)
        wanted = {(c.site.node.start, c.site.offset, c.site.kind) for c in candidates}
        targets = [s for s in sites if (s.node.start, s.offset, s.kind) in wanted]
        try:
            new_text = edit_sites(text, fmt, sites, targets, from_tag, to_tag)
        except EditRefused as refused:
            result.reasons.append(f"{path} {refused}" if str(refused).startswith("line ") else f"{path}: {refused}")
            continue
        result.edits.extend(changed_lines(path, text, new_text))


def edit_scalar(files: MappingType[str, str], path: str, site: Site, old: str, new: str, result: EditResult) -> None:
    text = files[path]
    if not site.node.verbatim:
        result.reasons.append(
            f"{path} line {text.count(chr(10), 0, site.node.start) + 1}: the value is written "
            "with escapes or over several lines; not changed"
        )
        return
    new_text = splice(text, [site], old, new)
    try:
        yamltree.read(new_text)
    except FormatError as error:
        result.reasons.append(f"{path}: the edited file would not parse ({error})")
        return
    for edit in changed_lines(path, text, new_text):
        if edit not in result.edits:
            result.edits.append(edit)


def edit_version(
    files: MappingType[str, str], path: str, node: Node, from_version: str, to_version: str, result: EditResult
) -> None:
    if not isinstance(node, Scalar):
        return
    if node.value != from_version:
        result.reasons.append(f"{path}: the version is {node.value}, not {from_version}; not changed")
        return
    edit_scalar(files, path, Site(HELM, "", "", from_version, "", node, 0), from_version, to_version, result)


def changed_lines(path: str, before: str, after: str) -> list[Edit]:
    """The whole lines that differ between `before` and `after`, without their line endings (the
    first without a BOM): the one answer to "which lines did this edit change", for the contract's
    edits and a pull request's `FileEdit`s alike. An edit here changes characters inside lines,
    never the number of lines."""
    old_lines, new_lines = before.split("\n"), after.split("\n")
    edits = []
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if old != new:
            edits.append(Edit(path, number, _clean(old, number), _clean(new, number)))
    return edits


def _clean(line: str, number: int) -> str:
    line = line.removesuffix("\r")
    return line.removeprefix("\ufeff") if number == 1 else line
