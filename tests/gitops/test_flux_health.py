"""Health of Flux objects in Argo CD's words (gitops.health.flux_health).

Real objects come from tests/data/real-objects/flux (as Flux controllers wrote them);
failing shapes, which no citable dump has, follow the conditions documented for
kustomize-controller, helm-controller and source-controller.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gitops.health import FluxHealth, compute, flux_health
from gitops.rows import DEGRADED, HEALTHY, PROGRESSING, UNKNOWN
from tests.fixtures.real_objects import load_real


def by_name(rel: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in load_real(rel)}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def cond(type_: str, status: str, reason: str = "", message: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2025-06-01T10:00:00Z", **extra}


def ks(*conditions: dict[str, Any], generation: int = 2, observed: int | None = 2,
       suspend: bool = False, **meta: Any) -> dict[str, Any]:
    """A kustomize.toolkit.fluxcd.io/v1 Kustomization with the given status."""
    status: dict[str, Any] = {"conditions": list(conditions)}
    if observed is not None:
        status["observedGeneration"] = observed
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system", "generation": generation, **meta},
        "spec": {"interval": "10m", "path": "./apps", "prune": True, "suspend": suspend,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
        "status": status,
    }


REV = "main@sha1:450796ddb2ab6724ee1cc32a4be56da032d1cca0"


# --- real objects

REAL = [
    ("flux/flux-operator__resource.js-kustomizations.json", "Kustomization", "cluster-infra",
     HEALTHY, "ReconciliationSucceeded", "2025-11-18T11:09:21"),
    ("flux/flux-operator__resource.js-kustomizations.json", "Kustomization", "flux-system",
     HEALTHY, "ReconciliationSucceeded", "2025-11-18T11:49:21"),
    ("flux/flux-operator__resource.js-helmreleases.json", "HelmRelease", "cert-manager",
     HEALTHY, "InstallSucceeded", "2025-11-01T23:31:36"),
    ("flux/flux-operator__resource.js-helmreleases.json", "HelmRelease", "zot-registry",
     HEALTHY, "UpgradeSucceeded", "2025-11-02T08:48:52"),
    ("flux/flux-operator__resource.js-sources.json", "GitRepository", "flux-system",
     HEALTHY, "Succeeded", "2025-11-11T14:07:19"),
    ("flux/flux-operator__resource.js-sources.json", "OCIRepository", "cert-manager",
     HEALTHY, "Succeeded", "2025-11-01T23:31:03"),
    ("flux/flux-operator__resource.js-sources.json", "HelmRepository", "bitnami",
     DEGRADED, "Failed", "2025-11-18T12:00:00"),
    ("flux/flux-operator__resource.js-helmcharts-buckets.json", "HelmChart", "registry-zot-registry",
     HEALTHY, "ChartPullSucceeded", "2025-11-01T23:31:41"),
    ("flux/flux-operator__resource.js-helmcharts-buckets.json", "Bucket", "aws-configs",
     DEGRADED, "AuthenticationFailed", "2025-11-18T10:30:00"),
    ("flux/flux-operator__resource.js-helmcharts-buckets.json", "Bucket", "staging-configs",
     PROGRESSING, "Progressing", "2025-11-18T11:00:00"),
    # Suspended but its last reconcile succeeded: health says so, the flag says suspended.
    ("flux/flux-operator__resource.js-helmcharts-buckets.json", "Bucket", "preview-configs",
     HEALTHY, "Succeeded", "2025-11-18T09:00:00"),
    ("flux/karmada__Kustomization-interpretstatus-test.yaml", "Kustomization", "sample",
     HEALTHY, "ReconciliationSucceeded", "2023-04-30T12:51:06"),
    ("flux/karmada__HelmRelease-interpretstatus-test.yaml", "HelmRelease", "sample",
     HEALTHY, "ReconciliationSucceeded", "2023-05-01T07:11:16"),
    ("flux/tkubica12-blog__2022-01-07-gitops-s-azure-a-flux-helmrelease.yaml", "HelmRelease", "ingress-nginx",
     HEALTHY, "ReconciliationSucceeded", "2022-01-06T14:05:46"),
]


@pytest.mark.parametrize("rel, kind, name, health, reason, since", REAL, ids=[f"{r[1]}/{r[2]}" for r in REAL])
def test_real_flux_objects(rel, kind, name, health, reason, since):
    result = flux_health(by_name(rel)[(kind, name)])
    assert (result.health, result.reason, result.since) == (health, reason, utc(since))


def test_real_flux_objects_all_have_a_health():
    files = [
        "flux/flux-operator__resource.js-kustomizations.json",
        "flux/flux-operator__resource.js-helmreleases.json",
        "flux/flux-operator__resource.js-sources.json",
        "flux/flux-operator__resource.js-helmcharts-buckets.json",
    ]
    seen = {flux_health(obj).health for rel in files for obj in load_real(rel)}
    assert seen == {HEALTHY, DEGRADED, PROGRESSING}


def test_real_failed_source_carries_the_ready_message():
    obj = by_name("flux/flux-operator__resource.js-sources.json")[("HelmRepository", "bitnami")]
    assert flux_health(obj).message.startswith("failed to fetch index: unable to connect to the server")


def test_real_never_reconciled_bucket_is_progressing():
    # No conditions and the CRD's default observedGeneration of -1.
    obj = by_name("flux/flux-operator__resource.js-helmcharts-buckets.json")[("Bucket", "default-configs")]
    assert flux_health(obj) == FluxHealth(PROGRESSING, "", "waiting to be reconciled", None)


def test_real_suspended_kustomization_keeps_its_health():
    obj = load_real("flux/karmada__Kustomization-interpretstatus-test.yaml")[0]
    assert obj["spec"]["suspend"] is True
    assert flux_health(obj).health == HEALTHY


def test_real_ready_objects_are_current_for_kstatus_too():
    obj = load_real("flux/karmada__Kustomization-interpretstatus-test.yaml")[0]
    assert (compute(obj).status, compute(obj).message) == ("Current", "Resource is Ready")


# --- shapes the controllers write while working or failing


def test_failing_kustomization_is_degraded_where_kstatus_says_in_progress():
    obj = ks(
        cond("Reconciling", "True", "ProgressingWithRetry", f"Detecting drift for revision {REV}"),
        cond("Ready", "False", "BuildFailed", "kustomize build failed: accumulating resources"),
    )
    assert compute(obj).status == "InProgress"
    assert flux_health(obj) == FluxHealth(
        DEGRADED, "BuildFailed", "kustomize build failed: accumulating resources", utc("2025-06-01T10:00:00"),
    )


def test_failing_spec_change_stays_degraded_although_generation_is_behind():
    # observedGeneration only moves on success, so it lags while the new spec fails.
    obj = ks(
        cond("Ready", "False", "HealthCheckFailed",
             "timeout waiting for: [Deployment/apps/web status: 'Failed']", observedGeneration=3),
        cond("Reconciling", "True", "ProgressingWithRetry", "Running health checks"),
        generation=3, observed=2,
    )
    assert flux_health(obj).health == DEGRADED
    assert flux_health(obj).reason == "HealthCheckFailed"


def test_reconcile_in_progress():
    obj = ks(
        cond("Reconciling", "True", "Progressing", f"Fetching manifests for revision {REV}"),
        cond("Ready", "Unknown", "Progressing", "Reconciliation in progress"),
    )
    assert flux_health(obj) == FluxHealth(
        PROGRESSING, "Progressing", "Reconciliation in progress", utc("2025-06-01T10:00:00"),
    )


def test_ready_unknown_without_reconciling_is_progressing():
    # helm.toolkit.fluxcd.io/v2beta1 had no Reconciling condition.
    obj = ks(cond("Ready", "Unknown", "Progressing", "Reconciliation in progress"))
    assert flux_health(obj).health == PROGRESSING


def test_stalled_helmrelease_is_degraded_with_the_ready_reason():
    obj = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "apps", "generation": 4},
        "spec": {"interval": "5m", "chartRef": {"kind": "OCIRepository", "name": "web"}},
        "status": {
            "observedGeneration": 4,
            "conditions": [
                cond("Stalled", "True", "RetriesExceeded", "Failed to upgrade after 1 attempt(s)"),
                cond("Ready", "False", "UpgradeFailed", "Helm upgrade failed for release apps/web"),
                cond("Released", "False", "UpgradeFailed", "Helm upgrade failed"),
            ],
        },
    }
    assert compute(obj).status == "Failed"
    assert flux_health(obj).health == DEGRADED
    assert flux_health(obj).reason == "UpgradeFailed"


def test_stalled_without_a_false_ready_uses_the_stalled_condition():
    obj = ks(cond("Stalled", "True", "InvalidCELExpression", "failed to parse expression"))
    assert (flux_health(obj).health, flux_health(obj).reason) == (DEGRADED, "InvalidCELExpression")
    # The Stalled condition decided, so its transition dates the state.
    assert flux_health(obj).since == datetime(2025, 6, 1, 10, 0, tzinfo=UTC)


def test_ready_but_new_generation_not_reconciled_yet():
    obj = ks(cond("Ready", "True", "ReconciliationSucceeded", f"Applied revision: {REV}"),
             generation=3, observed=2)
    assert (flux_health(obj).health, flux_health(obj).reason) == (PROGRESSING, "LatestGenerationNotObserved")


def test_ready_condition_generation_is_preferred_over_the_status_one():
    # As the flux CLI reads readiness: the Ready condition's observedGeneration, when set, decides.
    obj = ks(cond("Ready", "True", "UpgradeSucceeded", "Helm upgrade succeeded", observedGeneration=3),
             generation=3, observed=2)
    assert flux_health(obj).health == HEALTHY
    stale = ks(cond("Ready", "True", "UpgradeSucceeded", "Helm upgrade succeeded", observedGeneration=2),
               generation=3, observed=3)
    assert flux_health(stale).health == PROGRESSING


def test_ready_while_reconciling_is_progressing():
    obj = ks(cond("Ready", "True", "Succeeded", "stored artifact"),
             cond("Reconciling", "True", "Progressing", "building artifact: new upstream revision"))
    assert (flux_health(obj).health, flux_health(obj).reason) == (PROGRESSING, "Progressing")


def test_new_object_with_crd_default_status_is_progressing():
    obj = ks(generation=1, observed=-1)
    assert flux_health(obj).health == PROGRESSING


def test_no_conditions_after_reconciling_is_unknown():
    obj = ks(generation=2, observed=2)
    assert flux_health(obj) == FluxHealth(UNKNOWN, "", "no Ready condition", None)


def test_no_status_at_all_with_a_generation_is_waiting():
    obj = ks(generation=1)
    del obj["status"]
    assert flux_health(obj).health == PROGRESSING


def test_oci_helmrepository_without_status_is_healthy():
    obj = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": "podinfo", "namespace": "flux-system", "generation": 1},
        "spec": {"type": "oci", "interval": "5m", "url": "oci://ghcr.io/stefanprodan/charts"},
    }
    assert flux_health(obj).health == HEALTHY
    assert compute(obj).status == "Current"


def test_default_helmrepository_without_status_is_not_assumed_ready():
    obj = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": "podinfo", "namespace": "flux-system", "generation": 1},
        "spec": {"interval": "5m", "url": "https://stefanprodan.github.io/podinfo"},
    }
    assert flux_health(obj).health == PROGRESSING


def test_being_deleted_is_progressing():
    obj = ks(cond("Ready", "True", "ReconciliationSucceeded", "Applied"),
             deletionTimestamp="2025-06-01T11:00:00Z")
    assert (flux_health(obj).health, flux_health(obj).message) == (PROGRESSING, "Pending deletion")


@pytest.mark.parametrize("suspend", [True, False])
def test_suspend_does_not_change_health(suspend):
    failing = ks(cond("Ready", "False", "ArtifactFailed", "GitRepository not found"), suspend=suspend)
    assert flux_health(failing).health == DEGRADED


def test_unexpected_ready_status_is_unknown():
    assert flux_health(ks(cond("Ready", "Maybe", "Odd"))).health == UNKNOWN


def test_malformed_conditions_are_unknown():
    obj = ks()
    obj["status"]["conditions"] = "Ready"
    assert flux_health(obj).health == UNKNOWN


@pytest.mark.parametrize(
    "value, since",
    [
        ("2025-06-01T10:00:00Z", datetime(2025, 6, 1, 10, tzinfo=UTC)),
        ("2025-06-01T12:00:00+02:00", datetime(2025, 6, 1, 10, tzinfo=UTC)),
        # Unquoted in a YAML dump: the loader gives a datetime, naive or aware.
        (datetime(2025, 6, 1, 10), datetime(2025, 6, 1, 10, tzinfo=UTC)),
        (datetime(2025, 6, 1, 10, tzinfo=UTC), datetime(2025, 6, 1, 10, tzinfo=UTC)),
        ("not a time", None),
        (None, None),
    ],
)
def test_since_is_the_ready_transition_as_aware_utc(value, since):
    ready = cond("Ready", "False", "BuildFailed", "x")
    ready["lastTransitionTime"] = value
    got = flux_health(ks(ready)).since
    assert got == since
    assert got is None or got.tzinfo is not None
