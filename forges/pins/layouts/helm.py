"""Helm values in Git: the layers a release merges, in order, and which scalar sets an image.

Helm merges values lowest first: the chart's `values.yaml`, then each values file in the
order Argo CD lists them (a later file wins), then `values`, `valuesObject` and
`parameters` (Argo CD's "Helm Value Precedence"); Argo CD's `.argocd-source-<app>.yaml`
parameters come last. A tag change must land in the layer that sets the effective tag, or
it changes nothing: with `image.repository` in `values.yaml` and `image.tag` overridden in
`common-values.yaml`, the edit goes to `common-values.yaml`.

Which keys form an image: when the chart's templates are in the tree, their `image:` lines
say it (`{{ .Values.image.repository }}:{{ .Values.image.tag }}`, or a literal repository
with the tag under any key, such as `imageVersion`). Otherwise the common layouts are
recognised: `<x>.repository` (+ `registry`) with `tag`/`version`, a whole reference under a
key ending in `image`, and a tag-only `<chart>.image.tag` / `global.image.tag`, whose
repository is the chart's default — named by the (sub)chart key, so it is matched on the
image's last path segment.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field

from forges.pins.formats import QUOTED, FormatError, Mapping, Node, Scalar, Sequence, yamltree
from forges.pins.layouts.documents import descend
from forges.pins.sites import HELM, Site, image_name, reference_site, split_tag, templated

KeyPath = tuple[str | int, ...]

_VALUES_REF = re.compile(r"\.Values\.([A-Za-z0-9_.]+)")
_EXPRESSION = re.compile(r"{{-?\s*(.*?)\s*-?}}")
_IMAGE_LINE = re.compile(r"^\s*-?\s*image:\s*(.+?)\s*$")
_PARAMETER_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass
class Layer:
    """One source of values: a file in the tree (`path`), or the Application spec (`path` "")."""

    label: str
    path: str
    values: dict[KeyPath, Scalar]  # leaf key paths -> positioned scalars (offset -1 when not in Git)
    opaque: bool = False  # its values cannot be read here (a URL, another repository)


@dataclass(frozen=True)
class Binding:
    """How a chart forms one image: repository parts (literal text or key paths) and a tag key."""

    repository: tuple[str | KeyPath, ...]
    tag: KeyPath
    digest: KeyPath | None = None
    chart_default: str = ""  # tag-only binding: the (sub)chart whose default repository applies
    whole_reference: bool = False  # `tag` is a key holding `repo:tag`
    app_version_default: bool = False  # an empty tag falls back to the chart's appVersion


@dataclass
class Chart:
    """A chart whose files are in the tree: its name, defaults, image bindings and appVersion."""

    directory: str
    name: str
    defaults: Layer | None  # values.yaml
    bindings: list[Binding]
    app_version: Layer | None  # Chart.yaml's `appVersion`, as a layer holding APP_VERSION


APP_VERSION: KeyPath = ("appVersion",)


def read_chart(files: MappingType[str, str], directory: str) -> Chart | None:
    """The chart in `directory`, or None when the tree holds no Chart.yaml there."""
    directory = posixpath.normpath(directory).strip("/").removeprefix("./")
    directory = "" if directory == "." else directory
    meta_path = posixpath.join(directory, "Chart.yaml")
    if meta_path not in files:
        return None
    try:
        trees = yamltree.read(files[meta_path])
    except FormatError:
        trees = []
    meta = trees[0] if trees else None
    name = descend(meta, "name")
    app_version = descend(meta, "appVersion")
    defaults_path = posixpath.join(directory, "values.yaml")
    return Chart(
        directory=directory,
        name=name.value if isinstance(name, Scalar) else "",
        defaults=file_layer(defaults_path, defaults_path, files[defaults_path]) if defaults_path in files else None,
        bindings=template_bindings(files, directory),
        app_version=(
            Layer(f"{meta_path} (appVersion)", meta_path, {APP_VERSION: app_version})
            if isinstance(app_version, Scalar)
            else None
        ),
    )


def chart_files(files: MappingType[str, str], directory: str) -> tuple[list[str], list[str]]:
    """What rendering the chart in `directory` reads beyond its value layers: the Chart.yaml of it
    and of each `file://` dependency in the tree (an umbrella's dependency versions are set there),
    and each such dependency's values.yaml (its defaults). (Chart.yaml paths, values paths)."""
    metas: list[str] = []
    defaults: list[str] = []
    pending = [posixpath.normpath(directory).strip("/").removeprefix("./")]
    while pending:
        folder = "" if pending[0] == "." else pending[0]
        pending = pending[1:]
        meta = posixpath.join(folder, "Chart.yaml")
        if meta not in files or meta in metas:
            continue
        metas.append(meta)
        try:
            trees = yamltree.read(files[meta])
        except FormatError:
            continue
        dependencies = descend(trees[0] if trees else None, "dependencies")
        for dependency in dependencies.items if isinstance(dependencies, Sequence) else []:
            repository = descend(dependency, "repository")
            if isinstance(repository, Scalar) and repository.value.startswith("file://"):
                found = posixpath.normpath(posixpath.join(folder, repository.value.removeprefix("file://")))
                if not found.startswith(".."):
                    defaults += [path for path in [posixpath.join(found, "values.yaml")] if path in files]
                    pending.append(found)
    return metas, defaults


@dataclass
class Target:
    layer: Layer
    site: Site


@dataclass
class Findings:
    targets: list[Target] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def file_layer(label: str, path: str, text: str, root: KeyPath = ()) -> Layer | None:
    """The values of a YAML file (under `root` inside its first document that has it)."""
    try:
        trees = yamltree.read(text)
    except FormatError:
        return None
    for tree in trees:
        node = descend(tree, *root)
        if isinstance(node, Mapping):
            return Layer(label, path, flatten(node))
    return None


def node_layer(label: str, path: str, node: Node) -> Layer:
    return Layer(label, path, flatten(node) if isinstance(node, Mapping) else {})


def data_layer(label: str, data: object) -> Layer:
    """Values held only by the cluster's object (not in Git): plain data, no positions."""
    values: dict[KeyPath, Scalar] = {}

    def walk(value: object, prefix: KeyPath) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*prefix, str(key)))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*prefix, index))
        elif value is not None:
            values[prefix] = Scalar(str(value), -1, -1, QUOTED, verbatim=False)

    walk(data, ())
    return Layer(label, "", values)


