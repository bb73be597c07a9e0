"""Where a change of one image's tag, or of one chart's version, lands in a repository.

`tree_edits` / `chart_edits` are the public contract (`forges.pins` re-exports them): files
(path -> text at the followed revision) and the GitOps object as the cluster holds it in,
the exact lines a reviewer expects out. `tree_edit_result` / `chart_edit_result` also say
why nothing, or less than expected, was edited (a digest pin, a semver range, a remote base,
a value set outside Git), so a caller can show that instead of an empty diff.

This module only dispatches on the object: an Argo CD Application's sources are read by
`argocd_builds`, a Flux Kustomization or HelmRelease by `flux_builds`; both build kustomize
paths with `kustomize` and merge Helm values with `helm`, and every change is written by
`line_edits` (all in `forges.pins.layouts`).
"""

from __future__ import annotations

from collections.abc import Mapping as MappingType
from typing import Any

from forges.pins.layouts import argocd_builds, flux_builds, helm, kustomize
from forges.pins.layouts.app_reads import Reads
from forges.pins.layouts.app_specs import APPLICATION, HELM_RELEASE, KUSTOMIZATION, read_app
from forges.pins.layouts.line_edits import Edit, EditResult, edit_pins, edit_scalar
from forges.pins.sites import TAG, image_name

# How a result says the image was found nowhere (a caller trying several names of one image
# drops it for the names that are not pinned when another one is).
NOT_PINNED_TAIL = "in anything this app builds from this repository"

__all__ = [
    "NOT_PINNED_TAIL",
    "Edit",
    "EditResult",
    "Reads",
    "chart_edit_result",
    "chart_edits",
    "tree_edit_result",
    "tree_edits",
    "tree_reads",
]


def tree_edits(
    files: MappingType[str, str],
    app: MappingType[str, Any],
    image: str,
    from_tag: str,
    to_tag: str,
    *,
    path: str | None = None,
    repository: str | None = None,
) -> list[Edit]:
    """The lines that move `image` from `from_tag` to `to_tag` in what `app` builds.

    `path`: for a HelmRelease, the folder the Flux Kustomization that applied it builds (else
    found from its `kustomize.toolkit.fluxcd.io/name` label, or its only definition).
    `repository`: the URL of the repository `files` holds; when given, only the Argo CD
    sources (and `$ref` values) of that repository are read from `files`.
    """
    return tree_edit_result(files, app, image, from_tag, to_tag, path=path, repository=repository).edits


def chart_edits(
    files: MappingType[str, str],
    app: MappingType[str, Any],
    chart: str,
    from_version: str,
    to_version: str,
    *,
    path: str | None = None,
) -> list[Edit]:
    """The lines that move the app's pinned `chart` from `from_version` to `to_version`."""
    return chart_edit_result(files, app, chart, from_version, to_version, path=path).edits


def tree_edit_result(
    files: MappingType[str, str],
    app: MappingType[str, Any],
    image: str,
    from_tag: str,
    to_tag: str,
    *,
    path: str | None = None,
    repository: str | None = None,
) -> EditResult:
    """`tree_edits`, with the reasons for everything left alone."""
    result = EditResult()
    wanted = image_name(image)
    if wanted is None:
        result.reasons.append(f"{image!r} is not an image name")
        return result
    for tag in (from_tag, to_tag):
        if not TAG.fullmatch(tag or ""):
            result.reasons.append(f"{tag!r} is not a valid image tag")
            return result
    if from_tag == to_tag:
        result.reasons.append(f"{wanted} is already at {to_tag}")
        return result
    spec = read_app(app)
    pins: list[kustomize.Candidate] = []
    targets: list[helm.Target] = []
    if spec.kind == APPLICATION:
        pins, targets = argocd_builds.application_edits(files, spec, wanted, from_tag, repository, result)
    elif spec.kind == KUSTOMIZATION:
        pins, targets = flux_builds.kustomization_edits(files, spec, wanted, from_tag, result)
    elif spec.kind == HELM_RELEASE:
        pins, targets = flux_builds.helm_release_edits(files, spec, wanted, from_tag, path, result)
    else:
        result.reasons.append(f"{spec.kind or 'this object'} is not an Argo CD Application or a Flux object")

    for candidate in pins:
        if candidate.site.digest:
            result.reasons.append(f"{wanted} is pinned by digest in {candidate.path}; a tag change does not apply")
        elif candidate.site.tag != from_tag:
            result.reasons.append(f"{wanted} is at {candidate.site.tag} in {candidate.path}, not {from_tag}")
    pins = [c for c in pins if c.site.tag == from_tag and not c.site.digest]
    edit_pins(files, pins, from_tag, to_tag, result)
    for target in targets:
        edit_scalar(files, target.layer.path, target.site, from_tag, to_tag, result)
    if not result.edits and not result.reasons:
        result.reasons.append(f"{wanted} is not pinned at {from_tag} {NOT_PINNED_TAIL}")
    result.edits.sort(key=lambda e: (e.path, e.line))
    return result


def chart_edit_result(
    files: MappingType[str, str],
    app: MappingType[str, Any],
    chart: str,
    from_version: str,
    to_version: str,
    *,
    path: str | None = None,
) -> EditResult:
    """`chart_edits`, with the reasons for everything left alone."""
    result = EditResult()
    if from_version == to_version:
        result.reasons.append(f"{chart} is already at {to_version}")
        return result
    spec = read_app(app)
    if spec.kind == APPLICATION:
        argocd_builds.application_chart_edits(files, spec, chart, from_version, to_version, result)
    elif spec.kind in (HELM_RELEASE, KUSTOMIZATION):
        flux_builds.chart_version_edits(files, spec, chart, from_version, to_version, path, result)
    if not result.edits and not result.reasons:
        result.reasons.append(f"the chart {chart} is not pinned at {from_version} in this repository")
    return result


def tree_reads(
    files: MappingType[str, str],
    app: MappingType[str, Any],
    *,
    path: str | None = None,
    repository: str | None = None,
) -> Reads:
    """What `app` reads from `files`: the files and documents its images can be set in, by the
    same readers as `tree_edits` (`forges.pins.layouts.app_reads`). `path`: the folder that deploys the
    object (a HelmRelease's Kustomization path, a chart-only Application's parent path);
    `repository`: as for `tree_edits`."""
    reads = Reads()
    spec = read_app(app)
    if spec.kind == APPLICATION:
        argocd_builds.application_reads(files, spec, repository, path, reads)
    elif spec.kind == KUSTOMIZATION:
        flux_builds.kustomization_reads(files, spec, reads)
    elif spec.kind == HELM_RELEASE:
        flux_builds.helm_release_reads(files, spec, path, reads)
    else:
        reads.skipped.append(f"{spec.kind or 'this object'} is not an Argo CD Application or a Flux object")
    return reads
