"""Argo CD's health words: the worst of several, and the word for a kstatus status."""

from __future__ import annotations

from collections.abc import Iterable

from gitops.health.kstatus_rules import CURRENT, FAILED, IN_PROGRESS, NOT_FOUND, TERMINATING, UNKNOWN
from gitops.rows import DEGRADED, HEALTH_ORDER, HEALTHY, MISSING, PROGRESSING
from gitops.rows import UNKNOWN as ARGO_UNKNOWN


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
