"""Argo CD Application sources in a tree: what each source builds, and where its chart version is set.

A source is built the way Argo CD builds it: Helm when `chart` is set or its folder holds a
Chart.yaml and no kustomization (plugins that end in kustomize, like `kustomized-helm`, are
read as kustomize), kustomize when it holds a kustomization, plain manifests otherwise.
Helm values are merged in Argo CD's order (`forges.pins.layouts.helm`), with `valuesObject` and
`parameters` read from the Application manifest when it is in the tree, and the
`.argocd-source-<app>.yaml` override file last; `kustomize.images` (Application, then
override file) beats every pin the build holds.

A chart version is the chart source's `targetRevision`, edited in the Application manifest;
for a generated Application, in its ApplicationSet — a literal in the template, or the
generator value the template names, chosen by what the generated app shows of its cluster
(`apps.template_values`). An umbrella chart pins its subchart in `Chart.yaml` dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as MappingType

from forges.pins.formats import FormatError, Mapping, Node, Scalar, Sequence, yamltree
from forges.pins.layouts import flux_builds, helm, kustomize
from forges.pins.layouts.app_reads import Reads
from forges.pins.layouts.app_specs import (
    APPLICATION,
    APPLICATION_SET,
    App,
    Definition,
    Source,
    definitions,
    expression_name,
    same_repository,
    template_values,
)
from forges.pins.layouts.documents import descend, file_sites, plain_documents, positioned_documents
from forges.pins.layouts.line_edits import EditResult, edit_version, is_exact_version
from forges.pins.sites import image_name


def application_edits(
    files: MappingType[str, str],
    app: App,
    image: str,
    from_tag: str,
    repository: str | None,
    result: EditResult,
) -> tuple[list[kustomize.Candidate], list[helm.Target]]:
    """The pins and Helm values of `image` in what an Application's sources build from `files`.

    `repository` None: every source is read from `files`; else only that repository's."""

    def here(url: str) -> bool:
        return repository is None or same_repository(url, repository)

    value_refs = {source.ref: "" for source in app.sources if source.ref and here(source.repo_url)}
    pins: list[kustomize.Candidate] = []
    targets: list[helm.Target] = []
    for source in app.sources:
        if source.ref and source.path is None and not source.chart:
            continue  # a values-only source is read through `$ref/...`
        if not here(source.repo_url):
            # Its manifests are in another repository; only its `$ref` values files may be here.
            if any(str(entry).startswith("$") for entry in source.helm.get("valueFiles") or []):
                targets.extend(_helm_source_edits(files, app, source, None, value_refs, image, from_tag, result))
            continue
        found_pins, found_targets = _source_edits(files, app, source, value_refs, image, from_tag, result)
        pins.extend(found_pins)
        targets.extend(found_targets)
    return pins, targets


def _source_edits(
    files: MappingType[str, str],
    app: App,
    source: Source,
    value_refs: dict[str, str],
    image: str,
    from_tag: str,
    result: EditResult,
) -> tuple[list[kustomize.Candidate], list[helm.Target]]:
    folder = source_folder(source)
    if is_helm_source(files, source, folder):
        return [], _helm_source_edits(files, app, source, folder, value_refs, image, from_tag, result)
    built = kustomize.build(files, folder, recurse=bool(source.directory.get("recurse")))
    pins, targets = flux_builds.build_edits(files, built, image, from_tag, result)
    names = kustomize.known_names(files, built, image)
    overrides = _kustomize_image_overrides(files, app, source, folder, image, names, result)
    if overrides is None:
        return [], []  # the effective tag is set outside this repository
    return (overrides, []) if overrides else (pins, targets)


def source_folder(source: Source) -> str:
    folder = (source.path or "").strip("/").removeprefix("./")
    return "" if folder == "." else folder


def is_helm_source(files: MappingType[str, str], source: Source, folder: str) -> bool:
    """A chart from a Helm repository, or a folder with a Chart.yaml and no kustomization
    (and no plugin): what Argo CD renders with Helm."""
    has_kustomization = kustomize.kustomization_file(files, folder) is not None
    return bool(source.chart) or (
        f"{folder}/Chart.yaml".lstrip("/") in files and not has_kustomization and not source.plugin
    )


