"""What an app renders from Helm value layers, as its Git pins (`tree_reads(...).pins`).

A tag that a higher layer overrides (the chart's values.yaml under an environment's values
file, a base HelmRelease's values under an overlay's patch, a values file under Argo CD's
`.argocd-source-<app>.yaml` parameters) is not the app's pin; the effective tag is, even
where no repository sits beside it. The edit and the pin are the same line.
"""

from __future__ import annotations

from typing import Any

from forges.pins import scan, tree_edits
from forges.pins.layouts.tree import tree_reads

API = "ghcr.io/acme/api"


def rendered(files: dict[str, str], app: dict[str, Any], path: str | None = None) -> list[tuple[str, int, str, str]]:
    reads = tree_reads(files, app, path=path)
    pins = reads.pins(scan({name: files[name] for name in reads.paths}).pins)
    return sorted((pin.path, pin.line, pin.image, pin.version) for pin in pins)


def helm_app(**helm: Any) -> dict[str, Any]:
    return {
        "kind": "Application",
        "metadata": {"name": "api-prod", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://git.example.com/acme/deploy", "path": "chart", "helm": helm}},
    }


CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\n",
    "chart/values.yaml": f"image:\n  repository: {API}\n  tag: 1.4.2\n",
    "chart/templates/deployment.yaml": (
        'spec:\n  containers:\n  - image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"\n'
    ),
    "chart/values-prod.yaml": "image:\n  tag: 1.5.0\n",
}


def test_an_environment_values_file_tag_is_the_pin_not_the_charts_default() -> None:
    app = helm_app(valueFiles=["values-prod.yaml"])
    assert rendered(CHART, app) == [("chart/values-prod.yaml", 2, API, "1.5.0")]
    assert [(e.path, e.line) for e in tree_edits(CHART, app, API, "1.5.0", "1.6.0")] == [("chart/values-prod.yaml", 2)]
    # Without the values file, the chart's default is what renders.
    assert rendered(CHART, helm_app()) == [("chart/values.yaml", 3, API, "1.4.2")]


def test_an_image_updater_parameter_overrides_the_values_files() -> None:
    files = dict(CHART)
    files["chart/.argocd-source-api-prod.yaml"] = 'helm:\n  parameters:\n  - name: image.tag\n    value: "1.6.0"\n'
    assert rendered(files, helm_app(valueFiles=["values-prod.yaml"])) == [
        ("chart/.argocd-source-api-prod.yaml", 4, API, "1.6.0")
    ]


def helm_release(name: str, values: str, extra: str = "") -> str:
    return (
        f"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\nspec:\n"
        f"{extra}  values:\n{values}"
    )


FLUX = {
    "apps/base/api/kustomization.yaml": "resources:\n- release.yaml\n",
    "apps/base/api/release.yaml": helm_release(
        "api",
        f"    image:\n      repository: {API}\n      tag: 1.4.2\n",
        "  chart:\n    spec:\n      chart: api\n      version: 0.3.1\n",
    ),
    "apps/prod/kustomization.yaml": "resources:\n- ../base/api\npatches:\n- path: api-values.yaml\n",
    "apps/prod/api-values.yaml": helm_release("api", "    image:\n      tag: 1.5.0\n"),
    "apps/staging/kustomization.yaml": "resources:\n- ../base/api\n",
}


def test_an_overlay_patch_of_a_base_release_tag_is_the_pin() -> None:
    release = {
        "kind": "HelmRelease",
        "metadata": {"name": "api", "namespace": "apps"},
        "spec": {"chart": {"spec": {"chart": "api", "version": "0.3.1"}}},
    }
    kustomization = {"kind": "Kustomization", "metadata": {"name": "apps"}, "spec": {"path": "./apps/prod"}}
    expected = [("apps/prod/api-values.yaml", 8, API, "1.5.0")]
    assert rendered(FLUX, release, path="apps/prod") == expected
    assert rendered(FLUX, kustomization) == expected
    assert rendered(FLUX, release, path="apps/staging") == [("apps/base/api/release.yaml", 13, API, "1.4.2")]


def test_a_post_renderer_tag_is_the_pin_not_the_values_it_renders_over() -> None:
    mirror = "asia-southeast1-docker.pkg.dev/acme/mirror/api"
    files = {
        "api/release.yaml": helm_release(
            "api",
            f"    image:\n      repository: {API}\n      tag: 1.4.2\n",
            f"  postRenderers:\n  - kustomize:\n      images:\n      - name: {API}\n        newName: {mirror}\n"
            "        newTag: 1.5.0\n",
        )
    }
    release = {"kind": "HelmRelease", "metadata": {"name": "api", "namespace": "apps"}, "spec": {}}
    assert rendered(files, release, path="api") == [("api/release.yaml", 11, mirror, "1.5.0")]
