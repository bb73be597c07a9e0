"""The tools' blind spot: a custom resource the tool calls healthy while it reports trouble itself.

With no rule for a kind, Flux judges it by kstatus, which reads a ``Ready=True`` condition as
Current even while the operator's own status says the candidate was rolled back; Argo CD gives
it no health at all, and the app stays Healthy. The object usually says what is wrong in
words every operator uses: a condition of a failure type (``Degraded``, ``Failed``,
``Stalled``, …) with status True, or a ``status.phase`` named like failure (``RolledBack``,
``Failed``) or like work still in flight (``Evaluating``, ``AwaitingPromotion``) while the
tool already calls it done. `blind_spot` finds those cases without any rule and says so
("Flux says healthy, but DecisionModel support-router reports RolledBack: candidate failed
the gate"); `gitops.health.suggested_rules` writes the rule that would teach the tool.

Conservative on purpose — a false alarm on a healthy object costs trust:

- only when the tool's verdict is healthy (kstatus Current; Argo CD no health at all);
- never while the controller has not observed the latest generation (its report is old) or
  the object is being deleted;
- only the exact words below: a phase like ``Running`` or ``Active`` is no news.

Pure: the caller passes the object and the tool's own word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops.health.objects import reports_latest_generation
from gitops.health.rules import ARGO_CD, FLUX, HealthDisagreement, Tool, object_group_kind
from gitops.rawobjects import as_list, as_str, dig
from gitops.rows import DEGRADED, PROGRESSING

# Condition types that mean "this object is failing" when their status is True (kstatus's own
# Stalled, Argo CD's and most operators' Degraded), and the suffixes operators build them with
# (ReplicaFailure, InstallFailed, ReconcileError).
FAILURE_CONDITION_TYPES = frozenset({"Degraded", "Failed", "Failure", "Stalled", "Error"})
FAILURE_SUFFIXES = ("Failed", "Failure", "Error")
# Phases named like failure. Exact words (and the suffixes above): "RollbackComplete" or
# "Unready" are not guessed at.
FAILURE_PHASES = frozenset({"Failed", "Failure", "Degraded", "RolledBack", "Error", "Errored", "Aborted",
                            "Unhealthy"})
# Phases named like work still in flight: with Ready=True from a stable revision (a canary
# over it), kstatus calls the object Current before the operator has decided.
IN_FLIGHT_PHASES = frozenset({"Pending", "Progressing", "InProgress", "Starting", "Evaluating", "Promoting",
                              "Resolving", "Caching", "Initializing", "Deploying", "Updating", "Upgrading",
                              "Installing", "Provisioning", "Creating", "RollingOut", "Reconciling"})
IN_FLIGHT_PREFIXES = ("Awaiting", "Waiting")

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class OwnReport:
    """What the object says of itself: its word (the phase, or the failing condition's type),
    why in its own words, and whether that is a failure or work in flight."""

    word: str
    message: str
    failing: bool
    phase: str = ""  # status.phase when it is one of the words above
    condition_type: str = ""  # the failing condition's type, when one is True

    @property
    def health(self) -> str:
        """In Argo CD's words: what a rule written for this object would answer."""
        return DEGRADED if self.failing else PROGRESSING


def _is_failure_type(type_: str) -> bool:
    return type_ in FAILURE_CONDITION_TYPES or (type_ != "" and type_.endswith(FAILURE_SUFFIXES))


def _phase_kind(phase: str) -> str:
    """"failing", "in flight" or "" for a phase word."""
    if not _WORD.fullmatch(phase):
        return ""
    if phase in FAILURE_PHASES or phase.endswith(("Failed", "Error")):
        return "failing"
    if phase in IN_FLIGHT_PHASES or phase.startswith(IN_FLIGHT_PREFIXES):
        return "in flight"
    return ""


def own_report(obj: Mapping[str, Any]) -> OwnReport | None:
    """What ``obj`` reports of itself when that is failure or work in flight; None when it
    reports nothing of the sort (or its report is of an older generation, or it is going away)."""
    status = obj.get("status")
    if not isinstance(status, Mapping) or dig(obj, "metadata", "deletionTimestamp"):
        return None
    if not reports_latest_generation(obj):
        return None
    failing = None
    for item in as_list(status.get("conditions")):
        if (isinstance(item, Mapping) and item.get("status") == "True"
                and _is_failure_type(type_ := as_str(item.get("type"))) and _WORD.fullmatch(type_)):
            failing = (type_, as_str(item.get("message")))
            break
    phase = as_str(status.get("phase"))
    kind = _phase_kind(phase)
    if kind == "failing":
        message = failing[1] if failing is not None else ""
        return OwnReport(phase, message[:MESSAGE_CHARS], True, phase, failing[0] if failing else "")
    if failing is not None:  # a failure beats a phase still in flight
        return OwnReport(failing[0], failing[1][:MESSAGE_CHARS], True, "", failing[0])
    if kind == "in flight":
        return OwnReport(phase, "", False, phase)
    return None


def tool_says_healthy(tool: Tool, tool_status: str) -> bool:
    """Flux: kstatus Current. Argo CD: no health at all for the object (no check for its kind),
    which leaves the app Healthy."""
    return tool_status == "Current" if tool == FLUX else tool_status == ""


def blind_spot(obj: Mapping[str, Any], *, tool: Tool, tool_status: str) -> tuple[HealthDisagreement, OwnReport] | None:
    """The disagreement when the tool calls ``obj`` healthy while it reports failure or work in
    flight itself (with what it reports), else None."""
    if not tool_says_healthy(tool, tool_status):
        return None
    report = own_report(obj)
    if report is None:
        return None
    _, kind = object_group_kind(obj)
    name = as_str(dig(obj, "metadata", "name"))
    said = f"{ARGO_CD if tool == ARGO_CD else FLUX} says healthy, but {kind} {name} reports {report.word}"
    if report.message:
        said += f": {report.message}"
    elif not report.failing:
        said += " (still in progress)"
    return HealthDisagreement(tool, tool_status, report.health, said), report


__all__ = [
    "FAILURE_CONDITION_TYPES",
    "FAILURE_PHASES",
    "IN_FLIGHT_PHASES",
    "OwnReport",
    "blind_spot",
    "own_report",
    "tool_says_healthy",
]
