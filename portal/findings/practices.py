"""Discipline rules read from what the tools were told and what runs under them: prune off,
images whose tag moves, containers without a memory limit, a production object left suspended,
ignoreDifferences over a whole spec, an App-of-Apps root that also grants cluster RBAC, objects
applied by hand, drift that no image change explains, Rollouts that nothing aborts.

One pure function per rule over stored rows: the app (`GitOpsApp`, its `raw` object) and the
workloads it runs (`Workload`: containers with their `limits`, `spec_facts` kept by
gitops.collectors.workloads). The words of each rule are in portal.findings.rulebook. Where a
fact was not read (a row stored before the collector kept it), the rule says nothing rather
than guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gitops.collectors.workloads import WORKLOAD_KINDS
from gitops.models import GitOpsApp, Workload
from gitops.rawobjects import as_bool, as_list, as_str, dig
from portal.findings.discipline import OUT_OF_SYNC, SYNC_RUNNING, FindingContext, automated_sync
from portal.findings.rulebook import Found
from portal.kernel.catalog.images import parse_image
from portal.kernel.timestamps import utc_stamp

NAMED = 3  # objects a message names; the count says the rest
FLUX_KINDS = ("Kustomization", "HelmRelease")
RBAC_GROUP = "rbac.authorization.k8s.io"
CLUSTER_RBAC = ("ClusterRole", "ClusterRoleBinding")
# Kinds whose drift can be an image rolling out; anything else OutOfSync is configuration drift.
# Pods and ReplicaSets are what those workloads create, never what Git declares.
IMAGE_CARRIERS = frozenset((*WORKLOAD_KINDS, "Job", "ReplicaSet", "Pod"))


def _named(items: Sequence[str]) -> str:
    more = f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
    return ", ".join(items[:NAMED]) + more


def _object(app: GitOpsApp) -> str:
    return f"{app.kind} {app.namespace}/{app.name}"


def argo_prune_off(app: GitOpsApp) -> Found | None:
    """Automated sync without `prune: true` (absent is false in Argo CD's SyncPolicyAutomated)."""
    automated = automated_sync(app)
    if automated is None or as_bool(automated.get("prune")):
        return None
    said = "prune: false" if "prune" in automated else "no prune (Argo CD's default: false)"
    return Found("argo-prune-off", f"{_object(app)} syncs automatically with {said}")


def flux_prune_off(app: GitOpsApp) -> Found | None:
    """A Kustomization whose spec says no prune (`prune` is required in v1; absent reads false)."""
    spec = dig(app.raw, "spec")
    if app.kind != "Kustomization" or not isinstance(spec, Mapping) or as_bool(spec.get("prune")):
        return None
    said = "prune: false" if "prune" in spec else "no prune"
    return Found("flux-prune-off", f"{_object(app)} applies with {said}")


def moving_tag(image: str) -> bool:
    """`:latest` or no tag (which pulls latest), unless a digest pins it."""
    parsed = parse_image(image)
    return parsed is not None and not parsed.digest and parsed.tag in ("", "latest")


def mutable_image_tag(app: GitOpsApp, workloads: Iterable[Workload]) -> Found | None:
    """Images as Argo CD reports them (`status.summary.images`) and as the app's workloads run them."""
    images = [as_str(i) for i in as_list(app.images)]
    images += [as_str(c.get("image")) for w in workloads for c in as_list(w.containers) if isinstance(c, Mapping)]
    moving = sorted({image for image in images if image and moving_tag(image)})
    if not moving:
        return None
    return Found("mutable-image-tag", f"{_object(app)} runs {_named(moving)}: a tag that moves")


def no_resource_limits(app: GitOpsApp, workloads: Iterable[Workload], *, production: bool) -> Found | None:
    """A production container (init containers aside: they finish before the others start) with no
    memory limit. Memory is the resource whose overuse hurts neighbours (the node runs out, pods
    are evicted); a CPU limit only throttles and many teams leave it out on purpose, so a missing
    CPU limit alone is not a finding. Containers whose limits were not read say nothing."""
    if not production:
        return None
    missing = []
    for workload in sorted(workloads, key=lambda w: (w.kind, w.namespace, w.name)):
        for container in as_list(workload.containers):
            if not isinstance(container, Mapping) or container.get("init") or container.get("limits") is None:
                continue
            limits = [as_str(name) for name in as_list(container.get("limits"))]
            if "memory" in limits:
                continue
            has = f" (limits: {', '.join(limits)})" if limits else " (no limits)"
            missing.append(f"{workload.kind} {workload.name} container {as_str(container.get('container'))}{has}")
    if not missing:
        return None
    return Found("no-resource-limits", f"{_object(app)}: no memory limit on {_named(missing)}")


def left_suspended(app: GitOpsApp, context: FindingContext, *, production: bool) -> Found | None:
    """A production Kustomization or HelmRelease suspended, since the time the store recorded
    (its StateChange) or, suspended when first seen, at least since then. A stable message (a
    time, not an age), so a poll that changes nothing writes nothing."""
    if not production or app.tool != "flux" or app.kind not in FLUX_KINDS or not app.suspended:
        return None
    since, exact = context.suspended_since.get(app.pk, (app.first_seen, False))
    when = f"since {utc_stamp(since)}" if exact else f"at least since {utc_stamp(since)}"
    return Found("left-suspended", f"{_object(app)} is suspended {when}: Git is not applied")


def _whole_spec(entry: Mapping[str, Any]) -> bool:
    pointers = {as_str(p).rstrip("/") for p in as_list(entry.get("jsonPointers"))}
    expressions = {"".join(as_str(e).split()) for e in as_list(entry.get("jqPathExpressions"))}
    return bool(pointers & {"/spec", ""}) or bool(expressions & {".spec", "."})


def ignore_whole_spec(app: GitOpsApp) -> Found | None:
    """An `ignoreDifferences` entry for every object of a kind (no `name`) that ignores `/spec`
    (or the whole object): a JSON pointer "/spec" or a jq path ".spec"."""
    if app.tool != "argo":
        return None
    hidden = []
    for entry in as_list(dig(app.raw, "spec", "ignoreDifferences")):
        if isinstance(entry, Mapping) and not as_str(entry.get("name")) and _whole_spec(entry):
            group = as_str(entry.get("group"))
            hidden.append(f"{group}/{as_str(entry.get('kind'))}" if group else as_str(entry.get("kind")) or "*")
    if not hidden:
        return None
    return Found("ignore-whole-spec", f"{_object(app)} ignores every difference in the spec of {_named(hidden)}")


def _resources(app: GitOpsApp) -> list[Mapping[str, Any]]:
    return [r for r in as_list(dig(app.raw, "status", "resources")) if isinstance(r, Mapping)]


def app_of_apps_cluster_rbac(app: GitOpsApp) -> Found | None:
    """An Application whose `status.resources` hold Applications and also ClusterRoles or
    ClusterRoleBindings."""
    if app.tool != "argo":
        return None
    resources = _resources(app)
    if not any(as_str(r.get("kind")) == "Application" and as_str(r.get("group")) == "argoproj.io" for r in resources):
        return None
    rbac = sorted(f"{as_str(r.get('kind'))} {as_str(r.get('name'))}" for r in resources
                  if as_str(r.get("kind")) in CLUSTER_RBAC and as_str(r.get("group")) == RBAC_GROUP)
    if not rbac:
        return None
    return Found("app-of-apps-cluster-rbac", f"{_object(app)} deploys Applications and {_named(rbac)}")


def applied_by_hand(app: GitOpsApp, workloads: Iterable[Workload]) -> Found | None:
    """A workload a Kustomization applies that carries kubectl's last-applied-configuration.

    kustomize-controller applies server-side and removes that annotation at every apply, so on
    its objects it can only come from a `kubectl apply` after Flux's last one. Argo CD's own
    (client-side) apply writes the annotation on what it deploys, and Helm leaves one a kubectl
    apply wrote before the release adopted the object: on their objects it proves nothing, so
    they are not judged."""
    if app.tool != "flux" or app.kind != "Kustomization":
        return None
    by_hand = sorted(f"{w.kind} {w.namespace}/{w.name}" for w in workloads
                     if isinstance(w.spec_facts, Mapping) and w.spec_facts.get("last_applied") is True)
    if not by_hand:
        return None
    return Found("applied-by-hand", f"{_named(by_hand)} under {_object(app)} carry kubectl's last-applied "
                                    "annotation: applied by hand since Flux last applied")


def drift_not_image(app: GitOpsApp) -> Found | None:
    """An OutOfSync Application, no sync under way, with OutOfSync resources of kinds that carry
    no image (configuration, services, RBAC, custom resources): drift an image roll-out does not
    explain. Workload kinds are left to the hand-change rule, which compares images with Git."""
    if app.tool != "argo" or app.sync_status != OUT_OF_SYNC or app.operation_phase == SYNC_RUNNING:
        return None
    drifted = sorted(
        f"{as_str(r.get('kind'))} {'/'.join(filter(None, (as_str(r.get('namespace')), as_str(r.get('name')))))}"
        + (" (to prune)" if as_bool(r.get("requiresPruning")) else "")
        for r in _resources(app)
        if as_str(r.get("status")) == OUT_OF_SYNC and as_str(r.get("kind")) not in IMAGE_CARRIERS
    )
    if not drifted:
        return None
    return Found("drift-not-image", f"{_object(app)} is OutOfSync in {_named(drifted)}")


def rollout_unguarded(app: GitOpsApp, workloads: Iterable[Workload]) -> Found | None:
    """A Rollout whose spec has no analysis of any kind and no `progressDeadlineAbort`
    (gitops.collectors.workloads.rollout_guards). Without either nothing aborts a bad version:
    steps advance on their timers, pauses wait for a person. `abortScaleDownDelaySeconds` is
    not a guard: it only says how long the canary stays up after an abort someone triggered."""
    bare = sorted(f"Rollout {w.namespace}/{w.name}" for w in workloads
                  if w.kind == "Rollout" and isinstance(w.spec_facts, Mapping)
                  and w.spec_facts.get("rollout_guards") == [])
    if not bare:
        return None
    return Found("rollout-unguarded", f"{_named(bare)} under {_object(app)}: no analysis and no "
                                      "progressDeadlineAbort, so only a person stops a bad version")


def practice_findings(app: GitOpsApp, workloads: Sequence[Workload], *, production: bool,
                      context: FindingContext) -> list[Found]:
    """The findings of one app read from its spec and the workloads it runs (`workloads`)."""
    checks = (
        argo_prune_off(app),
        flux_prune_off(app),
        mutable_image_tag(app, workloads),
        no_resource_limits(app, workloads, production=production),
        left_suspended(app, context, production=production),
        ignore_whole_spec(app),
        app_of_apps_cluster_rbac(app),
        applied_by_hand(app, workloads),
        drift_not_image(app),
        rollout_unguarded(app, workloads),
    )
    return [found for found in checks if found is not None]
