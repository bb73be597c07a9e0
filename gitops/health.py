"""Health of cluster objects: kstatus for any object, Argo CD's words for Flux objects.

Two vocabularies live here, on purpose kept apart:

- kstatus (kubernetes-sigs/cli-utils ``pkg/kstatus``, what Flux uses to wait for objects):
  ``Current``, ``InProgress``, ``Failed``, ``Terminating``, ``Unknown`` (and ``NotFound``).
  `kstatus()` reproduces its ``Compute`` for workloads and any other object.
- Argo CD's health words (``gitops.rows``): Healthy, Progressing, Degraded, Suspended,
  Missing, Unknown. `flux_health()` judges Flux objects in them, `argo_health_worst()`
  aggregates like Argo CD, `workload_health_to_argo()` translates a kstatus status.

Everything is a pure function over the plain dicts the Kubernetes API returns (or that a
YAML loader produced from a dump: timestamps may then be datetimes, not strings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from gitops.rows import DEGRADED, HEALTH_ORDER, HEALTHY, MISSING, PROGRESSING
from gitops.rows import UNKNOWN as ARGO_UNKNOWN

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

_INT_TEXT = re.compile(r"[+-]?\d+")


class KStatus(NamedTuple):
    """One kstatus verdict. ``reason`` is the reason of the Reconciling/Stalled condition
    kstatus would attach (empty for Current/Terminating), as its own tests assert it."""

    status: str
    reason: str
    message: str


class _ComputeError(ValueError):
    """The object has a shape kstatus's Compute rejects; its pollers then report Unknown."""


# ---------------------------------------------------------------------------------------
# Field access with kstatus's tolerance: a missing or wrongly typed field is the default.


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _int(obj: Mapping[str, Any], *path: str, default: int) -> int:
    value = _get(obj, *path)
    # bool is an int in Python but never in JSON; kstatus would not read it as a count.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def _str(obj: Mapping[str, Any], *path: str, default: str) -> str:
    value = _get(obj, *path)
    return value if isinstance(value, str) else default


def _generation_field(obj: Mapping[str, Any], *path: str) -> int | None:
    """An int generation, or None when absent.

    kstatus errors on a non-integer here. We accept a decimal string too: Argo Rollouts
    writes ``status.observedGeneration: "429"`` and such dumps are common; anything else
    that is not an integer is still an error (reported as Unknown).
    """
    value = _get(obj, *path)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        return int(value)
    raise _ComputeError(f"{'.'.join(path)} is not an integer: {value!r}")


def _conditions(obj: Mapping[str, Any]) -> list[dict[str, str]]:
    """``status.conditions`` as kstatus reads them (type, status, reason, message)."""
    status = obj.get("status")
    if status is None:
        return []
    if not isinstance(status, Mapping):
        raise _ComputeError("status is not an object")
    raw = status.get("conditions")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _ComputeError("status.conditions is not a list")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise _ComputeError("a status condition is not an object")
        cond = {}
        for key in ("type", "status", "reason", "message"):
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise _ComputeError(f"condition field {key} is not a string")
            cond[key] = value or ""
        out.append(cond)
    return out


def _first(conditions: list[dict[str, str]], type_: str, status: str | None = None) -> dict[str, str] | None:
    for cond in conditions:
        if cond["type"] == type_ and (status is None or cond["status"] == status):
            return cond
    return None


def _group_kind(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) else ""
    group = api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
    return f"{group}/{kind}" if group else kind


