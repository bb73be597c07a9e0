"""What `kustomize build <path>` reads from a Git tree, and which of its image pins win.

kustomize includes only what a kustomization names: `resources:` (and the deprecated
`bases:`) — a file, or a directory that holds its own kustomization — `components:`, patch
files (`patches`, `patchesStrategicMerge`, `patchesJson6902`) and `configMapGenerator` files.
A sibling folder with the same image at the same tag is not part of the build, so it is
never edited. Remote resources (URLs, `github.com/…`) are skipped and said so: their pins
live in another repository.

Which pin wins follows kustomize's order inside one kustomization: resources (each
sub-kustomization built on its own), then components (which act on what came before), then
patches (a patch that sets the image of a Deployment overrides that Deployment's pin in a
base), then the `images:` transformer. Only the winning pins are edited: a base shared by
other overlays is left alone when the overlay overrides it.

The `images:` transformer works as kustomize's does (api/filters/imagetag): each entry, in
order, matches the images built so far by its `name`, and sets what they become — `newName`
renames them, `newTag` or `digest` sets their tag, and then the entry is their pin, whatever
a base says. So each rendered image is followed with every name it was known under: asked
for `ghcr.io/acme/api`, the winner under an overlay entry `name: ghcr.io/acme/api, newName:
<mirror>/api, newTag: "1.4.2"` is that entry (not the base's `:latest`); asked for the
mirror's name, the same; and an image a lower kustomization renamed is matched, above it,
by its new name. An entry that only renames leaves the tag where it was pinned below.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.pins.formats import FormatError, Mapping, Node, Scalar, Sequence, yamltree
from forges.pins.layouts.app_specs import HELM_RELEASE
from forges.pins.layouts.documents import document_spans, plain_documents
from forges.pins.parsecache import parsed_list
from forges.pins.sites import Site, image_name, kustomize_site, pin_format, read_sites, scalar_text

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# kustomize's own test for a remote target: a URL, a scp-like Git address, or a known host.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|(?:github\.com|gitlab\.com|bitbucket\.org)/)")


@dataclass(frozen=True)
class Target:
    """What a patch applies to: a kind and a name (None matches any)."""

    kind: str | None
    name: str | None

    def matches(self, kind: str | None, name: str | None) -> bool:
        return (self.kind is None or self.kind == kind) and (self.name is None or self.name == name)


@dataclass(frozen=True)
class Candidate:
    """One pin of the image in a built file, with the object it sits in."""

    path: str
    site: Site
    kind: str | None
    name: str | None


@dataclass
class Kustomization:
    directory: str
    file: str  # the kustomization file's path
    resources: list[str] = field(default_factory=list)  # manifest files it names directly
    children: list[Kustomization] = field(default_factory=list)  # kustomizations among its resources
    components: list[Kustomization] = field(default_factory=list)
    patches: list[tuple[str, Target | None]] = field(default_factory=list)  # (file, target)
    generated: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # ConfigMap -> (data key, file)


@dataclass
class Build:
    """A kustomize path as kustomize reads it, or a plain folder of manifests."""

    root: Kustomization | None
    plain: list[str] = field(default_factory=list)  # manifests of a folder without a kustomization
    skipped: list[str] = field(default_factory=list)  # what was not followed, and why
    # What the build renders (`_rendered`), walked once for the files it was built from:
    # an edit asks for an image's winners and then for its names.
    rendered: list[_Slot] | None = field(default=None, repr=False, compare=False)

    def kustomizations(self) -> list[Kustomization]:
        found: list[Kustomization] = []

        def visit(node: Kustomization) -> None:
            found.append(node)
            for child in node.children + node.components:
                visit(child)

        if self.root is not None:
            visit(self.root)
        return found

    def files(self) -> list[str]:
        """Every file the build reads: kustomization files, resources, patches, generator files."""
        found = list(self.plain)
        for node in self.kustomizations():
            found += [node.file, *node.resources, *(path for path, _ in node.patches)]
            found += [path for entries in node.generated.values() for _, path in entries]
        return list(dict.fromkeys(found))


def kustomization_file(files: MappingType[str, str], directory: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        path = _join(directory, name)
        if path in files:
            return path
    return None


def build(files: MappingType[str, str], path: str, recurse: bool = True) -> Build:
    """What `kustomize build path` reads; a folder without a kustomization is read as plain
    manifests (all YAML/JSON files, in subfolders too when `recurse`), as Argo CD's directory
    source and Flux's generated kustomization do."""
    directory = _normalise(path)
    result = Build(root=None)
    if kustomization_file(files, directory) is None:
        result.plain = _manifests_under(files, directory, recurse)
        return result
    result.root = _read(files, directory, result.skipped, set())
    return result