def application_reads(
    files: MappingType[str, str], app: App, repository: str | None, path: str | None, reads: Reads
) -> None:
    """What an Application's sources read from `files` (only those of `repository`, when
    given): what each kustomize or directory source builds; a Helm source's values.yaml,
    its value files (`$ref/...` ones too) and `.argocd-source-<app>.yaml`; and, in the build
    of `path` (where its parent deploys it from), the Application's own manifest, whose
    helm.values / valuesObject / parameters and kustomize.images set its images."""

    def here(url: str) -> bool:
        return repository is None or same_repository(url, repository)

    value_refs = {source.ref: "" for source in app.sources if source.ref and here(source.repo_url)}
    for source in app.sources:
        if source.ref and source.path is None and not source.chart:
            continue  # a values-only source is read through `$ref/...`
        if not here(source.repo_url):
            _value_file_reads(files, source, None, value_refs, reads)
            if any(str(entry).startswith("$") for entry in source.helm.get("valueFiles") or []):
                reads.add_values(files, *_helm_values(files, app, source, None, value_refs, EditResult())[:2])
            continue
        folder = source_folder(source)
        if is_helm_source(files, source, folder):
            chart = helm.read_chart(files, folder) if not source.chart else None
            if chart is not None and chart.defaults is not None:
                reads.add_files(files, [chart.defaults.path])
            if not source.chart:
                reads.add_chart(files, folder)
            _value_file_reads(files, source, folder, value_refs, reads)
            # Which of those layers' tags Helm renders (why a layer is not read is said above).
            reads.add_values(files, *_helm_values(files, app, source, folder, value_refs, EditResult())[:2])
        else:
            reads.add_build(files, kustomize.build(files, folder, recurse=bool(source.directory.get("recurse"))))
            if source.plugin:  # a plugin such as kustomized-helm runs `helm template` on a chart it finds there
                reads.add_chart(files, folder)
        reads.add_files(files, [f"{folder}/.argocd-source-{app.name}.yaml".lstrip("/")])
    if path is not None:
        for manifest in kustomize.objects(files, kustomize.build(files, path), APPLICATION):
            if manifest.name == app.name:
                for file, document in manifest.documents:
                    reads.add_document(files, file, document)


def _value_file_reads(
    files: MappingType[str, str], source: Source, folder: str | None, value_refs: dict[str, str], reads: Reads
) -> None:
    # `folder` None: the chart is in another repository; only its `$ref/...` files are here.
    for entry in source.helm.get("valueFiles") or []:
        if folder is None and not str(entry).startswith("$"):
            continue
        resolved, why = helm.resolve_value_file(folder or "", str(entry), value_refs)
        if resolved is None:
            reads.skipped.append(why)
        else:
            reads.add_files(files, [resolved])


def _kustomize_image_overrides(
    files: MappingType[str, str],
    app: App,
    source: Source,
    folder: str,
    image: str,
    names: set[str],
    result: EditResult,
) -> list[kustomize.Candidate] | None:
    # Argo CD's `kustomize.images` overrides every pin of the image the build holds; the
    # `.argocd-source-<app>.yaml` file (argocd-image-updater's write-back) overrides the
    # Application's own list. An entry is `[name=]newName:tag`: it matches the image by any
    # name the build gives it (`names`: renamed by an overlay's `images:`, or not).
    holders: list[tuple[str, Node]] = []
    override = f"{folder}/.argocd-source-{app.name}.yaml".lstrip("/")
    for tree in positioned_documents(files, override)[:1]:
        holders.append((override, descend(tree, "kustomize", "images")))
    for definition in definitions(files, APPLICATION, app.name):
        holders.append((definition.path, descend(_source_node(definition.tree, source), "kustomize", "images")))
    for path, images in holders:
        sites = [site for site in file_sites(files, path) if names.intersection(site.names())]
        if isinstance(images, Sequence):
            listed = {item.start for item in images.items if isinstance(item, Scalar)}
            found = [kustomize.Candidate(path, s, None, None) for s in sites if s.node.start in listed]
            if found:
                return found
    entries = source.kustomize.get("images") or []
    held = {image_name(part) for entry in entries for part in str(entry).split("=", 1)}
    if names.intersection(name for name in held if name):
        result.reasons.append(
            f"{image} is overridden by the Application's kustomize.images, whose manifest is not in this repository"
        )
        return None
    return []


def _helm_source_edits(
    files: MappingType[str, str],
    app: App,
    source: Source,
    folder: str | None,
    value_refs: dict[str, str],
    image: str,
    from_tag: str,
    result: EditResult,
) -> list[helm.Target]:
    layers, bindings, chart = _helm_values(files, app, source, folder, value_refs, result)
    findings = helm.find_targets(layers, bindings, image, from_tag, chart.app_version if chart else None)
    result.reasons.extend(findings.reasons)
    if not findings.targets and not findings.reasons and not any(b for b in bindings):
        result.reasons.append(f"no values file of {app.name} sets {image}'s tag; it comes from the chart's defaults")
    return findings.targets