def _as_datetime(value: Any) -> datetime | None:
    """An aware UTC datetime from an RFC 3339 string or a YAML-parsed datetime."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    if parsed.tzinfo is None:
        # The API server writes UTC; a loader that dropped the zone did not change that.
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


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
    if _str(obj, "spec", "updateStrategy", "type", default="") == "OnDelete":
        return _current("StatefulSet is using the ondelete update strategy")
    spec = _int(obj, "spec", "replicas", default=1)
    ready = _int(obj, "status", "readyReplicas", default=0)
    current = _int(obj, "status", "currentReplicas", default=0)
    updated = _int(obj, "status", "updatedReplicas", default=0)
    replicas = _int(obj, "status", "replicas", default=0)
    partition = _int(obj, "spec", "updateStrategy", "rollingUpdate", "partition", default=-1)
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
    current_revision = _str(obj, "status", "currentRevision", default="")
    if current_revision != _str(obj, "status", "updateRevision", default=""):
        return _in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return _current(f"All replicas scheduled as expected. Replicas: {replicas}")


def _deployment(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # Without a deadline the controller never writes Progressing, so do not wait for it.
    progressing = _int(obj, "spec", "progressDeadlineSeconds", default=_NO_PROGRESS_DEADLINE) == (
        _NO_PROGRESS_DEADLINE
    )
    available = False
    for cond in _conditions(obj):
        if cond["type"] == "Progressing":
            if cond["reason"] == "ProgressDeadlineExceeded":
                return _failed(cond["reason"], "Progress deadline exceeded")
            if cond["status"] == "True" and cond["reason"] == "NewReplicaSetAvailable":
                progressing = True
        elif cond["type"] == "Available" and cond["status"] == "True":
            available = True
    spec = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas", default=0)
    updated = _int(obj, "status", "updatedReplicas", default=0)
    ready = _int(obj, "status", "readyReplicas", default=0)
    avail = _int(obj, "status", "availableReplicas", default=0)
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
    if _first(_conditions(obj), "ReplicaFailure", "True"):
        return _in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas", default=0)
    ready = _int(obj, "status", "readyReplicas", default=0)
    avail = _int(obj, "status", "availableReplicas", default=0)
    labelled = _int(obj, "status", "fullyLabeledReplicas", default=0)
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
    if _generation_field(obj, "metadata", "generation") is None:
        return _in_progress("NoGeneration", f"{kind} metadata.generation not found")
    if _generation_field(obj, "status", "observedGeneration") is None:
        return _in_progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    desired = _int(obj, "status", "desiredNumberScheduled", default=-1)
    current = _int(obj, "status", "currentNumberScheduled", default=0)
    updated = _int(obj, "status", "updatedNumberScheduled", default=0)
    avail = _int(obj, "status", "numberAvailable", default=0)
    ready = _int(obj, "status", "numberReady", default=0)
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
    phase = _str(obj, "status", "phase", default="unknown")
    if phase != "Bound":
        return _in_progress("NotBound", f"PVC is not Bound. phase: {phase}")
    return _current("PVC is Bound")


def _crash_looping(obj: Mapping[str, Any]) -> list[str]:
    names = []
    statuses = _get(obj, "status", "containerStatuses")
    for item in statuses if isinstance(statuses, list) else []:
        name = _get(item, "name")
        if isinstance(name, str) and _get(item, "state", "waiting", "reason") == "CrashLoopBackOff":
            names.append(name)
    return names


def _pod(obj: Mapping[str, Any], now: datetime) -> KStatus:
    conditions = _conditions(obj)
    phase = _str(obj, "status", "phase", default="")
    if phase == "Succeeded":
        return _current("Pod has completed successfully")
    if phase == "Failed":
        # A finished pod is not going to change any more: that is "current" for kstatus.
        return _current("Pod has completed, but not successfully")
    if phase == "Running":
        if _first(conditions, "Ready", "True"):
            return _current("Pod is Ready")
        looping = _crash_looping(obj)
        if looping:
            return _failed("ContainerCrashLooping", f"Containers in CrashLoop state: {','.join(looping)}")
        return _in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = _first(conditions, "PodScheduled", "False")
        if scheduled and scheduled["reason"] == "Unschedulable":
            # No creationTimestamp reads as the zero time, i.e. long ago.
            created = _as_datetime(_get(obj, "metadata", "creationTimestamp"))
            if created is not None and now - POD_SCHEDULE_WINDOW < created:
                return _in_progress("PodNotScheduled", "Pod has not been scheduled")
            return _failed("PodUnschedulable", "Pod could not be scheduled")
        return _in_progress("PodPending", "Pod is in the Pending phase")
    if phase == "":
        return _in_progress("PodNotObserved", "Pod phase not available")
    raise _ComputeError(f"unknown phase {phase}")


def _pdb(obj: Mapping[str, Any], now: datetime) -> KStatus:
    # Reaching here means the generation check passed: the disruption controller has
    # computed the budget for the latest spec. It sets no condition when that fails.
    return _current("AllowedDisruptions has been computed.")


def _job(obj: Mapping[str, Any], now: datetime) -> KStatus:
    parallelism = _int(obj, "spec", "parallelism", default=1)
    completions = _int(obj, "spec", "completions", default=parallelism)
    succeeded = _int(obj, "status", "succeeded", default=0)
    active = _int(obj, "status", "active", default=0)
    failed = _int(obj, "status", "failed", default=0)
    for cond in _conditions(obj):
        if cond["status"] != "True":
            continue
        if cond["type"] == "Complete":
            return _current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if cond["type"] == "Failed":
            return _failed("JobFailed", f"Job Failed. failed: {failed}/{completions}")
        if cond["type"] == "Suspended" and _get(obj, "spec", "suspend") is True:
            return _current("Job is suspended")
    if not _str(obj, "status", "startTime", default=""):
        return _in_progress("JobNotStarted", "Job not started")
    # kstatus counts a running Job as Current: the Job object itself is as asked.
    return _current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failed}")


def _service(obj: Mapping[str, Any], now: datetime) -> KStatus:
    if _str(obj, "spec", "type", default="ClusterIP") == "LoadBalancer" and not _str(
        obj, "spec", "clusterIP", default=""
    ):
        return _in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    return _current("Service is ready")


def _crd(obj: Mapping[str, Any], now: datetime) -> KStatus:
    for cond in _conditions(obj):
        if cond["type"] == "NamesAccepted" and cond["status"] == "False":
            return _failed(cond["reason"], cond["message"])
        if cond["type"] == "Established":
            if cond["status"] == "False" and cond["reason"] != "Installing":
                return _failed(cond["reason"], cond["message"])
            if cond["status"] == "True":
                return _current("CRD is established")
    return _in_progress("Installing", "Install in progress")


_BUILT_IN = {
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


# ---------------------------------------------------------------------------------------
# kstatus Compute


def _compute(obj: Mapping[str, Any], now: datetime) -> KStatus:
    deletion = _get(obj, "metadata", "deletionTimestamp")
    if isinstance(deletion, datetime) or (isinstance(deletion, str) and deletion):
        return KStatus(TERMINATING, "", "Resource scheduled for deletion")
    if deletion is not None and not isinstance(deletion, str):
        raise _ComputeError("metadata.deletionTimestamp is not a string")

    generation = _generation_field(obj, "metadata", "generation")
    if generation is not None:
        observed = _generation_field(obj, "status", "observedGeneration")
        if observed is not None and observed != generation:
            return _in_progress(
                "LatestGenerationNotObserved",
                f"{obj.get('kind', '')} generation is {generation}, "
                f"but latest observed generation is {observed}",
            )

    conditions = _conditions(obj)
    # The standard abnormal-true conditions override any kind-specific rule.
    for cond in conditions:
        if cond["status"] != "True":
            continue
        if cond["type"] == "Reconciling":
            return _in_progress(cond["reason"], cond["message"])
        if cond["type"] == "Stalled":
            return _failed(cond["reason"], cond["message"])

    rule = _BUILT_IN.get(_group_kind(obj))
    if rule is not None:
        return rule(obj, now)

    ready = _first(conditions, "Ready")
    if ready is not None:
        if ready["status"] == "True":
            return _current("Resource is Ready")
        if ready["status"] in ("False", "Unknown"):
            return _in_progress(ready["reason"], ready["message"])
    return _current("Resource is current")


def compute(obj: Mapping[str, Any], *, now: datetime | None = None) -> KStatus:
    """kstatus's verdict on ``obj``, with the reason it would attach.

    Order (cli-utils ``Compute``): deletionTimestamp → Terminating; generation not
    observed → InProgress; a True ``Reconciling``/``Stalled`` condition (first in list
    order) → InProgress/Failed; the built-in rule of the kind, if any; then the first
    ``Ready`` condition (True → Current, False/Unknown → InProgress); else Current.
    Where Compute would return an error (an unknown Pod phase, a non-integer generation,
    malformed conditions) the answer is Unknown, as kstatus's pollers report it.
    ``now`` only matters for a Pod waiting to be scheduled.
    """
    try:
        return _compute(obj, now or datetime.now(UTC))
    except _ComputeError as exc:
        return KStatus(UNKNOWN, "", str(exc))


def kstatus(obj: Mapping[str, Any], *, now: datetime | None = None) -> tuple[str, str]:
    """``(status, message)`` with kstatus semantics; see `compute`."""
    result = compute(obj, now=now)
    return result.status, result.message


# ---------------------------------------------------------------------------------------
# Argo CD's words


def argo_health_worst(statuses: Iterable[str]) -> str:
    """The worst of ``statuses`` in Argo CD's order; Healthy when there are none.

    Like gitops-engine's IsWorse, a word outside the order (``""``) ranks with Healthy.
    """
    rank = {word: index for index, word in enumerate(HEALTH_ORDER)}
    worst = HEALTHY
    for status in statuses:
        if rank.get(status, 0) > rank[worst]:
            worst = status
    return worst


_KSTATUS_TO_ARGO = {
    CURRENT: HEALTHY,
    IN_PROGRESS: PROGRESSING,
    FAILED: DEGRADED,
    # Argo CD shows an object being deleted as Progressing ("Pending deletion").
    TERMINATING: PROGRESSING,
    NOT_FOUND: MISSING,
    UNKNOWN: ARGO_UNKNOWN,
}


def workload_health_to_argo(kstatus_status: str) -> str:
    """Argo CD's health word for a kstatus status (Unknown for anything unrecognised)."""
    return _KSTATUS_TO_ARGO.get(kstatus_status, ARGO_UNKNOWN)