def winning_pins(files: MappingType[str, str], built: Build, image: str) -> list[Candidate]:
    """The pins of `image` that decide what the build renders (see the module docstring):
    those of every rendered image that was `image` somewhere on its way up."""
    return [slot.candidate for slot in _rendered(files, built) if image in slot.names]


def known_names(files: MappingType[str, str], built: Build, image: str) -> set[str]:
    """Every name `image` has in the build (itself, and what `images:` entries rename it to
    or from): an override on top of the build (Argo CD's `kustomize.images`, a Flux
    Kustomization's `spec.images`) that names any of them sets its tag."""
    found = {image}
    for slot in _rendered(files, built):
        if image in slot.names:
            found |= slot.names
    return found


def overridden_pins(files: MappingType[str, str], built: Build) -> list[Candidate]:
    """The pins the build reads but does not render: a base's tag that an overlay's patch or
    `images:` transformer overrides. Pins in HelmRelease values and in the files a
    configMapGenerator turns into values are left out: Helm, not kustomize, decides between them."""
    values = {path for entries in generated_files(built).values() for _, path in entries}
    winners = {(slot.candidate.path, slot.candidate.site.node.start) for slot in _rendered(files, built)}
    return [
        c
        for path in built.files()
        if path not in values
        for c in _candidates(files, path)
        if c.kind != HELM_RELEASE and (c.path, c.site.node.start) not in winners
    ]


@dataclass
class BuiltObject:
    """One object of the build with every document that shapes it: its definition first,
    then the patches that target it, in the order kustomize applies them."""

    kind: str
    name: str
    documents: list[tuple[str, Node]] = field(default_factory=list)  # (file, positioned document)


def objects(files: MappingType[str, str], built: Build, kind: str) -> list[BuiltObject]:
    """The objects of `kind` the build renders, each with its patches."""
    if built.root is None:
        return [o for path in built.plain for o in _defined(files, path, kind)]
    return _objects(files, built.root, kind, [])


def generated_files(built: Build) -> dict[str, list[tuple[str, str]]]:
    """ConfigMap name -> (data key, file) for every configMapGenerator in the build."""
    found: dict[str, list[tuple[str, str]]] = {}
    for node in built.kustomizations():
        for name, entries in node.generated.items():
            found.setdefault(name, []).extend(entries)
    return found


def _objects(
    files: MappingType[str, str], node: Kustomization, kind: str, below: list[BuiltObject]
) -> list[BuiltObject]:
    accumulated = list(below)
    for path in node.resources:
        accumulated.extend(_defined(files, path, kind))
    for child in node.children:
        accumulated.extend(_objects(files, child, kind, []))
    for component in node.components:
        accumulated = _objects(files, component, kind, accumulated)
    for path, target in node.patches:
        for patch in _defined(files, path, None):
            if target is None and not patch.kind:
                continue  # a JSON 6902 patch without a target names no object
            aim = target or Target(patch.kind, patch.name or None)
            for built_object in accumulated:
                if aim.matches(built_object.kind, built_object.name):
                    built_object.documents.extend(patch.documents)
    return accumulated


def _defined(files: MappingType[str, str], path: str, kind: str | None) -> list[BuiltObject]:
    if not path.endswith((".yaml", ".yml")) or path not in files:
        return []
    try:
        trees = yamltree.read(files[path])
    except FormatError:
        return []
    found = []
    for tree in trees:
        doc_kind, doc_name = _scalar(tree, "kind"), _scalar(_get(tree, "metadata"), "name")
        if kind is None or doc_kind == kind:
            found.append(BuiltObject(doc_kind, doc_name, [(path, tree)]))
    return found


def _get(node: Node, key: str) -> Node:
    return node.get(key) if isinstance(node, Mapping) else None


