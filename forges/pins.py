"""Image pins in a GitOps repository: find them, and change one image's tag in place.

A pin is one place in a file that fixes which tag (or digest) of an image runs:
- a whole reference in a string under an image key (`image: ghcr.io/acme/api:1.4.2`,
  `inline_image: …`, a Nomad/Terraform `image = "…"`, an ECS `"image": "…"`, and the
  `name=newName:tag` strings of Argo CD's `kustomize.images`),
- a Helm-values map: `repository` (+ optional `registry`) with `tag` or `version`, or
  `name` + `tag` under an image key; a non-empty `digest` overrides the tag,
- a kustomize `images:` entry: `newName` (else `name`) with `newTag` and/or `digest`.

Files are read with a real parser that reports positions (`forges.pinformats`), and an
edit replaces only the characters of the old tag at the located offsets, so comments,
quotes, indentation, key order, other documents, CRLF and a BOM stay byte for byte.
Nothing is ever re-serialised.

Numeric-looking tags: when an edit leaves an unquoted YAML value (or a JSON/HCL
number) that would no longer read back as a string — `1.26`, `16`, `1e3`, `2024-01-15`,
`yes` — the new value is written in double quotes (`tag: 1.25` → `tag: "1.26"`).
Helm and kustomize would otherwise turn it into a number, and `1.30` would render as
`1.3`. That is the one case in which more than the tag's characters change.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

import yaml

from forges.pinformats import BARE, PLAIN, FormatError, Mapping, Node, Scalar, Sequence, hcltree, jsontree, yamltree
from portal.imagerefs import parse_image

IMAGE = "image"  # a whole image reference in one string
HELM = "helm"  # repository/tag fields of a Helm values map
KUSTOMIZE = "kustomize"  # a kustomize `images:` entry

YAML = "yaml"
JSON = "json"
HCL = "hcl"

# Docker's tag grammar (ASCII only).
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_TEMPLATING = ("{{", "${", "{%")

_YAML_NULLS = {"", "~", "null", "Null", "NULL"}
_YAML_BOOLS = {
    word
    for base in ("y", "n", "yes", "no", "on", "off", "true", "false")
    for word in (base, base.capitalize(), base.upper())
}
# YAML 1.2 core-schema numbers; PyYAML's resolver covers YAML 1.1 (sexagesimal, `1_000`).
_YAML_NUMBER = re.compile(
    r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?"
    r"|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True)
class Pin:
    """One place in one file that pins an image."""

    path: str
    line: int  # 1-based line of the tag (of the digest or reference when there is no tag)
    column: int  # 1-based column of the same character
    line_text: str  # that line, without its line ending
    image: str  # normalised name: `docker.io/library/nginx`
    written: str  # the name as the file spells it (`nginx`, `docker.io/bitnami/redis`)
    tag: str  # "" when pinned by digest only
    digest: str  # "sha256:…" or ""
    kind: str  # IMAGE, HELM or KUSTOMIZE
    problem: str | None = None  # why this pin cannot be rewritten in place, if it cannot

    @property
    def digest_pinned(self) -> bool:
        return bool(self.digest)

    @property
    def version(self) -> str:
        return self.tag or self.digest


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


@dataclass(eq=False)
class _Site:
    kind: str
    written: str
    name: str
    tag: str
    digest: str
    node: Scalar  # holds the tag; the digest or reference when there is no tag
    offset: int  # where the tag starts inside node.value
    problem: str | None = None

    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.name, self.tag, self.digest)


def pin_format(file_name: str) -> str | None:
    """Which reader a file needs, from its name; None for files that hold no pins we read."""
    base = posixpath.basename(file_name.replace("\\", "/")).lower()
    if base.endswith((".yaml", ".yml")) or base == "kustomization":
        return YAML
    if base.endswith(".json"):
        return JSON
    if base.endswith((".hcl", ".nomad", ".tf", ".tfvars")):
        return HCL
    return None


def retag(text: str, file_name: str, image: str, from_tag: str, to_tag: str) -> str:
    """The file with only `image`'s tag changed from `from_tag` to `to_tag`; else unchanged."""
    return retag_with_reason(text, file_name, image, from_tag, to_tag).text


