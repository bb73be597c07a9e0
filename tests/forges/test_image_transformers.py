"""Kustomize's `images:` transformer across a build, as kustomize applies it (api/filters/imagetag).

Each entry, in order, matches the images built below it by its `name`; `newName` renames them
and `newTag` / `digest` set their tag. So an overlay entry is the pin of the image it matches
(asked by its `name` or by its `newName`), whatever the base pins, and an image renamed below
is matched above by its new name. The edit changes only `newTag`; a digest is left alone and
said so. What the build renders (`tree_reads`) holds the winning pin only, never the base's
overridden `:latest`.
"""

from __future__ import annotations

from typing import Any

from forges.pins import Edit, scan, tree_edits
from forges.pins.layouts.tree import tree_edit_result, tree_reads

API = "ghcr.io/acme/api"
MIRROR = "asia-southeast1-docker.pkg.dev/acme/mirror/api"
DIGEST = "sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
BASE_LINE = f"        image: {API}:latest"


def deployment(name: str, image: str) -> str:
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n"
        f"      containers:\n      - name: {name}\n        image: {image}\n"
    )


def app_at(path: str, **source: Any) -> dict[str, Any]:
    return {
        "kind": "Application",
        "metadata": {"name": "api-prod", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://git.example.com/acme/deploy", "path": path, **source}},
    }


def with_base(**overlays: str) -> dict[str, str]:
    """A base at `:latest` (tag set per environment) and the given overlay kustomization files."""
    files = {
        "base/kustomization.yaml": "resources:\n- deployment.yaml\n",
        "base/deployment.yaml": deployment("api", f"{API}:latest"),
    }
    files.update({f"{name}/kustomization.yaml": text for name, text in overlays.items()})
    return files


def held(files: dict[str, str], app: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(path, line, version) of every pin the app renders, as the Git pins read them."""
    reads = tree_reads(files, app)
    own = {path: files[path] for path in reads.paths}
    return [(p.path, p.line, p.version) for p in scan(own).pins if reads.holds(p.path, p.line)]


MIRRORED = f'resources:\n- ../base\nimages:\n- name: {API}\n  newName: {MIRROR}\n  newTag: "1.4.2"\n'


def test_a_mirror_entry_is_the_pin_asked_by_its_name_or_its_new_name() -> None:
    files = with_base(prod=MIRRORED)
    expected = [Edit("prod/kustomization.yaml", 6, '  newTag: "1.4.2"', '  newTag: "1.5.0"')]
    for image in (API, MIRROR):
        result = tree_edit_result(files, app_at("prod"), image, "1.4.2", "1.5.0")
        assert (result.edits, result.reasons) == (expected, []), image
    # The base's `latest` is what the overlay overrides: not one of the app's pins.
    assert held(files, app_at("prod")) == [("prod/kustomization.yaml", 6, "1.4.2")]


def test_a_digest_entry_that_renames_is_left_alone_and_said_so() -> None:
    files = with_base(prod=f"resources:\n- ../base\nimages:\n- name: {API}\n  newName: {MIRROR}\n  digest: {DIGEST}\n")
    result = tree_edit_result(files, app_at("prod"), API, "latest", "1.5.0")
    assert result.edits == []
    assert result.reasons == [f"{API} is pinned by digest in prod/kustomization.yaml; a tag change does not apply"]


def test_an_entry_that_only_renames_leaves_the_pin_below_it() -> None:
    files = with_base(prod=f"resources:\n- ../base\nimages:\n- name: {API}\n  newName: {MIRROR}\n")
    files["base/deployment.yaml"] = deployment("api", f"{API}:1.4.2")
    expected = [
        Edit("base/deployment.yaml", 10, f"        image: {API}:1.4.2", f"        image: {API}:1.5.0"),
    ]
    for image in (API, MIRROR):
        assert tree_edits(files, app_at("prod"), image, "1.4.2", "1.5.0") == expected, image


def test_an_image_renamed_below_is_matched_above_by_its_new_name() -> None:
    # A component points the image at the mirror; the overlay sets the mirror's tag.
    files = with_base(
        prod=f'resources:\n- ../base\ncomponents:\n- ../mirror\nimages:\n- name: {MIRROR}\n  newTag: "1.4.2"\n'
    )
    files["mirror/kustomization.yaml"] = (
        f"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: {API}\n  newName: {MIRROR}\n"
    )
    result = tree_edit_result(files, app_at("prod"), API, "1.4.2", "1.5.0")
    assert (result.edits, result.reasons) == (
        [Edit("prod/kustomization.yaml", 7, '  newTag: "1.4.2"', '  newTag: "1.5.0"')],
        [],
    )
    assert held(files, app_at("prod")) == [("prod/kustomization.yaml", 7, "1.4.2")]


def test_entries_apply_in_order_so_a_later_one_matches_what_an_earlier_one_renamed() -> None:
    files = with_base(
        prod=f"resources:\n- ../base\nimages:\n- name: {API}\n  newName: {MIRROR}\n- name: {MIRROR}\n  newTag: v2\n"
    )
    assert tree_edits(files, app_at("prod"), API, "v2", "v3") == [
        Edit("prod/kustomization.yaml", 7, "  newTag: v2", "  newTag: v3")
    ]


def test_an_entry_in_a_base_is_the_pin_until_an_overlay_entry_overrides_it() -> None:
    files = {
        "base/kustomization.yaml": f"resources:\n- deployment.yaml\nimages:\n- name: {API}\n  newTag: 1.4.2\n",
        "base/deployment.yaml": deployment("api", f"{API}:latest"),
        "staging/kustomization.yaml": "resources:\n- ../base\n",
        "prod/kustomization.yaml": MIRRORED.replace('"1.4.2"', '"1.3.0"'),
    }
    assert tree_edits(files, app_at("staging"), API, "1.4.2", "1.5.0") == [
        Edit("base/kustomization.yaml", 5, "  newTag: 1.4.2", "  newTag: 1.5.0")
    ]
    result = tree_edit_result(files, app_at("prod"), API, "1.3.0", "1.4.2")
    assert (result.edits, result.reasons) == (
        [Edit("prod/kustomization.yaml", 6, '  newTag: "1.3.0"', '  newTag: "1.4.2"')],
        [],
    )
    # The base's entry is overridden too: prod pins 1.3.0 only.
    assert held(files, app_at("prod")) == [("prod/kustomization.yaml", 6, "1.3.0")]


def test_an_entry_for_another_image_leaves_this_one_alone() -> None:
    files = with_base(
        prod=f"resources:\n- ../base\nimages:\n- name: ghcr.io/acme/web\n  newName: {MIRROR}\n  newTag: 1.4.2\n"
    )
    result = tree_edit_result(files, app_at("prod"), API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [f"{API} is at latest in base/deployment.yaml, not 1.4.2"]


def test_argocd_kustomize_images_match_the_image_by_the_name_they_rename() -> None:
    files = with_base(prod="resources:\n- ../base\n")
    files["apps/api.yaml"] = (
        "kind: Application\nmetadata:\n  name: api-prod\nspec:\n  source:\n    path: prod\n    kustomize:\n"
        f"      images:\n      - {API}={MIRROR}:1.4.2\n"
    )
    app = app_at("prod", kustomize={"images": [f"{API}={MIRROR}:1.4.2"]})
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("apps/api.yaml", 9, f"      - {API}={MIRROR}:1.4.2", f"      - {API}={MIRROR}:1.5.0")
    ]
    # Held by the cluster alone (its manifest is elsewhere): said, not guessed.
    del files["apps/api.yaml"]
    result = tree_edit_result(files, app, API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [
        f"{API} is overridden by the Application's kustomize.images, whose manifest is not in this repository"
    ]


def test_a_flux_kustomization_spec_images_matches_the_name_an_overlay_renamed_to() -> None:
    files = with_base(prod=f"resources:\n- ../base\nimages:\n- name: {API}\n  newName: {MIRROR}\n")
    files["clusters/prod/apps.yaml"] = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n"
        f"  path: ./prod\n  images:\n  - name: {MIRROR}\n    newTag: 1.4.2\n"
    )
    app = {
        "kind": "Kustomization",
        "metadata": {"name": "apps"},
        "spec": {"path": "./prod", "images": [{"name": MIRROR, "newTag": "1.4.2"}]},
    }
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("clusters/prod/apps.yaml", 9, "    newTag: 1.4.2", "    newTag: 1.5.0")
    ]


def test_a_post_renderer_that_renames_overrides_the_values() -> None:
    release = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\nspec:\n"
        f"  postRenderers:\n  - kustomize:\n      images:\n      - name: {API}\n        newName: {MIRROR}\n"
        f"        newTag: 1.4.2\n  values:\n    image:\n      repository: {API}\n      tag: 1.4.2\n"
    )
    app = {
        "kind": "HelmRelease",
        "metadata": {"name": "api", "namespace": "apps"},
        "spec": {"chart": {"spec": {"chart": "api", "version": "0.3.1"}}},
    }
    assert tree_edits({"api/release.yaml": release}, app, API, "1.4.2", "1.5.0", path="api") == [
        Edit("api/release.yaml", 11, "        newTag: 1.4.2", "        newTag: 1.5.0")
    ]
