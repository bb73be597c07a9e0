"""A walk over the real repository layouts (tests/data/repo-layouts): every layout whose app
pins its image's tag gets an upgrade planned through the public `forges.pins.tree_edit_result`,
and the plan must be clean whatever the layout's transformers are.

Unlike tests/forges/test_tree_edits.py, which compares each layout with the lines a reviewer
expects, this states what must hold for any layout: at least one changed line, each carrying
the new version where the running one was; no reason about the image (its winning pin is at
the running tag, not a digest, not elsewhere); nothing edited that the build overrides (a
base's tag under an overlay's `images:` or patch: `tree_reads` says what the app renders).
The pins the app renders (`Reads.pins`, as the Git pins show them) are the running tag alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from forges.pins import EditResult, scan, tree_edit_result
from forges.pins.layouts.tree import tree_reads
from forges.pins.sites import image_name
from tests.forges.layout_cases import EXPECTED, apps, layout, layout_files

# Layouts that pin the image's tag in Git (the others run a chart default or a remote base).
PINNED = [(folder, to_tag) for folder, to_tag, expected in EXPECTED if expected]

FLUX_BASE_VALUES = "flux-helmrelease-base-values"


def podinfo_release() -> dict[str, Any]:
    """The podinfo HelmRelease of flux-helmrelease-base-values as the cluster holds it: the base's
    release patched by apps/production/podinfo-values.yaml."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "podinfo"},
        "spec": {
            "chart": {"spec": {"chart": "podinfo", "version": ">=1.0.0"}},
            "values": {"redis": {"enabled": True, "repository": "public.ecr.aws/docker/library/redis"}},
        },
    }


def assert_clean(folder: str, app: dict[str, Any], to_tag: str, result: EditResult, path: str | None = None) -> None:
    facts = layout(folder)
    image, running = image_name(facts["image"]), facts["running_tag"]
    assert image is not None
    assert result.edits, f"{folder}: nothing edited: {result.reasons}"
    for edit in result.edits:
        assert to_tag in edit.after and running in edit.before, edit
    assert [reason for reason in result.reasons if image in reason] == []
    reads = tree_reads(layout_files(folder), app, path=path)
    for edit in result.edits:
        assert reads.holds(edit.path, edit.line), f"{folder}: {edit.path}:{edit.line} is overridden by the build"


@pytest.mark.parametrize(("folder", "to_tag"), PINNED, ids=[folder for folder, _ in PINNED])
def test_an_upgrade_of_a_pinned_layout_is_a_clean_edit(folder: str, to_tag: str) -> None:
    facts = layout(folder)
    app = apps()[folder]
    result = tree_edit_result(layout_files(folder), app, facts["image"], facts["running_tag"], to_tag)
    assert_clean(folder, app, to_tag, result)


@pytest.mark.parametrize("folder", [folder for folder, _ in PINNED], ids=lambda folder: folder)
def test_the_pins_a_layout_renders_are_the_running_tag_alone(folder: str) -> None:
    # What the Git pins show: a base's tag under an overlay, a chart's values.yaml tag under an
    # environment's values file or an image updater's parameter, are not rendered; a tag set
    # alone (`image.tag`, a key the chart's template names) is. The umbrella chart's subchart
    # tag names no repository of its own (the subchart's default): no pin is shown for it.
    facts = layout(folder)
    files = layout_files(folder)
    reads = tree_reads(files, apps()[folder])
    image = image_name(facts["image"])
    rendered = {
        pin.version
        for pin in reads.pins(scan({path: files[path] for path in reads.paths}).pins)
        if image in (pin.image, pin.renamed_from)
    }
    assert rendered == (set() if folder == "argocd-helm-dependency" else {facts["running_tag"]})


def test_the_helm_release_whose_values_live_in_a_base_is_upgraded_in_the_base() -> None:
    # The production overlay patches the base's HelmRelease (hostnames, chart range) but not
    # redis: the base's inline `redis.tag` is the pin, for the HelmRelease (given the path its
    # Kustomization builds, as the portal's pin source gives it: both clusters of this
    # repository name their Kustomization `apps`) as for the Kustomization itself.
    facts = layout(FLUX_BASE_VALUES)
    app, path = podinfo_release(), "apps/production"
    files = layout_files(FLUX_BASE_VALUES)
    result = tree_edit_result(files, app, facts["image"], facts["running_tag"], "8.6.3", path=path)
    assert_clean(FLUX_BASE_VALUES, app, "8.6.3", result, path=path)
    assert [(edit.path, edit.line) for edit in result.edits] == [("apps/base/podinfo/release.yaml", 27)]
