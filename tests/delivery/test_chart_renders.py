"""A Helm chart's rendered diff through Helm's own engine (the `helm` extra): the chart in
tests/fixtures/charts/web, packaged by Helm and pushed as Helm pushes it to the real registry
(tests/fakes/oci_registry.py), rendered with a Flux HelmRelease's values at the base branch and at a
pull request's head (a forge fake); and the same for an Argo CD Helm app's `$values` file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops.models import GitOpsApp
from portal.delivery import helm_render
from portal.delivery.chart_renders import NOT_INSTALLED, chart_diff, coalesce
from portal.delivery.rendered_diff import FieldChange
from portal.delivery.rendered_previews import Target, render
from portal.kernel.catalog.models import Cluster, Environment
from tests.fakes.forges.harness import Harness, running

pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.oci_registry import Registry, push_blob, push_manifest  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]
helm = pytest.importorskip("helm_python", reason="Helm's engine is the `helm` extra (CI installs it)")

CHART = Path(__file__).resolve().parents[1] / "fixtures" / "charts" / "web"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CONTENT = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
FOLDER = "apps/web/prod"
RELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: shop
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: 1.4.0
      sourceRef:
        kind: HelmRepository
        name: acme-charts
  values:
    replicaCount: 2
    image:
      tag: {tag}
"""


@pytest.fixture(scope="module")
def chart_registry(open_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """The chart, packaged by Helm, pushed as `helm push` lays it out (config + one content layer)."""
    archive = Path(helm.package(CHART, destination=tmp_path_factory.mktemp("chart"))).read_bytes()
    config = json.dumps({"apiVersion": "v2", "name": "web", "version": "1.4.0", "appVersion": "1.0.0"}).encode()
    repository = "acme/charts/web"
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": HELM_CONFIG, "digest": push_blob(open_registry.url, repository, config),
                   "size": len(config)},
        "layers": [{"mediaType": HELM_CONTENT, "digest": push_blob(open_registry.url, repository, archive),
                    "size": len(archive)}],
    }
    push_manifest(open_registry.url, repository, "1.4.0", manifest)
    return open_registry


@pytest.fixture
def forge() -> Iterator[Harness]:
    with running("github", {f"{FOLDER}/helmrelease.yaml": RELEASE.format(tag="1.0.0"),
                            "values/web-prod.yaml": "replicaCount: 2\nimage:\n  tag: 1.0.0\n"}) as harness:
        yield harness


def push(harness: Harness, files: dict[str, str]) -> str:
    model = harness.model
    parent = model.branches.get("portal/web", model.branches["main"])
    tree = dict(model.commits[parent].files)
    tree.update({path: ("100644", model.put_blob(text.encode())) for path, text in files.items()})
    model.branches["portal/web"] = model.commit(tree, [parent], "values")
    return model.branches["portal/web"]


@pytest.fixture
def cluster(db, chart_registry: Registry, settings) -> Cluster:
    settings.PORTAL_REGISTRY_PLAIN_HTTP = [chart_registry.host]
    prod = Environment.objects.create(name="prod", order=3, production=True)
    return Cluster.objects.create(name="prod-eu-1", environment=prod)


def test_a_values_edit_is_rendered_before_and_after_by_helms_engine(cluster, chart_registry, forge) -> None:
    release = GitOpsApp.objects.create(
        cluster=cluster, tool="flux", kind="HelmRelease", namespace="shop", name="web",
        repo_url=f"oci://{chart_registry.host}/acme/charts", chart="web", target_revision="1.4.0",
        raw={"spec": {"chart": {"spec": {"chart": "web", "version": "1.4.0"}}}},
    )
    head = push(forge, {f"{FOLDER}/helmrelease.yaml": RELEASE.format(tag="1.1.0").replace("replicaCount: 2",
                                                                                           "replicaCount: 3")})

    [diff], [output] = render([Target(release, FOLDER)], forge.forge, forge.repository, base="main", head=head)

    engine = helm_render.engine_version()
    print(f"rendered by {engine} (helm-python-sdk {helm.__version__})")
    assert diff.renderer == engine and engine.startswith("Helm v4.")
    assert not diff.error, diff.error
    [deployment] = diff.comparison.objects
    assert deployment.label == "Deployment shop/web"  # Flux's release name, in the release's namespace
    assert deployment.fields == (
        FieldChange("spec.replicas", "2", "3"),
        FieldChange("spec.template.spec.containers[web].image", "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/web:1.1.0"),
    )
    assert diff.comparison.unchanged == 1  # the Service; NOTES.txt is not an object
    assert {obj["kind"] for obj in output["after"]} == {"Deployment", "Service"}


def test_an_argocd_helm_apps_values_file_from_the_pull_requests_repository(cluster, chart_registry, forge) -> None:
    spec = {"sources": [
        {"repoURL": f"{chart_registry.host}/acme/charts", "chart": "web", "targetRevision": "1.4.0",
         "helm": {"releaseName": "web-prod", "valueFiles": ["$values/values/web-prod.yaml"],
                  "valuesObject": {"env": {"REGION": "eu-west-1"}}}},
        {"repoURL": forge.repository, "targetRevision": "main", "ref": "values"},
    ]}
    app = GitOpsApp.objects.create(
        cluster=cluster, tool="argo", kind="Application", namespace="argocd", name="web-prod",
        destination_namespace="shop", raw={"spec": spec},
        sources=[{"repo_url": s["repoURL"], "chart": s.get("chart", ""), "target_revision": s["targetRevision"],
                  "path": "", "ref": s.get("ref", "")} for s in spec["sources"]],
    )
    head = push(forge, {"values/web-prod.yaml": "replicaCount: 2\nimage:\n  tag: 1.0.0\nresources:\n"
                                                "  limits:\n    memory: 256Mi\n"})

    result = chart_diff(app, forge.forge, forge.repository, base="main", head=head, folder="")

    assert result is not None
    diff, _before, _after = result
    [deployment] = diff.comparison.objects
    assert deployment.label == "Deployment shop/web-prod"
    assert deployment.fields == (
        FieldChange("spec.template.spec.containers[web].resources.limits.memory", None, "256Mi"),
    )


def test_without_helms_engine_the_app_says_no_renderer(cluster, chart_registry, forge, monkeypatch) -> None:
    monkeypatch.setattr(helm_render, "engine", lambda: None)
    release = GitOpsApp.objects.create(cluster=cluster, tool="flux", kind="HelmRelease", namespace="shop", name="web",
                                       repo_url=f"oci://{chart_registry.host}/acme/charts", chart="web",
                                       target_revision="1.4.0")

    diff, before, after = chart_diff(release, forge.forge, forge.repository, base="main", head="main", folder=FOLDER)

    assert (diff.renderer, diff.error, before, after) == ("", NOT_INSTALLED, [], [])


def test_values_merge_as_helm_coalesces_them() -> None:
    merged = coalesce({"image": {"repository": "r", "tag": "1"}, "debug": True}, {"image": {"tag": "2"}, "debug": None})

    assert merged == {"image": {"repository": "r", "tag": "2"}}