class FluxHealth(NamedTuple):
    health: str  # Healthy | Progressing | Degraded | Unknown (never Suspended; see flux_health)
    reason: str
    message: str
    since: datetime | None  # the Ready condition's lastTransitionTime


def _flux_generation_pending(obj: Mapping[str, Any], ready: Mapping[str, Any] | None) -> bool:
    """Whether the controller has not yet reconciled the current spec.

    Mirrors the flux CLI's readiness test: a negative or zero observedGeneration (the CRD
    default is -1) means never reconciled; otherwise the Ready condition's own
    observedGeneration, when set, must equal metadata.generation, else the status's must.
    Dumps without metadata.generation (trimmed by some APIs) cannot show a newer spec.
    """
    try:
        generation = _generation_field(obj, "metadata", "generation")
        observed = _generation_field(obj, "status", "observedGeneration")
        ready_observed = _generation_field(ready, "observedGeneration") if ready is not None else None
    except _ComputeError:
        return False
    if observed is not None and observed < 1:
        return True
    if generation is None:
        return False
    if ready_observed:
        return ready_observed != generation
    return observed != generation


def flux_health(obj: Mapping[str, Any]) -> FluxHealth:
    """Health of a Flux Kustomization, HelmRelease or source in Argo CD's words.

    kstatus alone would call a failing Flux object InProgress: the controller keeps
    ``Reconciling=True`` (reason ProgressingWithRetry) while retrying and sets ``Stalled``
    only on terminal errors. A dashboard must show the failure, so the Ready condition
    decides, as ``flux get`` shows it:

    - being deleted → Progressing;
    - an ``oci`` HelmRepository has no status by design and is ready once it exists → Healthy;
    - ``Stalled=True`` → Degraded;
    - ``Ready=False`` → Degraded, even while Reconciling=True (retrying);
    - ``Ready=Unknown`` → Progressing (a reconcile is running);
    - ``Ready=True`` → Progressing while the current generation is not reconciled yet or
      Reconciling=True, else Healthy;
    - no Ready condition → Progressing when never reconciled (observedGeneration -1 or
      behind), else Unknown.

    ``reason``/``message`` are the Ready condition's when it decided (the Stalled one's
    when Ready is not False). No grace period is applied here: pages apply theirs,
    counting from ``since``, the Ready condition's lastTransitionTime.

    Suspension is not a health. ``spec.suspend`` stops the controller, so the conditions
    stay as the last reconcile left them, and that is what ``health`` reports; the
    collector keeps ``suspended`` as a separate flag. This is how Flux presents it:
    ``flux get`` prints SUSPENDED and READY as separate columns. (Argo CD's bundled Lua
    check for Flux kinds returns Suspended instead, hiding whether the frozen state was
    good or failing.) A page wanting one word may show Suspended when ``suspended`` and
    the health is Healthy, which is also where Argo CD's order places Suspended; a
    Degraded or Progressing object that is suspended stays Degraded/Progressing.
    """
    try:
        conditions = _conditions(obj)
    except _ComputeError as exc:
        return FluxHealth(ARGO_UNKNOWN, "", str(exc), None)
    ready = _first(conditions, "Ready")
    ready_raw = _raw_condition(obj, "Ready")
    since = _as_datetime(ready_raw.get("lastTransitionTime")) if ready_raw else None

    deletion = _get(obj, "metadata", "deletionTimestamp")
    if deletion:
        return FluxHealth(PROGRESSING, "Terminating", "Pending deletion", since)

    if (
        obj.get("kind") == "HelmRepository"
        and _get(obj, "spec", "type") == "oci"
        and not conditions
    ):
        return FluxHealth(HEALTHY, "", "OCI HelmRepository: ready once it exists", None)

    stalled = _first(conditions, "Stalled", "True")
    if stalled is not None:
        if ready is not None and ready["status"] == "False":
            return FluxHealth(DEGRADED, ready["reason"], ready["message"], since)
        return FluxHealth(DEGRADED, stalled["reason"], stalled["message"], since)

    if ready is None:
        if _flux_generation_pending(obj, None):
            return FluxHealth(PROGRESSING, "", "waiting to be reconciled", since)
        return FluxHealth(ARGO_UNKNOWN, "", "no Ready condition", since)

    if ready["status"] == "False":
        return FluxHealth(DEGRADED, ready["reason"], ready["message"], since)
    if ready["status"] == "Unknown":
        return FluxHealth(PROGRESSING, ready["reason"], ready["message"], since)
    if ready["status"] == "True":
        if _flux_generation_pending(obj, ready_raw):
            return FluxHealth(
                PROGRESSING,
                "LatestGenerationNotObserved",
                "the latest spec has not been reconciled yet",
                since,
            )
        reconciling = _first(conditions, "Reconciling", "True")
        if reconciling is not None:
            return FluxHealth(PROGRESSING, reconciling["reason"], reconciling["message"], since)
        return FluxHealth(HEALTHY, ready["reason"], ready["message"], since)
    return FluxHealth(ARGO_UNKNOWN, ready["reason"], ready["message"], since)


def _raw_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The condition dict as stored (with lastTransitionTime, observedGeneration)."""
    for item in _get(obj, "status", "conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == type_:
            return item
    return None
