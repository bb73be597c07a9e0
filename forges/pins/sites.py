"""The pin sites of one file: where an image's tag sits, read from a positioned tree, and
how its characters are replaced.

This is the shared core under `forges.pins.file_pins` (one file: `retag`, `scan`, `find`) and
`forges.pins.layouts` (a whole repository as an app builds it: `tree_edits`, `chart_edits`).
Both need the same answer to "which scalar holds this image's tag, and how is a new tag
written into it without touching another byte", so that answer has one definition here.
See `forges.pins` for the pin shapes and the quoting rule for numeric-looking tags.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from forges.pins.formats import BARE, PLAIN, FormatError, Mapping, Node, Scalar, Sequence, hcltree, jsontree, yamltree
from forges.pins.parsecache import parsed_list
from portal.kernel.imagerefs import parse_image

IMAGE = "image"  # a whole image reference in one string
HELM = "helm"  # repository/tag fields of a Helm values map
KUSTOMIZE = "kustomize"  # a kustomize `images:` entry

YAML = "yaml"
JSON = "json"
HCL = "hcl"

# Docker's tag grammar (ASCII only).
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
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
    # The image a kustomize `images:` entry (or an Argo CD `name=newName:tag` override)
    # matches when it renames it (`name` of an entry with a `newName`); "" otherwise. The pin
    # sets the tag of that image too: what runs as `image` was `renamed_from` below it.
    renamed_from: str = ""

    @property
    def digest_pinned(self) -> bool:
        return bool(self.digest)

    @property
    def version(self) -> str:
        return self.tag or self.digest


class EditRefused(ValueError):
    """A tag cannot be rewritten in place; the message says why (without the file name)."""


@dataclass(eq=False)
class Site:
    kind: str
    written: str
    name: str
    tag: str
    digest: str
    node: Scalar  # holds the tag; the digest or reference when there is no tag
    offset: int  # where the tag starts inside node.value
    problem: str | None = None
    matched: str = ""  # the normalised name a renaming entry matches (see Pin.renamed_from)

    def names(self) -> tuple[str, ...]:
        """The image names this pin sets the tag of: its own, and the one it renames."""
        return (self.name, self.matched) if self.matched else (self.name,)

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


# --- reading -----------------------------------------------------------------------


def read_sites(text: str, fmt: str) -> list[Site]:
    """The pin sites of a text in a format (once per text within `forges.pins.parsecache.shared_parses`)."""
    return parsed_list("sites", text, fmt, lambda: _read_sites(text, fmt))


def _read_sites(text: str, fmt: str) -> list[Site]:
    reader = {YAML: yamltree.read, JSON: jsontree.read, HCL: hcltree.read}[fmt]
    trees = reader(text)
    sites: list[Site] = []
    seen_nodes: set[int] = set()
    seen_sites: set[tuple[int, int, str, str]] = set()

    def add(site: Site | None) -> None:
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
                if isinstance(item, Scalar) and (is_image_key(parent_key) or parent_key == "images"):
                    add(reference_site(item))
                elif isinstance(item, Mapping) and parent_key == "images":
                    add(kustomize_site(item))
                walk(item, parent_key)
            return
        add(helm_site(node, parent_key))
        for key, value in node.pairs:
            if isinstance(value, Scalar) and is_image_key(key):
                add(reference_site(value))
            walk(value, key)

    for tree in trees:
        walk(tree, "")
    return sites


def is_image_key(key: str) -> bool:
    return key.lower().endswith("image")


def templated(value: str) -> bool:
    return any(marker in value for marker in _TEMPLATING)


def reference_site(node: Scalar) -> Site | None:
    if node.style == BARE or templated(node.value):
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
    matched = _renamed(value[: prefix_length - 1], ref.name) if prefix_length else ""
    return Site(IMAGE, written, ref.name, ref.tag, ref.digest, holder, offset, problem, matched)


def scalar_text(node: Node) -> str:
    if isinstance(node, Scalar) and node.style != BARE:
        return node.value
    return ""


def _duplicate(mapping: Mapping, keys: Iterable[str]) -> str | None:
    for key in keys:
        if len(mapping.own(key)) > 1:
            return f"the key `{key}` appears twice in one mapping"
    return None


def split_tag(tag: str) -> tuple[str, str]:
    tag, _, digest = tag.partition("@")
    return tag, digest


def helm_site(mapping: Mapping, parent_key: str) -> Site | None:
    name_key = "repository"
    repository = scalar_text(mapping.get("repository"))
    if not repository and is_image_key(parent_key):
        name_key = "name"
        repository = scalar_text(mapping.get("name"))
    if not repository or templated(repository):
        return None
    registry = scalar_text(mapping.get("registry")).strip().rstrip("/")
    if templated(registry):
        return None
    written = f"{registry}/{repository}" if registry else repository
    ref = parse_image(written)
    tags = [(key, node) for key in ("tag", "version") if isinstance(node := mapping.get(key), Scalar)]
    digest = scalar_text(mapping.get("digest")).strip()
    if ref is None or (not tags and not digest):
        return None
    problem = _duplicate(mapping, (name_key, "registry", "tag", "version", "digest"))
    if ref.tag or ref.digest:
        problem = f"`{name_key}` carries a tag or digest of its own besides the tag field"
    if len(tags) == 2 and all(node.value for _, node in tags):
        problem = "both `tag` and `version` are set, so which one is the image tag is unclear"
    if tags:
        node = tags[0][1]
        tag, tag_digest = split_tag(node.value)
        if templated(node.value) or (tag and not TAG.fullmatch(tag)):
            return None
        digest = digest or tag_digest
        if not tag and not digest:
            return None
    else:
        digest_node = mapping.get("digest")
        if not isinstance(digest_node, Scalar):
            return None
        node, tag = digest_node, ""
    return Site(HELM, written, ref.name, tag, digest, node, 0, problem)


def kustomize_site(mapping: Mapping) -> Site | None:
    name = scalar_text(mapping.get("name"))
    new_name = scalar_text(mapping.get("newName"))
    written = new_name or name
    if not written or templated(written):
        return None
    ref = parse_image(written)
    if ref is None or ref.tag or ref.digest:
        return None
    tag_node = mapping.get("newTag")
    digest_node = mapping.get("digest")
    digest = scalar_text(digest_node).strip()
    tag = ""
    node: Scalar | None = None
    if isinstance(tag_node, Scalar) and tag_node.value:
        tag, tag_digest = split_tag(tag_node.value)
        if not TAG.fullmatch(tag):
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
    matched = _renamed(name, ref.name) if new_name else ""
    return Site(KUSTOMIZE, written, ref.name, tag, digest, node, 0, problem, matched)


def _renamed(name: str, new_name: str) -> str:
    """The normalised `name` an entry renames to `new_name`; "" when it names no other image."""
    if not name or templated(name):
        return ""
    ref = parse_image(name)
    return ref.name if ref is not None and ref.name != new_name else ""


def image_name(image: str) -> str | None:
    ref = parse_image(image)
    return ref.name if ref else None


# --- writing -----------------------------------------------------------------------


def edit_sites(text: str, fmt: str, sites: list[Site], targets: list[Site], from_tag: str, to_tag: str) -> str:
    """`text` with the tags of `targets` (some of `sites`, all read from `text`) moved to `to_tag`.

    Raises EditRefused, saying why, when a target cannot be rewritten in place, shares its
    scalar (a YAML anchor) with a pin that is not a target, or when the edited file would not
    read back with exactly the targets moved.
    """
    for site in targets:
        problem = site.problem or (
            None if site.node.verbatim else "the value is written with escapes or over several lines"
        )
        if problem:
            raise EditRefused(f"line {line_of(text, site.node.start)}: {problem}; not changed")
    # An anchor/alias can make one scalar the tag of several images; editing it for one
    # image would silently move another.
    target_ids = {id(s) for s in targets}
    for site in sites:
        if id(site) not in target_ids and any(site.node is t.node for t in targets):
            raise EditRefused(
                f"line {line_of(text, site.node.start)}: this tag is shared (YAML anchor) with {site.written}"
                f"{':' + site.tag if site.tag else ''}, so it cannot change for {targets[0].name} alone"
            )
    new_text = splice(text, targets, from_tag, to_tag)
    # Read the result back: exactly the targeted pins must have moved to the new tag.
    expected = sorted((s.kind, s.name, to_tag, s.digest) if id(s) in target_ids else s.key() for s in sites)
    try:
        after = sorted(s.key() for s in read_sites(new_text, fmt))
    except FormatError as error:
        raise EditRefused(f"the edited file would not parse ({error})") from None
    if after != expected:
        raise EditRefused(f"the edit would change more than {targets[0].name}'s tag")
    return new_text


def splice(text: str, targets: list[Site], from_tag: str, to_tag: str) -> str:
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


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def to_pin(path: str, text: str, site: Site) -> Pin:
    offset = site.node.start + (site.offset if site.tag else 0)
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_text = text[line_start : len(text) if line_end < 0 else line_end].rstrip("\r")
    if line_start == 0:
        line_text = line_text.removeprefix("\ufeff")
    column = offset - line_start + (0 if line_start or not text.startswith("\ufeff") else -1) + 1
    return Pin(
        path=path,
        line=line_of(text, offset),
        column=column,
        line_text=line_text,
        image=site.name,
        written=site.written,
        tag=site.tag,
        digest=site.digest,
        kind=site.kind,
        problem=site.problem,
        renamed_from=site.matched,
    )