def retag_with_reason(text: str, file_name: str, image: str, from_tag: str, to_tag: str) -> RetagResult:
    """Like `retag`, and say why nothing changed, or where it changed."""

    def refuse(reason: str, sites: Iterable[_Site] = ()) -> RetagResult:
        return RetagResult(text, False, reason, tuple(_pin(file_name, text, s) for s in sites))

    wanted = _image_name(image)
    if wanted is None:
        return refuse(f"{image!r} is not an image name")
    for tag in (from_tag, to_tag):
        if not _TAG.fullmatch(tag or ""):
            return refuse(f"{tag!r} is not a valid image tag")
    if from_tag == to_tag:
        return refuse(f"{wanted} is already at {to_tag}")
    fmt = pin_format(file_name)
    if fmt is None:
        return refuse(f"{file_name}: not a file type that pins images (YAML, JSON or HCL)")
    try:
        sites = _read_sites(text, fmt)
    except FormatError as error:
        return refuse(f"{file_name}: {error}")

    same_image = [s for s in sites if s.name == wanted]
    targets = [s for s in same_image if s.tag == from_tag and not s.digest]
    if not targets:
        if any(s.digest and s.tag in (from_tag, "") for s in same_image):
            return refuse(f"{wanted} is pinned by digest in {file_name}; a tag change does not apply")
        return refuse(f"{wanted} is not pinned at {from_tag} in {file_name}")

    for site in targets:
        problem = site.problem or (
            None if site.node.verbatim else "the value is written with escapes or over several lines"
        )
        if problem:
            line = _line_of(text, site.node.start)
            return refuse(f"{file_name} line {line}: {problem}; not changed", targets)

    # An anchor/alias can make one scalar the tag of several images; editing it for one
    # image would silently move another.
    target_ids = {id(s) for s in targets}
    for site in sites:
        if id(site) not in target_ids and any(site.node is t.node for t in targets):
            line = _line_of(text, site.node.start)
            return refuse(
                f"{file_name} line {line}: this tag is shared (YAML anchor) with {site.written}"
                f"{':' + site.tag if site.tag else ''}, so it cannot change for {wanted} alone",
                targets,
            )

    new_text = _splice(text, targets, from_tag, to_tag)

    # Read the result back: exactly the targeted pins must have moved to the new tag.
    expected = sorted((s.kind, s.name, to_tag, s.digest) if id(s) in target_ids else s.key() for s in sites)
    try:
        after = sorted(s.key() for s in _read_sites(new_text, fmt))
    except FormatError as error:
        return refuse(f"{file_name}: the edited file would not parse ({error})", targets)
    if after != expected:
        return refuse(f"{file_name}: the edit would change more than {wanted}'s tag", targets)
    return RetagResult(new_text, True, "", tuple(_pin(file_name, text, s) for s in targets))


def scan(files: MappingType[str, str]) -> TreeScan:
    """Every image pin in a tree given as path -> text (Helm `templates/` excluded)."""
    result = TreeScan()
    for path in sorted(files):
        fmt = pin_format(path)
        if fmt is None or _is_helm_template(path, files):
            continue
        text = files[path]
        try:
            sites = _read_sites(text, fmt)
        except FormatError as error:
            result.skipped[path] = str(error)
            continue
        pins = [_pin(path, text, site) for site in sites]
        result.pins.extend(sorted(pins, key=lambda p: (p.line, p.column)))
    return result


def find(files: MappingType[str, str], image: str, tag: str | None = None) -> list[Pin]:
    """The pins of `image` (at `tag`, when given) in a tree given as path -> text."""
    wanted = _image_name(image)
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


