"""Each application's Git pins are those its own manifests build, not every pin under its path.

One Flux Kustomization (`apps`, path ./apps) applies two HelmReleases of two services from one
file: podinfo (fluxcd/flux2-kustomize-helm-example's release, its redis image in `spec.values`)
and notifications (the demo's, its values in a ConfigMap that the kustomization's
configMapGenerator makes from a file). Each HelmRelease's pins are its own; the Kustomization,
which builds both, has both; a file in the folder that the kustomization does not include is
nobody's. Read through the real GitHub client against the GitHub fake: one batch, one tree
read, each file read once."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gitops.models import GitOpsApp
from portal.delivery.current_pins import batch_apps, due_batches, git_pins, read_pins
from portal.kernel.catalog.models import Service
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = Path("/work/shared/testdata/repo-layouts/flux-helmrelease-base-values")
REDIS = "public.ecr.aws/docker/library/redis"
NOTIFICATIONS = "ghcr.io/acme-shop/notifications"

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - podinfo-repository.yaml
  - releases.yaml
configMapGenerator:
  - name: notifications-values
    files:
      - values.yaml=notifications-values.yaml
generatorOptions:
  disableNameSuffixHash: true
"""
# Another service's values, left in the folder: no kustomization includes it.
STRAY = "image:\n  repository: ghcr.io/acme-shop/notifications\n  tag: 0.1.0\n"


def repository_files() -> dict[str, str]:
    release = (LAYOUT / "apps/base/podinfo/release.yaml").read_text()
    notifications = (ROOT / "examples/gitops-repo/apps/notifications/overlays/prod/helmrelease.yaml").read_text()
    return {
        "apps/kustomization.yaml": KUSTOMIZATION,
        "apps/podinfo-repository.yaml": (LAYOUT / "apps/base/podinfo/repository.yaml").read_text(),
        "apps/releases.yaml": release.rstrip("\n") + "\n---\n" + notifications,
        "apps/notifications-values.yaml": (
            ROOT / "examples/gitops-repo/apps/notifications/overlays/prod/values.yaml"
        ).read_text(),
        "apps/old/values.yaml": STRAY,
        "README.md": "acme/gitops\n",
    }


def line_of(files: dict[str, str], path: str, text: str, after: str = "") -> int:
    content = files[path]
    return content[: content.index(text, content.index(after))].count("\n") + 1


def as_cluster_holds(files: dict[str, str], name: str) -> dict:
    """The HelmRelease of that name as kustomize-controller applied it (its labels)."""
    document = next(d for d in yaml.safe_load_all(files["apps/releases.yaml"]) if d["metadata"]["name"] == name)
    applied = copy.deepcopy(document)
    applied["metadata"]["labels"] = {"kustomize.toolkit.fluxcd.io/name": "apps",
                                     "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    return applied


def seed_release(cluster, files: dict[str, str], name: str, service: Service, version: str) -> GitOpsApp:
    raw = as_cluster_holds(files, name)
    chart = raw["spec"]["chart"]["spec"]
    helm = f"https://charts.example/{name}"
    return seed_app(cluster, name, service=service, version=version, tool="flux", kind="HelmRelease",
                    namespace=raw["metadata"]["namespace"], repo_url=helm, path="", chart=chart["chart"],
                    target_revision=chart.get("version", "*"), raw=raw,
                    sources=[{"repo_url": helm, "path": "", "chart": chart["chart"],
                              "target_revision": chart.get("version", "*"),
                              "ref": f"HelmRepository/{raw['metadata']['namespace']}/{chart['sourceRef']['name']}"}])


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch, files=repository_files()) as harness:
        yield harness


