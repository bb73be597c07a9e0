"""Flux Kustomizations and HelmReleases → rows, judged against their sources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gitops.collectors import collect
from gitops.collectors.flux import (
    compare_revisions,
    helmrelease_row,
    index_sources,
    inventory,
    kustomization_row,
    normalise_revision,
)
from gitops.rows import FLUX, OUT_OF_SYNC, SYNCED, UNKNOWN, AppRow, ResourceKey, SourceSpec
from tests.fixtures.real_objects import REAL_OBJECTS as REAL
from tests.fixtures.real_objects import load_objects

FLUX_DIR = REAL / "flux"
SHA_A = "a" * 40
SHA_B = "b" * 40


def real_sources() -> dict[tuple[str, str, str], dict[str, Any]]:
    objects = load_objects(FLUX_DIR / "flux-operator__resource.js-sources.json")
    objects.update(load_objects(FLUX_DIR / "flux-operator__resource.js-helmcharts-buckets.json"))
    return index_sources(objects)


def real(kind: str, file_name: str, name: str) -> dict[str, Any]:
    return next(o for o in load_objects(FLUX_DIR / file_name)[kind] if o["metadata"]["name"] == name)


def real_kustomization(name: str) -> AppRow:
    return kustomization_row(
        real("Kustomization", "flux-operator__resource.js-kustomizations.json", name), real_sources()
    )


def real_release(name: str) -> AppRow:
    return helmrelease_row(real("HelmRelease", "flux-operator__resource.js-helmreleases.json", name), real_sources())


# --- real Kustomizations --------------------------------------------------------------------


def test_kustomization_following_a_git_name_ref() -> None:
    row = real_kustomization("cluster-infra")
    assert row.key == (FLUX, "Kustomization", "flux-system", "cluster-infra")
    assert row.sources == [
        SourceSpec(
            repo_url="https://github.com/stefanprodan/homelab.git",
            path="infra",
            target_revision="refs/heads/main",
            ref="GitRepository/flux-system",
        )
    ]
    revision = "refs/heads/main@sha1:d676e33990dc2865d67c022d26dea93d5e3236ff"
    assert (row.synced_revision, row.attempted_revision, row.source_revision) == (revision, revision, revision)
    assert row.sync_status == SYNCED
    assert (row.health_status, row.ready_reason) == ("Healthy", "ReconciliationSucceeded")
    assert row.health_since == datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)
    assert row.source_ready is True
    assert row.interval == "1h" and row.suspended is False and row.automated is True
    assert len(row.history) == 5 and row.history[-2]["status"] == "HealthCheckFailed"
    assert row.history[0]["revision"] == "refs/heads/main@sha1:62a1e87e875328d999dd98090500182a26be833a"
    assert row.reconciled_at == datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)
    assert ResourceKey("fluxcd.controlplane.io", "ResourceSet", "flux-system", "cert-manager") in row.resources
    # flux-operator's API trims metadata: no generation to compare.
    assert row.generation is None and row.observed_generation == 1


def test_kustomization_following_an_oci_tag() -> None:
    row = real_kustomization("flux-operator")
    assert row.sources[0].repo_url == "oci://ghcr.io/controlplaneio-fluxcd/flux-operator-manifests"
    assert row.sources[0].target_revision == "latest"
    assert row.sync_status == SYNCED
    assert row.history[-1]["origin_revision"] == "main@sha1:06e1897fcf773428155c5f6b9aadb5538169bb5c"


def test_suspended_kustomization_keeps_its_health_and_unknown_source() -> None:
    obj = load_objects(FLUX_DIR / "karmada__Kustomization-interpretstatus-test.yaml")["Kustomization"][0]
    row = kustomization_row(obj, {})
    assert row.suspended is True and row.automated is False
    assert row.health_status == "Healthy"  # Ready=True when it was suspended
    assert row.sync_status == UNKNOWN and row.source_ready is None
    assert row.warnings == ["source GitRepository/test-kustomization/sample not found"]
    assert row.destination_namespace == "test-kustomization"
    assert row.generation == 1 and row.observed_generation == 1
    assert ResourceKey("", "Service", "test-kustomization", "podinfo") in row.resources
    assert ResourceKey("autoscaling", "HorizontalPodAutoscaler", "test-kustomization", "podinfo") in row.resources


# --- real HelmReleases ----------------------------------------------------------------------


def test_v2_release_from_oci_chartref_compares_digests() -> None:
    row = real_release("cert-manager")
    assert row.synced_revision == "1.19.1+9578566b26b2"  # the latest release's chartVersion
    assert row.source_revision == "v1.19.1@sha256:9578566b26b2258bcb9a0be27feeaa7c0adaed635cc0f85b6293e42a80c58cc9"
    assert row.sync_status == SYNCED
    assert row.sources == [
        SourceSpec(
            repo_url="oci://quay.io/jetstack/charts/cert-manager",
            chart="cert-manager",
            target_revision="*",
            ref="OCIRepository/cert-manager",
        )
    ]
    assert row.history[-1]["oci_digest"].startswith("sha256:9578566b26b2")
    assert (row.health_status, row.ready_reason) == ("Healthy", "InstallSucceeded")
    assert row.destination_namespace == "cert-manager"


def test_v2_release_from_helm_repository_reads_history_not_last_applied() -> None:
    row = real_release("zot-registry")
    assert "lastAppliedRevision" not in row.raw["status"]
    assert row.synced_revision == "0.1.89"
    assert row.source_revision == "0.1.89"  # the HelmChart registry/registry-zot-registry
    assert row.sync_status == SYNCED
    assert [h["status"] for h in row.history] == ["superseded", "failed", "deployed"]
    assert row.sources[0] == SourceSpec(
        repo_url="https://zotregistry.dev/helm-charts",
        chart="zot",
        target_revision="*",
        ref="HelmRepository/zot-registry",
    )
    assert row.source_ready is True


def test_release_whose_chart_differs_from_what_the_helmchart_offers() -> None:
    # As stored: the HelmChart offers 1.90.6 while the latest release deployed 1.90.9.
    row = real_release("tailscale-operator")
    assert (row.source_revision, row.synced_revision, row.attempted_revision) == ("1.90.6", "1.90.9", "1.90.6")
    assert row.sync_status == OUT_OF_SYNC


def test_v2beta1_release_uses_last_applied_revision() -> None:
    obj = load_objects(FLUX_DIR / "tkubica12-blog__2022-01-07-gitops-s-azure-a-flux-helmrelease.yaml")["HelmRelease"][0]
    row = helmrelease_row(obj, {})
    assert row.synced_revision == "4.0.11" and row.history == []
    assert row.sources == [
        SourceSpec(repo_url="", chart="ingress-nginx", target_revision="4.0.11", ref="HelmRepository/ingress-nginx")
    ]
    assert row.sync_status == UNKNOWN
    chart: dict[str, Any] = {
        "kind": "HelmChart",
        "metadata": {"name": "ingress-nginx-ingress-nginx", "namespace": "ingress-nginx"},
        "status": {"artifact": {"revision": "4.0.11"}},
    }
    repo = {
        "metadata": {"name": "ingress-nginx", "namespace": "ingress-nginx"},
        "spec": {"url": "https://kubernetes.github.io/ingress-nginx"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]},
    }
    row = helmrelease_row(obj, index_sources({"HelmChart": [chart], "HelmRepository": [repo]}))
    assert row.sync_status == SYNCED
    assert row.sources[0].repo_url == "https://kubernetes.github.io/ingress-nginx"
    assert row.source_ready is None  # the HelmChart has no Ready condition to judge by
    chart["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "ChartPullSucceeded"}]
    row = helmrelease_row(obj, index_sources({"HelmChart": [chart], "HelmRepository": [repo]}))
    assert row.source_ready is True and row.source_message == ""


def test_v2beta1_release_without_spec() -> None:
    obj = load_objects(FLUX_DIR / "karmada__HelmRelease-interpretstatus-test.yaml")["HelmRelease"][0]
    row = helmrelease_row(obj, {})
    assert row.synced_revision == "6.3.5" and row.sync_status == UNKNOWN
    assert row.warnings == ["no spec.chart or spec.chartRef"]
    assert row.health_status == "Healthy"


# --- out of sync, hand-made -------------------------------------------------------------------


def _git(revision: str | None, name: str = "app", namespace: str = "flux-system") -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]}
    if revision is not None:
        status["artifact"] = {"revision": revision}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": "https://git.example/app.git", "ref": {"branch": "main"}},
        "status": status,
    }


def _ks(applied: str | None, source_ns: str | None = None, **spec: Any) -> dict[str, Any]:
    ref = {"kind": "GitRepository", "name": "app"}
    if source_ns:
        ref["namespace"] = source_ns
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded"}]}
    if applied is not None:
        status["lastAppliedRevision"] = applied
    return {
        "metadata": {"name": "app", "namespace": "flux-system", "generation": 3},
        "spec": {"interval": "5m", "path": "./deploy", "sourceRef": ref, **spec},
        "status": status,
    }


@pytest.mark.parametrize(
    ("offered", "applied", "expected"),
    [
        (f"main@sha1:{SHA_A}", f"main@sha1:{SHA_A}", SYNCED),
        (f"main@sha1:{SHA_B}", f"main@sha1:{SHA_A}", OUT_OF_SYNC),
        (f"main@sha1:{SHA_A}", f"main/{SHA_A}", SYNCED),  # legacy form before Flux 0.40
        (f"main@sha1:{SHA_A}", f"main/{SHA_B}", OUT_OF_SYNC),
        (None, f"main@sha1:{SHA_A}", UNKNOWN),
        (f"main@sha1:{SHA_A}", None, UNKNOWN),
    ],
)
def test_kustomization_sync_status(offered: str | None, applied: str | None, expected: str) -> None:
    row = kustomization_row(_ks(applied), index_sources({"GitRepository": [_git(offered)]}))
    assert row.sync_status == expected
    assert row.sources[0].target_revision == "main"


def test_unknown_when_source_missing_and_cross_namespace_ref() -> None:
    row = kustomization_row(_ks(f"main@sha1:{SHA_A}"), {})
    assert row.sync_status == UNKNOWN and row.source_ready is None
    sources = index_sources({"GitRepository": [_git(f"main@sha1:{SHA_B}", namespace="shared")]})
    assert kustomization_row(_ks(f"main@sha1:{SHA_A}"), sources).sync_status == UNKNOWN
    row = kustomization_row(_ks(f"main@sha1:{SHA_A}", source_ns="shared"), sources)
    assert row.sync_status == OUT_OF_SYNC
    assert row.sources[0].ref == "GitRepository/shared/app"


def test_source_not_ready_is_reported() -> None:
    git = _git(f"main@sha1:{SHA_A}")
    git["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "reason": "GitOperationFailed", "message": "auth failed"}
    ]
    row = kustomization_row(_ks(f"main@sha1:{SHA_A}"), index_sources({"GitRepository": [git]}))
    assert row.source_ready is False and "auth failed" in row.source_message
    assert row.sync_status == SYNCED


def test_list_items_without_kind_and_string_generation() -> None:
    obj = _ks(f"main@sha1:{SHA_A}", suspend=True)
    obj["status"]["observedGeneration"] = "2"
    result = collect({"Kustomization": [obj], "GitRepository": [_git(f"main@sha1:{SHA_A}")]})
    row = result.apps[0]
    assert result.warnings == []
    assert row.observed_generation == 2 and row.generation == 3
    assert row.suspended is True
    assert row.health_status == "Progressing"  # generation 3 not reconciled yet


@pytest.mark.parametrize(
    ("revision", "expected"),
    [
        (f"main/{SHA_A}", f"main@sha1:{SHA_A}"),
        (f"HEAD/{SHA_A}", f"sha1:{SHA_A}"),
        ("c" * 64, "sha256:" + "c" * 64),
        ("latest/" + "d" * 64, "latest@sha256:" + "d" * 64),
        (f"refs/heads/main@sha1:{SHA_A}", f"refs/heads/main@sha1:{SHA_A}"),
        ("6.3.5", "6.3.5"),
        ("main/nothex" + "x" * 33, "main/nothex" + "x" * 33),
    ],
)
def test_normalise_revision(revision: str, expected: str) -> None:
    assert normalise_revision(revision) == expected


def test_revisions_have_no_order() -> None:
    assert compare_revisions("1.2.3", "1.2.4") == OUT_OF_SYNC
    assert compare_revisions("1.2.4", "1.2.3") == OUT_OF_SYNC


# --- HelmRelease sources, hand-made -----------------------------------------------------------


def _release(
    chart: dict[str, Any] | None = None,
    chart_ref: dict[str, Any] | None = None,
    history: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"interval": "10m"}
    if chart is not None:
        spec["chart"] = {"spec": chart}
    if chart_ref is not None:
        spec["chartRef"] = chart_ref
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": spec,
        "status": {
            "history": history or [],
            "conditions": [{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded"}],
        },
    }


def _helmchart(name: str, namespace: str, revision: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {
            "artifact": {"revision": revision},
            "conditions": [{"type": "Ready", "status": "True", "reason": "ChartPullSucceeded"}],
        },
    }


def test_oci_helm_repository_without_status_counts_as_ready() -> None:
    repo = {
        "metadata": {"name": "charts", "namespace": "shop"},
        "spec": {"type": "oci", "url": "oci://ghcr.io/acme/charts", "interval": "1h"},
    }
    chart = _helmchart("shop-web", "shop", "2.1.0")
    release = _release(
        chart={"chart": "web", "version": "2.x", "sourceRef": {"kind": "HelmRepository", "name": "charts"}},
        history=[
            {"chartVersion": "2.0.0", "version": 4, "status": "deployed"},
            {"chartVersion": "1.9.0", "version": 3, "status": "superseded"},
        ],
    )
    row = helmrelease_row(release, index_sources({"HelmRepository": [repo], "HelmChart": [chart]}))
    assert row.source_ready is True and row.warnings == []
    assert row.sources == [
        SourceSpec(
            repo_url="oci://ghcr.io/acme/charts", chart="web", target_revision="2.x", ref="HelmRepository/charts"
        )
    ]
    assert (row.source_revision, row.synced_revision) == ("2.1.0", "2.0.0")
    assert row.sync_status == OUT_OF_SYNC


def test_latest_release_is_the_highest_version_whatever_the_order() -> None:
    release = _release(
        chart={"chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts"}},
        history=[{"chartVersion": "1.9.0", "version": 3}, {"chartVersion": "2.0.0", "version": 4}],
    )
    row = helmrelease_row(release, {})
    assert row.synced_revision == "2.0.0"
    assert row.sources[0].target_revision == "*"
    assert row.warnings == ["source HelmRepository/shop/charts not found"]


def test_chart_from_a_git_repository_is_a_path() -> None:
    git = _git(f"main@sha1:{SHA_A}", name="mono", namespace="shop")
    release = _release(
        chart={"chart": "./charts/web", "sourceRef": {"kind": "GitRepository", "name": "mono"}},
        history=[{"chartVersion": "0.3.0", "version": 1}],
    )
    row = helmrelease_row(
        release, index_sources({"GitRepository": [git], "HelmChart": [_helmchart("shop-web", "shop", "0.3.0")]})
    )
    assert row.sources == [
        SourceSpec(
            repo_url="https://git.example/app.git",
            path="./charts/web",
            target_revision="main",
            ref="GitRepository/mono",
        )
    ]
    assert row.sync_status == SYNCED


def _oci(revision: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"url": "oci://ghcr.io/acme/charts/web", "ref": {"semver": ">=2.0.0"}},
        "status": {
            "artifact": {"revision": revision},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}],
        },
    }


DIGEST_1 = "sha256:" + "1" * 64
DIGEST_2 = "sha256:" + "2" * 64


@pytest.mark.parametrize(
    ("offered", "history", "expected"),
    [
        (f"2.0.0@{DIGEST_1}", {"chartVersion": "2.0.0+111111111111", "ociDigest": DIGEST_1}, SYNCED),
        (f"2.0.1@{DIGEST_2}", {"chartVersion": "2.0.0+111111111111", "ociDigest": DIGEST_1}, OUT_OF_SYNC),
        (f"2.0.0@{DIGEST_1}", {"chartVersion": "2.0.0+111111111111"}, SYNCED),  # suffix only
        (f"2.0.0@{DIGEST_2}", {"chartVersion": "2.0.0+111111111111"}, OUT_OF_SYNC),
        (f"2.0.0@{DIGEST_1}", {"chartVersion": "2.0.0"}, UNKNOWN),  # digest tracking disabled
    ],
)
def test_oci_chartref_sync(offered: str, history: dict[str, Any], expected: str) -> None:
    release = _release(chart_ref={"kind": "OCIRepository", "name": "web"}, history=[{**history, "version": 1}])
    row = helmrelease_row(release, index_sources({"OCIRepository": [_oci(offered)]}))
    assert row.sync_status == expected
    assert row.sources[0].chart == "web" and row.sources[0].target_revision == ">=2.0.0"


def test_helmchart_chartref_reads_its_repository() -> None:
    chart = _helmchart(
        "web-chart", "shop", "3.0.0", chart="web", version="3.x", sourceRef={"kind": "HelmRepository", "name": "charts"}
    )
    repo = {
        "metadata": {"name": "charts", "namespace": "shop"},
        "spec": {"url": "https://charts.example"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]},
    }
    release = _release(
        chart_ref={"kind": "HelmChart", "name": "web-chart"}, history=[{"chartVersion": "3.0.0", "version": 2}]
    )
    row = helmrelease_row(release, index_sources({"HelmChart": [chart], "HelmRepository": [repo]}))
    assert row.sources == [
        SourceSpec(repo_url="https://charts.example", chart="web", target_revision="3.x", ref="HelmRepository/charts")
    ]
    assert row.sync_status == SYNCED and row.source_ready is True


def test_inventory_ids() -> None:
    parsed = inventory(
        {
            "entries": [
                {
                    "id": "test-namespace_system____leader-locking-kube-scheduler_rbac.authorization.k8s.io_Role",
                    "v": "v1",
                },
                {"id": "ns_test_name_apps_Deployment", "v": "v1"},
                {"id": "_cluster-admin-x_rbac.authorization.k8s.io_ClusterRole", "v": "v1"},
                {"id": "garbage"},
                "not-a-map",
            ]
        }
    )
    assert parsed == [
        ResourceKey("rbac.authorization.k8s.io", "Role", "test-namespace", "system::leader-locking-kube-scheduler"),
        ResourceKey("apps", "Deployment", "ns", "test_name"),
        ResourceKey("rbac.authorization.k8s.io", "ClusterRole", "", "cluster-admin-x"),
    ]