# --- reading -----------------------------------------------------------------------


def _read_sites(text: str, fmt: str) -> list[_Site]:
    reader = {YAML: yamltree.read, JSON: jsontree.read, HCL: hcltree.read}[fmt]
    trees = reader(text)
    sites: list[_Site] = []
    seen_nodes: set[int] = set()
    seen_sites: set[tuple[int, int, str, str]] = set()

    def add(site: _Site | None) -> None:
        # One scalar reached twice through an alias is one pin, unless it serves two images.
        if site is None:
            return
        key = (id(site.node), site.offset, site.kind, site.written)
        if key not in seen_sites:
            seen_sites.add(key)
            sites.append(site)

    def walk(node: Node, parent_key: str) -> None:
        if node is None or isinstance(node, Scalar) or id(node) in seen_nodes:
            return
        seen_nodes.add(id(node))
        if isinstance(node, Sequence):
            for item in node.items:
                if isinstance(item, Scalar) and (_is_image_key(parent_key) or parent_key == "images"):
                    add(_reference_site(item))
                elif isinstance(item, Mapping) and parent_key == "images":
                    add(_kustomize_site(item))
                walk(item, parent_key)
            return
        add(_helm_site(node, parent_key))
        for key, value in node.pairs:
            if isinstance(value, Scalar) and _is_image_key(key):
                add(_reference_site(value))
            walk(value, key)

    for tree in trees:
        walk(tree, "")
    return sites


def _is_image_key(key: str) -> bool:
    return key.lower().endswith("image")


def _templated(value: str) -> bool:
    return any(marker in value for marker in _TEMPLATING)


def _reference_site(node: Scalar) -> _Site | None:
    if node.style == BARE or _templated(node.value):
        return None
    value = node.value
    # `name=newName:tag` is how Argo CD and argocd-image-updater write kustomize overrides.
    prefix_length = value.index("=") + 1 if "=" in value else 0
    reference = value[prefix_length:]
    ref = parse_image(reference)
    if ref is None or not (ref.tag or ref.digest):
        return None
    written = reference.split("@", 1)[0]
    if ref.tag:
        written = written[: -(len(ref.tag) + 1)]
    offset = prefix_length + len(written) + 1
    holder = node
    problem = None if node.verbatim else "the value is written with escapes or over several lines"
    return _Site(IMAGE, written, ref.name, ref.tag, ref.digest, holder, offset, problem)


def _scalar_text(node: Node) -> str:
    if isinstance(node, Scalar) and node.style != BARE:
        return node.value
    return ""


def _duplicate(mapping: Mapping, keys: Iterable[str]) -> str | None:
    for key in keys:
        if len(mapping.own(key)) > 1:
            return f"the key `{key}` appears twice in one mapping"
    return None


def _split_tag(tag: str) -> tuple[str, str]:
    tag, _, digest = tag.partition("@")
    return tag, digest


def _helm_site(mapping: Mapping, parent_key: str) -> _Site | None:
    name_key = "repository"
    repository = _scalar_text(mapping.get("repository"))
    if not repository and _is_image_key(parent_key):
        name_key = "name"
        repository = _scalar_text(mapping.get("name"))
    if not repository or _templated(repository):
        return None
    registry = _scalar_text(mapping.get("registry")).strip().rstrip("/")
    if _templated(registry):
        return None
    written = f"{registry}/{repository}" if registry else repository
    ref = parse_image(written)
    tags = [(key, node) for key in ("tag", "version") if isinstance(node := mapping.get(key), Scalar)]
    digest = _scalar_text(mapping.get("digest")).strip()
    if ref is None or (not tags and not digest):
        return None
    problem = _duplicate(mapping, (name_key, "registry", "tag", "version", "digest"))
    if ref.tag or ref.digest:
        problem = f"`{name_key}` carries a tag or digest of its own besides the tag field"
    if len(tags) == 2 and all(node.value for _, node in tags):
        problem = "both `tag` and `version` are set, so which one is the image tag is unclear"
    if tags:
        node = tags[0][1]
        tag, tag_digest = _split_tag(node.value)
        if _templated(node.value) or (tag and not _TAG.fullmatch(tag)):
            return None
        digest = digest or tag_digest
        if not tag and not digest:
            return None
    else:
        digest_node = mapping.get("digest")
        if not isinstance(digest_node, Scalar):
            return None
        node, tag = digest_node, ""
    return _Site(HELM, written, ref.name, tag, digest, node, 0, problem)


