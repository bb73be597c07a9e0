"""The repository layouts of tests/data/repo-layouts as test cases: files, app objects, expected edits.

One definition, shared by the pure contract tests (tests/forges/test_tree_edits.py,
test_chart_edits.py) and the previews through the forge clients (tests/delivery/
test_layout_previews.py), so every path through the portal is held to the same lines.

Each expected edit was worked out by reading the layout's files (what the app builds,
and which file sets the effective tag), not by running the code. The app object is the one
LAYOUT.json names (`app_manifest`), as the cluster holds it; for an ApplicationSet it is the
generated Application, rendered by `render_template` for the element the LAYOUT names; for
the app-of-apps chart in argocd-example-apps it is the Application `apps/templates` renders
for the `apps/values.yaml` entry; where LAYOUT has no manifest it is written from `app_path`
and `notes`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from forges.pins import Edit

LAYOUTS = Path(__file__).parent.parent / "data" / "repo-layouts"


def layout_files(folder: str) -> dict[str, str]:
    """Every text file of a layout, by its repository path (LAYOUT.json is not the repo's)."""
    root = LAYOUTS / folder
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "LAYOUT.json":
            with open(path, encoding="utf-8", newline="") as handle:
                files[path.relative_to(root).as_posix()] = handle.read()
    return files


def layout(folder: str) -> dict[str, Any]:
    return json.loads((LAYOUTS / folder / "LAYOUT.json").read_text())


def manifest(folder: str, kind: str, name: str | None = None) -> dict[str, Any]:
    """The object of that kind (and name) in the LAYOUT's app_manifest."""
    text = (LAYOUTS / folder / layout(folder)["app_manifest"]).read_text()
    for doc in yaml.safe_load_all(text):
        if doc and doc.get("kind") == kind and (name is None or doc["metadata"]["name"] == name):
            return doc
    raise AssertionError(f"no {kind} {name} in {folder}")


def render_template(value: Any, params: dict[str, str]) -> Any:
    """An ApplicationSet template with each `{{ expression }}` replaced from `params`."""
    if isinstance(value, dict):
        return {key: render_template(item, params) for key, item in value.items()}
    if isinstance(value, list):
        return [render_template(item, params) for item in value]
    if isinstance(value, str):
        return re.sub(r"{{-?\s*(.*?)\s*-?}}", lambda m: params[m.group(1).strip()], value)
    return value


def generated(folder: str, params: dict[str, str]) -> dict[str, Any]:
    appset = manifest(folder, "ApplicationSet")
    app = render_template(appset["spec"]["template"], params)
    app["metadata"]["ownerReferences"] = [
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": appset["metadata"]["name"]}
    ]
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **app}


def example_app(name: str, path: str | None = None, tool: dict[str, Any] | None = None) -> dict[str, Any]:
    """What argocd-example-apps' apps/templates/applications.yaml renders for one entry."""
    source: dict[str, Any] = {
        "path": path or name,
        "repoURL": "https://github.com/argoproj/argocd-example-apps",
        "targetRevision": "master",
    }
    source.update(tool or {})
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": f"example.{name}", "namespace": "argocd"},
        "spec": {
            "destination": {"namespace": name, "server": "https://kubernetes.default.svc"},
            "project": "default",
            "source": source,
        },
    }


def argocd_app(name: str, repo: str, path: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "destination": {"namespace": name, "server": "https://kubernetes.default.svc"},
            "project": "default",
            "source": {"repoURL": f"https://github.com/{repo}", "path": path, "targetRevision": "HEAD"},
        },
    }


