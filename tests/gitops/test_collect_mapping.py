"""collect() over every real object, mapping workloads to apps, and the images the store maps to services."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from gitops.collectors import KINDS, collect, group_by_kind
from gitops.collectors.mapping import map_workloads_to_apps
from gitops.collectors.workloads import workload_row
from gitops.models import RunningVersion
from gitops.polling import store_snapshot
from gitops.rows import ARGO, FLUX, AppRow, ContainerImage, ResourceKey, Snapshot, WorkloadRow
from portal.kernel.catalog.models import Cluster, Environment, Service
from tests.fixtures.real_objects import REAL_OBJECTS as REAL
from tests.fixtures.real_objects import load_objects

REAL_FILES = sorted(p for p in REAL.rglob("*") if p.suffix in (".yaml", ".json"))


def load_all() -> dict[str, list[dict[str, Any]]]:
    merged: dict[str, list[dict[str, Any]]] = {}
    for path in REAL_FILES:
        for kind, objects in load_objects(path).items():
            merged.setdefault(kind, []).extend(objects)
    return merged


# --- every real object ------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_file_collects_without_warnings(path: Path) -> None:
    objects = load_objects(path)
    assert objects, "the file holds no object"
    assert set(objects) <= set(KINDS)
    result = collect(objects)
    assert result.warnings == []
    made = len(result.apps) + len(result.projects) + len(result.workloads)
    sources = sum(
        len(objects.get(k, [])) for k in ("GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket")
    )
    assert made + sources == sum(len(v) for v in objects.values())
    raws = [r.raw for r in result.apps] + [r.raw for r in result.projects] + [r.raw for r in result.workloads]
    json.dumps(raws, cls=DjangoJSONEncoder)  # what the store's JSON columns do with raw


def test_all_real_objects_together() -> None:
    objects = load_all()
    assert sum(len(v) for v in objects.values()) == 54  # as INDEX.md counts them
    result = collect(objects)
    assert result.warnings == []
    assert len(result.apps) == 25
    assert len(result.projects) == 4
    assert len(result.workloads) == 9


def test_index_lists_every_file() -> None:
    index = (REAL / "INDEX.md").read_text()
    for path in REAL_FILES:
        assert f"`{path.parent.name}/{path.name}`" in index


# --- collect() is robust ------------------------------------------------------------------


def test_bad_objects_are_skipped_by_name_and_the_rest_collected() -> None:
    good = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 1}}
    result = collect(
        {
            "Deployment": [good, "not an object", {"metadata": {"namespace": "shop"}}],
            "Application": [
                {
                    "metadata": {"name": "broken", "namespace": "argocd"},
                    "spec": {"project": "x"},
                    "status": {"sync": {"status": "Synced"}, "history": "oops", "resources": [None]},
                }
            ],
            "Pod": [{"metadata": {"name": "p"}}],
            "HelmRelease": {"metadata": {"name": "not-a-list"}},
        }
    )
    assert [w.name for w in result.workloads] == ["web"]
    assert [a.name for a in result.apps] == ["broken"]
    assert any("not an object" in w for w in result.warnings)
    assert any(w.startswith("Deployment shop/<no name>: skipped") for w in result.warnings)
    assert any(w.startswith("Pod:") for w in result.warnings)
    assert any(w.startswith("HelmRelease: expected a list") for w in result.warnings)


def test_a_raising_builder_is_contained(monkeypatch: pytest.MonkeyPatch) -> None:
    import gitops.collectors as collectors

    def explode(obj: Any) -> AppRow:
        raise RuntimeError("boom")

    monkeypatch.setattr(collectors, "project_row", explode)
    result = collectors.collect({"AppProject": [{"metadata": {"name": "p1", "namespace": "argocd"}}]})
    assert result.projects == []
    assert result.warnings == ["AppProject argocd/p1: skipped: RuntimeError: boom"]


def test_group_by_kind_unwraps_lists_and_defaults() -> None:
    docs = [
        {"kind": "DeploymentList", "items": [{"metadata": {"name": "a"}}, {"kind": "Deployment", "metadata": {}}]},
        {"kind": "List", "items": [{"kind": "CronJob", "metadata": {"name": "c"}}]},
        {"metadata": {"name": "no-kind"}},
        None,
    ]
    assert {k: len(v) for k, v in group_by_kind(docs).items()} == {"Deployment": 2, "CronJob": 1}
    assert set(group_by_kind(docs, "Application")) == {"Deployment", "CronJob", "Application"}


# --- workload → app ------------------------------------------------------------------------


def _workload(name: str = "web", namespace: str = "shop", labels: dict[str, str] | None = None) -> WorkloadRow:
    return WorkloadRow(kind="Deployment", namespace=namespace, name=name, labels=labels or {})


def _app(tool: str, kind: str, name: str, namespace: str, resources: list[ResourceKey] | None = None) -> AppRow:
    return AppRow(tool=tool, kind=kind, namespace=namespace, name=name, resources=resources or [])


HELM_LABELS = {"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "shop"}
KS_LABELS = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
DEPLOYMENT = ResourceKey("apps", "Deployment", "shop", "web")


def test_helmrelease_labels_beat_kustomization_labels() -> None:
    hr = _app(FLUX, "HelmRelease", "web", "shop")
    ks = _app(FLUX, "Kustomization", "apps", "flux-system")
    workload = _workload(labels={**KS_LABELS, **HELM_LABELS})
    map_workloads_to_apps([ks, hr], [workload])
    assert workload.app_key == (FLUX, "HelmRelease", "shop", "web")


def test_kustomization_labels_when_no_helmrelease() -> None:
    ks = _app(FLUX, "Kustomization", "apps", "flux-system")
    workload = _workload(labels=KS_LABELS)
    map_workloads_to_apps([ks], [workload])
    assert workload.app_key == (FLUX, "Kustomization", "flux-system", "apps")


def test_labels_of_an_uncollected_helmrelease_fall_through_to_the_kustomization() -> None:
    ks = _app(FLUX, "Kustomization", "apps", "flux-system")
    workload = _workload(labels={**KS_LABELS, **HELM_LABELS})
    map_workloads_to_apps([ks], [workload])
    assert workload.app_key == (FLUX, "Kustomization", "flux-system", "apps")


def test_argo_resources_beat_leftover_flux_labels() -> None:
    argo = _app(ARGO, "Application", "web", "argocd", [DEPLOYMENT])
    hr = _app(FLUX, "HelmRelease", "web", "shop")
    workload = _workload(labels=HELM_LABELS)
    map_workloads_to_apps([hr, argo], [workload])
    assert workload.app_key == (ARGO, "Application", "argocd", "web")


def test_argo_resource_must_match_group_kind_namespace_and_name() -> None:
    wrong = [
        ResourceKey("", "Deployment", "shop", "web"),
        ResourceKey("apps", "StatefulSet", "shop", "web"),
        ResourceKey("apps", "Deployment", "other", "web"),
        ResourceKey("apps", "Deployment", "shop", "web2"),
    ]
    workload = _workload()
    map_workloads_to_apps([_app(ARGO, "Application", "a", "argocd", wrong)], [workload])
    assert workload.app_key is None


def test_inventory_claims_after_labels_helmrelease_first() -> None:
    ks = _app(FLUX, "Kustomization", "apps", "flux-system", [DEPLOYMENT])
    hr = _app(FLUX, "HelmRelease", "web", "shop", [DEPLOYMENT])
    workload = _workload()
    map_workloads_to_apps([ks, hr], [workload])
    assert workload.app_key == (FLUX, "HelmRelease", "shop", "web")
    labelled = _workload(labels=KS_LABELS)
    other_ks = _app(FLUX, "Kustomization", "apps", "flux-system")
    map_workloads_to_apps([other_ks, _app(FLUX, "HelmRelease", "x", "shop", [DEPLOYMENT])], [labelled])
    assert labelled.app_key == (FLUX, "HelmRelease", "shop", "x")


def test_first_argo_app_keeps_a_shared_resource_and_unclaimed_stays_none() -> None:
    first = _app(ARGO, "Application", "first", "argocd", [DEPLOYMENT])
    second = _app(ARGO, "Application", "second", "argocd", [DEPLOYMENT])
    claimed, orphan = _workload(), _workload(name="orphan")
    orphan.app_key = ("stale", "x", "y", "z")
    map_workloads_to_apps([first, second], [claimed, orphan])
    assert claimed.app_key == (ARGO, "Application", "argocd", "first")
    assert orphan.app_key is None


def test_real_flux_labels_map_podinfo_to_its_kustomization() -> None:
    objects = load_objects(REAL / "workloads" / "weave-gitops__deployment-healthy.yaml")
    labels = objects["Deployment"][0]["metadata"]["labels"]
    ks = {
        "metadata": {
            "name": labels["kustomize.toolkit.fluxcd.io/name"],
            "namespace": labels["kustomize.toolkit.fluxcd.io/namespace"],
        },
        "spec": {"sourceRef": {"kind": "GitRepository", "name": "podinfo"}},
    }
    result = collect({**objects, "Kustomization": [ks]})
    assert result.workloads[0].app_key == (FLUX, "Kustomization", ks["metadata"]["namespace"], ks["metadata"]["name"])


def test_real_argo_app_maps_its_deployment() -> None:
    objects = load_objects(REAL / "argocd" / "gitops-backend__application3.yaml")
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "taxi", "namespace": "dev"},
        "spec": {"template": {"spec": {"containers": [{"name": "taxi", "image": "nginx"}]}}},
    }
    result = collect({**objects, "Deployment": [deployment]})
    assert result.workloads[0].app_key == (ARGO, "Application", "test-namespace", "dev-app-taxi")


# --- image → service (written by the store as RunningVersion rows) --------------------------


def _running(*images: str, init: tuple[str, ...] = ()) -> WorkloadRow:
    spec = {
        "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": image} for i, image in enumerate(init)],
    }
    row = workload_row(
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"template": {"spec": spec}}}, "Deployment"
    )
    assert row is not None
    return row


@pytest.fixture
def shop(db: Any) -> Cluster:
    """A cluster and the catalog the image tests map against (payments has a mirror alias)."""
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    Service.objects.create(name="payments", image_repository="ghcr.io/acme/payments",
                           image_aliases=["mirror.acme.io/payments"])
    Service.objects.create(name="edge", image_repository="nginx")
    return Cluster.objects.create(name="shop-1", environment=Environment.objects.create(name="prod"))


def _stored_versions(cluster: Cluster, *workloads: WorkloadRow) -> dict[str, list[tuple[str, str, str]]]:
    """Store one poll of `workloads`; workload name -> (container, service, version) it runs, by container."""
    kinds = {w.kind for w in workloads}
    store_snapshot(cluster, Snapshot(workloads=list(workloads), listed_kinds=kinds), timezone.now())
    found: dict[str, list[tuple[str, str, str]]] = {w.name: [] for w in workloads}
    for row in RunningVersion.objects.filter(cluster=cluster).select_related("workload", "service"):
        found[row.workload.name].append((row.container, row.service.name, row.version))
    return {name: sorted(rows) for name, rows in found.items()}


def test_images_map_to_services_with_tag_or_digest(shop: Cluster) -> None:
    digest = "sha256:" + "a" * 64
    workload = _running(
        "ghcr.io/acme/checkout:1.4.2",
        f"mirror.acme.io/payments@{digest}",
        "docker.io/library/nginx:1.25",
        "quay.io/other/thing:2",
        init=("ghcr.io/acme/checkout:1.4.2", "ghcr.io/acme/checkout:migrate-7"),
    )
    assert _stored_versions(shop, workload) == {
        "web": [
            ("c0", "checkout", "1.4.2"),
            ("c1", "payments", digest),
            ("c2", "edge", "1.25"),
            ("i0", "checkout", "1.4.2"),
            ("i1", "checkout", "migrate-7"),
        ]
    }


def test_tag_wins_over_digest_and_unmatched_workloads_run_nothing(shop: Cluster) -> None:
    digest = "sha256:" + "b" * 64
    pinned = _running(f"ghcr.io/acme/checkout:2.0.0@{digest}")
    other = WorkloadRow(
        kind="CronJob", namespace="shop", name="report", containers=[ContainerImage("c", "bad image", "", "", "", "")]
    )
    stored = _stored_versions(shop, pinned, other)
    assert stored["web"] == [("c0", "checkout", "2.0.0")]
    assert stored["report"] == []


def test_docker_hub_spellings_match_one_service(shop: Cluster) -> None:
    workload = _running("nginx:1.25", "index.docker.io/library/nginx:1.26")
    assert _stored_versions(shop, workload)["web"] == [("c0", "edge", "1.25"), ("c1", "edge", "1.26")]
