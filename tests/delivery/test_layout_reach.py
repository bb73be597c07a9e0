"""The reach of a change on real repository layouts, from the builds the pin read keeps.

For every layout in tests/data/repo-layouts the fake forge holds its files and the applications
its own manifests define (an ApplicationSet's generated Applications, an app-of-apps chart's
entries, the Flux Kustomizations of each cluster, the overlays each environment deploys) are
stored on clusters of the environments they are named for. Their pins are read the way the pin
task reads them (`read_pins`, one tree read through the real forge client), which keeps what each
builds; then a change to a file shared by several applications (a base, a component, a common
values file) and to one application's own file (an overlay, an environment's values file) is
reached with `portal.delivery.reach.reach_of`.

The expected applications were worked out by reading each layout's files (which kustomizations
include which bases, which value files each Application lists), not by running the code; the
cluster is the environment the app is named for. An application in another environment than the
change's target app is a warning.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from gitops.collectors.argocd import application_row
from gitops.derive.app_changes import plain
from portal.delivery.current_pins import read_pins
from portal.delivery.planner import UPGRADE, Change, MovedLine
from portal.delivery.reach import reach_of
from portal.kernel.catalog.models import Service
from tests.delivery.test_layout_previews import pointed_at
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app
from tests.forges.layout_cases import LAYOUTS, generated, layout, layout_files

pytestmark = pytest.mark.django_db

BRANCH = "trunk"  # the fake's default branch: every app follows HEAD


@dataclass(frozen=True)
class App:
    name: str
    cluster: str  # the catalog fixture's attribute: dev_cluster, staging_cluster, prod_eu, prod_us
    obj: dict[str, Any]


@dataclass(frozen=True)
class Case:
    folder: str
    apps: tuple[App, ...]
    target: str  # the app the change was offered for
    shared: str  # a file several apps build (or, where the layout shares none, the target's own)
    shared_reaches: frozenset[str]
    own: str  # a file only the target builds
    own_reaches: frozenset[str]


def argo(name: str, repo: str, path: str, **source: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "destination": {"namespace": name, "server": "https://kubernetes.default.svc"},
            "project": "default",
            "source": {"repoURL": f"https://github.com/{repo}", "path": path, "targetRevision": "HEAD", **source},
        },
    }


def flux(name: str, path: str) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": f"./{path}", "prune": True,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }


def helm(*value_files: str) -> dict[str, Any]:
    return {"helm": {"valueFiles": list(value_files)}}


def values_key_app(chart: str, env: str, cluster: str) -> dict[str, Any]:
    """What appset-multi-source-values-key's ApplicationSets generate for one chart and cluster."""
    app = generated("appset-multi-source-values-key", {
        "index .path.segments 1": chart, ".path.path": f"charts/{chart}", ".name": cluster,
        ".server": f"https://{cluster}.example.com"})
    if env == "prod":  # 09-helm-prod: the value files named by the cluster's env and region labels (eu)
        app["metadata"]["name"] = f"{chart}-{cluster}"
        app["spec"]["sources"][0]["helm"]["valueFiles"] = [
            f"$my-values/values/{chart}/common-values.yaml", f"$my-values/values/{chart}/app-version/prod-values.yaml",
            f"$my-values/values/{chart}/env-type/prod-values.yaml", f"$my-values/values/{chart}/regions/eu-values.yaml",
            f"$my-values/values/{chart}/envs/prod-eu-values.yaml"]
        app["spec"]["sources"][0]["helm"]["ignoreMissingValueFiles"] = True
    return app


def many_appsets(service: str, env: str) -> dict[str, Any]:
    return generated("appset-monorepo-many-apps", {
        "index .path.segments 1": service, "index .path.segments 3": env, ".path.path": f"apps/{service}/envs/{env}"})


def bridge(env: str, cluster: str) -> dict[str, Any]:
    """gitops-bridge's ingress-nginx ApplicationSet, generated for a cluster labelled `environment: <env>`."""
    return generated("gitops-bridge-appset-chart", {
        ".metadata.annotations.addons_repo_url": "https://github.com/gitops-bridge-dev/"
        "gitops-bridge-argocd-control-plane-template",
        ".metadata.annotations.addons_repo_revision": "main", ".metadata.annotations.addons_repo_basepath": "",
        ".metadata.labels.environment": env, ".values.addonChart": "ingress-nginx",
        ".values.addonChartRepository": "https://kubernetes.github.io/ingress-nginx",
        ".values.addonChartVersion": "4.10.0", ".name": cluster,
        'default "LoadBalancer" .metadata.annotations.ingress_nginx_service_type': "LoadBalancer"})


def own_manifest(folder: str, path: str) -> dict[str, Any]:
    """The Application a layout's own file defines."""
    return yaml.safe_load((LAYOUTS / folder / path).read_text())