def apps() -> dict[str, dict[str, Any]]:
    return {
        "appset-monorepo-many-apps": generated(
            "appset-monorepo-many-apps",
            {
                "index .path.segments 1": "billing",
                "index .path.segments 3": "prod-us",
                ".path.path": "apps/billing/envs/prod-us",
            },
        ),
        "appset-multi-source-values-key": generated(
            "appset-multi-source-values-key",
            {
                "index .path.segments 1": "app1",
                ".path.path": "charts/app1",
                ".name": "qa-cluster",
                ".server": "https://qa.example.com",
            },
        ),
        "argocd-helm-dependency": example_app("helm-dependency", tool={"helm": {"releaseName": "helm-dependency"}}),
        "argocd-helm-guestbook": example_app("helm-guestbook", tool={"helm": {"releaseName": "helm-guestbook"}}),
        "argocd-kustomized-helm-plugin": example_app(
            "plugin-kustomized-helm", "plugins/kustomized-helm", {"plugin": {"name": "kustomized-helm"}}
        ),
        "argocd-multi-source-bitnami-values": manifest("argocd-multi-source-bitnami-values", "Application"),
        "argocd-source-helm-parameters": argocd_app(
            "prod-application-backend-euw1", "dkarpele/image-updater-examples", "011-appset/cluster-addons/prod"
        ),
        "autopilot-remote-base": generated(
            "autopilot-remote-base",
            {
                "appName": "my-app",
                "userGivenName": "my-app",
                "destNamespace": "default",
                "destServer": "https://kubernetes.default.svc",
                "srcPath": "apps/my-app/overlays/production",
                "srcRepoURL": "https://github.com/schnatterer/argocd-autopilot-example.git",
                "srcTargetRevision": "",
            },
        ),
        "codefresh-helm-valuefiles": manifest("codefresh-helm-valuefiles", "Application"),
        "codefresh-kustomize-legacy-bases": argocd_app(
            "production", "codefresh-contrib/gitops-certification-examples", "kustomize-apps/overlays/production"
        ),
        "d2-oci-chart-semver": d2_podinfo_release(),
        "flux-helmrelease-base-values": manifest("flux-helmrelease-base-values", "Kustomization", "apps"),
        "gitops-bridge-appset-chart": gitops_bridge_prod_app(),
        "kargo-simple-stages": argocd_app("guestbook-staging", "akuity/kargo-simple", "env/staging"),
        "kustomize-components-env-promotion": argocd_app(
            "qa", "kostis-codefresh/gitops-environment-promotion", "envs/qa"
        ),
        "podinfo-overlay-many-bases": {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "podinfo", "namespace": "flux-system"},
            "spec": {
                "interval": "10m",
                "path": "./deploy/overlays/production",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": "podinfo"},
            },
        },
    }