def _helm_values(
    files: MappingType[str, str],
    app: App,
    source: Source,
    folder: str | None,
    value_refs: dict[str, str],
    result: EditResult,
) -> tuple[list[helm.Layer], list[helm.Binding], helm.Chart | None]:
    """A Helm source's value layers in Argo CD's order, the image bindings among them, and its
    chart when the tree holds it: what both its edits and its reads follow."""
    # `folder` None: the chart's own files are in another repository than `files`.
    layers: list[helm.Layer] = []
    chart = helm.read_chart(files, folder) if folder is not None and not source.chart else None
    if chart is not None and chart.defaults is not None:
        layers.append(chart.defaults)
    for entry in source.helm.get("valueFiles") or []:
        if folder is None and not str(entry).startswith("$"):
            layers.append(helm.Layer(f"values file {entry}", "", {}, opaque=True))
            continue
        resolved, why = helm.resolve_value_file(folder or "", str(entry), value_refs)
        if resolved is None:
            result.reasons.append(why)
            layers.append(helm.Layer(f"values file {entry}", "", {}, opaque=True))
            continue
        if resolved not in files:
            if not source.helm.get("ignoreMissingValueFiles"):
                result.reasons.append(f"values file {resolved} is not in the repository")
            continue
        layer = helm.file_layer(resolved, resolved, files[resolved])
        if layer is not None:
            layers.append(layer)
    manifests = definitions(files, APPLICATION, app.name)
    manifest = _source_node(manifests[0].tree, source) if len(manifests) == 1 else None
    values = source.helm.get("values")
    if isinstance(values, str) and values.strip():
        data = plain_documents(values)
        if data:
            layers.append(helm.data_layer("the Application's helm.values", data[0]))
    if source.helm.get("valuesObject"):
        node = descend(manifest, "helm", "valuesObject")
        if isinstance(node, Mapping):
            layers.append(helm.node_layer(f"{manifests[0].path} (helm.valuesObject)", manifests[0].path, node))
        else:
            layers.append(helm.data_layer("the Application's helm.valuesObject", source.helm["valuesObject"]))
    if source.helm.get("parameters"):
        node = descend(manifest, "helm", "parameters")
        if isinstance(node, Sequence):
            layers.append(helm.parameters_layer(f"{manifests[0].path} (helm.parameters)", manifests[0].path, node))
        else:
            params = {str(p.get("name")): p.get("value") for p in source.helm["parameters"] if isinstance(p, dict)}
            layer = helm.Layer("the Application's helm.parameters", "", {})
            for name, value in params.items():
                if value is not None:
                    layer.values[helm.parameter_path(name)] = Scalar(str(value), -1, -1, "quoted", verbatim=False)
            layers.append(layer)
    override = f"{folder}/.argocd-source-{app.name}.yaml".lstrip("/")
    if folder is not None and override in files:
        try:
            trees = yamltree.read(files[override])
        except FormatError:
            trees = []
        node = descend(trees[0] if trees else None, "helm", "parameters")
        layers.append(helm.parameters_layer(override, override, node))
    chart_name = chart.name if chart is not None else source.chart
    bindings = (chart.bindings if chart is not None else []) + helm.conventional_bindings(layers, chart_name)
    return layers, bindings, chart


def _source_node(tree: Node, source: Source) -> Node:
    spec = descend(tree, "spec")
    sources = descend(spec, "sources")
    if isinstance(sources, Sequence):
        return sources.items[source.index] if source.index < len(sources.items) else None
    return descend(spec, "source")


def application_chart_edits(
    files: MappingType[str, str], app: App, chart: str, from_version: str, to_version: str, result: EditResult
) -> None:
    """Where an Application pins `chart`: a chart source's targetRevision, or an umbrella
    chart's dependency in a Git source."""
    for source in app.sources:
        if source.chart == chart:
            _chart_source_edits(files, app, source, from_version, to_version, result)
        elif source.path is not None:
            _umbrella_dependency_edits(files, source.path, chart, from_version, to_version, result)