def parameters_layer(label: str, path: str, node: Node) -> Layer:
    """`helm.parameters` (a list of name/value) as values: `image.tag` -> ("image", "tag")."""
    values: dict[KeyPath, Scalar] = {}
    if isinstance(node, Sequence):
        for item in node.items:
            if isinstance(item, Mapping):
                name, value = item.get("name"), item.get("value")
                if isinstance(name, Scalar) and isinstance(value, Scalar):
                    values[parameter_path(name.value)] = value
    return Layer(label, path, values)


def parameter_path(name: str) -> KeyPath:
    return tuple(int(index) if index else key for key, index in _PARAMETER_PART.findall(name))


def flatten(node: Node, prefix: KeyPath = ()) -> dict[KeyPath, Scalar]:
    values: dict[KeyPath, Scalar] = {}
    if isinstance(node, Mapping):
        for key, value in node.pairs:
            values.pop((*prefix, key), None)
            values.update(flatten(value, (*prefix, key)))
    elif isinstance(node, Sequence):
        for index, item in enumerate(node.items):
            values.update(flatten(item, (*prefix, index)))
    elif isinstance(node, Scalar):
        values[prefix] = node
    return values


def template_bindings(files: MappingType[str, str], chart_dir: str) -> list[Binding]:
    """The images a chart's templates form from values (`image:` lines using `.Values`)."""
    prefix = f"{chart_dir}/templates/" if chart_dir else "templates/"
    bindings: list[Binding] = []
    for path in sorted(files):
        if not path.startswith(prefix):
            continue
        for line in files[path].splitlines():
            match = _IMAGE_LINE.match(line)
            if match:
                binding = _binding_from_template(match.group(1).strip("\"'"))
                if binding is not None and binding not in bindings:
                    bindings.append(binding)
    return bindings