def d2_podinfo_release() -> dict[str, Any]:
    """The podinfo HelmRelease as the cluster holds it: base plus the production patch."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": "podinfo",
            "namespace": "apps",
            "labels": {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "apps"},
        },
        "spec": {
            "releaseName": "podinfo",
            "chartRef": {"kind": "OCIRepository", "name": "podinfo-chart"},
            "interval": "1h",
            "values": {"replicaCount": 2, "serviceMonitor": {"enabled": True}},
        },
    }


def gitops_bridge_prod_app() -> dict[str, Any]:
    app = generated(
        "gitops-bridge-appset-chart",
        {
            ".metadata.annotations.addons_repo_url": "https://github.com/gitops-bridge-dev/"
            "gitops-bridge-argocd-control-plane-template",
            ".metadata.annotations.addons_repo_revision": "main",
            ".metadata.annotations.addons_repo_basepath": "",
            ".metadata.labels.environment": "prod",
            ".values.addonChart": "ingress-nginx",
            ".values.addonChartRepository": "https://kubernetes.github.io/ingress-nginx",
            ".values.addonChartVersion": "4.10.0",
            ".name": "prod-cluster",
            'default "LoadBalancer" .metadata.annotations.ingress_nginx_service_type': "LoadBalancer",
        },
    )
    return app


# (folder, new tag, the edits a reviewer expects)
EXPECTED: list[tuple[str, str, list[Edit]]] = [
    (
        # The prod-us overlay's version.yml patch sets the image; the shared base (at 1.0)
        # and the other services' overlays at the same 2.0 are not part of this app.
        "appset-monorepo-many-apps",
        "2.1",
        [
            Edit(
                "apps/billing/envs/prod-us/version.yml",
                11,
                "        image: docker.io/kostiscodefresh/simple-env-app:2.0",
                "        image: docker.io/kostiscodefresh/simple-env-app:2.1",
            )
        ],
    ),
    (
        # The chart hard-codes the repository and takes the tag from `imageVersion`; the qa
        # app-version file (second of three $my-values files) is where 3.0 comes from.
        "appset-multi-source-values-key",
        "3.1",
        [Edit("values/app1/app-version/qa-values.yaml", 1, 'imageVersion: "3.0"', 'imageVersion: "3.1"')],
    ),
    (
        # The umbrella chart overrides its wordpress subchart's tag without a repository.
        "argocd-helm-dependency",
        "6.4.3",
        [
            Edit(
                "helm-dependency/values.yaml",
                3,
                "    tag: invalid #break this app on purpose until a dedicated broken app is created",
                "    tag: 6.4.3 #break this app on purpose until a dedicated broken app is created",
            )
        ],
    ),
    (
        # No valueFiles: the chart's values.yaml; guestbook/ and kustomize-guestbook/ (same
        # image:tag) are other apps.
        "argocd-helm-guestbook",
        "v6",
        [Edit("helm-guestbook/values.yaml", 9, "  tag: v5", "  tag: v6")],
    ),
    (
        # kustomize's patch overrides what the helm-guestbook dependency renders.
        "argocd-kustomized-helm-plugin",
        "v6",
        [
            Edit(
                "plugins/kustomized-helm/overlays/guestbook-deployment.yaml",
                10,
                "          image: 'gcr.io/google-samples/gb-frontend:v5'",
                "          image: 'gcr.io/google-samples/gb-frontend:v6'",
            )
        ],
    ),
    (
        # Bitnami registry/repository/tag in the $values file; sibling apps' values files
        # (helmvalues-list at the same 1.27.1) are not this app's.
        "argocd-multi-source-bitnami-values",
        "1.27.2",
        [Edit("multi-source-helm/source2/values.yaml", 4, "  tag: 1.27.1", "  tag: 1.27.2")],
    ),
    (
        # The image updater's parameter file wins over values.yaml (pinned by tag@digest);
        # dev/ and staging/ carry the same 0.2 for other apps.
        "argocd-source-helm-parameters",
        "0.3",
        [
            Edit(
                "011-appset/cluster-addons/prod/.argocd-source-prod-application-backend-euw1.yaml",
                10,
                '    value: "0.2"',
                '    value: "0.3"',
            )
        ],
    ),
    # The base is a remote resource in another repository: nothing to edit here.
    ("autopilot-remote-base", "3d9b391", []),
    (
        # common-values.yaml overrides values.yaml's tag; prod-values.yaml sets none.
        "codefresh-helm-valuefiles",
        "v2.1",
        [Edit("helm-apps/many-envs-chart/common-values.yaml", 3, "  tag: v2.0", "  tag: v2.1")],
    ),
    (
        # `bases:` brings in ../../base; simple-app/ has the image at another tag and is not built.
        "codefresh-kustomize-legacy-bases",
        "v1.1",
        [
            Edit(
                "kustomize-apps/base/deployment.yaml",
                16,
                "        image: docker.io/kostiscodefresh/gitops-kustomize-app:v1.0",
                "        image: docker.io/kostiscodefresh/gitops-kustomize-app:v1.1",
            )
        ],
    ),
    # The HelmRelease sets no image: podinfo runs the chart's appVersion (a chart change).
    ("d2-oci-chart-semver", "6.14.1", []),
    (
        # The base HelmRelease's inline values; the production overlay patch sets no redis.
        "flux-helmrelease-base-values",
        "8.6.3",
        [Edit("apps/base/podinfo/release.yaml", 27, "      tag: 8.6.2", "      tag: 8.6.3")],
    ),
    # The values files the app reads set no image: the chart's default applies.
    ("gitops-bridge-appset-chart", "v1.10.1", []),
    (
        # The staging overlay's images: transformer (dev and prod have their own).
        "kargo-simple-stages",
        "v0.0.2",
        [Edit("env/staging/kustomization.yaml", 11, "  newTag: v0.0.1", "  newTag: v0.0.2")],
    ),
    (
        # qa's version.yml patch overrides the base's 1.0; integration-gpu is also at 1.0 but
        # is another environment.
        "kustomize-components-env-promotion",
        "1.1",
        [
            Edit(
                "envs/qa/version.yml",
                11,
                "        image: docker.io/kostiscodefresh/simple-env-app:1.0",
                "        image: docker.io/kostiscodefresh/simple-env-app:1.1",
            )
        ],
    ),
    (
        # Every workload of the four bases (init containers too); kustomize/ is not built.
        "podinfo-overlay-many-bases",
        "6.14.2",
        [
            Edit(
                path,
                line,
                f"{indent}image: ghcr.io/stefanprodan/podinfo:6.14.1",
                f"{indent}image: ghcr.io/stefanprodan/podinfo:6.14.2",
            )
            for path, line, indent in [
                ("deploy/bases/backend/deployment.yaml", 26, "        "),
                ("deploy/bases/database/cronjob-backup-daily.yaml", 26, "            "),
                ("deploy/bases/database/cronjob-rollup-daily.yaml", 26, "            "),
                ("deploy/bases/database/cronjob-rollup-weekly.yaml", 26, "            "),
                ("deploy/bases/database/deployment-replica.yaml", 28, "        "),
                ("deploy/bases/database/statefulset-primary.yaml", 25, "        "),
                ("deploy/bases/frontend/cronjob-warm-cache.yaml", 26, "            "),
                ("deploy/bases/frontend/cronjob-warm-cache.yaml", 46, "            "),
                ("deploy/bases/frontend/deployment.yaml", 27, "        "),
            ]
        ],
    ),
]


# (folder, new chart version, the edits a reviewer expects) for the layouts that pin a chart
APPSET = "bootstrap/control-plane/addons/oss/addons-ingress-nginx-appset.yaml"

CHART_EXPECTED: list[tuple[str, str, list[Edit]]] = [
    (
        # The umbrella chart's dependency on wordpress, not a targetRevision.
        "argocd-helm-dependency",
        "9.0.4",
        [Edit("helm-dependency/Chart.yaml", 27, "  version: 9.0.3", "  version: 9.0.4")],
    ),
    (
        # The chart source's quoted targetRevision in the Application manifest; the sibling
        # Applications on the same chart version are other apps.
        "argocd-multi-source-bitnami-values",
        "18.2.4",
        [
            Edit(
                "multi-source-helm/app/multi-source-app.yaml",
                15,
                '      targetRevision: "18.2.3"',
                '      targetRevision: "18.2.4"',
            )
        ],
    ),
    (
        # chartRef -> OCIRepository podinfo-chart in the base: an exact ref.semver, comment kept.
        "d2-oci-chart-semver",
        "6.14.1",
        [
            Edit(
                "components/frontend/base/podinfo.yaml",
                9,
                '    semver: 6.14.0 # {"$imagepolicy": "apps:frontend-podinfo:tag"}',
                '    semver: 6.14.1 # {"$imagepolicy": "apps:frontend-podinfo:tag"}',
            )
        ],
    ),
    (
        # The merge generator's prod element sets addonChartVersion for a prod cluster.
        "gitops-bridge-appset-chart",
        "4.10.1",
        [Edit(APPSET, 39, "                addonChartVersion: 4.10.0", "                addonChartVersion: 4.10.1")],
    ),
]
