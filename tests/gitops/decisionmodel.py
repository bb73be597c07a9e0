"""The DecisionModel operator of issue 22: real-shaped objects and the rules that read them.

Its phases: Pending, Resolving, Caching, Starting, Evaluating, Promoting,
AwaitingPromotion, Ready, Degraded, RolledBack, Failed; ``status.observedGeneration``;
conditions Ready and Degraded. While a candidate rolls out over a healthy stable revision
(Starting … AwaitingPromotion), after a rollback and while partly degraded, Ready stays
True because the stable revision serves: that is what kstatus misreads.

The Lua check is written the way Argo CD's docs write custom health checks (a table ``hs``,
conditions walked with ``ipairs``, base library only); the CEL expressions are a
Kustomization's ``healthCheckExprs`` as Flux documents them.
"""

from __future__ import annotations

from typing import Any

API_VERSION = "decisionmodel.io/v1"
GROUP = "decisionmodel.io"
KIND = "DecisionModel"
NAME = "support-router"

PROGRESSING_PHASES = ("Pending", "Resolving", "Caching", "Starting", "Evaluating", "Promoting")
DEGRADED_PHASES = ("Degraded", "RolledBack", "Failed")
ALL_PHASES = (*PROGRESSING_PHASES, "AwaitingPromotion", "Ready", *DEGRADED_PHASES)

# The first rollout has nothing serving yet; later phases run over a stable revision.
_NOTHING_SERVES = ("Pending", "Resolving", "Caching", "Failed")
_DEGRADED_MESSAGE = {
    "Degraded": "2 of 5 shards unavailable",
    "RolledBack": "candidate failed the gate",
    "Failed": "model artifact digest mismatch",
}

LUA_HEALTH_CHECK = """\
hs = {}
if obj.status == nil or obj.status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the DecisionModel controller"
  return hs
end
if obj.status.observedGeneration ~= nil and obj.metadata.generation ~= nil then
  if obj.status.observedGeneration < obj.metadata.generation then
    hs.status = "Progressing"
    hs.message = "Waiting for generation " .. obj.metadata.generation .. " to be observed"
    return hs
  end
end
local degraded = nil
local ready = nil
if obj.status.conditions ~= nil then
  for i, condition in ipairs(obj.status.conditions) do
    if condition.type == "Degraded" and condition.status == "True" then
      degraded = condition
    end
    if condition.type == "Ready" then
      ready = condition
    end
  end
end
local phase = obj.status.phase
if phase == "Ready" then
  hs.status = "Healthy"
  if ready ~= nil then hs.message = ready.message end
  return hs
end
if phase == "AwaitingPromotion" then
  hs.status = "Suspended"
  hs.message = "awaiting manual promotion"
  return hs
end
if phase == "Degraded" or phase == "RolledBack" or phase == "Failed" then
  hs.status = "Degraded"
  if degraded ~= nil then hs.message = degraded.message else hs.message = phase end
  return hs
end
if phase == "Pending" or phase == "Resolving" or phase == "Caching" or phase == "Starting"
    or phase == "Evaluating" or phase == "Promoting" then
  hs.status = "Progressing"
  hs.message = phase
  return hs
end
hs.status = "Unknown"
hs.message = "Unknown phase " .. phase
return hs
"""

HEALTH_CHECK_EXPRS = {
    "apiVersion": API_VERSION,
    "kind": KIND,
    "inProgress": "status.phase in ['Pending', 'Resolving', 'Caching', 'Starting', 'Evaluating', "
    "'Promoting', 'AwaitingPromotion']",
    "failed": "status.phase in ['Degraded', 'RolledBack', 'Failed']",
    "current": "status.phase == 'Ready' && status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
}


def _condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-11-30T08:12:44Z",
        "observedGeneration": 4,
    }


def decision_model(phase: str, *, generation: int = 4, observed: int = 4, name: str = NAME) -> dict[str, Any]:
    """A DecisionModel as the API returns it in ``phase`` (observedGeneration ``observed``)."""
    serving = phase not in _NOTHING_SERVES
    ready = (
        _condition("Ready", "True", "StableServing", "stable revision r41 serves 100% of traffic")
        if serving
        else _condition("Ready", "False", "NoServingRevision", f"no revision serves yet ({phase})")
    )
    if phase in _DEGRADED_MESSAGE:
        degraded = _condition("Degraded", "True", phase, _DEGRADED_MESSAGE[phase])
    else:
        degraded = _condition("Degraded", "False", "AsExpected", "all shards available")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": "support",
            "uid": "0b7f3c1e-9a55-4f7e-8a43-2f0c5b8e6d21",
            "generation": generation,
            "creationTimestamp": "2026-11-02T10:00:00Z",
            "labels": {"app.kubernetes.io/instance": "support-router"},
        },
        "spec": {
            "model": {"name": "router", "revision": "r42"},
            "rollout": {"strategy": "Canary", "gate": {"metric": "accuracy", "threshold": 0.92}},
        },
        "status": {
            "observedGeneration": observed,
            "phase": phase,
            "stableRevision": "r41",
            "candidateRevision": "r42" if phase not in ("Ready", "RolledBack") else "",
            "conditions": [ready, degraded],
        },
    }


def argocd_cm(**extra: str) -> dict[str, Any]:
    """An argocd-cm ConfigMap carrying the DecisionModel check in the documented split-key style."""
    data = {"url": "https://argocd.example.com", f"resource.customizations.health.{GROUP}_{KIND}": LUA_HEALTH_CHECK}
    data.update(extra)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": {"app.kubernetes.io/part-of": "argocd"}},
        "data": data,
    }


def kustomization(**spec: Any) -> dict[str, Any]:
    """A Flux Kustomization that waits for its objects and judges DecisionModels by CEL."""
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "support-router", "namespace": "flux-system", "generation": 3},
        "spec": {
            "interval": "10m",
            "path": "./apps/support-router/prod",
            "prune": True,
            "wait": True,
            "sourceRef": {"kind": "GitRepository", "name": "fleet"},
            "healthCheckExprs": [HEALTH_CHECK_EXPRS],
            **spec,
        },
    }
