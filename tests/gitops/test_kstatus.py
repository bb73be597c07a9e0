"""kstatus semantics (gitops.health.compute / kstatus) and Argo CD health words.

The tables carry the meaning of cli-utils' status tests (pkg/kstatus/status), restated
as our own cases, plus the real workload objects in tests/data/real-objects/workloads.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gitops.health import (
    CURRENT,
    FAILED,
    IN_PROGRESS,
    NOT_FOUND,
    TERMINATING,
    UNKNOWN,
    argo_health_worst,
    compute,
    kstatus,
    workload_health_to_argo,
)
from tests.fixtures.real_objects import load_real


def k(api: str, kind: str, *, spec: dict | None = None, status: Any = "absent", **meta: Any) -> dict:
    """A Kubernetes object; ``generation`` defaults to 1 as the API server sets it."""
    metadata = {"name": "test", "namespace": "qual", "generation": 1, **meta}
    metadata = {key: value for key, value in metadata.items() if value is not None}
    obj: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": metadata}
    if spec is not None:
        obj["spec"] = spec
    if status != "absent":
        obj["status"] = status
    return obj


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def conds(*items: dict[str, str], **status: Any) -> dict[str, Any]:
    """A status holding ``items`` as its conditions, plus any other status fields."""
    return {**status, "conditions": list(items)}


UNSCHEDULABLE = cond("PodScheduled", "False", "Unschedulable")
CRD = "apiextensions.k8s.io/v1"
ROLLING_PARTITION_2 = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
CRASH_LOOP = {"waiting": {"reason": "CrashLoopBackOff"}}

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def stamp(delta: timedelta) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


# (id, object, status, reason) — reason is that of the Reconciling/Stalled condition
# kstatus would attach; "" for Current and Terminating.
CASES: list[tuple[str, dict, str, str]] = [
    # --- Pod
    ("pod no status", k("v1", "Pod"), IN_PROGRESS, "PodNotObserved"),
    (
        "pod running and ready",
        k("v1", "Pod", status={"phase": "Running", "conditions": [cond("Ready", "True")]}),
        CURRENT, "",
    ),
    (
        "pod succeeded although Ready=False",
        k("v1", "Pod", status={"phase": "Succeeded", "conditions": [cond("Ready", "False", "PodCompleted")]}),
        CURRENT, "",
    ),
    (
        "pod failed is finished, hence current",
        k("v1", "Pod", status={"phase": "Failed", "conditions": [cond("Ready", "False", "PodCompleted")]}),
        CURRENT, "",
    ),
    (
        "pod unschedulable for 5s is still being scheduled",
        k(
            "v1", "Pod", creationTimestamp=stamp(-timedelta(seconds=5)),
            status={"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]},
        ),
        IN_PROGRESS, "PodNotScheduled",
    ),
    (
        "pod unschedulable for a minute",
        k(
            "v1", "Pod", creationTimestamp=stamp(-timedelta(minutes=1)),
            status={"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]},
        ),
        FAILED, "PodUnschedulable",
    ),
    (
        "pod unschedulable without creationTimestamp counts as old",
        k("v1", "Pod", status=conds(UNSCHEDULABLE, phase="Pending")),
        FAILED, "PodUnschedulable",
    ),
    (
        "pod pending for another reason",
        k("v1", "Pod", status={"phase": "Pending", "conditions": [cond("PodScheduled", "True")]}),
        IN_PROGRESS, "PodPending",
    ),
    (
        "pod crash looping",
        k(
            "v1", "Pod",
            status={
                "phase": "Running",
                "conditions": [cond("PodScheduled", "False", "Unschedulable")],
                "containerStatuses": [{"name": "nginx", "state": CRASH_LOOP}],
            },
        ),
        FAILED, "ContainerCrashLooping",
    ),
    (
        "pod running, not ready, not crash looping",
        k(
            "v1", "Pod",
            status={
                "phase": "Running",
                "conditions": [cond("Ready", "False", "ContainersNotReady")],
                "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            },
        ),
        IN_PROGRESS, "PodRunningNotReady",
    ),
    # --- PersistentVolumeClaim
    ("pvc no status", k("v1", "PersistentVolumeClaim"), IN_PROGRESS, "NotBound"),
    ("pvc pending", k("v1", "PersistentVolumeClaim", status={"phase": "Pending"}), IN_PROGRESS, "NotBound"),
    ("pvc bound", k("v1", "PersistentVolumeClaim", status={"phase": "Bound"}), CURRENT, ""),
    # --- StatefulSet
    ("sts no status", k("apps/v1", "StatefulSet"), IN_PROGRESS, "LessReplicas"),
    (
        "sts status without replicas",
        k("apps/v1", "StatefulSet", status={"observedGeneration": 1, "currentReplicas": 1}),
        IN_PROGRESS, "LessReplicas",
    ),
    (
        "sts ok",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 4},
            status={"observedGeneration": 1, "currentReplicas": 4, "readyReplicas": 4, "replicas": 4},
        ),
        CURRENT, "",
    ),
    (
        "sts less ready",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 4},
            status={"observedGeneration": 1, "currentReplicas": 4, "readyReplicas": 2, "replicas": 4},
        ),
        IN_PROGRESS, "LessReady",
    ),
    (
        "sts less current",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 4},
            status={"observedGeneration": 1, "currentReplicas": 2, "readyReplicas": 4, "replicas": 4},
        ),
        IN_PROGRESS, "LessCurrent",
    ),
    (
        "sts extra pods",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 4},
            status={"observedGeneration": 1, "currentReplicas": 4, "readyReplicas": 4, "replicas": 8},
        ),
        IN_PROGRESS, "ExtraPods",
    ),
    (
        "sts OnDelete is current whatever the counts",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 3, "updateStrategy": {"type": "OnDelete"}},
            status={"observedGeneration": 1, "replicas": 1, "readyReplicas": 0},
        ),
        CURRENT, "",
    ),
    (
        "sts partition rollout not done",
        k(
            "apps/v1", "StatefulSet",
            spec={"replicas": 4, "updateStrategy": ROLLING_PARTITION_2},
            status={"observedGeneration": 1, "replicas": 4, "readyReplicas": 4, "currentReplicas": 2,
                    "updatedReplicas": 1, "currentRevision": "a", "updateRevision": "b"},
        ),
        IN_PROGRESS, "PartitionRollout",
    ),
    (
        "sts partition rollout done although revisions differ",
        k(
            "apps/v1", "StatefulSet",
            spec={"replicas": 4, "updateStrategy": ROLLING_PARTITION_2},
            status={"observedGeneration": 1, "replicas": 4, "readyReplicas": 4, "currentReplicas": 2,
                    "updatedReplicas": 2, "currentRevision": "a", "updateRevision": "b"},
        ),
        CURRENT, "",
    ),
    (
        "sts revision mismatch",
        k(
            "apps/v1", "StatefulSet", spec={"replicas": 2},
            status={"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
                    "currentRevision": "web-1", "updateRevision": "web-2"},
        ),
        IN_PROGRESS, "RevisionMismatch",
    ),
    # --- DaemonSet
    ("ds no status", k("apps/v1", "DaemonSet"), IN_PROGRESS, "NoObservedGeneration"),
    (
        "ds without metadata.generation",
        k("apps/v1", "DaemonSet", generation=None, status={"observedGeneration": 1}),
        IN_PROGRESS, "NoGeneration",
    ),
    (
        "ds status without desired number",
        k("apps/v1", "DaemonSet", status={"observedGeneration": 1, "currentReplicas": 1}),
        IN_PROGRESS, "NoDesiredNumber",
    ),
    (
        "ds ok",
        k("apps/v1", "DaemonSet", status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
            "updatedNumberScheduled": 4, "numberAvailable": 4, "numberReady": 4}),
        CURRENT, "",
    ),
    (
        "ds different generation",
        k("apps/v1", "DaemonSet", generation=2, status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
            "updatedNumberScheduled": 4, "numberAvailable": 4, "numberReady": 4}),
        IN_PROGRESS, "LatestGenerationNotObserved",
    ),
    (
        "ds less current",
        k("apps/v1", "DaemonSet", status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 3,
            "updatedNumberScheduled": 4, "numberAvailable": 4, "numberReady": 4}),
        IN_PROGRESS, "LessCurrent",
    ),
    (
        "ds less updated",
        k("extensions/v1beta1", "DaemonSet", status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
            "updatedNumberScheduled": 1, "numberAvailable": 4, "numberReady": 4}),
        IN_PROGRESS, "LessUpdated",
    ),
    (
        "ds less available",
        k("apps/v1", "DaemonSet", status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
            "updatedNumberScheduled": 4, "numberAvailable": 2, "numberReady": 4}),
        IN_PROGRESS, "LessAvailable",
    ),
    (
        "ds less ready",
        k("apps/v1", "DaemonSet", status={
            "observedGeneration": 1, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
            "updatedNumberScheduled": 4, "numberAvailable": 4, "numberReady": 2}),
        IN_PROGRESS, "LessReady",
    ),
    # --- Deployment
    ("deploy no status", k("apps/v1", "Deployment"), IN_PROGRESS, "LessReplicas"),
    (
        "deploy ok",
        k("apps/v1", "Deployment", spec={"progressDeadlineSeconds": 600}, status={
            "observedGeneration": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            "replicas": 1, "conditions": [cond("Progressing", "True", "NewReplicaSetAvailable"),
                                          cond("Available", "True")]}),
        CURRENT, "",
    ),
    (
        "deploy with a deadline but no NewReplicaSetAvailable",
        k("apps/v1", "Deployment", spec={"progressDeadlineSeconds": 45}, status={
            "observedGeneration": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            "replicas": 1,
            "conditions": [cond("Progressing", "False", "Some reason"), cond("Available", "True")]}),
        IN_PROGRESS, "ReplicaSetNotAvailable",
    ),
    (
        "deploy without a deadline needs no Progressing condition",
        k("apps/v1", "Deployment", status={
            "observedGeneration": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            "replicas": 1, "conditions": [cond("Available", "True")]}),
        CURRENT, "",
    ),
    (
        "deploy not available",
        k("apps/v1", "Deployment", status={
            "observedGeneration": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            "replicas": 1, "conditions": [cond("Progressing", "True", "NewReplicaSetAvailable"),
                                          cond("Available", "False")]}),
        IN_PROGRESS, "DeploymentNotAvailable",
    ),
    (
        "deploy progress deadline exceeded beats the counts",
        k("apps/v1", "Deployment", spec={"replicas": 3}, status={
            "observedGeneration": 1, "replicas": 1,
            "conditions": [
                cond("Available", "True"), cond("Progressing", "False", "ProgressDeadlineExceeded")]}),
        FAILED, "ProgressDeadlineExceeded",
    ),
    (
        "deploy less updated",
        k("apps/v1", "Deployment", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 2,
            "availableReplicas": 2}),
        IN_PROGRESS, "LessUpdated",
    ),
    (
        "deploy old pods pending termination",
        k("apps/v1", "Deployment", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 3, "updatedReplicas": 2, "readyReplicas": 3,
            "availableReplicas": 3}),
        IN_PROGRESS, "ExtraPods",
    ),
    (
        "deploy updated but not yet available",
        k("apps/v1", "Deployment", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
            "availableReplicas": 1}),
        IN_PROGRESS, "LessAvailable",
    ),
    (
        "deploy less ready",
        k("extensions/v1beta1", "Deployment", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
            "availableReplicas": 2}),
        IN_PROGRESS, "LessReady",
    ),
    (
        "deploy zero replicas, nothing to wait for",
        k("apps/v1", "Deployment", spec={"replicas": 0}, status={
            "observedGeneration": 1, "conditions": [cond("Progressing", "True", "NewReplicaSetAvailable"),
                                                    cond("Available", "True")]}),
        CURRENT, "",
    ),
    # --- ReplicaSet
    ("rs no status", k("apps/v1", "ReplicaSet"), IN_PROGRESS, "LessLabelled"),
    (
        "rs ok with ReplicaFailure=False",
        k("apps/v1", "ReplicaSet", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2,
            "fullyLabeledReplicas": 2, "conditions": [cond("ReplicaFailure", "False")]}),
        CURRENT, "",
    ),
    (
        "rs ok without conditions",
        k("apps/v1", "ReplicaSet", spec={"replicas": 2}, status={
            "observedGeneration": 1, "fullyLabeledReplicas": 2, "replicas": 2, "readyReplicas": 2,
            "availableReplicas": 2}),
        CURRENT, "",
    ),
    (
        "rs less ready",
        k("apps/v1", "ReplicaSet", spec={"replicas": 4}, status={
            "observedGeneration": 1, "replicas": 4, "readyReplicas": 2, "availableReplicas": 4,
            "fullyLabeledReplicas": 4}),
        IN_PROGRESS, "LessReady",
    ),
    (
        "rs less available",
        k("apps/v1", "ReplicaSet", spec={"replicas": 4}, status={
            "observedGeneration": 1, "replicas": 4, "readyReplicas": 4, "availableReplicas": 2,
            "fullyLabeledReplicas": 4}),
        IN_PROGRESS, "LessAvailable",
    ),
    (
        "rs replica failure",
        k("apps/v1", "ReplicaSet", spec={"replicas": 4}, status={
            "observedGeneration": 1, "replicas": 4, "readyReplicas": 4, "availableReplicas": 4,
            "fullyLabeledReplicas": 4, "conditions": [cond("ReplicaFailure", "True")]}),
        IN_PROGRESS, "ReplicaFailure",
    ),
    (
        "rs extra pods",
        k("apps/v1", "ReplicaSet", spec={"replicas": 2}, status={
            "observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
            "fullyLabeledReplicas": 3}),
        IN_PROGRESS, "ExtraPods",
    ),
    # --- PodDisruptionBudget
    (
        "pdb not observed",
        k("policy/v1", "PodDisruptionBudget", generation=2, status={"observedGeneration": 1}),
        IN_PROGRESS, "LatestGenerationNotObserved",
    ),
    (
        "pdb observed",
        k("policy/v1beta1", "PodDisruptionBudget", status={"observedGeneration": 1}),
        CURRENT, "",
    ),
    # --- Job
    ("job no status", k("batch/v1", "Job"), IN_PROGRESS, "JobNotStarted"),
    (
        "job complete",
        k("batch/v1", "Job", status={"succeeded": 1, "active": 0, "conditions": [cond("Complete", "True")]}),
        CURRENT, "",
    ),
    (
        "job failed",
        k("batch/v1", "Job", spec={"completions": 4}, status={
            "succeeded": 3, "failed": 1, "conditions": [cond("Failed", "True", "JobFailed")]}),
        FAILED, "JobFailed",
    ),
    (
        "job running is current",
        k("batch/v1", "Job", spec={"completions": 10, "parallelism": 2}, status={
            "startTime": "2019-06-04T01:17:13Z", "succeeded": 3, "failed": 1, "active": 2,
            "conditions": [cond("Failed", "False"), cond("Complete", "False")]}),
        CURRENT, "",
    ),
    (
        "job suspended by spec",
        k("batch/v1", "Job", spec={"suspend": True}, status=conds(cond("Suspended", "True", "JobSuspended"))),
        CURRENT, "",
    ),
    (
        "job Suspended=True without spec.suspend has not started",
        k("batch/v1", "Job", spec={"suspend": False}, status={"conditions": [cond("Suspended", "True")]}),
        IN_PROGRESS, "JobNotStarted",
    ),
    # --- always ready
    ("cronjob no status", k("batch/v1", "CronJob"), CURRENT, ""),
    ("cronjob null status", k("batch/v1", "CronJob", status=None), CURRENT, ""),
    ("secret", k("v1", "Secret"), CURRENT, ""),
    ("configmap", k("v1", "ConfigMap"), CURRENT, ""),
    # --- Service
    ("service default", k("v1", "Service"), CURRENT, ""),
    ("service NodePort", k("v1", "Service", spec={"type": "NodePort"}), CURRENT, ""),
    (
        "service LB with clusterIP",
        k("v1", "Service", spec={"type": "LoadBalancer", "clusterIP": "1.2.3.4"}),
        CURRENT, "",
    ),
    (
        "service LB without clusterIP",
        k("v1", "Service", spec={"type": "LoadBalancer"}),
        IN_PROGRESS, "NoIPAssigned",
    ),
    # --- CustomResourceDefinition
    ("crd no conditions", k(CRD, "CustomResourceDefinition"), IN_PROGRESS, "Installing"),
    (
        "crd installing",
        k(CRD, "CustomResourceDefinition", status={"conditions": [
            cond("NamesAccepted", "True", "NoConflicts"), cond("Established", "False", "Installing")]}),
        IN_PROGRESS, "Installing",
    ),
    (
        "crd names not accepted",
        k(CRD, "CustomResourceDefinition", status={"conditions": [
            cond("NamesAccepted", "False", "SomeReason")]}),
        FAILED, "SomeReason",
    ),
    (
        "crd not established for another reason",
        k(CRD, "CustomResourceDefinition", status={"conditions": [
            cond("NamesAccepted", "True", "NoConflicts"), cond("Established", "False", "Broken")]}),
        FAILED, "Broken",
    ),
    (
        "crd established",
        k(CRD, "CustomResourceDefinition", status={"conditions": [
            cond("NamesAccepted", "True", "NoConflicts"),
            cond("Established", "True", "InitialNamesAccepted")]}),
        CURRENT, "",
    ),
    # --- any other kind: generic rules
    ("cr no status", k("something/v1", "MyCR"), CURRENT, ""),
    (
        "cr generation not observed",
        k("something/v1", "MyCR", generation=2, status={"observedGeneration": 1}),
        IN_PROGRESS, "LatestGenerationNotObserved",
    ),
    (
        "cr Ready=True",
        k("something/v1", "MyCR", status={"conditions": [cond("Ready", "True", "AllOk", "All looks ok")]}),
        CURRENT, "",
    ),
    (
        "cr Ready=False",
        k("something/v1", "MyCR", status=conds(cond("Ready", "False", "NotReadyYet"), observedGeneration=1)),
        IN_PROGRESS, "NotReadyYet",
    ),
    (
        "cr Ready=Unknown",
        k("something/v1", "MyCR", status={"conditions": [cond("Ready", "Unknown", "Progressing")]}),
        IN_PROGRESS, "Progressing",
    ),
    (
        "cr only unrelated conditions",
        k("something/v1", "MyCR", status={"conditions": [cond("SomeCondition", "False")]}),
        CURRENT, "",
    ),
    (
        "cr Reconciling=True",
        k("something/v1", "MyCR", status=conds(cond("Reconciling", "True", "Scaling", "adding nodes"))),
        IN_PROGRESS, "Scaling",
    ),
    (
        "cr Stalled=True",
        k("something/v1", "MyCR", status={"conditions": [cond("Stalled", "True", "Quota", "out of quota")]}),
        FAILED, "Quota",
    ),
    (
        "cr Reconciling=False and Stalled=False are ignored",
        k("something/v1", "MyCR", status={"conditions": [
            cond("Reconciling", "False", "Done"), cond("Stalled", "False", "Fine"), cond("Ready", "True")]}),
        CURRENT, "",
    ),
    (
        "cr first abnormal condition in list order wins",
        k("something/v1", "MyCR", status={"conditions": [
            cond("Stalled", "True", "Broken"), cond("Reconciling", "True", "Working")]}),
        FAILED, "Broken",
    ),
    (
        "cr Reconciling beats Ready=True",
        k("something/v1", "MyCR", status={"conditions": [
            cond("Ready", "True", "Ok"), cond("Reconciling", "True", "Working")]}),
        IN_PROGRESS, "Working",
    ),
    (
        "a core kind name in another group gets no built-in rule",
        k("example.com/v1", "Deployment", spec={"replicas": 3}),
        CURRENT, "",
    ),
    # --- precedence
    (
        "deletion beats everything",
        k("apps/v1", "Deployment", deletionTimestamp="2025-06-01T11:00:00Z", generation=2,
          status={"observedGeneration": 1, "conditions": [cond("Stalled", "True", "X")]}),
        TERMINATING, "",
    ),
    (
        "generation beats Stalled",
        k("something/v1", "MyCR", generation=3, status={
            "observedGeneration": 2, "conditions": [cond("Stalled", "True", "X")]}),
        IN_PROGRESS, "LatestGenerationNotObserved",
    ),
    (
        "standard conditions beat the built-in rule",
        k("apps/v1", "Deployment", spec={"replicas": 1}, status={
            "observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
            "availableReplicas": 1, "conditions": [cond("Stalled", "True", "PolicyViolation")]}),
        FAILED, "PolicyViolation",
    ),
    (
        "no generation at all skips the generation check",
        k("something/v1", "MyCR", generation=None, status={"observedGeneration": 7}),
        CURRENT, "",
    ),
    # --- shapes kstatus rejects or we tolerate
    ("pod with an unknown phase", k("v1", "Pod", status={"phase": "Exploded"}), UNKNOWN, ""),
    (
        "string observedGeneration equal to generation",
        k("argoproj.io/v1alpha1", "Rollout", generation=5, status={"observedGeneration": "5"}),
        CURRENT, "",
    ),
    (
        "string observedGeneration behind generation",
        k("argoproj.io/v1alpha1", "Rollout", generation=6, status={"observedGeneration": "5"}),
        IN_PROGRESS, "LatestGenerationNotObserved",
    ),
    (
        "non-numeric observedGeneration",
        k("argoproj.io/v1alpha1", "Rollout", generation=6, status={"observedGeneration": "5b9f8d"}),
        UNKNOWN, "",
    ),
    (
        "conditions that are not a list",
        k("something/v1", "MyCR", status={"conditions": {"type": "Ready"}}),
        UNKNOWN, "",
    ),
    (
        "a condition status that is not a string",
        k("something/v1", "MyCR", status={"conditions": [{"type": "Ready", "status": True}]}),
        UNKNOWN, "",
    ),
]


@pytest.mark.parametrize("obj, status, reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_compute_table(obj, status, reason):
    result = compute(obj, now=NOW)
    assert (result.status, result.reason) == (status, reason)


@pytest.mark.parametrize(
    "obj, message",
    [
        (
            k("apps/v1", "Deployment", generation=2, status={"observedGeneration": 1}),
            "Deployment generation is 2, but latest observed generation is 1",
        ),
        (k("v1", "PersistentVolumeClaim"), "PVC is not Bound. phase: unknown"),
        (
            k("v1", "Pod", status={"phase": "Running", "containerStatuses": [
                {"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                {"name": "b", "state": {"running": {}}},
                {"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ]}),
            "Containers in CrashLoop state: a,c",
        ),
        (
            k("apps/v1", "StatefulSet",
              spec={"replicas": 4, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
              status={"replicas": 4, "readyReplicas": 4, "updatedReplicas": 1}),
            "updated: 1/2",
        ),
        (
            k("batch/v1", "Job", spec={"completions": 4}, status={
                "failed": 1, "conditions": [cond("Failed", "True")]}),
            "Job Failed. failed: 1/4",
        ),
        (
            k("something/v1", "MyCR", status=conds(cond("Reconciling", "True", "R", "adding nodes"))),
            "adding nodes",
        ),
        (
            k("something/v1", "MyCR", status=conds(cond("Ready", "False", "R", "waiting for DNS"))),
            "waiting for DNS",
        ),
        (k("something/v1", "MyCR", status={"conditions": [cond("Ready", "True")]}), "Resource is Ready"),
        (k("something/v1", "MyCR"), "Resource is current"),
        (k("v1", "Pod", deletionTimestamp="2025-06-01T11:00:00Z"), "Resource scheduled for deletion"),
    ],
)
def test_kstatus_messages(obj, message):
    assert kstatus(obj, now=NOW)[1] == message


def test_kstatus_returns_status_and_message():
    assert kstatus(k("v1", "PersistentVolumeClaim", status={"phase": "Bound"})) == (CURRENT, "PVC is Bound")


def test_pod_schedule_window_uses_the_clock_it_is_given():
    pod = k(
        "v1", "Pod", creationTimestamp="2025-06-01T11:59:50Z",
        status={"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]},
    )
    assert compute(pod, now=NOW).status == IN_PROGRESS
    assert compute(pod, now=NOW + timedelta(seconds=10)).status == FAILED


def test_yaml_datetimes_are_accepted_for_timestamps():
    # A YAML loader turns unquoted timestamps into datetimes.
    pod = k("v1", "Pod", deletionTimestamp=datetime(2025, 6, 1, tzinfo=UTC))
    assert compute(pod).status == TERMINATING


def test_compute_does_not_modify_the_object():
    obj = k("apps/v1", "Deployment", status={"conditions": [cond("Available", "True")]})
    before = json.dumps(obj, sort_keys=True)
    compute(obj)
    assert json.dumps(obj, sort_keys=True) == before


# Real objects: (file, status, reason)
REAL_WORKLOADS = [
    ("workloads/weave-gitops__deployment-healthy.yaml", CURRENT, ""),
    ("workloads/weave-gitops__deployment-progressing.yaml", IN_PROGRESS, "LatestGenerationNotObserved"),
    ("workloads/weave-gitops__deployment-unhealthy.yaml", FAILED, "ProgressDeadlineExceeded"),
    ("workloads/argo-cd__deployment-degraded.yaml", FAILED, "ProgressDeadlineExceeded"),
    # Paused mid-rollout: one old pod is left, which kstatus counts as pending termination.
    ("workloads/argo-cd__deployment-suspended.yaml", IN_PROGRESS, "ExtraPods"),
    ("workloads/argo-cd__statefulset.yaml", CURRENT, ""),
    ("workloads/weave-gitops__statefulset-healthy.yaml", CURRENT, ""),
    # Rollouts have no built-in rule and no Ready/Reconciling/Stalled condition: kstatus says
    # Current even for a timed-out canary. Their string observedGeneration must not make them Unknown.
    ("workloads/argo-rollouts__canary-rollout.yaml", CURRENT, ""),
    ("workloads/argo-rollouts__bluegreen-rollout.yaml", CURRENT, ""),
]


@pytest.mark.parametrize("rel, status, reason", REAL_WORKLOADS, ids=[r[0] for r in REAL_WORKLOADS])
def test_real_workloads(rel, status, reason):
    (obj,) = load_real(rel)
    result = compute(obj, now=NOW)
    assert (result.status, result.reason) == (status, reason)


def test_real_healthy_deployment_message():
    (obj,) = load_real("workloads/weave-gitops__deployment-healthy.yaml")
    assert kstatus(obj) == (CURRENT, "Deployment is available. Replicas: 2")


def test_real_progressing_deployment_message():
    (obj,) = load_real("workloads/weave-gitops__deployment-progressing.yaml")
    assert kstatus(obj)[1] == "Deployment generation is 15, but latest observed generation is 14"


# --- Argo CD words


@pytest.mark.parametrize(
    "statuses, worst",
    [
        ([], "Healthy"),
        (["Healthy", "Healthy"], "Healthy"),
        (["Healthy", "Suspended"], "Suspended"),
        (["Suspended", "Progressing"], "Progressing"),
        (["Progressing", "Missing", "Healthy"], "Missing"),
        (["Degraded", "Missing"], "Degraded"),
        (["Degraded", "Unknown", "Healthy"], "Unknown"),
        # A word outside the order ranks with Healthy, as gitops-engine's IsWorse does.
        (["", "Healthy"], "Healthy"),
        (["Suspended", "Bogus"], "Suspended"),
    ],
)
def test_argo_health_worst(statuses, worst):
    assert argo_health_worst(statuses) == worst


def test_argo_health_worst_takes_any_iterable():
    assert argo_health_worst(s for s in ("Healthy", "Degraded")) == "Degraded"


@pytest.mark.parametrize(
    "status, word",
    [
        (CURRENT, "Healthy"),
        (IN_PROGRESS, "Progressing"),
        (FAILED, "Degraded"),
        (TERMINATING, "Progressing"),
        (UNKNOWN, "Unknown"),
        (NOT_FOUND, "Missing"),
        ("", "Unknown"),
    ],
)
def test_workload_health_to_argo(status, word):
    assert workload_health_to_argo(status) == word
