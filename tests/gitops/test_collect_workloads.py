"""Workloads → rows: images, replica counts, health (kstatus, and Argo Rollouts)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitops.collectors import collect
from gitops.collectors.workloads import rollout_health, workload_row
from gitops.rows import ContainerImage, WorkloadRow
from tests.fixtures.real_objects import REAL_OBJECTS as REAL
from tests.fixtures.real_objects import load_objects


def real(file_name: str) -> WorkloadRow:
    objects = load_objects(REAL / "workloads" / file_name)
    ((kind, items),) = objects.items()
    row = workload_row(items[0], kind)
    assert row is not None
    return row


def test_healthy_deployment_with_flux_labels() -> None:
    row = real("weave-gitops__deployment-healthy.yaml")
    assert (row.kind, row.namespace, row.name) == ("Deployment", "default", "podinfo")
    assert row.containers == [
        ContainerImage("podinfod", "ghcr.io/stefanprodan/podinfo:6.3.5", "ghcr.io", "stefanprodan/podinfo", "6.3.5", "",
                       limits=["cpu", "memory"])
    ]
    assert (row.replicas_desired, row.replicas_ready, row.replicas_updated, row.replicas_available) == (2, 2, 2, 2)
    assert row.health_status == "Current"
    assert row.labels["kustomize.toolkit.fluxcd.io/name"]


def test_spec_facts_for_findings() -> None:
    """What portal.findings reads beyond images, from real objects: limits per container (none
    where `resources: {}` or only requests), kubectl's last-applied annotation (Argo CD's
    client-side apply wrote it on its guestbook; Flux's podinfo has none), a Rollout's guards."""
    assert real("argo-cd__deployment-degraded.yaml").containers[0].limits == []
    assert real("argo-rollouts__canary-rollout.yaml").containers[0].limits == []  # requests only
    assert real("argo-cd__deployment-degraded.yaml").spec_facts == {"last_applied": True}
    assert real("weave-gitops__deployment-healthy.yaml").spec_facts == {"last_applied": False}
    assert real("argo-rollouts__canary-rollout.yaml").spec_facts == {"last_applied": False, "rollout_guards": []}
    assert "last-applied-configuration" not in json.dumps(real("argo-cd__deployment-degraded.yaml").raw, default=str)


def test_rollout_guards_follow_the_argo_rollouts_spec() -> None:
    canary = load_objects(REAL / "workloads" / "argo-rollouts__canary-rollout.yaml")["Rollout"][0]
    steps = [*canary["spec"]["strategy"]["canary"]["steps"], {"analysis": {"templates": [{"templateName": "rate"}]}}]
    analysed = {**canary, "spec": {**canary["spec"], "progressDeadlineAbort": True,
                                   "strategy": {"canary": {**canary["spec"]["strategy"]["canary"], "steps": steps}}}}
    row = workload_row(analysed, "Rollout")
    assert row is not None
    assert row.spec_facts["rollout_guards"] == ["canary.steps.analysis", "progressDeadlineAbort"]
    blue_green = load_objects(REAL / "workloads" / "argo-rollouts__bluegreen-rollout.yaml")["Rollout"][0]
    strategy = {"blueGreen": {**blue_green["spec"]["strategy"]["blueGreen"],
                              "prePromotionAnalysis": {"templates": [{"templateName": "smoke"}]}}}
    row = workload_row({**blue_green, "spec": {**blue_green["spec"], "strategy": strategy}}, "Rollout")
    assert row is not None and row.spec_facts["rollout_guards"] == ["blueGreen.prePromotionAnalysis"]


def test_deployment_generation_not_observed() -> None:
    row = real("weave-gitops__deployment-progressing.yaml")
    assert row.health_status == "InProgress"
    assert "generation is 15" in row.health_message


@pytest.mark.parametrize("file_name", ["weave-gitops__deployment-unhealthy.yaml", "argo-cd__deployment-degraded.yaml"])
def test_progress_deadline_exceeded_is_failed(file_name: str) -> None:
    assert real(file_name).health_status == "Failed"


def test_unquoted_timestamps_are_stored_as_rfc3339_text() -> None:
    from gitops.models import Workload

    row = real("argo-cd__deployment-degraded.yaml")
    # The raw object is kept as read (no per-poll deep copy); the store's JSON field
    # encodes the datetimes a YAML loader made of unquoted timestamps.
    encoded = json.loads(json.dumps(row.raw, cls=Workload._meta.get_field("containers").encoder))
    assert encoded["metadata"]["creationTimestamp"] == "2018-07-18T04:40:44Z"
    assert encoded["status"]["conditions"][1]["lastTransitionTime"] == "2018-07-18T06:29:23Z"
    assert row.containers[0].registry == "gcr.io" and row.containers[0].tag == "0.3"


def test_paused_deployment() -> None:
    row = real("argo-cd__deployment-suspended.yaml")
    assert row.paused is True


def test_statefulsets() -> None:
    redis = real("argo-cd__statefulset.yaml")
    assert redis.health_status == "Current"  # OnDelete
    assert (redis.containers[0].registry, redis.containers[0].repository, redis.containers[0].tag) == (
        "docker.io",
        "bitnami/redis",
        "4.0.10-debian-9",
    )
    alertmanager = real("weave-gitops__statefulset-healthy.yaml")
    assert [c.container for c in alertmanager.containers] == ["alertmanager", "config-reloader"]
    assert alertmanager.labels["argocd.argoproj.io/instance"]


def test_canary_rollout_with_string_observed_generation() -> None:
    row = real("argo-rollouts__canary-rollout.yaml")
    assert row.raw["status"]["observedGeneration"] == "429"
    assert row.health_status == "Failed"
    assert "timed out progressing" in row.health_message
    assert row.paused is False
    assert (row.replicas_desired, row.replicas_ready, row.replicas_updated, row.replicas_available) == (5, 5, 1, 5)
    assert row.containers[0].tag == "does-not-exist"
    assert row.containers[0].repository == "argoproj/rollouts-demo"


def test_paused_bluegreen_rollout() -> None:
    row = real("argo-rollouts__bluegreen-rollout.yaml")
    assert (row.health_status, row.paused) == ("InProgress", True)
    assert "BlueGreenPause" in row.health_message


# --- hand-made ---------------------------------------------------------------------------------


def _pod(*images: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)],
        "initContainers": [{"name": f"init{i}", "image": im} for i, im in enumerate(init)],
    }


def test_cronjob_reads_the_job_template() -> None:
    obj = {
        "metadata": {"name": "report", "namespace": "shop", "labels": {"team": "shop"}},
        "spec": {
            "suspend": True,
            "schedule": "0 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": _pod("ghcr.io/acme/report:3", init=("busybox:1.36",))}}},
        },
    }
    row = workload_row(obj, "CronJob")
    assert row is not None
    assert [(c.container, c.tag, c.init) for c in row.containers] == [("c0", "3", False), ("init0", "1.36", True)]
    assert row.containers[1].repository == "library/busybox"
    assert row.replicas_desired is None and row.replicas_ready is None
    assert row.health_status == "Current" and row.paused is True
    assert row.labels == {"team": "shop"}


def test_daemonset_counts() -> None:
    obj = {
        "metadata": {"name": "agent", "namespace": "ops", "generation": 2},
        "spec": {"template": {"spec": _pod("ghcr.io/acme/agent@sha256:" + "e" * 64)}},
        "status": {
            "observedGeneration": 2,
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "updatedNumberScheduled": 2,
            "numberAvailable": 3,
            "numberReady": 3,
        },
    }
    row = workload_row(obj, "DaemonSet")
    assert row is not None
    assert (row.replicas_desired, row.replicas_ready, row.replicas_updated, row.replicas_available) == (3, 3, 2, 3)
    assert row.health_status == "InProgress"
    assert row.containers[0].version == "sha256:" + "e" * 64


def test_counts_omitted_by_the_api_are_zero_but_no_status_is_unknown() -> None:
    with_status = workload_row(
        {"metadata": {"name": "w"}, "spec": {"replicas": 3}, "status": {"replicas": 3}}, "Deployment"
    )
    manifest = workload_row({"metadata": {"name": "w"}, "spec": {}}, "Deployment")
    assert with_status is not None and manifest is not None
    assert (with_status.replicas_desired, with_status.replicas_ready) == (3, 0)
    assert (manifest.replicas_desired, manifest.replicas_ready) == (1, None)


def test_unparseable_image_is_kept_with_a_warning() -> None:
    row = workload_row({"metadata": {"name": "w"}, "spec": {"template": {"spec": _pod("bad image", "")}}}, "Deployment")
    assert row is not None
    assert [c.image for c in row.containers] == ["bad image", ""]
    assert all(c.registry == "" for c in row.containers)
    assert len(row.warnings) == 2


def test_other_kinds_are_not_workloads_and_kind_comes_from_the_object() -> None:
    assert workload_row({"kind": "Pod", "metadata": {"name": "p"}}) is None
    assert workload_row({"metadata": {"name": "x"}}) is None
    row = workload_row({"kind": "StatefulSet", "metadata": {"name": "db"}})
    assert row is not None and row.kind == "StatefulSet"


def _rollout(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "shop", "generation": 7},
        "spec": {"replicas": 2, "template": {"spec": _pod("ghcr.io/acme/web:1")}},
        "status": {"observedGeneration": "7", **status},
    }


@pytest.mark.parametrize(
    ("status", "expected", "paused"),
    [
        ({"phase": "Healthy", "updatedReplicas": 2, "availableReplicas": 2}, "Current", False),
        ({"phase": "Progressing", "message": "more replicas need to be updated"}, "InProgress", False),
        ({"phase": "Paused", "message": "CanaryPauseStep"}, "InProgress", True),
        ({"phase": "Degraded", "message": "ProgressDeadlineExceeded"}, "Failed", False),
        ({"abort": True, "phase": "Degraded"}, "Failed", False),
        ({"conditions": [{"type": "InvalidSpec", "status": "True", "message": "bad steps"}]}, "Failed", False),
        ({"observedGeneration": "6", "phase": "Healthy"}, "InProgress", False),
        ({"observedGeneration": "a1b2c3", "updatedReplicas": 2, "availableReplicas": 2}, "Current", False),
        ({"updatedReplicas": 1, "availableReplicas": 2}, "InProgress", False),
        ({"updatedReplicas": 2, "availableReplicas": 1}, "InProgress", False),
        ({"pauseConditions": [{"reason": "CanaryPauseStep"}], "updatedReplicas": 1}, "InProgress", True),
    ],
)
def test_rollout_health(status: dict[str, Any], expected: str, paused: bool) -> None:
    health, message, is_paused = rollout_health(_rollout(**status))
    assert (health, is_paused) == (expected, paused)
    assert message


def test_terminating_rollout() -> None:
    obj = _rollout(phase="Healthy")
    obj["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert rollout_health(obj)[0] == "Terminating"


def test_rollout_with_workload_ref_reads_the_deployment_through_collect() -> None:
    rollout = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": 2, "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-base"}},
        "status": {"phase": "Healthy"},
    }
    deployment = {
        "metadata": {"name": "web-base", "namespace": "shop"},
        "spec": {"replicas": 0, "template": {"spec": _pod("ghcr.io/acme/web:2.3.1")}},
    }
    result = collect({"Rollout": [rollout], "Deployment": [deployment]})
    by_kind = {w.kind: w for w in result.workloads}
    assert by_kind["Rollout"].containers[0].tag == "2.3.1"
    assert by_kind["Rollout"].warnings == [
        "pod template is in Deployment/web-base (workloadRef); images read from there"
    ]
    alone = workload_row(rollout, "Rollout")
    assert alone is not None and alone.containers == []
    assert alone.warnings == ["pod template is in Deployment/web-base (workloadRef), which was not found"]


def test_list_items_without_kind_or_api_version_get_the_kind_rule() -> None:
    obj = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": 1},
        "status": {
            "replicas": 1,
            "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}],
        },
    }
    row = workload_row(obj, "Deployment")
    assert row is not None
    assert row.health_status == "Failed"  # kstatus's Deployment rule, not its generic fallback
    assert "kind" not in row.raw  # the row keeps the object as it came
