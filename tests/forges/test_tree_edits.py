"""forges.pins.tree_edits on the real repository layouts in tests/data/repo-layouts.

The layouts' app objects and the expected edits are in tests/forges/layout_cases.py (shared
with the previews through the forge clients).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forges.pins import Edit, tree_edits
from forges.pins.layouts.tree import tree_edit_result
from tests.forges.layout_cases import EXPECTED, LAYOUTS, apps, layout, layout_files


def test_every_layout_has_expectations() -> None:
    folders = sorted(p.name for p in LAYOUTS.iterdir() if (p / "LAYOUT.json").is_file())
    assert sorted(folder for folder, _, _ in EXPECTED) == folders
    assert sorted(apps()) == folders


@pytest.mark.parametrize(("folder", "to_tag", "expected"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_layout_upgrade_edits_exactly_the_expected_lines(folder: str, to_tag: str, expected: list[Edit]) -> None:
    facts = layout(folder)
    edits = tree_edits(layout_files(folder), apps()[folder], facts["image"], facts["running_tag"], to_tag)
    assert edits == expected


def test_a_layout_edit_keeps_every_other_line() -> None:
    # Applying the edits to the files changes exactly those lines, nothing else.
    folder = "codefresh-helm-valuefiles"
    facts = layout(folder)
    files = layout_files(folder)
    result = tree_edit_result(files, apps()[folder], facts["image"], facts["running_tag"], "v2.1")
    (edit,) = result.edits
    lines = files[edit.path].split("\n")
    assert lines[edit.line - 1] == edit.before
    assert result.reasons == []


@pytest.mark.parametrize(
    ("folder", "reason"),
    [
        ("autopilot-remote-base", "remote resource github.com/argoproj-labs/argocd-autopilot/examples/demo-app/"),
        ("d2-oci-chart-semver", "sets no ghcr.io/stefanprodan/podinfo"),
        ("gitops-bridge-appset-chart", "comes from the chart's defaults"),
    ],
)
def test_a_layout_without_an_edit_says_why(folder: str, reason: str) -> None:
    facts = layout(folder)
    result = tree_edit_result(layout_files(folder), apps()[folder], facts["image"], facts["running_tag"], "9.9.9")
    assert result.edits == []
    assert any(reason in text for text in result.reasons), result.reasons


# --- the edge rules, on small trees ------------------------------------------------------

DIGEST = "sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
API = "ghcr.io/acme/api"


def deployment(name: str, image: str) -> str:
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n"
        f"      containers:\n      - name: {name}\n        image: {image}\n"
    )


def helm_chart(values: str, folder: str = "chart") -> dict[str, str]:
    return {
        f"{folder}/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\n",
        f"{folder}/values.yaml": values,
        f"{folder}/templates/deployment.yaml": (
            'spec:\n  containers:\n  - image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"\n'
        ),
    }


def app_at(path: str, **source: Any) -> dict[str, Any]:
    return {
        "kind": "Application",
        "metadata": {"name": "api-prod", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://git.example.com/acme/deploy", "path": path, **source}},
    }


def test_a_file_outside_the_build_with_the_same_image_and_tag_is_not_edited() -> None:
    files = {
        "apps/api/base/kustomization.yaml": "resources:\n- deployment.yaml\n",
        "apps/api/base/deployment.yaml": deployment("api", f"{API}:1.4.2"),
        "apps/api/prod/kustomization.yaml": "resources:\n- ../base\n",
        "apps/api/legacy/deployment.yaml": deployment("api", f"{API}:1.4.2"),
        "apps/api/base/unused.yaml": deployment("api-old", f"{API}:1.4.2"),  # in base/, not in its resources
    }
    assert tree_edits(files, app_at("apps/api/prod"), API, "1.4.2", "1.5.0") == [
        Edit("apps/api/base/deployment.yaml", 10, f"        image: {API}:1.4.2", f"        image: {API}:1.5.0")
    ]


def test_a_remote_base_is_skipped_with_its_reason_and_local_pins_still_edited() -> None:
    files = {
        "prod/kustomization.yaml": "resources:\n- https://github.com/acme/base//deploy?ref=v1\n- sidecar.yaml\n",
        "prod/sidecar.yaml": deployment("sidecar", f"{API}:1.4.2"),
    }
    result = tree_edit_result(files, app_at("prod"), API, "1.4.2", "1.5.0")
    assert [(e.path, e.line) for e in result.edits] == [("prod/sidecar.yaml", 10)]
    assert result.reasons == [
        "prod/kustomization.yaml: remote resource https://github.com/acme/base//deploy?ref=v1 is in another "
        "repository; not followed"
    ]


def test_a_kustomize_digest_pin_is_left_alone_and_said_so() -> None:
    files = {
        "prod/kustomization.yaml": (
            f"resources:\n- deployment.yaml\nimages:\n- name: {API}\n  newTag: 1.4.2\n  digest: {DIGEST}\n"
        ),
        "prod/deployment.yaml": deployment("api", f"{API}:1.4.2"),
    }
    result = tree_edit_result(files, app_at("prod"), API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [f"{API} is pinned by digest in prod/kustomization.yaml; a tag change does not apply"]


def test_a_helm_tag_with_a_digest_is_left_alone_and_said_so() -> None:
    files = helm_chart(f"image:\n  repository: {API}\n  tag: 1.4.2@{DIGEST}\n")
    result = tree_edit_result(files, app_at("chart"), API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [f"{API} is pinned by digest in chart/values.yaml; a tag change does not apply"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('  tag: "1.4.2"', '  tag: "1.5.0"'),
        ("  tag: '1.4.2' # pinned", "  tag: '1.5.0' # pinned"),
        ("  tag: 1.4.2", "  tag: 1.5.0"),
    ],
)
def test_a_quoted_tag_keeps_its_quotes(before: str, after: str) -> None:
    files = helm_chart(f"image:\n  repository: {API}\n{before}\n")
    assert tree_edits(files, app_at("chart"), API, "1.4.2", "1.5.0") == [Edit("chart/values.yaml", 3, before, after)]


def test_a_numeric_looking_new_tag_is_written_as_a_string() -> None:
    # `tag: 1.26` unquoted would read as the float 1.26 (and 1.30 as 1.3).
    files = helm_chart(f"image:\n  repository: {API}\n  tag: v1.25\n")
    assert tree_edits(files, app_at("chart"), API, "v1.25", "1.30") == [
        Edit("chart/values.yaml", 3, "  tag: v1.25", '  tag: "1.30"')
    ]
    overlay = {
        "prod/kustomization.yaml": f"resources:\n- deployment.yaml\nimages:\n- name: {API}\n  newTag: v16\n",
        "prod/deployment.yaml": deployment("api", f"{API}:v16"),
    }
    assert tree_edits(overlay, app_at("prod"), API, "v16", "17") == [
        Edit("prod/kustomization.yaml", 5, "  newTag: v16", '  newTag: "17"')
    ]


def test_the_env_values_file_that_overrides_the_tag_is_edited_not_the_chart_default() -> None:
    files = helm_chart(f"image:\n  repository: {API}\n  tag: 1.4.2\n")
    files["chart/values-prod.yaml"] = "image:\n  tag: 1.4.2\n"
    app = app_at("chart", helm={"valueFiles": ["values-prod.yaml"]})
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("chart/values-prod.yaml", 2, "  tag: 1.4.2", "  tag: 1.5.0")
    ]
    # And when the env file holds another tag, the chart default (at from_tag) is dead: no edit.
    files["chart/values-prod.yaml"] = "image:\n  tag: 1.3.0\n"
    result = tree_edit_result(files, app, API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [f"{API} is at 1.3.0 in chart/values-prod.yaml, not 1.4.2"]


def test_helm_parameters_in_the_application_manifest_win_over_values_files() -> None:
    files = helm_chart(f"image:\n  repository: {API}\n  tag: 1.4.2\n")
    files["apps/api-prod.yaml"] = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: api-prod\nspec:\n  source:\n"
        "    repoURL: https://git.example.com/acme/deploy\n    path: chart\n    helm:\n      parameters:\n"
        "      - name: image.tag\n        value: 1.4.2\n"
    )
    app = app_at("chart", helm={"parameters": [{"name": "image.tag", "value": "1.4.2"}]})
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("apps/api-prod.yaml", 12, "        value: 1.4.2", "        value: 1.5.0")
    ]
    # The same parameter held only by the cluster (set with `argocd app set -p`): not in Git.
    del files["apps/api-prod.yaml"]
    result = tree_edit_result(files, app, API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [
        f"{API}'s tag is set in the Application's helm.parameters, which is not in this repository"
    ]


def test_argocd_kustomize_images_in_the_application_manifest_override_the_overlay() -> None:
    files = {
        "prod/kustomization.yaml": f"resources:\n- deployment.yaml\nimages:\n- name: {API}\n  newTag: 1.4.2\n",
        "prod/deployment.yaml": deployment("api", f"{API}:1.4.2"),
        "apps/api.yaml": (
            "kind: Application\nmetadata:\n  name: api-prod\nspec:\n  source:\n    path: prod\n    kustomize:\n"
            f"      images:\n      - {API}:1.4.2\n"
        ),
    }
    app = app_at("prod", kustomize={"images": [f"{API}:1.4.2"]})
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("apps/api.yaml", 9, f"      - {API}:1.4.2", f"      - {API}:1.5.0")
    ]


def test_global_image_tag_of_a_chart_from_a_helm_repository() -> None:
    files = {"values/api.yaml": "global:\n  image:\n    tag: 1.4.2\n"}
    app = {
        "kind": "Application",
        "metadata": {"name": "api-prod"},
        "spec": {
            "sources": [
                {
                    "repoURL": "https://charts.acme.io",
                    "chart": "api",
                    "targetRevision": "0.3.1",
                    "helm": {"valueFiles": ["$values/values/api.yaml"]},
                },
                {"repoURL": "https://git.example.com/acme/deploy", "targetRevision": "HEAD", "ref": "values"},
            ]
        },
    }
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("values/api.yaml", 3, "    tag: 1.4.2", "    tag: 1.5.0")
    ]
    # The same values for a chart named otherwise say nothing about this image.
    app["spec"]["sources"][0]["chart"] = "worker"
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == []


def test_helm_release_values_from_a_generated_config_map() -> None:
    # Flux's guide: a configMapGenerator turns a values file into the valuesFrom ConfigMap.
    files = {
        "apps/api/kustomization.yaml": (
            "resources:\n- release.yaml\nconfigMapGenerator:\n- name: api-values\n  files:\n"
            "  - values.yaml=api-values.yaml\nconfigurations:\n- kustomizeconfig.yaml\n"
        ),
        "apps/api/release.yaml": (
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\nspec:\n"
            "  chart:\n    spec:\n      chart: api\n      version: 0.3.1\n  valuesFrom:\n"
            "  - kind: ConfigMap\n    name: api-values\n"
        ),
        "apps/api/api-values.yaml": f"image:\n  repository: {API}\n  tag: 1.4.2 # from CI\n",
        "apps/other/values.yaml": f"image:\n  repository: {API}\n  tag: 1.4.2\n",
    }
    release = {
        "kind": "HelmRelease",
        "metadata": {"name": "api", "namespace": "apps"},
        "spec": {
            "chart": {"spec": {"chart": "api", "version": "0.3.1"}},
            "valuesFrom": [{"kind": "ConfigMap", "name": "api-values-2mh2t8m94h"}],
        },
    }
    assert tree_edits(files, release, API, "1.4.2", "1.5.0", path="apps/api") == [
        Edit("apps/api/api-values.yaml", 3, "  tag: 1.4.2 # from CI", "  tag: 1.5.0 # from CI")
    ]


def test_a_patch_overrides_only_the_object_it_targets() -> None:
    # The overlay patches `api`; the base's `worker` (same image and tag) still builds as is.
    files = {
        "base/kustomization.yaml": "resources:\n- workloads.yaml\n",
        "base/workloads.yaml": deployment("api", f"{API}:1.4.2") + "---\n" + deployment("worker", f"{API}:1.4.2"),
        "prod/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: api.yaml\n",
        "prod/api.yaml": deployment("api", f"{API}:1.4.2"),
    }
    assert [(e.path, e.line) for e in tree_edits(files, app_at("prod"), API, "1.4.2", "1.5.0")] == [
        ("base/workloads.yaml", 21),
        ("prod/api.yaml", 10),
    ]


def helm_release(name: str, values: str, extra: str = "") -> str:
    return (
        f"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\nspec:\n"
        f"{extra}  values:\n{values}"
    )


FLUX_BASE = {
    "apps/base/api/kustomization.yaml": "resources:\n- release.yaml\n",
    "apps/base/api/release.yaml": helm_release(
        "api",
        f"    image:\n      repository: {API}\n      tag: 1.4.2\n",
        "  chart:\n    spec:\n      chart: api\n      version: 0.3.1\n",
    ),
    "apps/prod/kustomization.yaml": "resources:\n- ../base/api\npatches:\n- path: api-values.yaml\n",
    "apps/prod/api-values.yaml": helm_release("api", "    image:\n      tag: 1.4.2\n"),
    "apps/staging/kustomization.yaml": "resources:\n- ../base/api\n",
}


def flux_release(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "HelmRelease",
        "metadata": {"name": "api", "namespace": "apps", "labels": labels or {}},
        "spec": {"chart": {"spec": {"chart": "api", "version": "0.3.1"}}},
    }


def test_an_overlay_patch_that_sets_only_the_tag_wins_over_the_base_release() -> None:
    # The patch has no repository: the image is still the base's, merged as Helm merges values.
    assert tree_edits(FLUX_BASE, flux_release(), API, "1.4.2", "1.5.0", path="apps/prod") == [
        Edit("apps/prod/api-values.yaml", 8, "      tag: 1.4.2", "      tag: 1.5.0")
    ]
    # staging builds the base alone.
    assert tree_edits(FLUX_BASE, flux_release(), API, "1.4.2", "1.5.0", path="apps/staging") == [
        Edit("apps/base/api/release.yaml", 13, "      tag: 1.4.2", "      tag: 1.5.0")
    ]


def test_a_helm_release_path_comes_from_its_kustomization_in_the_repository() -> None:
    files = dict(FLUX_BASE)
    files["clusters/prod/apps.yaml"] = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n"
        "  namespace: flux-system\nspec:\n  path: ./apps/prod\n  sourceRef:\n    kind: GitRepository\n"
        "    name: flux-system\n"
    )
    labels = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    assert [(e.path, e.line) for e in tree_edits(files, flux_release(labels), API, "1.4.2", "1.5.0")] == [
        ("apps/prod/api-values.yaml", 8)
    ]


def test_a_helm_release_defined_twice_without_a_path_is_not_guessed() -> None:
    files = {
        "dev/release.yaml": FLUX_BASE["apps/base/api/release.yaml"],
        "prod/release.yaml": FLUX_BASE["apps/base/api/release.yaml"],
    }
    result = tree_edit_result(files, flux_release(), API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [
        "the HelmRelease api is defined in 2 files (dev/release.yaml, prod/release.yaml); "
        "the path its Kustomization builds decides which one"
    ]


def test_a_post_renderer_image_overrides_the_values() -> None:
    files = {
        "api/release.yaml": helm_release(
            "api",
            f"    image:\n      repository: {API}\n      tag: 1.4.2\n",
            f"  postRenderers:\n  - kustomize:\n      images:\n      - name: {API}\n        newTag: 1.4.2\n",
        )
    }
    assert tree_edits(files, flux_release(), API, "1.4.2", "1.5.0", path="api") == [
        Edit("api/release.yaml", 10, "        newTag: 1.4.2", "        newTag: 1.5.0")
    ]


DEMO = Path(__file__).parents[2] / "examples" / "gitops-repo"


def demo_files() -> dict[str, str]:
    return {p.relative_to(DEMO).as_posix(): p.read_text() for p in sorted(DEMO.rglob("*")) if p.is_file()}


def demo_notifications(kind: str) -> dict[str, Any]:
    if kind == "Kustomization":
        spec: dict[str, Any] = {
            "path": "./apps/notifications/overlays/prod",
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        }
    else:
        spec = {
            "chart": {"spec": {"chart": "notifications", "version": "0.3.1"}},
            "valuesFrom": [{"kind": "ConfigMap", "name": "notifications-values"}],
        }
    return {"kind": kind, "metadata": {"name": "notifications", "namespace": "notifications"}, "spec": spec}


@pytest.mark.parametrize("kind", ["HelmRelease", "Kustomization"])
def test_demo_helm_release_values_file_of_prod(kind: str) -> None:
    # examples/gitops-repo: prod's values.yaml becomes the HelmRelease's valuesFrom ConfigMap;
    # dev/ and staging/ hold other tags of the same image.
    path = "apps/notifications/overlays/prod" if kind == "HelmRelease" else None
    edits = tree_edits(
        demo_files(), demo_notifications(kind), "ghcr.io/acme-shop/notifications", "0.8.4", "0.9.0", path=path
    )
    assert edits == [Edit("apps/notifications/overlays/prod/values.yaml", 6, '  tag: "0.8.4"', '  tag: "0.9.0"')]


def test_only_the_sources_of_the_given_repository_are_read() -> None:
    # A multi-source app: the chart in acme/charts, its `$values` file in acme/deploy.
    charts_repo = helm_chart(f"image:\n  repository: {API}\n  tag: 1.4.2\n")
    deploy_repo = {"env/prod.yaml": f"image:\n  repository: {API}\n  tag: 1.4.2\n"}
    app = {
        "kind": "Application",
        "metadata": {"name": "api-prod"},
        "spec": {
            "sources": [
                {
                    "repoURL": "https://github.com/acme/charts.git",
                    "path": "chart",
                    "helm": {"valueFiles": ["$values/env/prod.yaml"]},
                },
                {"repoURL": "git@github.com:acme/deploy.git", "ref": "values"},
            ]
        },
    }
    # The values repository: its `$values` file sets the effective tag.
    assert tree_edits(deploy_repo, app, API, "1.4.2", "1.5.0", repository="https://github.com/acme/deploy") == [
        Edit("env/prod.yaml", 3, "  tag: 1.4.2", "  tag: 1.5.0")
    ]
    # The chart repository: values.yaml pins 1.4.2 too, but the values file of the other
    # repository comes later and may override it, so it is not edited.
    result = tree_edit_result(charts_repo, app, API, "1.4.2", "1.5.0", repository="https://github.com/acme/charts")
    assert result.edits == []
    assert result.reasons == [
        "values file $values/env/prod.yaml names no `ref` source in this repository",
        f"{API}'s tag in chart/values.yaml may be overridden by values file $values/env/prod.yaml, "
        "which is not in this repository; not changed",
    ]


def test_a_flux_kustomization_spec_images_overrides_what_its_path_builds() -> None:
    files = {
        "apps/prod/kustomization.yaml": "resources:\n- deployment.yaml\n",
        "apps/prod/deployment.yaml": deployment("api", f"{API}:1.4.2"),
        "clusters/prod/apps.yaml": (
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n"
            f"  path: ./apps/prod\n  images:\n  - name: {API}\n    newTag: 1.4.2\n"
        ),
    }
    app = {
        "kind": "Kustomization",
        "metadata": {"name": "apps"},
        "spec": {"path": "./apps/prod", "images": [{"name": API, "newTag": "1.4.2"}]},
    }
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [
        Edit("clusters/prod/apps.yaml", 9, "    newTag: 1.4.2", "    newTag: 1.5.0")
    ]
    # Held only by the cluster (the manifest lives elsewhere): the deployment's pin is dead.
    del files["clusters/prod/apps.yaml"]
    result = tree_edit_result(files, app, API, "1.4.2", "1.5.0")
    assert result.edits == []
    assert result.reasons == [
        f"{API} is set by spec.images of the Kustomization apps, whose manifest is not in this repository"
    ]


def test_an_image_map_with_name_and_tag_in_a_chart_from_a_helm_repository() -> None:
    files = {"values.yaml": "worker:\n  image:\n    name: ghcr.io/acme/api\n    tag: 1.4.2\n"}
    app = {
        "kind": "Application",
        "metadata": {"name": "api"},
        "spec": {
            "sources": [
                {"repoURL": "https://charts.acme.io", "chart": "api", "helm": {"valueFiles": ["$values/values.yaml"]}},
                {"repoURL": "https://git.example.com/acme/deploy", "ref": "values"},
            ]
        },
    }
    assert tree_edits(files, app, API, "1.4.2", "1.5.0") == [Edit("values.yaml", 4, "    tag: 1.4.2", "    tag: 1.5.0")]


SCAFFOLD_TEMPLATE = "\n".join(
    [
        "spec:",
        "  containers:",
        '  - image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"',
        "",
    ]
)


def test_an_empty_tag_falls_back_to_the_chart_app_version() -> None:
    # `helm create`'s scaffold: `tag: ""` means appVersion, so the image pin is Chart.yaml's.
    files = {
        "chart/Chart.yaml": 'apiVersion: v2\nname: api\nversion: 0.1.0\nappVersion: "1.4.2"\n',
        "chart/values.yaml": (
            f"image:\n  repository: {API}\n"
            '  # Overrides the image tag whose default is the chart appVersion.\n  tag: ""\n'
        ),
        "chart/templates/deployment.yaml": SCAFFOLD_TEMPLATE,
    }
    assert tree_edits(files, app_at("chart"), API, "1.4.2", "1.5.0") == [
        Edit("chart/Chart.yaml", 4, 'appVersion: "1.4.2"', 'appVersion: "1.5.0"')
    ]
    # A tag set in the values wins over appVersion.
    files["chart/values.yaml"] = f"image:\n  repository: {API}\n  tag: 1.4.2\n"
    assert tree_edits(files, app_at("chart"), API, "1.4.2", "1.5.0") == [
        Edit("chart/values.yaml", 3, "  tag: 1.4.2", "  tag: 1.5.0")
    ]


def test_a_flux_chart_from_git_reads_its_values_and_says_the_chart_version_must_move() -> None:
    files = {
        "charts/api/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\nappVersion: 1.0.0\n",
        "charts/api/values.yaml": f"image:\n  repository: {API}\n  tag: 1.4.2\n",
        "charts/api/templates/deployment.yaml": SCAFFOLD_TEMPLATE,
        "apps/api/release.yaml": (
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\nspec:\n  chart:\n"
            "    spec:\n      chart: ./charts/api\n      sourceRef:\n        kind: GitRepository\n"
            "        name: flux-system\n"
        ),
    }
    release = {"kind": "HelmRelease", "metadata": {"name": "api"}, "spec": {}}
    result = tree_edit_result(files, release, API, "1.4.2", "1.5.0", path="apps/api")
    assert result.edits == [Edit("charts/api/values.yaml", 3, "  tag: 1.4.2", "  tag: 1.5.0")]
    assert result.reasons == [
        "Flux builds a new api chart only when charts/api/Chart.yaml's version changes (reconcileStrategy "
        "ChartVersion): bump it in the same change, or the edit is not deployed"
    ]