def _scalar(node: Node, key: str) -> str:
    value = _get(node, key)
    return value.value if isinstance(value, Scalar) else ""


# --- reading kustomizations ----------------------------------------------------------


def _read(files: MappingType[str, str], directory: str, skipped: list[str], seen: set[str]) -> Kustomization:
    file = kustomization_file(files, directory) or _join(directory, KUSTOMIZATION_FILES[0])
    node = Kustomization(directory=directory, file=file)
    if directory in seen:
        skipped.append(f"{file}: includes itself; not followed again")
        return node
    seen = seen | {directory}
    docs = plain_documents(files.get(file, ""))
    spec = docs[0] if docs and isinstance(docs[0], dict) else {}

    for entry in _strings(spec.get("resources")) + _strings(spec.get("bases")):
        _include(files, directory, entry, node, skipped, seen, component=False)
    for entry in _strings(spec.get("components")):
        _include(files, directory, entry, node, skipped, seen, component=True)

    for patch in _list(spec.get("patches")) + _list(spec.get("patchesJson6902")):
        if isinstance(patch, str):
            node.patches.append((_join(directory, patch), None))
        elif isinstance(patch, dict) and isinstance(patch.get("path"), str):
            node.patches.append((_join(directory, patch["path"]), _target(patch.get("target"))))
    for patch in _list(spec.get("patchesStrategicMerge")):
        # An entry is a file name, or an inline patch (YAML text with a newline).
        if isinstance(patch, str) and "\n" not in patch:
            node.patches.append((_join(directory, patch), None))
    node.patches = [(path, target) for path, target in node.patches if _present(files, path, skipped)]

    for generator in _list(spec.get("configMapGenerator")):
        if isinstance(generator, dict) and isinstance(generator.get("name"), str):
            for item in _strings(generator.get("files")):
                key, _, source = item.rpartition("=")
                data_key = key or posixpath.basename(source)
                node.generated.setdefault(generator["name"], []).append((data_key, _join(directory, source)))
    return node


def _include(
    files: MappingType[str, str],
    directory: str,
    entry: str,
    node: Kustomization,
    skipped: list[str],
    seen: set[str],
    component: bool,
) -> None:
    if _REMOTE.match(entry):
        skipped.append(f"{node.file}: remote resource {entry} is in another repository; not followed")
        return
    path = _join(directory, entry)
    if path.startswith("../"):
        skipped.append(f"{node.file}: {entry} is outside the repository; not followed")
    elif path in files:
        node.resources.append(path)
    elif kustomization_file(files, path) is not None:
        child = _read(files, path, skipped, seen)
        (node.components if component else node.children).append(child)
    elif any(name.startswith(path + "/") for name in files):
        skipped.append(f"{node.file}: {entry} is a folder without a kustomization; kustomize cannot build it")
    else:
        skipped.append(f"{node.file}: {entry} is not in the repository (generated at build time?); not read")


def _present(files: MappingType[str, str], path: str, skipped: list[str]) -> bool:
    if path in files:
        return True
    skipped.append(f"{path}: patch file not in the repository; not read")
    return False


def _target(raw: object) -> Target | None:
    if not isinstance(raw, dict):
        return None
    kind, name = raw.get("kind"), raw.get("name")
    return Target(kind if isinstance(kind, str) else None, name if isinstance(name, str) else None)


# --- which pins win ------------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    """One image the build renders, on its way up: the pin that sets its tag, the name it has
    now, and every name it had (`images:` entries match the name it has now)."""

    candidate: Candidate
    current: str
    names: frozenset[str]


@dataclass(frozen=True)
class ImageEntry:
    """One entry of a kustomization's `images:` list."""

    name: str  # the normalised image name it matches
    new_name: str  # what it renames that image to ("" when it keeps the name)
    site: Site | None  # its `newTag` / `digest` pin; None when it only renames


def _slot(candidate: Candidate) -> _Slot:
    # A pin that itself renames (a HelmRelease post-renderer's, a Flux Kustomization's
    # `spec.images` in the build) sets the tag of both names.
    return _Slot(candidate, candidate.site.name, frozenset(candidate.site.names()))