EXAMPLES = "argoproj/argocd-example-apps"
CODEFRESH = "codefresh-contrib/gitops-certification-examples"
PROMOTION = "kostis-codefresh/gitops-environment-promotion"
PARAMETERS = "dkarpele/image-updater-examples"
AUTOPILOT = "schnatterer/argocd-autopilot-example"
BITNAMI = "argocd-multi-source-bitnami-values"


def both(*names: str) -> frozenset[str]:
    return frozenset(names)


CASES = [
    # Three stage overlays over one base; each overlay sets the tag with `images:`.
    Case("kargo-simple-stages", (
        App("guestbook-dev", "dev_cluster", argo("guestbook-dev", "akuity/kargo-simple", "env/dev")),
        App("guestbook-staging", "staging_cluster", argo("guestbook-staging", "akuity/kargo-simple", "env/staging")),
        App("guestbook-prod", "prod_eu", argo("guestbook-prod", "akuity/kargo-simple", "env/prod")),
    ), "guestbook-staging", "base/guestbook-deploy.yaml", both("guestbook-dev", "guestbook-staging", "guestbook-prod"),
        "env/staging/kustomization.yaml", both("guestbook-staging")),
    # Environments over one base and shared components (variants/non-prod: qa and integration-gpu).
    Case("kustomize-components-env-promotion", (
        App("qa", "dev_cluster", argo("qa", PROMOTION, "envs/qa")),
        App("integration-gpu", "staging_cluster", argo("integration-gpu", PROMOTION, "envs/integration-gpu")),
        App("prod-us", "prod_us", argo("prod-us", PROMOTION, "envs/prod-us")),
    ), "qa", "variants/non-prod/non-prod.yml", both("qa", "integration-gpu"),
        "envs/qa/version.yml", both("qa")),
    # `bases:` of two overlays; simple-app is a plain folder that builds neither.
    Case("codefresh-kustomize-legacy-bases", (
        App("production", "prod_eu", argo("production", CODEFRESH, "kustomize-apps/overlays/production")),
        App("staging", "staging_cluster", argo("staging", CODEFRESH, "kustomize-apps/overlays/staging")),
        App("simple-app", "dev_cluster", argo("simple-app", CODEFRESH, "simple-app")),
    ), "production", "kustomize-apps/base/deployment.yaml", both("production", "staging"),
        "kustomize-apps/overlays/production/config-map.yaml", both("production")),
    # One overlay over four bases; podinfo's separate kustomize/ example builds none of them.
    Case("podinfo-overlay-many-bases", (
        App("podinfo", "prod_eu", flux("podinfo", "deploy/overlays/production")),
        App("podinfo-example", "staging_cluster", flux("podinfo-example", "kustomize")),
    ), "podinfo", "deploy/bases/backend/deployment.yaml", both("podinfo"),
        "deploy/overlays/production/kustomization.yaml", both("podinfo")),
    # ApplicationSet over apps/*/envs/*: billing in two regions over its base, invoices over its own.
    Case("appset-monorepo-many-apps", (
        App("billing-prod-us", "prod_us", many_appsets("billing", "prod-us")),
        App("billing-prod-eu", "prod_eu", many_appsets("billing", "prod-eu")),
        App("invoices-prod-us", "prod_us", many_appsets("invoices", "prod-us")),
    ), "billing-prod-us", "apps/billing/base/deployment.yml", both("billing-prod-us", "billing-prod-eu"),
        "apps/billing/envs/prod-us/version.yml", both("billing-prod-us")),
    # The app-of-apps entries: a Helm chart, plain manifests and a kustomization of the same image.
    Case("argocd-helm-guestbook", (
        App("example.helm-guestbook", "prod_eu", argo("example.helm-guestbook", EXAMPLES, "helm-guestbook",
                                                        helm={"releaseName": "helm-guestbook"})),
        App("example.guestbook", "prod_eu", argo("example.guestbook", EXAMPLES, "guestbook")),
        App("example.kustomize-guestbook", "staging_cluster",
            argo("example.kustomize-guestbook", EXAMPLES, "kustomize-guestbook")),
    ), "example.helm-guestbook", "helm-guestbook/values.yaml", both("example.helm-guestbook"),
        "kustomize-guestbook/guestbook-ui-deployment.yaml", both("example.kustomize-guestbook")),
    # The plugin renders helm-guestbook as a file:// dependency, then patches it with kustomize.
    Case("argocd-kustomized-helm-plugin", (
        App("example.plugin-kustomized-helm", "prod_eu", argo("example.plugin-kustomized-helm", EXAMPLES,
                                                              "plugins/kustomized-helm",
                                                              plugin={"name": "kustomized-helm"})),
        App("example.helm-guestbook", "staging_cluster", argo("example.helm-guestbook", EXAMPLES, "helm-guestbook",
                                                              helm={"releaseName": "helm-guestbook"})),
    ), "example.plugin-kustomized-helm", "helm-guestbook/values.yaml",
        both("example.plugin-kustomized-helm", "example.helm-guestbook"),
        "plugins/kustomized-helm/overlays/guestbook-deployment.yaml", both("example.plugin-kustomized-helm")),
    # One umbrella chart: its Chart.yaml and its values file are its own.
    Case("argocd-helm-dependency", (
        App("example.helm-dependency", "prod_eu", argo("example.helm-dependency", EXAMPLES, "helm-dependency",
                                                       helm={"releaseName": "helm-dependency"})),
    ), "example.helm-dependency", "helm-dependency/Chart.yaml", both("example.helm-dependency"),
        "helm-dependency/values.yaml", both("example.helm-dependency")),
    # demo-prod lists values.yaml, common-values.yaml, prod-values.yaml; a staging app the chart's
    # staging-values.yaml instead of prod's.
    Case("codefresh-helm-valuefiles", (
        App("demo-prod", "prod_eu", argo("demo-prod", CODEFRESH, "helm-apps/many-envs-chart",
                                         **helm("values.yaml", "common-values.yaml", "prod-values.yaml"))),
        App("demo-staging", "staging_cluster", argo("demo-staging", CODEFRESH, "helm-apps/many-envs-chart",
                                                    **helm("values.yaml", "common-values.yaml",
                                                           "staging-values.yaml"))),
        App("simple", "dev_cluster", argo("simple", CODEFRESH, "helm-apps/simple-chart")),
    ), "demo-prod", "helm-apps/many-envs-chart/common-values.yaml", both("demo-prod", "demo-staging"),
        "helm-apps/many-envs-chart/prod-values.yaml", both("demo-prod")),
    # Each Application reads its own $values file; nothing is shared (the shared case is its own file).
    Case("argocd-multi-source-bitnami-values", (
        App("multi-source-helm", "prod_eu", own_manifest(BITNAMI, "multi-source-helm/app/multi-source-app.yaml")),
        App("helmvalues-list", "staging_cluster", own_manifest(BITNAMI, "helmvalues-list/app/helmvalues-list.yaml")),
        App("write-helmvalues", "dev_cluster", own_manifest(BITNAMI, "write-helmvalues/app/write-helmvalues.yaml")),
    ), "multi-source-helm", "multi-source-helm/source2/values.yaml", both("multi-source-helm"),
        "helmvalues-list/source2/values.yaml", both("helmvalues-list")),
    # One chart folder per environment, each with its image updater's parameters file.
    Case("argocd-source-helm-parameters", (
        App("prod-application-backend-euw1", "prod_eu",
            argo("prod-application-backend-euw1", PARAMETERS, "011-appset/cluster-addons/prod")),
        App("staging-application-backend-euw1", "staging_cluster",
            argo("staging-application-backend-euw1", PARAMETERS, "011-appset/cluster-addons/staging")),
    ), "prod-application-backend-euw1", "011-appset/cluster-addons/prod/values.yaml",
        both("prod-application-backend-euw1"),
        "011-appset/cluster-addons/prod/.argocd-source-prod-application-backend-euw1.yaml",
        both("prod-application-backend-euw1")),
    # Two overlays over one in-repo base (which points at a remote one).
    Case("autopilot-remote-base", (
        App("production-my-app", "prod_eu", argo("production-my-app", AUTOPILOT, "apps/my-app/overlays/production")),
        App("staging-my-app", "staging_cluster", argo("staging-my-app", AUTOPILOT, "apps/my-app/overlays/staging")),
    ), "production-my-app", "apps/my-app/base/kustomization.yaml", both("production-my-app", "staging-my-app"),
        "apps/my-app/overlays/production/kustomization.yaml", both("production-my-app")),
    # D2: each component's environments patch its base HelmReleases.
    Case("d2-oci-chart-semver", (
        App("frontend-production", "prod_eu", flux("frontend-production", "components/frontend/production")),
        App("frontend-staging", "staging_cluster", flux("frontend-staging", "components/frontend/staging")),
        App("backend-production", "prod_eu", flux("backend-production", "components/backend/production")),
    ), "frontend-production", "components/frontend/base/podinfo.yaml", both("frontend-production", "frontend-staging"),
        "components/frontend/production/podinfo-values.yaml", both("frontend-production")),
    # Each cluster's `apps` Kustomization builds its environment's folder over apps/base/podinfo.
    Case("flux-helmrelease-base-values", (
        App("apps", "prod_eu", flux("apps", "apps/production")),
        App("apps", "staging_cluster", flux("apps", "apps/staging")),
        App("infra-controllers", "prod_eu", flux("infra-controllers", "infrastructure/controllers")),
    ), "apps", "apps/base/podinfo/release.yaml", both("apps@prod-eu-1", "apps@staging-eu-1"),
        "apps/production/podinfo-values.yaml", both("apps@prod-eu-1")),
    # The addon ApplicationSet reads environments/<the cluster's environment label>/addons/…: only
    # `default` has a values file in the subtree (charts/addons/ was not copied), so none is shared.
    Case("gitops-bridge-appset-chart", (
        App("addon-my-cluster-ingress-nginx", "dev_cluster", bridge("default", "my-cluster")),
        App("addon-staging-cluster-ingress-nginx", "staging_cluster", bridge("staging", "staging-cluster")),
        App("addon-prod-cluster-ingress-nginx", "prod_eu", bridge("prod", "prod-cluster")),
    ), "addon-my-cluster-ingress-nginx", "environments/default/addons/ingress-nginx/values.yaml",
        both("addon-my-cluster-ingress-nginx"),
        "environments/default/addons/ingress-nginx/values.yaml", both("addon-my-cluster-ingress-nginx")),
    # app1 in qa and prod share its common values; the app-version file is qa's alone.
    Case("appset-multi-source-values-key", (
        App("app1-qa", "dev_cluster", values_key_app("app1", "qa", "qa")),
        App("app1-prod-eu", "prod_eu", values_key_app("app1", "prod", "prod-eu")),
    ), "app1-qa", "values/app1/common-values.yaml", both("app1-qa", "app1-prod-eu"),
        "values/app1/app-version/qa-values.yaml", both("app1-qa")),
]