def _kustomize_site(mapping: Mapping) -> _Site | None:
    name = _scalar_text(mapping.get("name"))
    new_name = _scalar_text(mapping.get("newName"))
    written = new_name or name
    if not written or _templated(written):
        return None
    ref = parse_image(written)
    if ref is None or ref.tag or ref.digest:
        return None
    tag_node = mapping.get("newTag")
    digest_node = mapping.get("digest")
    digest = _scalar_text(digest_node).strip()
    tag = ""
    node: Scalar | None = None
    if isinstance(tag_node, Scalar) and tag_node.value:
        tag, tag_digest = _split_tag(tag_node.value)
        if not _TAG.fullmatch(tag):
            return None  # `newTag: sha256:…` and the like: not a tag
        digest = digest or tag_digest
        node = tag_node
    elif digest and isinstance(digest_node, Scalar):
        node = digest_node
    if node is None:
        return None
    problem = _duplicate(mapping, ("name", "newName", "newTag", "digest"))
    if mapping.get("tagSuffix") is not None:
        problem = "`tagSuffix` also changes the effective tag"
    return _Site(KUSTOMIZE, written, ref.name, tag, digest, node, 0, problem)


def _image_name(image: str) -> str | None:
    ref = parse_image(image)
    return ref.name if ref else None


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


# --- writing -----------------------------------------------------------------------


def _splice(text: str, targets: list[_Site], from_tag: str, to_tag: str) -> str:
    edits: dict[tuple[int, int], tuple[int, int, str]] = {}
    for site in targets:
        node = site.node
        start = node.start + site.offset
        if node.style == BARE:
            # A JSON/HCL number cannot hold `v1`, and as a number `1.30` means 1.3.
            edits[(node.start, node.end)] = (node.start, node.end, f'"{to_tag}"')
            continue
        new_value = node.value[: site.offset] + to_tag + node.value[site.offset + len(from_tag) :]
        if node.style == PLAIN and not _plain_reads_as_string(new_value):
            edits[(node.start, node.end)] = (node.start, node.end, f'"{new_value}"')
        else:
            edits[(start, start + len(from_tag))] = (start, start + len(from_tag), to_tag)
    for start, end, replacement in sorted(edits.values(), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _plain_reads_as_string(value: str) -> bool:
    if value in _YAML_NULLS or value in _YAML_BOOLS or _YAML_NUMBER.fullmatch(value):
        return False
    resolved = yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))
    return resolved == _STR_TAG


# --- positions ---------------------------------------------------------------------


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _pin(path: str, text: str, site: _Site) -> Pin:
    offset = site.node.start + (site.offset if site.tag else 0)
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_text = text[line_start : len(text) if line_end < 0 else line_end].rstrip("\r")
    if line_start == 0:
        line_text = line_text.removeprefix("\ufeff")
    column = offset - line_start + (0 if line_start or not text.startswith("\ufeff") else -1) + 1
    return Pin(
        path=path,
        line=_line_of(text, offset),
        column=column,
        line_text=line_text,
        image=site.name,
        written=site.written,
        tag=site.tag,
        digest=site.digest,
        kind=site.kind,
        problem=site.problem,
    )


def _split_lines(text: str) -> list[str]:
    # Split on "\n" only, as git does; str.splitlines would also split on \r, \x0c, \x1c….
    lines = text.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result