def _rendered(files: MappingType[str, str], built: Build) -> list[_Slot]:
    if built.rendered is None:
        if built.root is None:
            built.rendered = [_slot(c) for path in built.plain for c in _candidates(files, path)]
        else:
            built.rendered = _apply(files, built.root, [])
    return built.rendered


def _apply(files: MappingType[str, str], node: Kustomization, below: list[_Slot]) -> list[_Slot]:
    accumulated = list(below)
    for path in node.resources:
        accumulated.extend(_slot(c) for c in _candidates(files, path))
    for child in node.children:
        accumulated.extend(_apply(files, child, []))
    for component in node.components:
        accumulated = _apply(files, component, accumulated)
    for path, target in node.patches:
        for patch in _candidates(files, path):
            aim = target or Target(patch.kind, patch.name)
            accumulated = [
                slot
                for slot in accumulated
                if slot.candidate.path == path
                or patch.site.name not in slot.names
                or not aim.matches(slot.candidate.kind, slot.candidate.name)
            ]
            accumulated.append(_slot(patch))
    for entry in image_entries(files, node.file):
        matched = [slot for slot in accumulated if slot.current == entry.name]
        accumulated = [slot for slot in accumulated if slot.current != entry.name]
        current = entry.new_name or entry.name
        if entry.site is None:
            accumulated += [_Slot(s.candidate, current, s.names | {current}) for s in matched]
            continue
        # The entry sets the tag of everything it matched; it is their one pin now. With
        # nothing below to match (a remote base, a generated resource) it still decides.
        names = frozenset({entry.name, current}).union(*(slot.names for slot in matched))
        accumulated.append(_Slot(Candidate(node.file, entry.site, None, None), current, names))
    return accumulated


def image_entries(files: MappingType[str, str], path: str) -> list[ImageEntry]:
    """The `images:` entries of a kustomization file, in order (kustomize applies them so)."""
    text = files.get(path)
    if text is None:
        return []
    return parsed_list("kustomize-images", text, "", lambda: _image_entries(text))


def _image_entries(text: str) -> list[ImageEntry]:
    try:
        trees = yamltree.read(text)
    except FormatError:
        return []
    images = trees[0].get("images") if trees and isinstance(trees[0], Mapping) else None
    found = []
    for item in images.items if isinstance(images, Sequence) else []:
        if not isinstance(item, Mapping):
            continue
        name = image_name(scalar_text(item.get("name")))
        new_name = scalar_text(item.get("newName"))
        if name is None:
            continue
        renamed = image_name(new_name) if new_name else ""
        if renamed is None:
            continue  # a templated or invalid newName: what it renders to is unknown
        site = kustomize_site(item)
        found.append(ImageEntry(name, renamed if renamed != name else "", site))
    return found


def _candidates(files: MappingType[str, str], path: str) -> list[Candidate]:
    """Every image pin of a file of the build, with the object it sits in."""
    text = files.get(path)
    fmt = pin_format(path)
    if text is None or fmt is None:
        return []
    try:
        sites = read_sites(text, fmt)
    except ValueError:
        return []
    if not sites:
        return []
    docs = document_spans(text) if fmt == "yaml" else []
    found = []
    for site in sites:
        kind = name = None
        for start, end, doc_kind, doc_name in docs:
            if start <= site.node.start <= end:
                kind, name = doc_kind, doc_name
                break
        found.append(Candidate(path, site, kind, name))
    return found


# --- paths ---------------------------------------------------------------------------


def _normalise(path: str) -> str:
    path = posixpath.normpath((path or "").strip().lstrip("/"))
    return "" if path == "." else path


def _join(directory: str, entry: str) -> str:
    if entry.startswith("/"):
        return _normalise(entry)
    return _normalise(posixpath.join(directory, entry))


def _manifests_under(files: MappingType[str, str], directory: str, recurse: bool) -> list[str]:
    prefix = f"{directory}/" if directory else ""
    found = []
    for path in sorted(files):
        if not path.startswith(prefix) or pin_format(path) is None:
            continue
        if not recurse and "/" in path[len(prefix) :]:
            continue
        found.append(path)
    return found


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _strings(value: object) -> list[str]:
    return [item for item in _list(value) if isinstance(item, str)]