def at_head(obj: dict[str, Any], url: str) -> dict[str, Any]:
    """`obj` following the fake's default branch wherever it reads the layout's repository."""
    obj = copy.deepcopy(obj)
    spec = obj["spec"]
    for source in spec.get("sources") or [spec.get("source") or {}]:
        if source.get("repoURL") == url:
            source["targetRevision"] = "HEAD"
    return obj


def stored(app: App, folder: str, catalog: Any, url: str, service: Service) -> Any:
    obj, _ = pointed_at(app.obj, layout(folder)["source"]["repo"], url)
    cluster = getattr(catalog, app.cluster)
    facts = layout(folder)
    if obj["kind"] == "Application":
        row = application_row(at_head(obj, url))
        primary = row.sources[0]
        return seed_app(cluster, app.name, service=service, version=facts["running_tag"], tool="argo",
                        repo_url=primary.repo_url, path=primary.path, chart=primary.chart,
                        target_revision=primary.target_revision, sources=[plain(s) for s in row.sources], raw=row.raw)
    return seed_app(cluster, app.name, service=service, version=facts["running_tag"], tool="flux",
                    kind="Kustomization", repo_url=url, path=obj["spec"]["path"], target_revision="", raw=obj)


def named(reached: Any, names: set[str]) -> str:
    """An app by its name, or name@cluster where a layout names two apps alike."""
    return reached.app if reached.app in names else f"{reached.app}@{reached.cluster}"


