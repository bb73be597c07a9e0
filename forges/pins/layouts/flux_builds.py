"""Flux objects in a tree: what a Kustomization builds, a HelmRelease's values, its chart version.

A Kustomization builds its `spec.path` (mapped through an ArtifactGenerator for an
ExternalArtifact source), with its own `spec.images` on top. Inside a build, each HelmRelease's
values are merged as helm-controller merges them (helm-layouts §1.1): `valuesFrom` ConfigMaps
that a configMapGenerator makes from files in the build, in order, then `spec.values` as the
definition and the overlay patches that target it leave it; `postRenderers` kustomize images
beat the values. A HelmRelease given alone is found in the path its Kustomization builds
(`path=`, or the Kustomization its `kustomize.toolkit.fluxcd.io/name` label names when this tree
defines it once), else in its only definition — never guessed among several.

The chart version is `spec.chart.spec.version` (a later patch wins), or for a `chartRef`, the
OCIRepository's `spec.ref` (digest > semver > tag); a range is followed, not pinned.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingType

from forges.pins.formats import Mapping, Node, Scalar, Sequence
from forges.pins.layouts import helm, kustomize
from forges.pins.layouts.app_reads import Reads
from forges.pins.layouts.app_specs import HELM_RELEASE, KUSTOMIZATION, App, definitions, flux_path, read_app
from forges.pins.layouts.documents import descend, file_sites, plain_documents, scalar_value
from forges.pins.layouts.line_edits import EditResult, edit_version, is_exact_version
from forges.pins.sites import KUSTOMIZE, image_name, kustomize_site


def kustomization_edits(
    files: MappingType[str, str], app: App, image: str, from_tag: str, result: EditResult
) -> tuple[list[kustomize.Candidate], list[helm.Target]]:
    """The pins and HelmRelease values of `image` in what a Flux Kustomization builds."""
    folder, why = flux_path(files, app)
    if folder is None:
        result.reasons.append(why)
        return [], []
    built = kustomize.build(files, folder)
    overrides = _spec_images_overrides(files, app, image, kustomize.known_names(files, built, image), result)
    if overrides is None:
        return [], []  # the effective tag is set outside this repository
    if overrides:
        return overrides, []
    return build_edits(files, built, image, from_tag, result)


def helm_release_edits(
    files: MappingType[str, str], app: App, image: str, from_tag: str, path: str | None, result: EditResult
) -> tuple[list[kustomize.Candidate], list[helm.Target]]:
    """The values of `image` in one HelmRelease, as the path its Kustomization builds shapes it."""
    built = _release_build(files, app, path, result)
    if built is None:
        return [], []
    return build_edits(files, built, image, from_tag, result, release=app.name)


def kustomization_reads(files: MappingType[str, str], app: App, reads: Reads) -> None:
    """What a Flux Kustomization reads: every file its path builds."""
    folder, why = flux_path(files, app)
    if folder is None:
        reads.skipped.append(why)
        return
    built = kustomize.build(files, folder)
    reads.add_build(files, built)
    _release_values_reads(files, built, reads)


def helm_release_reads(files: MappingType[str, str], app: App, path: str | None, reads: Reads) -> None:
    """What one HelmRelease's values are made of, in the path its Kustomization builds: its own
    documents (its definition and the patches that target it: `spec.values`, the chart version)
    and the files of its values layers (`valuesFrom` ConfigMaps' generator files, a chart in
    Git's values) — the layers `helm_release_edits` edits, not its neighbours'."""
    result = EditResult()
    chart = (app.spec.get("chart") or {}).get("spec") or {}
    if isinstance(chart, dict) and (chart.get("sourceRef") or {}).get("kind") == "GitRepository":
        # A chart kept in Git (the pin source is its folder): its values.yaml, or the
        # `valuesFiles` that replace it, paths from the source's root.
        listed = [str(name).strip().removeprefix("./") for name in chart.get("valuesFiles") or []]
        in_git = helm.read_chart(files, str(chart.get("chart") or ""))
        defaults = [in_git.defaults.path] if in_git is not None and in_git.defaults is not None else []
        reads.add_files(files, listed or defaults)
    built = _release_build(files, app, path, result)
    if built is not None:
        generated = kustomize.generated_files(built)
        for release in kustomize.objects(files, built, HELM_RELEASE):
            if release.name != app.name:
                continue
            own = {file for file, _ in release.documents}
            for file, document in release.documents:
                reads.add_document(files, file, document)
            layers = _release_layers(files, release, _chart_in_tree(files, release), generated, result)
            reads.add_files(files, [layer.path for layer in layers if layer.path and layer.path not in own])
        _release_values_reads(files, built, reads, app.name)
    reads.skipped.extend(result.reasons)


def _spec_images_overrides(
    files: MappingType[str, str], app: App, image: str, names: set[str], result: EditResult
) -> list[kustomize.Candidate] | None:
    # A Flux Kustomization's own `spec.images` works like an `images:` transformer on top of
    # everything its path builds, matching the image by any name the build gives it
    # (`names`); None when it sets the image outside this repository.
    for definition in definitions(files, KUSTOMIZATION, app.name):
        images = descend(definition.tree, "spec", "images")
        if not isinstance(images, Sequence):
            continue
        listed = {
            node.start
            for item in images.items
            for key in ("newTag", "digest", "newName", "name")
            if isinstance(node := descend(item, key), Scalar)
        }
        found = [
            kustomize.Candidate(definition.path, site, KUSTOMIZATION, app.name)
            for site in file_sites(files, definition.path)
            if names.intersection(site.names()) and site.kind == KUSTOMIZE and site.node.start in listed
        ]
        if found:
            return found
    entries = app.spec.get("images") or []
    listed_names = {
        image_name(str(e.get(key))) for e in entries if isinstance(e, dict) for key in ("name", "newName") if e.get(key)
    }
    if names.intersection(name for name in listed_names if name):
        result.reasons.append(
            f"{image} is set by spec.images of the Kustomization {app.name}, whose manifest is not in this repository"
        )
        return None
    return []


def build_edits(
    files: MappingType[str, str],
    built: kustomize.Build,
    image: str,
    from_tag: str,
    result: EditResult,
    release: str | None = None,
) -> tuple[list[kustomize.Candidate], list[helm.Target]]:
    """The pins a kustomize build renders, with each HelmRelease's values read as Helm merges them."""
    result.reasons.extend(built.skipped)
    pins = kustomize.winning_pins(files, built, image)
    in_releases = [c for c in pins if c.kind == HELM_RELEASE]
    pins = [] if release is not None else [c for c in pins if c.kind != HELM_RELEASE]
    targets: list[helm.Target] = []
    generated = kustomize.generated_files(built)
    for built_release in kustomize.objects(files, built, HELM_RELEASE):
        if release is not None and built_release.name != release:
            continue
        # `postRenderers[].kustomize.images` rewrites the rendered image after the values.
        post_rendered = [c for c in in_releases if c.name == built_release.name and c.site.kind == KUSTOMIZE]
        if post_rendered:
            pins.extend(post_rendered)
            continue
        chart = _chart_in_tree(files, built_release)
        layers = _release_layers(files, built_release, chart, generated, result)
        bindings = _release_bindings(built_release, chart, layers)
        findings = helm.find_targets(layers, bindings, image, from_tag, chart.app_version if chart else None)
        result.reasons.extend(findings.reasons)
        targets.extend(findings.targets)
        if (
            chart is not None
            and _chart_version_strategy(built_release)
            and any(t.layer.path.startswith(f"{chart.directory}/") for t in findings.targets)
        ):
            result.reasons.append(
                f"Flux builds a new {chart.name} chart only when {chart.directory}/Chart.yaml's version changes "
                "(reconcileStrategy ChartVersion): bump it in the same change, or the edit is not deployed"
            )
        if release is not None and not findings.targets and not findings.reasons:
            result.reasons.append(
                f"the HelmRelease {release} sets no {image} in this repository; "
                "its tag comes from the chart's defaults (for many charts, its appVersion)"
            )
    return pins, targets


def _release_bindings(
    release: kustomize.BuiltObject, chart: helm.Chart | None, layers: list[helm.Layer]
) -> list[helm.Binding]:
    """How the release's chart forms images from its values: its templates' when the chart is
    in the tree, and the common layouts among the keys the layers set."""
    name = chart.name if chart else _release_chart(release)
    return (chart.bindings if chart else []) + helm.conventional_bindings(layers, name)


def _release_values_reads(
    files: MappingType[str, str], built: kustomize.Build, reads: Reads, release_name: str | None = None
) -> None:
    # Which of each HelmRelease's value layers' tags Helm renders (an overlay's patch of
    # `image.tag` overrides the base's); why a layer is not read is said by the edits.
    generated = kustomize.generated_files(built)
    for release in kustomize.objects(files, built, HELM_RELEASE):
        if release_name is None or release.name == release_name:
            chart = _chart_in_tree(files, release)
            layers = _release_layers(files, release, chart, generated, EditResult())
            reads.add_values(files, layers, _release_bindings(release, chart, layers), _post_rendered(release))


def _post_rendered(release: kustomize.BuiltObject) -> set[str]:
    """The image names `spec.postRenderers[].kustomize.images` set a tag for, after Helm."""
    names: set[str] = set()
    for _, document in release.documents:
        renderers = descend(document, "spec", "postRenderers")
        for renderer in renderers.items if isinstance(renderers, Sequence) else []:
            images = descend(renderer, "kustomize", "images")
            for item in images.items if isinstance(images, Sequence) else []:
                site = kustomize_site(item) if isinstance(item, Mapping) else None
                if site is not None:
                    names.update(site.names())
    return names


def _chart_in_tree(files: MappingType[str, str], release: kustomize.BuiltObject) -> helm.Chart | None:
    # A chart from a GitRepository is a path from the source's root (assumed to be this
    # repository, as for the HelmRelease itself).
    for _, document in reversed(release.documents):
        spec = descend(document, "spec", "chart", "spec")
        if scalar_value(descend(spec, "sourceRef", "kind")) == "GitRepository":
            return helm.read_chart(files, scalar_value(descend(spec, "chart")))
    return None


def _chart_version_strategy(release: kustomize.BuiltObject) -> bool:
    strategy = ""
    for _, document in release.documents:
        strategy = scalar_value(descend(document, "spec", "chart", "spec", "reconcileStrategy")) or strategy
    return strategy != "Revision"


def _release_layers(
    files: MappingType[str, str],
    release: kustomize.BuiltObject,
    chart: helm.Chart | None,
    generated: dict[str, list[tuple[str, str]]],
    result: EditResult,
) -> list[helm.Layer]:
    # Lowest first: valuesFrom without targetPath (in list order), then spec.values as the
    # definition and its patches leave it (helm-controller's order; see helm-layouts §1.1).
    values_from: Node = None
    for _, document in release.documents:
        values_from = descend(document, "spec", "valuesFrom") or values_from
    layers: list[helm.Layer] = []
    if chart is not None:
        # `valuesFiles` replace the chart's values.yaml; paths are from the source's root.
        listed: Node = None
        for _, document in release.documents:
            listed = descend(document, "spec", "chart", "spec", "valuesFiles") or listed
        names = [scalar_value(item) for item in listed.items] if isinstance(listed, Sequence) else []
        for name in names:
            path = name.strip().removeprefix("./")
            layer = helm.file_layer(path, path, files[path]) if path in files else None
            if layer is not None:
                layers.append(layer)
        if not names and chart.defaults is not None:
            layers.append(chart.defaults)
    for reference in values_from.items if isinstance(values_from, Sequence) else []:
        kind, name = scalar_value(descend(reference, "kind")), scalar_value(descend(reference, "name"))
        key = scalar_value(descend(reference, "valuesKey")) or "values.yaml"
        if kind != "ConfigMap":
            result.reasons.append(f"values of {release.name} from the {kind} {name} are not read from Git")
            continue
        if scalar_value(descend(reference, "targetPath")):
            result.reasons.append(f"values of {release.name} from {name} at a targetPath are not followed")
            continue
        sources = generated.get(name) or next(
            (entries for generator, entries in generated.items() if name.startswith(generator + "-")), []
        )
        matched = [path for data_key, path in sources if data_key == key]
        if not matched:
            result.reasons.append(f"the ConfigMap {name} of {release.name} is not generated from a file in this build")
        for path in matched:
            if path not in files:
                result.reasons.append(f"{path}: values file of {name} is not in the repository")
                continue
            layer = helm.file_layer(path, path, files[path])
            if layer is not None:
                layers.append(layer)
    for path, document in release.documents:
        layers.append(helm.node_layer(path, path, descend(document, "spec", "values")))
    return layers


def _release_chart(release: kustomize.BuiltObject) -> str:
    for _, document in reversed(release.documents):
        name = scalar_value(descend(document, "spec", "chart", "spec", "chart"))
        if name:
            return name.rstrip("/").rsplit("/", 1)[-1]  # `./charts/podinfo` for a chart in Git
    return ""


def _release_build(
    files: MappingType[str, str], app: App, path: str | None, result: EditResult
) -> kustomize.Build | None:
    if path is None:
        path = _applying_kustomization_path(files, app)
    if path is not None:
        return kustomize.build(files, path)
    # Without the path its Kustomization builds, only an unambiguous definition will do.
    holders = [
        d.path
        for d in definitions(files, HELM_RELEASE, app.name)
        if descend(d.tree, "spec", "chart") is not None or descend(d.tree, "spec", "chartRef") is not None
    ]
    if len(holders) > 1:
        result.reasons.append(
            f"the HelmRelease {app.name} is defined in {len(holders)} files ({', '.join(holders)}); "
            "the path its Kustomization builds decides which one"
        )
        return None
    return kustomize.Build(root=None, plain=holders)


def _applying_kustomization_path(files: MappingType[str, str], app: App) -> str | None:
    # kustomize-controller labels what it applies with its own name; when this repository
    # defines exactly one Kustomization of that name, its path is the HelmRelease's.
    labels = app.labels
    name = labels.get("kustomize.toolkit.fluxcd.io/name")
    if not name:
        return None
    found = [d for d in definitions(files, KUSTOMIZATION, name) if descend(d.tree, "spec", "path") is not None]
    if len(found) != 1:
        return None
    namespace = labels.get("kustomize.toolkit.fluxcd.io/namespace")
    for document in plain_documents(found[0].text):
        if not isinstance(document, dict) or document.get("kind") != KUSTOMIZATION:
            continue
        metadata = document.get("metadata") or {}
        if metadata.get("name") == name and (not namespace or metadata.get("namespace") in (None, namespace)):
            folder, _ = flux_path(files, read_app(document))
            return folder
    return None


def chart_version_edits(
    files: MappingType[str, str],
    app: App,
    chart: str,
    from_version: str,
    to_version: str,
    path: str | None,
    result: EditResult,
) -> None:
    built: kustomize.Build | None
    if app.kind == KUSTOMIZATION:
        folder, why = flux_path(files, app)
        if folder is None:
            result.reasons.append(why)
            return
        built = kustomize.build(files, folder)
    else:
        built = _release_build(files, app, path, result)
    if built is None:
        return
    for release in kustomize.objects(files, built, HELM_RELEASE):
        if app.kind == HELM_RELEASE and release.name != app.name:
            continue
        if app.kind == KUSTOMIZATION and _release_chart(release) != chart:
            continue
        version: tuple[str, Node] | None = None
        chart_ref: Node = None
        for file, document in release.documents:  # a later patch wins
            spec = descend(document, "spec")
            if isinstance(descend(spec, "chart", "spec", "version"), Scalar):
                version = (file, descend(spec, "chart", "spec", "version"))
            chart_ref = descend(spec, "chartRef") or chart_ref
        if version is not None:
            file, node = version
            if isinstance(node, Scalar) and not is_exact_version(node.value):
                result.reasons.append(
                    f"follows {node.value} ({file}); a range is not a pin, so there is nothing to change"
                )
            else:
                edit_version(files, file, node, from_version, to_version, result)
        elif isinstance(chart_ref, Mapping):
            _oci_chart(files, built, chart_ref, from_version, to_version, result)
        else:
            result.reasons.append(f"the HelmRelease {release.name} sets no chart version: it follows the newest (`*`)")


def _oci_chart(
    files: MappingType[str, str],
    built: kustomize.Build,
    chart_ref: Mapping,
    from_version: str,
    to_version: str,
    result: EditResult,
) -> None:
    kind, name = scalar_value(descend(chart_ref, "kind")), scalar_value(descend(chart_ref, "name"))
    if kind != "OCIRepository":
        result.reasons.append(f"the chart comes from the {kind} {name}, whose version is not read here")
        return
    repositories = kustomize.objects(files, built, "OCIRepository")
    if built.root is None and not any(r.name == name for r in repositories):
        # Without a build, the OCIRepository sits next to the HelmRelease somewhere in the tree.
        repositories = [
            kustomize.BuiltObject("OCIRepository", name, [(d.path, d.tree)])
            for d in definitions(files, "OCIRepository", name)
        ]
    for repository in repositories:
        if repository.name != name:
            continue
        # OCIRepository `spec.ref`: digest > semver > tag.
        file, document = repository.documents[-1]
        ref = descend(document, "spec", "ref")
        if isinstance(descend(ref, "digest"), Scalar):
            result.reasons.append(f"the OCIRepository {name} is pinned by digest ({file}); not changed")
            return
        for field_name in ("semver", "tag"):
            node = descend(ref, field_name)
            if isinstance(node, Scalar):
                if field_name == "semver" and not is_exact_version(node.value):
                    result.reasons.append(f"follows {node.value} ({file}); a range is not a pin")
                else:
                    edit_version(files, file, node, from_version, to_version, result)
                return
    result.reasons.append(f"the OCIRepository {name} is not in what this app builds")