def conventional_bindings(layers: list[Layer], chart_name: str) -> list[Binding]:
    """The common image layouts among the keys the layers set."""
    keys = {key for layer in layers for key in layer.values}
    bindings: list[Binding] = []
    for key in sorted(keys, key=str):
        last = key[-1] if key else ""
        parent = key[:-1]
        names_image = bool(parent) and isinstance(parent[-1], str) and parent[-1].lower().endswith("image")
        if last == "repository" or (last == "name" and names_image and (*parent, "repository") not in keys):
            tag = (
                (*parent, "tag")
                if (*parent, "tag") in keys or (*parent, "version") not in keys
                else (*parent, "version")
            )
            repository: tuple[str | KeyPath, ...] = (
                ((*parent, "registry"), key) if (*parent, "registry") in keys else (key,)
            )
            bindings.append(Binding(repository, tag, (*parent, "digest")))
        elif isinstance(last, str) and last.lower().endswith("image"):
            bindings.append(Binding((), key, whole_reference=True))
        elif last == "tag" and names_image:
            if (*parent, "repository") in keys or (*parent, "name") in keys:
                continue
            owner = parent[-2] if len(parent) >= 2 and isinstance(parent[-2], str) else ""
            if owner in ("", "global"):
                owner = chart_name
            bindings.append(Binding((), key, (*parent, "digest"), chart_default=owner))
    return bindings


def find_targets(
    layers: list[Layer], bindings: list[Binding], image: str, from_tag: str, app_version: Layer | None = None
) -> Findings:
    """Where each binding of `image` at `from_tag` gets its effective tag (for a template that
    falls back to `.Chart.AppVersion` on an empty tag, `app_version`)."""
    findings = Findings()

    def note(reason: str) -> None:
        if reason not in findings.reasons:
            findings.reasons.append(reason)

    for binding in bindings:
        tag_layer, tag_node = _effective(layers, binding.tag)
        if binding.app_version_default and app_version is not None and (tag_node is None or not tag_node.value.strip()):
            tag_layer, tag_node = app_version, app_version.values[APP_VERSION]
        if tag_node is None:
            continue
        if binding.whole_reference:
            site = reference_site(tag_node) if tag_layer.path else _reference_site_of_value(tag_node)
            if site is None or site.name != image:
                continue
            tag, digest = site.tag, site.digest
        else:
            if _repository(layers, binding, image) != image:
                continue
            tag, digest = split_tag(tag_node.value.strip())
            if binding.digest is not None:
                _, digest_node = _effective(layers, binding.digest)
                digest = digest or (digest_node.value.strip() if digest_node is not None else "")
            site = Site(HELM, image, image, tag, digest, tag_node, 0)
        if digest:
            note(f"{image} is pinned by digest in {tag_layer.label}; a tag change does not apply")
        elif tag != from_tag:
            note(f"{image} is at {tag or '(no tag)'} in {tag_layer.label}, not {from_tag}")
        elif not tag_layer.path:
            note(f"{image}'s tag is set in {tag_layer.label}, which is not in this repository")
        elif hidden := [layer for layer in layers[_position(layers, tag_layer) + 1 :] if layer.opaque]:
            note(
                f"{image}'s tag in {tag_layer.label} may be overridden by {hidden[-1].label}, "
                "which is not in this repository; not changed"
            )
        elif not any(t.layer is tag_layer and t.site.node is site.node for t in findings.targets):
            findings.targets.append(Target(tag_layer, site))
    return findings


def effective_pins(layers: list[Layer], bindings: list[Binding]) -> tuple[list[Target], list[tuple[str, Scalar]]]:
    """What Helm renders, as Git pins: each binding's effective tag where it is in Git and the
    image it forms is known (a target per pin: its layer and site), and (file, scalar) of every
    tag a higher layer overrides — `values.yaml`'s `image.tag` under an environment's values
    file, a values file's tag under `.argocd-source-<app>.yaml` parameters. A tag-only
    binding whose repository is a chart's default names no image here and is left out."""
    pins: list[Target] = []
    overridden: list[tuple[str, Scalar]] = []
    for binding in bindings:
        tag_layer, tag_node = _effective(layers, binding.tag)
        if tag_node is None:
            continue
        for layer in layers:
            node = layer.values.get(binding.tag)
            if layer is not tag_layer and node is not None and layer.path and node.start >= 0:
                overridden.append((layer.path, node))
        if not tag_layer.path or tag_node.start < 0 or binding.chart_default:
            continue
        site: Site | None
        if binding.whole_reference:
            site = reference_site(tag_node)
        else:
            name = _repository(layers, binding, "")
            tag, digest = split_tag(tag_node.value.strip())
            if binding.digest is not None:
                _, digest_node = _effective(layers, binding.digest)
                digest = digest or (digest_node.value.strip() if digest_node is not None else "")
            if name is None or templated(tag_node.value) or not (tag or digest):
                continue
            site = Site(HELM, name, name, tag, digest, tag_node, 0)
        if site is not None and not any(t.site.node is site.node for t in pins):
            pins.append(Target(tag_layer, site))
    return pins, overridden


