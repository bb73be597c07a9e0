"""forges.pins.chart_edits on the real repository layouts: where a pinned chart version lives.

Expected edits worked out by reading the layouts (see test_tree_edits for how the app objects
are built). A semver range is not a pin: no edit, and the reason says what the app follows.
"""

from __future__ import annotations

import pytest

from forges.pins import Edit, chart_edits
from forges.pins.layouts.tree import chart_edit_result
from tests.forges.layout_cases import APPSET, CHART_EXPECTED, apps, generated, layout, layout_files


@pytest.mark.parametrize(("folder", "to_version", "expected"), CHART_EXPECTED, ids=[e[0] for e in CHART_EXPECTED])
def test_layout_chart_upgrade_edits_exactly_the_expected_line(
    folder: str, to_version: str, expected: list[Edit]
) -> None:
    chart = layout(folder)["chart"]
    edits = chart_edits(layout_files(folder), apps()[folder], chart["name"], chart["version"], to_version)
    assert edits == expected


def test_every_layout_with_a_pinned_chart_is_covered() -> None:
    from tests.forges.layout_cases import LAYOUTS

    pinned = sorted(p.name for p in LAYOUTS.iterdir() if (p / "LAYOUT.json").is_file() and "chart" in layout(p.name))
    assert sorted(folder for folder, _, _ in CHART_EXPECTED) == pinned


def test_helm_release_found_through_its_kustomization_path() -> None:
    folder = "d2-oci-chart-semver"
    edits = chart_edits(
        layout_files(folder), apps()[folder], "podinfo", "6.14.0", "6.14.1", path="components/frontend/production"
    )
    assert [(e.path, e.line) for e in edits] == [("components/frontend/base/podinfo.yaml", 9)]


def gitops_bridge_app(environment: str) -> dict:
    return generated(
        "gitops-bridge-appset-chart",
        {
            ".metadata.annotations.addons_repo_url": "https://github.com/example/addons",
            ".metadata.annotations.addons_repo_revision": "main",
            ".metadata.annotations.addons_repo_basepath": "",
            ".metadata.labels.environment": environment,
            ".values.addonChart": "ingress-nginx",
            ".values.addonChartRepository": "https://kubernetes.github.io/ingress-nginx",
            ".values.addonChartVersion": "4.10.0",
            ".name": f"{environment}-cluster",
            'default "LoadBalancer" .metadata.annotations.ingress_nginx_service_type': "LoadBalancer",
        },
    )


@pytest.mark.parametrize(("environment", "line"), [("staging", 33), ("prod", 39), ("dev", 18)])
def test_appset_generator_value_is_edited_for_the_apps_cluster(environment: str, line: int) -> None:
    # Which element of the merge generator gives the version depends on the cluster's
    # `environment` label, which the generated app shows in its rendered valueFiles.
    folder = "gitops-bridge-appset-chart"
    edits = chart_edits(layout_files(folder), gitops_bridge_app(environment), "ingress-nginx", "4.10.0", "4.10.1")
    assert [(e.path, e.line) for e in edits] == [(APPSET, line)]


def test_flux_semver_range_is_not_a_pin() -> None:
    folder = "flux-helmrelease-base-values"
    result = chart_edit_result(layout_files(folder), apps()[folder], "podinfo", "6.9.1", "6.9.2")
    assert result.edits == []
    assert any("follows >=1.0.0" in reason for reason in result.reasons), result.reasons


@pytest.mark.parametrize("revision", ["1.2.*", ">=1.0.0", "*", "~18.2", "18.x"])
def test_argocd_chart_range_is_not_a_pin(revision: str) -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n"
        f"    repoURL: https://charts.bitnami.com/bitnami\n    chart: nginx\n    targetRevision: '{revision}'\n"
    )
    app = {
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": {
            "source": {"repoURL": "https://charts.bitnami.com/bitnami", "chart": "nginx", "targetRevision": revision}
        },
    }
    result = chart_edit_result({"apps/web.yaml": text}, app, "nginx", "18.2.3", "18.2.4")
    assert result.edits == []
    assert result.reasons == [f"web follows nginx {revision}; a range is not a pin, so there is nothing to change"]


def test_argocd_exact_chart_version_is_edited_in_its_manifest() -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n"
        "    repoURL: https://charts.bitnami.com/bitnami\n    chart: nginx\n    targetRevision: 18.2.3 # pinned\n"
    )
    app = {
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": {
            "source": {"chart": "nginx", "repoURL": "https://charts.bitnami.com/bitnami", "targetRevision": "18.2.3"}
        },
    }
    assert chart_edits({"apps/web.yaml": text}, app, "nginx", "18.2.3", "18.10.0") == [
        Edit("apps/web.yaml", 9, "    targetRevision: 18.2.3 # pinned", "    targetRevision: 18.10.0 # pinned")
    ]


def test_flux_overlay_patch_version_wins_over_the_base() -> None:
    release = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\nspec:\n"
        "  chart:\n    spec:\n      chart: api\n      version: {version}\n"
    )
    files = {
        "base/kustomization.yaml": "resources:\n- release.yaml\n",
        "base/release.yaml": release.format(version="0.3.0"),
        "prod/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: version.yaml\n",
        "prod/version.yaml": release.format(version='"0.3.1"'),
    }
    app = {"kind": "HelmRelease", "metadata": {"name": "api"}, "spec": {"chart": {"spec": {"chart": "api"}}}}
    assert chart_edits(files, app, "api", "0.3.1", "0.4.0", path="prod") == [
        Edit("prod/version.yaml", 9, '      version: "0.3.1"', '      version: "0.4.0"')
    ]


def test_demo_helm_release_chart_version() -> None:
    from tests.forges.test_tree_edits import demo_files, demo_notifications

    assert chart_edits(demo_files(), demo_notifications("Kustomization"), "notifications", "0.3.1", "0.3.2") == [
        Edit(
            "apps/notifications/overlays/prod/helmrelease.yaml", 11, '      version: "0.3.1"', '      version: "0.3.2"'
        )
    ]


def test_appset_generator_value_is_not_guessed_when_the_app_hides_its_cluster_label() -> None:
    # Without the rendered valueFiles, nothing in the app says which environment its cluster is in.
    folder = "gitops-bridge-appset-chart"
    app = gitops_bridge_app("prod")
    del app["spec"]["sources"][1]["helm"]["valueFiles"]
    result = chart_edit_result(layout_files(folder), app, "ingress-nginx", "4.10.0", "4.10.1")
    assert result.edits == []
    assert result.reasons == [
        f"{APPSET}: a generator selects clusters by the label environment, which addon-prod-cluster-ingress-nginx "
        "does not show; cannot tell which generator sets addonChartVersion"
    ]