def test_two_helmreleases_under_one_kustomization_path_each_have_their_own_pins(catalog, github):
    files = repository_files()
    redis = Service.objects.create(name="podinfo-redis", image_repository=REDIS)
    notifications = Service.objects.create(name="notifications", image_repository=NOTIFICATIONS)
    applier = seed_app(catalog.prod_us, "apps", tool="flux", kind="Kustomization", namespace="flux-system",
                       repo_url=github.repository, path="./apps", target_revision="main",
                       raw={"metadata": {"name": "apps", "namespace": "flux-system"},
                            "spec": {"path": "./apps", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}})
    podinfo = seed_release(catalog.prod_us, files, "podinfo", redis, "8.6.2")
    notifier = seed_release(catalog.prod_us, files, "notifications", notifications, "0.8.4")

    [batch] = due_batches()
    assert sorted(batch.app_ids) == sorted([applier.pk, podinfo.pk, notifier.pk])
    reports = read_pins(batch_apps(batch.repository, batch.revision, batch.app_ids))

    assert all(report.ok for report in reports.values()), reports
    redis_pin = {"service": "podinfo-redis", "version": "8.6.2", "path": "apps/releases.yaml",
                 "line": line_of(files, "apps/releases.yaml", "tag: 8.6.2")}
    notifications_pin = {"service": "notifications", "version": "0.8.4", "path": "apps/notifications-values.yaml",
                         "line": line_of(files, "apps/notifications-values.yaml", '"0.8.4"')}
    assert git_pins(podinfo) == [redis_pin]
    assert git_pins(notifier) == [notifications_pin]
    assert git_pins(applier) == [notifications_pin, redis_pin]
    # One tree read for the batch; each file read once; the stray values file never.
    log = [path for method, path, _status in github.server.log if method == "GET"]
    assert len([p for p in log if "/git/trees/" in p]) == 1
    contents = [p.split("/contents/", 1)[1] for p in log if "/contents/" in p]
    assert len(contents) == len(set(contents))
    assert "apps/old/values.yaml" not in contents and "README.md" not in contents