@pytest.mark.parametrize("case", CASES, ids=[case.folder for case in CASES])
def test_a_change_reaches_exactly_the_apps_that_build_the_edited_file(case, catalog, monkeypatch):
    facts = layout(case.folder)
    with serving("github", monkeypatch, layout_files(case.folder), default_branch=BRANCH) as harness:
        service = Service.objects.create(name="layout-app", image_repository=facts["image"])
        rows = [stored(app, case.folder, catalog, harness.repository, service) for app in case.apps]
        reports = read_pins(rows)
        assert all(report.ok for report in reports.values()), reports
        target = next(row for row in rows if row.name == case.target)
        names = {app.name for app in case.apps if sum(a.name == app.name for a in case.apps) == 1}
        change = Change(kind=UPGRADE, services=("layout-app",), environment=target.cluster.environment.name,
                        repository=harness.repository, base_branch=BRANCH, path=target.path, image=facts["image"],
                        from_version=facts["running_tag"], to_version="9.9.9", apps=(target.pk,))
        for path, expected in ((case.shared, case.shared_reaches), (case.own, case.own_reaches)):
            moved = [MovedLine(path, 1, "layout-app", facts["running_tag"], "9.9.9")]
            reach = reach_of([change], moved, harness.repository, BRANCH)

            assert {named(app, names) for app in reach.reached} == expected, path
            crossing = {named(app, names) for app in reach.reached
                        if app.environment != target.cluster.environment.name}
            assert {named(app, names) for app in reach.reached if app.beyond.startswith("another environment")} == (
                crossing)
            assert len(reach.warnings) == len(crossing)
            assert all(app.files == (path,) for app in reach.reached)
            assert reach.unread == []