def _chart_source_edits(
    files: MappingType[str, str], app: App, source: Source, from_version: str, to_version: str, result: EditResult
) -> None:
    if not is_exact_version(source.target_revision):
        result.reasons.append(
            f"{app.name} follows {source.chart} {source.target_revision or '(latest)'}; "
            "a range is not a pin, so there is nothing to change"
        )
        return
    manifests = definitions(files, APPLICATION, app.name)
    if manifests:
        for manifest in manifests:
            node = descend(_source_node(manifest.tree, source), "targetRevision")
            edit_version(files, manifest.path, node, from_version, to_version, result)
        return
    if app.owner_set:
        sets = definitions(files, APPLICATION_SET, app.owner_set)
        if not sets:
            result.reasons.append(
                f"the ApplicationSet {app.owner_set} that generates {app.name} is not in this repository"
            )
        for appset in sets:
            _appset_chart(files, appset, app, source, from_version, to_version, result)
        return
    result.reasons.append(f"no manifest of the Application {app.name} is in this repository")


def _appset_chart(
    files: MappingType[str, str],
    appset: Definition,
    app: App,
    source: Source,
    from_version: str,
    to_version: str,
    result: EditResult,
) -> None:
    template_source = _source_node(descend(appset.tree, "spec", "template"), source)
    node = descend(template_source, "targetRevision")
    if not isinstance(node, Scalar):
        result.reasons.append(f"{appset.path}: the template sets no targetRevision for {source.chart}")
        return
    if "{{" not in node.value:
        edit_version(files, appset.path, node, from_version, to_version, result)
        return
    expression = re.fullmatch(r"{{-?\s*(.*?)\s*-?}}", node.value.strip())
    name = expression_name(expression.group(1)) if expression else ""
    if not name.startswith("values."):
        result.reasons.append(f"{appset.path}: targetRevision {node.value} is not a generator value; not changed")
        return
    documents = plain_documents(appset.text)
    plain = next(
        (
            d
            for d in documents
            if isinstance(d, dict)
            and d.get("kind") == APPLICATION_SET
            and (d.get("metadata") or {}).get("name") == app.owner_set
        ),
        {},
    )
    known = template_values((plain.get("spec") or {}).get("template") or {}, {"spec": app.spec})
    key = name.removeprefix("values.")
    try:
        setters = _generator_values(descend(appset.tree, "spec", "generators"), key, known)
    except _Undecided as label:
        result.reasons.append(
            f"{appset.path}: a generator selects clusters by the label {label}, which {app.name} does not show; "
            f"cannot tell which generator sets {key}"
        )
        return
    if setters is None:
        result.reasons.append(f"{appset.path}: cannot tell which generator sets {key} for {app.name}")
        return
    edit_version(files, appset.path, setters, from_version, to_version, result)


def _generator_values(generators: Node, key: str, known: dict[str, str]) -> Scalar | None:
    """The scalar that sets `values.<key>` for the generated app, or None when that cannot be told.

    Generators are read in order and a later match wins, as a merge generator merges. A
    cluster generator matches when its `matchLabels` agree with the labels the app shows
    (through rendered template fields, see `template_values`); one that needs a label the app
    does not show raises _Undecided rather than a guess.
    """
    winner: Scalar | None = None
    if not isinstance(generators, Sequence):
        return None
    for generator in generators.items:
        for kind in ("merge", "matrix"):
            nested = descend(generator, kind, "generators")
            if nested is not None:
                winner = _generator_values(nested, key, known) or winner
        clusters = descend(generator, "clusters")
        value = descend(clusters, "values", key)
        if not isinstance(value, Scalar):
            continue
        labels = descend(clusters, "selector", "matchLabels")
        matches = True
        for label, wanted in labels.pairs if isinstance(labels, Mapping) else []:
            seen = known.get(f"metadata.labels.{label}")
            if seen is None or not isinstance(wanted, Scalar):
                raise _Undecided(label)
            matches = matches and seen == wanted.value
        if matches:
            winner = value
    return winner


class _Undecided(Exception):
    """A generator selects clusters by a label the generated app does not show."""


def _umbrella_dependency_edits(
    files: MappingType[str, str], folder: str, chart: str, from_version: str, to_version: str, result: EditResult
) -> None:
    path = f"{folder.strip('/')}/Chart.yaml".lstrip("/")
    if path not in files:
        return
    try:
        trees = yamltree.read(files[path])
    except FormatError:
        return
    dependencies = descend(trees[0] if trees else None, "dependencies")
    if not isinstance(dependencies, Sequence):
        return
    for dependency in dependencies.items:
        name = descend(dependency, "name")
        if isinstance(name, Scalar) and name.value == chart:
            node = descend(dependency, "version")
            if isinstance(node, Scalar) and not is_exact_version(node.value):
                result.reasons.append(f"{path} follows {chart} {node.value}; a range is not a pin")
                continue
            edit_version(files, path, node, from_version, to_version, result)
