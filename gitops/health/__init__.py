"""Health of cluster objects: kstatus for any object, Argo CD's words for Flux objects.

Two vocabularies live here, on purpose kept apart:

- kstatus (kubernetes-sigs/cli-utils ``pkg/kstatus``, what Flux uses to wait for objects):
  ``Current``, ``InProgress``, ``Failed``, ``Terminating``, ``Unknown`` (and ``NotFound``).
  `kstatus()` reproduces its ``Compute`` (`kstatus_compute`) for workloads and any other
  object, with the rules of the built-in kinds in `kstatus_rules`.
- Argo CD's health words (``gitops.rows``): Healthy, Progressing, Degraded, Suspended,
  Missing, Unknown. `flux_health()` (`flux_ready`) judges Flux objects in them,
  `argo_health_worst()` aggregates like Argo CD, `workload_health_to_argo()` translates a
  kstatus status (`argo`).
- Custom-resource health rules (`rules`): Argo CD's Lua checks from argocd-cm and Flux's
  ``healthCheckExprs`` (CEL), run sandboxed (`lua`, `cel`); "No health check for <kind>";
  and the disagreement between a tool's verdict and a rule's.

Everything is a pure function over the plain dicts the Kubernetes API returns (or that a
YAML loader produced from a dump: timestamps may then be datetimes, not strings). The
names below are the package's public face; the modules behind it may move.
"""

from __future__ import annotations

from gitops.health.argo import argo_health_worst, workload_health_to_argo
from gitops.health.flux_ready import FluxHealth, flux_health
from gitops.health.kstatus_compute import compute, kstatus
from gitops.health.kstatus_rules import (
    CURRENT,
    FAILED,
    IN_PROGRESS,
    NOT_FOUND,
    POD_SCHEDULE_WINDOW,
    TERMINATING,
    UNKNOWN,
    KStatus,
)
from gitops.health.rules import (
    HealthDisagreement,
    HealthRules,
    HealthVerdict,
    PortalRule,
    argocd_cm_rules,
    health_disagreement,
    kustomization_rules,
    missing_health_check,
)

__all__ = [
    "CURRENT",
    "FAILED",
    "IN_PROGRESS",
    "NOT_FOUND",
    "POD_SCHEDULE_WINDOW",
    "TERMINATING",
    "UNKNOWN",
    "FluxHealth",
    "HealthDisagreement",
    "HealthRules",
    "HealthVerdict",
    "KStatus",
    "PortalRule",
    "argo_health_worst",
    "argocd_cm_rules",
    "compute",
    "flux_health",
    "health_disagreement",
    "kstatus",
    "kustomization_rules",
    "missing_health_check",
    "workload_health_to_argo",
]
