"""Reading a cluster object with kstatus's tolerance, shared by the kstatus and Flux rules.

A missing or wrongly typed count is its default, as in cli-utils; a shape Compute itself
rejects (malformed conditions, a non-integer generation) raises `ComputeError`, which the
callers turn into Unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gitops.rawobjects import dig

_INT_TEXT = re.compile(r"[+-]?\d+")


class ComputeError(ValueError):
    """The object has a shape kstatus's Compute rejects; its pollers then report Unknown."""


def int_field(obj: Mapping[str, Any], *path: str, default: int) -> int:
    value = dig(obj, *path)
    # bool is an int in Python but never in JSON; kstatus would not read it as a count.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def str_field(obj: Mapping[str, Any], *path: str, default: str) -> str:
    value = dig(obj, *path)
    return value if isinstance(value, str) else default


def generation_field(obj: Mapping[str, Any], *path: str) -> int | None:
    """An int generation, or None when absent.

    kstatus errors on a non-integer here. We accept a decimal string too: Argo Rollouts
    writes ``status.observedGeneration: "429"`` and such dumps are common; anything else
    that is not an integer is still an error (reported as Unknown).
    """
    value = dig(obj, *path)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        return int(value)
    raise ComputeError(f"{'.'.join(path)} is not an integer: {value!r}")


def read_conditions(obj: Mapping[str, Any]) -> list[dict[str, str]]:
    """``status.conditions`` as kstatus reads them (type, status, reason, message)."""
    status = obj.get("status")
    if status is None:
        return []
    if not isinstance(status, Mapping):
        raise ComputeError("status is not an object")
    raw = status.get("conditions")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ComputeError("status.conditions is not a list")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise ComputeError("a status condition is not an object")
        cond = {}
        for key in ("type", "status", "reason", "message"):
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise ComputeError(f"condition field {key} is not a string")
            cond[key] = value or ""
        out.append(cond)
    return out


def first_condition(conditions: list[dict[str, str]], type_: str, status: str | None = None) -> dict[str, str] | None:
    for cond in conditions:
        if cond["type"] == type_ and (status is None or cond["status"] == status):
            return cond
    return None


def group_kind(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) else ""
    group = api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
    return f"{group}/{kind}" if group else kind


def raw_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The condition dict as stored (with lastTransitionTime, observedGeneration)."""
    for item in dig(obj, "status", "conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == type_:
            return item
    return None


def reports_latest_generation(obj: Mapping[str, Any]) -> bool:
    """Whether the object's status speaks of its current spec: ``status.observedGeneration`` has
    caught up with ``metadata.generation`` (or either is missing, when kstatus too skips the
    check). Until then its phase and conditions describe an older spec."""
    generation, observed = dig(obj, "metadata", "generation"), dig(obj, "status", "observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int):
        return observed >= generation
    return True
