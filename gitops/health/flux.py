"""Health of Flux objects in Argo CD's words, decided by their Ready condition as ``flux get`` shows it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from gitops.fields import dig
from gitops.health.objects import ComputeError, first_condition, generation_field, raw_condition, read_conditions
from gitops.rows import DEGRADED, HEALTHY, PROGRESSING
from gitops.rows import UNKNOWN as ARGO_UNKNOWN
from portal.kernel.timestamps import parse_time


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
        generation = generation_field(obj, "metadata", "generation")
        observed = generation_field(obj, "status", "observedGeneration")
        ready_observed = generation_field(ready, "observedGeneration") if ready is not None else None
    except ComputeError:
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
    counting from ``since``: the lastTransitionTime of the condition that decided (Ready,
    Stalled, or Reconciling for a reconcile in progress), and None where no condition dates
    the verdict (a generation not yet reconciled, no Ready condition), so that the caller
    dates it by its own sight rather than by an older, unrelated transition.

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
        conditions = read_conditions(obj)
    except ComputeError as exc:
        return FluxHealth(ARGO_UNKNOWN, "", str(exc), None)
    ready = first_condition(conditions, "Ready")
    ready_raw = raw_condition(obj, "Ready")
    since = parse_time(ready_raw.get("lastTransitionTime")) if ready_raw else None

    deletion = dig(obj, "metadata", "deletionTimestamp")
    if deletion:
        return FluxHealth(PROGRESSING, "Terminating", "Pending deletion", since)

    if (
        obj.get("kind") == "HelmRepository"
        and dig(obj, "spec", "type") == "oci"
        and not conditions
    ):
        return FluxHealth(HEALTHY, "", "OCI HelmRepository: ready once it exists", None)

    stalled = first_condition(conditions, "Stalled", "True")
    if stalled is not None:
        if ready is not None and ready["status"] == "False":
            return FluxHealth(DEGRADED, ready["reason"], ready["message"], since)
        return FluxHealth(DEGRADED, stalled["reason"], stalled["message"], _transition(obj, "Stalled"))

    if ready is None:
        if _flux_generation_pending(obj, None):
            return FluxHealth(PROGRESSING, "", "waiting to be reconciled", None)
        return FluxHealth(ARGO_UNKNOWN, "", "no Ready condition", None)

    if ready["status"] == "False":
        return FluxHealth(DEGRADED, ready["reason"], ready["message"], since)
    if ready["status"] == "Unknown":
        return FluxHealth(PROGRESSING, ready["reason"], ready["message"], since)
    if ready["status"] == "True":
        return _when_ready(obj, conditions, ready, ready_raw, since)
    return FluxHealth(ARGO_UNKNOWN, ready["reason"], ready["message"], since)


def _when_ready(obj: Mapping[str, Any], conditions: list[dict[str, str]], ready: dict[str, str],
                ready_raw: Mapping[str, Any] | None, since: datetime | None) -> FluxHealth:
    """``Ready=True``: Progressing while the current generation is not reconciled yet or
    Reconciling=True, else Healthy."""
    if _flux_generation_pending(obj, ready_raw):
        return FluxHealth(
            PROGRESSING,
            "LatestGenerationNotObserved",
            "the latest spec has not been reconciled yet",
            None,
        )
    reconciling = first_condition(conditions, "Reconciling", "True")
    if reconciling is not None:
        return FluxHealth(PROGRESSING, reconciling["reason"], reconciling["message"],
                          _transition(obj, "Reconciling"))
    return FluxHealth(HEALTHY, ready["reason"], ready["message"], since)


def _transition(obj: Mapping[str, Any], type_: str) -> datetime | None:
    """A condition's lastTransitionTime: when it took the status it has."""
    raw = raw_condition(obj, type_)
    return parse_time(raw.get("lastTransitionTime")) if raw else None
