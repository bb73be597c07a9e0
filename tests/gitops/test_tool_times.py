"""Every "since" is the tool's own time: what the collectors read (real Argo CD and Flux objects)
and how a poll combines it with what the portal saw before (`since_when`, pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gitops.collectors.argocd import application_row
from gitops.collectors.flux import helmrelease_row, index_sources, kustomization_row
from gitops.derive.app_changes import since_when
from gitops.health import flux_health
from gitops.rows import OUT_OF_SYNC, SYNCED
from tests.fixtures.real_objects import REAL_OBJECTS as REAL
from tests.fixtures.real_objects import load_objects

FLUX = REAL / "flux"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def argo_app(file_name: str, index: int = 0) -> dict[str, Any]:
    return load_objects(REAL / "argocd" / file_name)["Application"][index]


def flux_sources() -> dict[tuple[str, str, str], dict[str, Any]]:
    objects = load_objects(FLUX / "flux-operator__resource.js-sources.json")
    objects.update(load_objects(FLUX / "flux-operator__resource.js-helmcharts-buckets.json"))
    return index_sources(objects)


def flux_object(kind: str, file_name: str, name: str) -> dict[str, Any]:
    return next(o for o in load_objects(FLUX / file_name)[kind] if o["metadata"]["name"] == name)


# --- Argo CD ---------------------------------------------------------------------------------

def test_argocd_synced_since_is_the_newest_sync_and_health_since_its_transition() -> None:
    row = application_row(
        argo_app("argocd-monorepo-controller__mrp_service_test-syncedMSAppWithSingleHistory1Annotated.yaml")
    )
    assert row.sync_status == SYNCED
    # history[-1].deployedAt and operationState.finishedAt agree: the sync that made it Synced.
    assert row.sync_since == utc("2025-08-10T12:01:33Z")
    assert row.health_since == utc("2025-08-10T12:01:35Z")


def test_argocd_synced_at_a_newer_monorepo_commit_is_dated_by_its_last_sync() -> None:
    obj = argo_app("argocd-monorepo-controller__mrp_service_test-syncedMSAppWithSingleHistory1Annotated.yaml")
    # A commit that renders the same objects moves sync.revisions on without a sync.
    obj["status"]["sync"]["revisions"] = ["f" * 40] * len(obj["status"]["sync"]["revisions"])
    obj["status"].pop("operationState")
    row = application_row(obj)
    assert row.sync_status == SYNCED
    assert row.sync_since == utc("2025-08-10T12:01:33Z")


def test_argocd_keeps_no_time_for_out_of_sync() -> None:
    row = application_row(argo_app("media-construct__r.yaml"))
    assert row.sync_status == OUT_OF_SYNC
    assert row.sync_since is None
    assert row.health_since == utc("2026-04-06T08:26:19Z")  # health.lastTransitionTime is still read


def test_argocd_before_2_14_writes_no_health_time() -> None:
    row = application_row(argo_app("gitops-backend__application.yaml"))
    assert row.health_since is None
    assert row.sync_since == utc("2021-05-15T02:12:13Z")  # its one history entry


def test_argocd_before_2_14_dates_unknown_health_by_its_comparison_error() -> None:
    obj = argo_app("gitops-backend__application.yaml")
    obj["status"]["conditions"] = [
        {"type": "ComparisonError", "message": "rpc error: code = Unknown desc = Manifest generation error",
         "lastTransitionTime": "2021-05-16T09:30:00Z"},
    ]
    row = application_row(obj)
    assert row.health_status == "Unknown"
    assert row.health_since == utc("2021-05-16T09:30:00Z")
    obj["status"]["conditions"][0]["type"] = "OrphanedResourceWarning"  # a warning says nothing of health
    assert application_row(obj).health_since is None


def test_argocd_a_failed_operation_dates_nothing() -> None:
    obj = argo_app("argocd-monorepo-controller__mrp_service_test-syncedMSAppWithSingleHistory1Annotated.yaml")
    obj["status"]["history"] = []
    obj["status"]["operationState"]["phase"] = "Failed"
    assert application_row(obj).sync_since is None


# --- Flux ------------------------------------------------------------------------------------

def test_kustomization_synced_since_the_first_apply_of_its_revision() -> None:
    obj = flux_object("Kustomization", "flux-operator__resource.js-kustomizations.json", "cluster-infra")
    row = kustomization_row(obj, flux_sources())
    assert row.sync_status == SYNCED
    # The revision was first applied 11-06; a health check failed on it on 11-11 (a second entry
    # of the same revision) and it succeeded again: it has been at that revision since 11-06.
    assert row.sync_since == utc("2025-11-06T21:36:41Z")
    assert row.health_since == utc("2025-11-18T11:09:21Z")  # Ready's lastTransitionTime


def test_kustomization_out_of_sync_since_its_source_offered_the_new_revision() -> None:
    obj = flux_object("Kustomization", "flux-operator__resource.js-kustomizations.json", "cluster-infra")
    sources = flux_sources()
    git = sources[("GitRepository", "flux-system", "flux-system")]
    git["status"]["artifact"] = {**git["status"]["artifact"], "revision": "refs/heads/main@sha1:" + "e" * 40,
                                 "lastUpdateTime": "2025-11-20T08:00:00Z"}
    row = kustomization_row(obj, sources)
    assert row.sync_status == OUT_OF_SYNC
    assert row.sync_since == utc("2025-11-20T08:00:00Z")


def test_helmrelease_synced_since_the_first_release_of_its_chart_version() -> None:
    obj = flux_object("HelmRelease", "flux-operator__resource.js-helmreleases.json", "zot-registry")
    row = helmrelease_row(obj, flux_sources())
    assert row.sync_status == SYNCED
    # Three releases of chart 0.1.89: the first one's lastDeployed (Helm carries firstDeployed over).
    assert row.sync_since == utc("2025-11-01T23:31:41Z")


def test_helmrelease_out_of_sync_with_an_artifact_older_than_its_release_has_no_tool_time() -> None:
    obj = flux_object("HelmRelease", "flux-operator__resource.js-helmreleases.json", "tailscale-operator")
    row = helmrelease_row(obj, flux_sources())
    assert row.sync_status == OUT_OF_SYNC
    assert row.sync_since is None


def _ks(*conditions: dict[str, Any], observed: int = 2) -> dict[str, Any]:
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system", "generation": 2},
            "spec": {"interval": "10m"}, "status": {"observedGeneration": observed, "conditions": list(conditions)}}


def _cond(type_: str, status: str, at: str, reason: str = "Reason") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": at}


def test_flux_progressing_is_dated_by_reconciling_not_by_an_old_ready() -> None:
    health = flux_health(_ks(_cond("Ready", "True", "2025-01-01T00:00:00Z"),
                             _cond("Reconciling", "True", "2025-06-01T10:00:00Z", "Progressing")))
    assert health.health == "Progressing" and health.since == utc("2025-06-01T10:00:00Z")


def test_flux_generation_not_reconciled_has_no_tool_time() -> None:
    health = flux_health(_ks(_cond("Ready", "True", "2025-01-01T00:00:00Z"), observed=1))
    assert health.health == "Progressing" and health.since is None


# --- since_when ------------------------------------------------------------------------------

AT = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
POLL = timedelta(minutes=1)
OLD = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "before, status, tool, expected",
    [
        # First sight: the tool's time, or "at least since" this poll.
        (None, "Degraded", OLD, (OLD, True)),
        (None, "OutOfSync", None, (AT, False)),
        (None, "Degraded", AT + POLL, (AT, False)),  # a time ahead of the poll dates nothing
        # A change the portal watched: the tool's time when it is after the old status began.
        (("Healthy", OLD, True), "Degraded", AT - POLL / 2, (AT - POLL / 2, True)),
        (("OutOfSync", AT - 10 * POLL, True), "Synced", OLD, (AT, True)),  # an older sync dates an older spell
        (("Synced", OLD, True), "OutOfSync", None, (AT, True)),
        # A status that held: the older of the two lower bounds.
        (("Degraded", AT - POLL, False), "Degraded", OLD, (OLD, True)),
        (("Degraded", OLD, True), "Degraded", AT - POLL, (OLD, True)),  # Argo CD < 3.1 rewriting its time
        (("OutOfSync", AT - POLL, False), "OutOfSync", None, (AT - POLL, False)),
        (("Synced", None, False), "Synced", None, (AT, False)),
    ],
)
def test_since_when(before, status, tool, expected) -> None:
    assert since_when(before, status, tool, AT) == expected
