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
base), then the `images:` transformer (which overrides every pin of that image below it).
Only the winning pins are edited: a base shared by other overlays is left alone when the
overlay overrides it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.layouts.apps import HELM_RELEASE
from forges.layouts.documents import document_spans, plain_documents
from forges.pinformats import FormatError, Mapping, Node, Scalar, yamltree
from forges.pinsites import KUSTOMIZE, Site, pin_format, read_sites

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
    """The pins of `image` that decide what the build renders (see the module docstring)."""
    if built.root is None:
        return [c for path in built.plain for c in _candidates(files, path, image)]
    return _apply(files, built.root, image, [])


def overridden_pins(files: MappingType[str, str], built: Build) -> list[Candidate]:
    """The pins the build reads but does not render: a base's tag that an overlay's patch or
    `images:` transformer overrides. Pins in HelmRelease values and in the files a
    configMapGenerator turns into values are left out: Helm, not kustomize, decides between them."""
    values = {path for entries in generated_files(built).values() for _, path in entries}
    paths = [path for path in built.files() if path not in values]
    images: set[str] = set()
    for path in paths:
        fmt = pin_format(path)
        if fmt is None or path not in files:
            continue
        try:
            images.update(site.name for site in read_sites(files[path], fmt))
        except ValueError:
            continue
    found: list[Candidate] = []
    for image in sorted(images):
        winners = {(c.path, c.site.node.start) for c in winning_pins(files, built, image)}
        found += [
            c
            for path in paths
            for c in _candidates(files, path, image)
            if c.kind != HELM_RELEASE and (c.path, c.site.node.start) not in winners
        ]
    return found


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


def _apply(files: MappingType[str, str], node: Kustomization, image: str, below: list[Candidate]) -> list[Candidate]:
    accumulated = list(below)
    for path in node.resources:
        accumulated.extend(_candidates(files, path, image))
    for child in node.children:
        accumulated.extend(_apply(files, child, image, []))
    for component in node.components:
        accumulated = _apply(files, component, image, accumulated)
    for path, target in node.patches:
        for patch in _candidates(files, path, image):
            aim = target or Target(patch.kind, patch.name)
            accumulated = [c for c in accumulated if c.path == path or not aim.matches(c.kind, c.name)]
            accumulated.append(patch)
    own = [c for c in _candidates(files, node.file, image) if c.site.kind == KUSTOMIZE]
    if own:
        return own  # the `images:` transformer sets this image for everything built below it
    return accumulated


def _candidates(files: MappingType[str, str], path: str, image: str) -> list[Candidate]:
    text = files.get(path)
    fmt = pin_format(path)
    if text is None or fmt is None:
        return []
    try:
        sites = [site for site in read_sites(text, fmt) if site.name == image]
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
