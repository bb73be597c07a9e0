"""kstatus's rules for the built-in kinds (cli-utils ``pkg/kstatus/status/core.go``).

Each rule gets an object whose generation has been observed and that carries no True
``Reconciling``/``Stalled`` condition (`gitops.health.kstatus_compute` checks those
first), and returns a verdict; none falls through.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from gitops.health.objects import ComputeError, first_condition, generation_field, int_field, read_conditions, str_field
from gitops.rawobjects import dig
from portal.kernel.timestamps import parse_time

# kstatus statuses.
CURRENT = "Current"
IN_PROGRESS = "InProgress"
FAILED = "Failed"
TERMINATING = "Terminating"
UNKNOWN = "Unknown"
# Only kstatus's polling readers say NotFound (the object is gone); Compute never does.
NOT_FOUND = "NotFound"

# kstatus gives a Pod this long to be scheduled before "Unschedulable" counts as Failed.
POD_SCHEDULE_WINDOW = timedelta(seconds=15)

# Deployment controller's "no deadline" sentinel (progressDeadlineSeconds unset).
_NO_PROGRESS_DEADLINE = 2**31 - 1


class KStatus(NamedTuple):
    """One kstatus verdict. ``reason`` is the reason of the Reconciling/Stalled condition
    kstatus would attach (empty for Current/Terminating), as its own tests assert it."""

    status: str
    reason: str
    message: str


def _in_progress(reason: str, message: str) -> KStatus:
    return KStatus(IN_PROGRESS, reason, message)


def _failed(reason: str, message: str) -> KStatus:
    return KStatus(FAILED, reason, message)


def _current(message: str) -> KStatus:
    return KStatus(CURRENT, "", message)


# ---------------------------------------------------------------------------------------
# Built-in kinds (kstatus core.go). Each returns a verdict; none falls through.


def _always_ready(obj: Mapping[str, Any], now: datetime) -> KStatus:
    return _current("Resource is always ready")


def _statefulset(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # OnDelete means a person replaces pods by hand: nothing for a controller to finish.
    if str_field(obj, "spec", "updateStrategy", "type", default="") == "OnDelete":
        return _current("StatefulSet is using the ondelete update strategy")
    spec = int_field(obj, "spec", "replicas", default=1)
    ready = int_field(obj, "status", "readyReplicas", default=0)
    current = int_field(obj, "status", "currentReplicas", default=0)
    updated = int_field(obj, "status", "updatedReplicas", default=0)
    replicas = int_field(obj, "status", "replicas", default=0)
    partition = int_field(obj, "spec", "updateStrategy", "rollingUpdate", "partition", default=-1)
    if spec > replicas:
        return _in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if partition != -1:
        # Only ordinals >= partition are meant to update; the rest stay on the old revision.
        if updated < spec - partition:
            return _in_progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return _current(f"Partition rollout complete. updated: {updated}")
    if spec > current:
        return _in_progress("LessCurrent", f"current: {current}/{spec}")
    current_revision = str_field(obj, "status", "currentRevision", default="")
    if current_revision != str_field(obj, "status", "updateRevision", default=""):
        return _in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return _current(f"All replicas scheduled as expected. Replicas: {replicas}")


def _deployment(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # Without a deadline the controller never writes Progressing, so do not wait for it.
    progressing = int_field(obj, "spec", "progressDeadlineSeconds", default=_NO_PROGRESS_DEADLINE) == (
        _NO_PROGRESS_DEADLINE
    )
    available = False
    for cond in read_conditions(obj):
        if cond["type"] == "Progressing":
            if cond["reason"] == "ProgressDeadlineExceeded":
                return _failed(cond["reason"], "Progress deadline exceeded")
            if cond["status"] == "True" and cond["reason"] == "NewReplicaSetAvailable":
                progressing = True
        elif cond["type"] == "Available" and cond["status"] == "True":
            available = True
    spec = int_field(obj, "spec", "replicas", default=1)
    replicas = int_field(obj, "status", "replicas", default=0)
    updated = int_field(obj, "status", "updatedReplicas", default=0)
    ready = int_field(obj, "status", "readyReplicas", default=0)
    avail = int_field(obj, "status", "availableReplicas", default=0)
    if spec > replicas:
        return _in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > updated:
        return _in_progress("LessUpdated", f"Updated: {updated}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if updated > avail:
        return _in_progress("LessAvailable", f"Available: {avail}/{updated}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if not progressing:
        return _in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return _in_progress("DeploymentNotAvailable", "Deployment not Available")
    return _current(f"Deployment is available. Replicas: {replicas}")


def _replicaset(obj: Mapping[str, Any], now: datetime) -> KStatus:
    if first_condition(read_conditions(obj), "ReplicaFailure", "True"):
        return _in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = int_field(obj, "spec", "replicas", default=1)
    replicas = int_field(obj, "status", "replicas", default=0)
    ready = int_field(obj, "status", "readyReplicas", default=0)
    avail = int_field(obj, "status", "availableReplicas", default=0)
    labelled = int_field(obj, "status", "fullyLabeledReplicas", default=0)
    if spec > labelled:
        return _in_progress("LessLabelled", f"Labelled: {labelled}/{spec}")
    if spec > avail:
        return _in_progress("LessAvailable", f"Available: {avail}/{spec}")
    if spec > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return _in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    return _current(f"ReplicaSet is available. Replicas: {replicas}")


def _daemonset(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # The generic generation check skips missing fields; the DaemonSet controller always
    # writes both once it has acted, so a missing one means it has not acted yet.
    kind = obj.get("kind", "")
    if generation_field(obj, "metadata", "generation") is None:
        return _in_progress("NoGeneration", f"{kind} metadata.generation not found")
    if generation_field(obj, "status", "observedGeneration") is None:
        return _in_progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    desired = int_field(obj, "status", "desiredNumberScheduled", default=-1)
    current = int_field(obj, "status", "currentNumberScheduled", default=0)
    updated = int_field(obj, "status", "updatedNumberScheduled", default=0)
    avail = int_field(obj, "status", "numberAvailable", default=0)
    ready = int_field(obj, "status", "numberReady", default=0)
    if desired == -1:
        return _in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    if desired > current:
        return _in_progress("LessCurrent", f"Current: {current}/{desired}")
    if desired > updated:
        return _in_progress("LessUpdated", f"Updated: {updated}/{desired}")
    if desired > avail:
        return _in_progress("LessAvailable", f"Available: {avail}/{desired}")
    if desired > ready:
        return _in_progress("LessReady", f"Ready: {ready}/{desired}")
    return _current(f"All replicas scheduled as expected. Replicas: {desired}")


def _pvc(obj: Mapping[str, Any], now: datetime) -> KStatus:
    phase = str_field(obj, "status", "phase", default="unknown")
    if phase != "Bound":
        return _in_progress("NotBound", f"PVC is not Bound. phase: {phase}")
    return _current("PVC is Bound")


def _crash_looping(obj: Mapping[str, Any]) -> list[str]:
    names = []
    statuses = dig(obj, "status", "containerStatuses")
    for item in statuses if isinstance(statuses, list) else []:
        name = dig(item, "name")
        if isinstance(name, str) and dig(item, "state", "waiting", "reason") == "CrashLoopBackOff":
            names.append(name)
    return names


def _pod(obj: Mapping[str, Any], now: datetime) -> KStatus:
    conditions = read_conditions(obj)
    phase = str_field(obj, "status", "phase", default="")
    if phase == "Succeeded":
        return _current("Pod has completed successfully")
    if phase == "Failed":
        # A finished pod is not going to change any more: that is "current" for kstatus.
        return _current("Pod has completed, but not successfully")
    if phase == "Running":
        if first_condition(conditions, "Ready", "True"):
            return _current("Pod is Ready")
        looping = _crash_looping(obj)
        if looping:
            return _failed("ContainerCrashLooping", f"Containers in CrashLoop state: {','.join(looping)}")
        return _in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = first_condition(conditions, "PodScheduled", "False")
        if scheduled and scheduled["reason"] == "Unschedulable":
            # No creationTimestamp reads as the zero time, i.e. long ago.
            created = parse_time(dig(obj, "metadata", "creationTimestamp"))
            if created is not None and now - POD_SCHEDULE_WINDOW < created:
                return _in_progress("PodNotScheduled", "Pod has not been scheduled")
            return _failed("PodUnschedulable", "Pod could not be scheduled")
        return _in_progress("PodPending", "Pod is in the Pending phase")
    if phase == "":
        return _in_progress("PodNotObserved", "Pod phase not available")
    raise ComputeError(f"unknown phase {phase}")


def _pdb(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # Reaching here means the generation check passed: the disruption controller has
    # computed the budget for the latest spec. It sets no condition when that fails.
    return _current("AllowedDisruptions has been computed.")


def _job(obj: Mapping[str, Any], now: datetime) -> KStatus:
    parallelism = int_field(obj, "spec", "parallelism", default=1)
    completions = int_field(obj, "spec", "completions", default=parallelism)
    succeeded = int_field(obj, "status", "succeeded", default=0)
    active = int_field(obj, "status", "active", default=0)
    failed = int_field(obj, "status", "failed", default=0)
    for cond in read_conditions(obj):
        if cond["status"] != "True":
            continue
        if cond["type"] == "Complete":
            return _current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if cond["type"] == "Failed":
            return _failed("JobFailed", f"Job Failed. failed: {failed}/{completions}")
        if cond["type"] == "Suspended" and dig(obj, "spec", "suspend") is True:
            return _current("Job is suspended")
    if not str_field(obj, "status", "startTime", default=""):
        return _in_progress("JobNotStarted", "Job not started")
    # kstatus counts a running Job as Current: the Job object itself is as asked.
    return _current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failed}")


def _service(obj: Mapping[str, Any], now: datetime) -> KStatus:
    if str_field(obj, "spec", "type", default="ClusterIP") == "LoadBalancer" and not str_field(
        obj, "spec", "clusterIP", default=""
    ):
        return _in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    return _current("Service is ready")


def _crd(obj: Mapping[str, Any], now: datetime) -> KStatus:
    for cond in read_conditions(obj):
        if cond["type"] == "NamesAccepted" and cond["status"] == "False":
            return _failed(cond["reason"], cond["message"])
        if cond["type"] == "Established":
            if cond["status"] == "False" and cond["reason"] != "Installing":
                return _failed(cond["reason"], cond["message"])
            if cond["status"] == "True":
                return _current("CRD is established")
    return _in_progress("Installing", "Install in progress")


BUILT_IN = {
    "Service": _service,
    "Pod": _pod,
    "Secret": _always_ready,
    "ConfigMap": _always_ready,
    "PersistentVolumeClaim": _pvc,
    "apps/StatefulSet": _statefulset,
    "apps/DaemonSet": _daemonset,
    "extensions/DaemonSet": _daemonset,
    "apps/Deployment": _deployment,
    "extensions/Deployment": _deployment,
    "apps/ReplicaSet": _replicaset,
    "extensions/ReplicaSet": _replicaset,
    "policy/PodDisruptionBudget": _pdb,
    "batch/CronJob": _always_ready,
    "batch/Job": _job,
    "apiextensions.k8s.io/CustomResourceDefinition": _crd,
}
