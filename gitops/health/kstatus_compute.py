"""kstatus's ``Compute``: the generic order every object goes through, then its kind's rule."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gitops.health.kstatus_rules import BUILT_IN, CURRENT, FAILED, IN_PROGRESS, TERMINATING, UNKNOWN, KStatus
from gitops.health.objects import ComputeError, first_condition, generation_field, group_kind, read_conditions
from gitops.rawobjects import dig


def _compute(obj: Mapping[str, Any], now: datetime) -> KStatus:
    deletion = dig(obj, "metadata", "deletionTimestamp")
    if isinstance(deletion, datetime) or (isinstance(deletion, str) and deletion):
        return KStatus(TERMINATING, "", "Resource scheduled for deletion")
    if deletion is not None and not isinstance(deletion, str):
        raise ComputeError("metadata.deletionTimestamp is not a string")

    generation = generation_field(obj, "metadata", "generation")
    if generation is not None:
        observed = generation_field(obj, "status", "observedGeneration")
        if observed is not None and observed != generation:
            return KStatus(
                IN_PROGRESS,
                "LatestGenerationNotObserved",
                f"{obj.get('kind', '')} generation is {generation}, "
                f"but latest observed generation is {observed}",
            )

    conditions = read_conditions(obj)
    # The standard abnormal-true conditions override any kind-specific rule.
    for cond in conditions:
        if cond["status"] != "True":
            continue
        if cond["type"] == "Reconciling":
            return KStatus(IN_PROGRESS, cond["reason"], cond["message"])
        if cond["type"] == "Stalled":
            return KStatus(FAILED, cond["reason"], cond["message"])

    rule = BUILT_IN.get(group_kind(obj))
    if rule is not None:
        return rule(obj, now)

    ready = first_condition(conditions, "Ready")
    if ready is not None:
        if ready["status"] == "True":
            return KStatus(CURRENT, "", "Resource is Ready")
        if ready["status"] in ("False", "Unknown"):
            return KStatus(IN_PROGRESS, ready["reason"], ready["message"])
    return KStatus(CURRENT, "", "Resource is current")


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
    except ComputeError as exc:
        return KStatus(UNKNOWN, "", str(exc))


def kstatus(obj: Mapping[str, Any], *, now: datetime | None = None) -> tuple[str, str]:
    """``(status, message)`` with kstatus semantics; see `compute`."""
    result = compute(obj, now=now)
    return result.status, result.message