def test_a_helmrelease_values_patch_is_read_with_it_and_an_overlays_images_beat_its_base(catalog, monkeypatch):
    # fluxcd/flux2-kustomize-helm-example as it is: the production overlay patches the base's
    # HelmRelease; a kustomize app beside it pins its own image in its base, overridden by its overlay.
    files = {str(p.relative_to(LAYOUT)): p.read_text() for p in sorted(LAYOUT.rglob("*.yaml"))}
    files["apps/production/web/kustomization.yaml"] = (
        "resources:\n  - ../../base/web\nimages:\n  - name: ghcr.io/acme-shop/web\n    newTag: 2.0.1\n")
    files["apps/base/web/kustomization.yaml"] = "resources:\n  - deployment.yaml\n"
    files["apps/base/web/deployment.yaml"] = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n"
        "      containers:\n        - name: web\n          image: ghcr.io/acme-shop/web:1.0.0\n")
    redis = Service.objects.create(name="podinfo-redis", image_repository=REDIS)
    web = Service.objects.create(name="web", image_repository="ghcr.io/acme-shop/web")
    with serving("github", monkeypatch, files=files) as github:
        raw = copy.deepcopy(next(yaml.safe_load_all(files["apps/base/podinfo/release.yaml"])))
        raw["metadata"]["labels"] = {"kustomize.toolkit.fluxcd.io/name": "apps",
                                     "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
        seed_app(catalog.prod_us, "apps", tool="flux", kind="Kustomization", namespace="flux-system",
                 repo_url=github.repository, path="./apps/production", target_revision="main")
        podinfo = seed_app(catalog.prod_us, "podinfo", service=redis, version="8.6.2", tool="flux",
                           kind="HelmRelease", namespace="podinfo", repo_url="https://stefanprodan.github.io/podinfo",
                           path="", chart="podinfo", target_revision=">=1.0.0", raw=raw)
        frontend = seed_app(catalog.prod_eu, "web", service=web, version="2.0.1", repo_url=github.repository,
                            path="apps/production/web", target_revision="HEAD")
        for batch in due_batches():
            assert all(r.ok for r in read_pins(batch_apps(batch.repository, batch.revision, batch.app_ids)).values())

    base = "apps/base/podinfo/release.yaml"
    assert git_pins(podinfo) == [
        {"service": "podinfo-redis", "version": "8.6.2", "path": base, "line": line_of(files, base, "tag: 8.6.2")}]
    # The base's 1.0.0 is what the overlay's `images:` replaces: not a pin of this app.
    assert git_pins(frontend) == [
        {"service": "web", "version": "2.0.1", "path": "apps/production/web/kustomization.yaml", "line": 5}]


def application(name: str, image: str, tag: str) -> str:
    return (
        f"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n"
        "spec:\n  project: default\n  destination:\n    name: in-cluster\n    namespace: shop\n  source:\n"
        f"    repoURL: oci://ghcr.io/acme-shop/charts\n    chart: {name}\n    targetRevision: 2.1.0\n    helm:\n"
        f"      valuesObject:\n        image:\n          repository: {image}\n          tag: \"{tag}\"\n"
    )


def test_chart_only_applications_in_one_parent_folder_each_have_their_own_manifests_pins(catalog, monkeypatch):
    # An app-of-apps folder with two chart-only Applications in one file, each keeping its
    # values in `helm.valuesObject` as Argo CD's live child Application does.
    cart, web = Service.objects.create(name="cart", image_repository="ghcr.io/acme-shop/cart"), Service.objects.create(
        name="web", image_repository="ghcr.io/acme-shop/web")
    shop = "argocd/apps/shop.yaml"
    files = {shop: application("cart", cart.image_repository, "2.1.0") + "---\n"
             + application("web", web.image_repository, "5.0.0"), "README.md": "acme/gitops\n"}
    with serving("github", monkeypatch, files=files) as github:
        seed_app(catalog.prod_eu, "apps", repo_url=github.repository, path="argocd/apps", target_revision="main",
                 raw={"metadata": {"name": "apps", "namespace": "argocd"}, "status": {"resources": [
                     {"group": "argoproj.io", "kind": "Application", "namespace": "argocd", "name": name}
                     for name in ("cart", "web")]}})
        children = {}
        for service, tag in ((cart, "2.1.0"), (web, "5.0.0")):
            raw = next(d for d in yaml.safe_load_all(files[shop]) if d["metadata"]["name"] == service.name)
            children[service.name] = seed_app(
                catalog.prod_eu, service.name, service=service, version=tag, raw=raw,
                repo_url="oci://ghcr.io/acme-shop/charts", path="", chart=service.name, target_revision="2.1.0",
                sources=[{"repo_url": "oci://ghcr.io/acme-shop/charts", "chart": service.name,
                          "target_revision": "2.1.0", "path": "", "ref": ""}])
        [batch] = due_batches()
        assert all(r.ok for r in read_pins(batch_apps(batch.repository, batch.revision, batch.app_ids)).values())

    assert git_pins(children["cart"]) == [
        {"service": "cart", "version": "2.1.0", "path": shop, "line": line_of(files, shop, '"2.1.0"')}]
    assert git_pins(children["web"]) == [
        {"service": "web", "version": "5.0.0", "path": shop, "line": line_of(files, shop, '"5.0.0"')}]


def test_a_helmrelease_whose_chart_is_in_git_reads_that_charts_values(catalog, monkeypatch):
    # The chart from a GitRepository: pin_source points at its folder; its values.yaml is the
    # pin (not its templates, not another chart's values beside it).
    files = {
        "charts/podinfo/Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.7.0\nappVersion: 6.7.0\n",
        "charts/podinfo/values.yaml": "image:\n  repository: ghcr.io/stefanprodan/podinfo\n  tag: 6.7.0\n",
        "charts/podinfo/templates/deployment.yaml": "image: ghcr.io/stefanprodan/podinfo:{{ .Values.image.tag }}\n",
        "charts/other/values.yaml": "image:\n  repository: ghcr.io/stefanprodan/podinfo\n  tag: 1.0.0\n",
    }
    podinfo = Service.objects.create(name="podinfo", image_repository="ghcr.io/stefanprodan/podinfo")
    with serving("github", monkeypatch, files=files) as github:
        raw = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "podinfo", "namespace": "podinfo"},
               "spec": {"chart": {"spec": {"chart": "./charts/podinfo",
                                           "sourceRef": {"kind": "GitRepository", "name": "flux-system",
                                                         "namespace": "flux-system"}}}}}
        app = seed_app(catalog.prod_us, "podinfo", service=podinfo, version="6.7.0", tool="flux",
                       kind="HelmRelease", namespace="podinfo", repo_url=github.repository, path="./charts/podinfo",
                       chart="./charts/podinfo", target_revision="main", raw=raw,
                       sources=[{"repo_url": github.repository, "path": "./charts/podinfo", "chart": "./charts/podinfo",
                                 "target_revision": "main", "ref": "GitRepository/flux-system/flux-system"}])
        [batch] = due_batches()
        assert all(r.ok for r in read_pins(batch_apps(batch.repository, batch.revision, batch.app_ids)).values())

    assert git_pins(app) == [
        {"service": "podinfo", "version": "6.7.0", "path": "charts/podinfo/values.yaml", "line": 3}]