def _repository(layers: list[Layer], binding: Binding, image: str) -> str | None:
    """The normalised image name a binding forms, or None when it cannot be told."""
    if binding.chart_default:
        # A tag-only map: the repository is the (sub)chart's default, named after the chart.
        return image if binding.chart_default == image.rsplit("/", 1)[-1] else None
    parts = []
    for part in binding.repository:
        if isinstance(part, str):
            parts.append(part)
            continue
        _, node = _effective(layers, part)
        if node is None or templated(node.value):
            return None
        parts.append(node.value.strip().strip("/"))
    return image_name("/".join(p for p in parts if p)) if parts else None


def resolve_value_file(chart_dir: str, entry: str, refs: MappingType[str, str]) -> tuple[str | None, str]:
    """Where a `valueFiles` entry points in the tree: (path, "") or (None, why not).

    `$ref/x` is `x` from the root of the `ref` source's repository, `/x` is from this
    repository's root, anything else is relative to the chart (Argo CD's
    `ResolveValueFilePathOrUrl`)."""
    if "://" in entry:
        return None, f"values file {entry} is a URL; not in this repository"
    if entry.startswith("$"):
        ref, _, rest = entry[1:].partition("/")
        if ref not in refs:
            return None, f"values file {entry} names no `ref` source in this repository"
        root = refs[ref]
        return posixpath.normpath(posixpath.join(root, rest)).lstrip("/"), ""
    if entry.startswith("/"):
        return posixpath.normpath(entry).lstrip("/"), ""
    path = posixpath.normpath(posixpath.join(chart_dir, entry))
    if path.startswith("../"):
        return None, f"values file {entry} is outside the repository"
    return ("" if path == "." else path), ""


def _position(layers: list[Layer], layer: Layer) -> int:
    # The chart's appVersion sits below every values layer.
    return next((index for index, candidate in enumerate(layers) if candidate is layer), -1)


def _effective(layers: list[Layer], key: KeyPath) -> tuple[Layer, Scalar | None]:
    for layer in reversed(layers):
        if key in layer.values:
            return layer, layer.values[key]
    return (layers[0] if layers else Layer("", "", {})), None


def _reference_site_of_value(node: Scalar) -> Site | None:
    # A reference held only by the cluster object: read it for its name and tag.
    site = reference_site(Scalar(node.value, 0, len(node.value), QUOTED, verbatim=True))
    if site is not None:
        site.node = node
    return site


def _binding_from_template(value: str) -> Binding | None:
    # Split `<repository>:<tag>` at the last literal ':' that is outside any {{ }}.
    pieces: list[str | KeyPath | None] = []  # literal text, a .Values key path, or None (unknown)
    position = 0
    falls_back = False
    for match in _EXPRESSION.finditer(value):
        if match.start() > position:
            pieces.append(value[position : match.start()])
        reference = _VALUES_REF.search(match.group(1))
        pieces.append(tuple(reference.group(1).split(".")) if reference else None)
        falls_back = falls_back or ".Chart.AppVersion" in match.group(1)
        position = match.end()
    if position < len(value):
        pieces.append(value[position:])
    for index in range(len(pieces) - 1, -1, -1):
        piece = pieces[index]
        if isinstance(piece, str) and ":" in piece:
            head, _, tail = piece.rpartition(":")
            repository = [*pieces[:index], head] if head else pieces[:index]
            tags = [p for p in ([tail] if tail else []) + pieces[index + 1 :] if p != ""]
            if len(tags) != 1 or not isinstance(tags[0], tuple):
                return None
            if any(p is None for p in repository) or not repository:
                return None
            parts: list[str | KeyPath] = []
            for part in repository:
                if isinstance(part, str):
                    part = part.strip("/")
                    if not part:
                        continue
                parts.append(part)  # type: ignore[arg-type]
            return Binding(tuple(parts), tags[0], app_version_default=falls_back)
    return None
