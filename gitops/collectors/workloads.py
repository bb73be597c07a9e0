"""Workloads (what actually runs) as rows: images, replica counts, health.

Deployment, StatefulSet, DaemonSet and CronJob health is kstatus's verdict. kstatus has
no rule for Argo Rollouts (it would only read generic conditions), so a Rollout is
judged here in kstatus's words, following what the Rollout controller reports:

- being deleted → Terminating; a spec the controller has not observed → InProgress;
- an `InvalidSpec` condition or an aborted rollout → Failed;
- `status.phase` when present (Argo Rollouts ≥ 1.0): Healthy → Current, Degraded →
  Failed, Progressing and Paused → InProgress;
- otherwise (older controllers): a progress deadline exceeded → Failed; paused →
  InProgress; fewer updated/available replicas than desired → InProgress; else Current.

A paused Rollout (a blue-green waiting for promotion, a canary at a pause step) is not
done, so InProgress, with `paused` set so a page can say "paused" rather than "stuck".

Beyond images and health a row keeps the few facts portal.findings judges (`spec_facts`, and
each container's `limits`): whether kubectl's last-applied-configuration annotation is on the
object (the stored copy drops the annotation itself, see gitops.rawobjects.trimmed), and what
could stop a Rollout's bad version (`rollout_guards`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops.health import kstatus
from gitops.rawobjects import (
    LAST_APPLIED,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    condition,
    dig,
    metadata,
    str_dict,
    trimmed,
)
from gitops.rows import ContainerImage, WorkloadRow
from portal.kernel.catalog.images import parse_image

# The apiVersion assumed when an object comes without one (items of an API list).
WORKLOAD_API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "CronJob": "batch/v1",
    "Rollout": "argoproj.io/v1alpha1",
}
WORKLOAD_KINDS = tuple(WORKLOAD_API_VERSIONS)

WorkloadKey = tuple[str, str, str]  # (kind, namespace, name)

CURRENT = "Current"
IN_PROGRESS = "InProgress"
FAILED = "Failed"
TERMINATING = "Terminating"


def workload_row(
    obj: Mapping[str, Any],
    kind: str | None = None,
    referenced: Mapping[WorkloadKey, Mapping[str, Any]] | None = None,
) -> WorkloadRow | None:
    """A row for a supported workload kind, None for any other kind.

    `kind` names the kind when the object has none (API list items omit it).
    `referenced` lets a Rollout with `workloadRef` read its pod template from the
    Deployment it points to, keyed by (kind, namespace, name).
    """
    kind = kind or as_str(obj.get("kind"))
    if kind not in WORKLOAD_API_VERSIONS:
        return None
    # kstatus picks its rule by apiVersion group and kind, which API list items lack.
    full = dict(obj)
    if not as_str(full.get("kind")):
        full["kind"] = kind
    if not as_str(full.get("apiVersion")):
        full["apiVersion"] = WORKLOAD_API_VERSIONS[kind]
    namespace, name, uid = metadata(full)
    row = WorkloadRow(kind=kind, namespace=namespace, name=name, uid=uid)
    row.labels = str_dict(dig(full, "metadata", "labels"))

    pod_spec = _pod_spec(full, kind, namespace, row, referenced or {})
    row.containers = _containers(pod_spec, row)
    _read_replicas(full, kind, row)

    if kind == "Rollout":
        row.health_status, row.health_message, row.paused = rollout_health(full)
    else:
        row.health_status, row.health_message = kstatus(full)
        field = "suspend" if kind == "CronJob" else "paused"
        row.paused = as_bool(dig(full, "spec", field))
    row.spec_facts = spec_facts(full, kind)
    row.raw = trimmed(obj)
    return row


def _pod_spec(
    obj: Mapping[str, Any],
    kind: str,
    namespace: str,
    row: WorkloadRow,
    referenced: Mapping[WorkloadKey, Mapping[str, Any]],
) -> dict[str, Any]:
    spec = as_dict(obj.get("spec"))
    if kind == "CronJob":
        return as_dict(dig(spec, "jobTemplate", "spec", "template", "spec"))
    pod_spec = as_dict(dig(spec, "template", "spec"))
    workload_ref = as_dict(spec.get("workloadRef"))
    if kind != "Rollout" or pod_spec.get("containers") or not workload_ref:
        return pod_spec
    # The Rollout borrows the pod template of another workload (usually a Deployment
    # that it scales down); its images are that workload's.
    ref_kind = as_str(workload_ref.get("kind")) or "Deployment"
    ref_name = as_str(workload_ref.get("name"))
    target = referenced.get((ref_kind, namespace, ref_name))
    if target is None:
        row.warnings.append(f"pod template is in {ref_kind}/{ref_name} (workloadRef), which was not found")
        return pod_spec
    row.warnings.append(f"pod template is in {ref_kind}/{ref_name} (workloadRef); images read from there")
    return as_dict(dig(target, "spec", "template", "spec"))


# What RunningVersion.container holds; Kubernetes itself allows 63 (a DNS label), but a
# custom resource's pod template (a Rollout's) is not validated by the API server.
MAX_CONTAINER_NAME = 253


def _containers(pod_spec: Mapping[str, Any], row: WorkloadRow) -> list[ContainerImage]:
    out = []
    for field, init in (("initContainers", True), ("containers", False)):
        for container in as_list(pod_spec.get(field)):
            if not isinstance(container, Mapping):
                continue
            name = as_str(container.get("name"))
            image = as_str(container.get("image"))
            if len(name) > MAX_CONTAINER_NAME:
                # Not a name Kubernetes can run; stored, it failed the whole cluster's write.
                row.warnings.append(f"container {name[:60]}: skipped: name longer than {MAX_CONTAINER_NAME} characters")
                continue
            parsed = parse_image(image)
            limits = sorted(str(k) for k in as_dict(dig(container, "resources", "limits")))
            if parsed is None:
                # Kept with empty parts so the container still shows; it matches no service.
                row.warnings.append(f"container {name}: {image!r} is not an image reference")
                out.append(ContainerImage(name, image, "", "", "", "", init=init, limits=limits))
                continue
            out.append(
                ContainerImage(
                    container=name,
                    image=image,
                    registry=parsed.registry,
                    repository=parsed.repository,
                    tag=parsed.tag,
                    digest=parsed.digest,
                    init=init,
                    limits=limits,
                )
            )
    # Main containers first: they are what a person means by "the image it runs".
    return [c for c in out if not c.init] + [c for c in out if c.init]


def spec_facts(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """What portal.findings judges of a workload beyond its containers: `last_applied` (kubectl's
    client-side apply annotation is on it) and, for a Rollout, `rollout_guards`."""
    annotations = dig(obj, "metadata", "annotations")
    facts: dict[str, Any] = {"last_applied": isinstance(annotations, Mapping) and LAST_APPLIED in annotations}
    if kind == "Rollout":
        facts["rollout_guards"] = rollout_guards(obj)
    return facts


def rollout_guards(obj: Mapping[str, Any]) -> list[str]:
    """What in a Rollout's spec can stop a bad version without a person (Argo Rollouts' spec):
    analysis run in the background of a canary (`canary.analysis`), an analysis or an experiment
    with analyses among the canary's steps, a blue-green's pre- or post-promotion analysis, and
    `progressDeadlineAbort` (abort when the new pods do not become available in time)."""
    spec = as_dict(obj.get("spec"))
    canary = as_dict(dig(spec, "strategy", "canary"))
    blue_green = as_dict(dig(spec, "strategy", "blueGreen"))
    guards = []
    if as_dict(canary.get("analysis")):
        guards.append("canary.analysis")
    for step in as_list(canary.get("steps")):
        if isinstance(step, Mapping) and as_dict(step.get("analysis")):
            guards.append("canary.steps.analysis")
            break
    for step in as_list(canary.get("steps")):
        if isinstance(step, Mapping) and as_list(dig(step, "experiment", "analyses")):
            guards.append("canary.steps.experiment.analyses")
            break
    guards += [f"blueGreen.{name}" for name in ("prePromotionAnalysis", "postPromotionAnalysis")
               if as_dict(blue_green.get(name))]
    if as_bool(spec.get("progressDeadlineAbort")):
        guards.append("progressDeadlineAbort")
    return guards


def _read_replicas(obj: Mapping[str, Any], kind: str, row: WorkloadRow) -> None:
    status = obj.get("status")
    has_status = isinstance(status, Mapping)

    def count(*path: str) -> int | None:
        # The API server omits zero counts, so with a status present "missing" is 0;
        # without any status (a manifest, a brand-new object) nothing is known.
        value = as_int(dig(obj, "status", *path))
        if value is None and has_status:
            return 0
        return value

    if kind == "CronJob":
        return
    if kind == "DaemonSet":
        row.replicas_desired = count("desiredNumberScheduled")
        row.replicas_ready = count("numberReady")
        row.replicas_updated = count("updatedNumberScheduled")
        row.replicas_available = count("numberAvailable")
        return
    desired = as_int(dig(obj, "spec", "replicas"))
    # The API defaults spec.replicas to 1 when a manifest leaves it out.
    row.replicas_desired = 1 if desired is None else desired
    row.replicas_ready = count("readyReplicas")
    row.replicas_updated = count("updatedReplicas")
    row.replicas_available = count("availableReplicas")


def rollout_health(obj: Mapping[str, Any]) -> tuple[str, str, bool]:
    """(kstatus status, message, paused) for an Argo Rollout; see the module docstring."""
    status = as_dict(obj.get("status"))
    spec = as_dict(obj.get("spec"))
    paused = (
        as_bool(spec.get("paused"))
        or as_bool(status.get("controllerPause"))
        or bool(as_list(status.get("pauseConditions")))
    )
    if dig(obj, "metadata", "deletionTimestamp"):
        return TERMINATING, "Resource scheduled for deletion", paused
    generation = as_int(dig(obj, "metadata", "generation"))
    # Old controllers stored a spec hash here, not a number: then there is nothing to compare.
    observed = as_int(status.get("observedGeneration"))
    if generation is not None and observed is not None and generation != observed:
        return IN_PROGRESS, f"Rollout generation is {generation}, but latest observed generation is {observed}", paused
    invalid = condition(obj, "InvalidSpec")
    if invalid is not None and as_str(invalid.get("status")) == "True":
        return FAILED, as_str(invalid.get("message")) or "Rollout spec is invalid", paused
    if as_bool(status.get("abort")):
        return FAILED, as_str(status.get("message")) or "Rollout aborted", paused

    phase = as_str(status.get("phase"))
    message = as_str(status.get("message"))
    if phase == "Healthy":
        return CURRENT, message or "Rollout is healthy", paused
    if phase == "Degraded":
        return FAILED, message or "Rollout is degraded", paused
    if phase == "Paused":
        return IN_PROGRESS, message or "Rollout is paused", True
    if phase == "Progressing":
        return IN_PROGRESS, message or "Rollout is progressing", paused

    progressing = condition(obj, "Progressing")
    if progressing is not None and as_str(progressing.get("reason")) == "ProgressDeadlineExceeded":
        return FAILED, as_str(progressing.get("message")) or "Progress deadline exceeded", paused
    if paused:
        reasons = [as_str(dig(p, "reason")) for p in as_list(status.get("pauseConditions"))]
        detail = ", ".join(r for r in reasons if r)
        return IN_PROGRESS, f"Rollout is paused ({detail})" if detail else "Rollout is paused", paused
    desired = as_int(spec.get("replicas"))
    desired = 1 if desired is None else desired
    updated = as_int(status.get("updatedReplicas")) or 0
    available = as_int(status.get("availableReplicas")) or 0
    if updated < desired:
        return IN_PROGRESS, f"Updated: {updated}/{desired}", paused
    if available < desired:
        return IN_PROGRESS, f"Available: {available}/{desired}", paused
    return CURRENT, f"Rollout is available. Replicas: {available}", paused
