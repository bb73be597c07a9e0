"""Raw cluster objects as they come: read without trusting their shape, made fit to store.

Objects come from many Argo CD, Flux and Kubernetes versions, from the API (JSON) and
from YAML files, so any field may be missing, null, or of an unexpected type (Argo
Rollouts stores `observedGeneration` as a string). The readers here (`dig`, `as_str`,
`conditions`, …) return a neutral value instead of raising, so one odd field never costs
the whole object. The rest bounds what is kept of an object: its depth (`MAX_DEPTH`,
`json_safe`), text no column can hold (`storable_text`), and what the detail view drops
(`trimmed`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from portal.kernel.timestamps import parse_time, rfc3339


def dig(obj: Any, *keys: str) -> Any:
    """The value at a path of mapping keys; None as soon as a level is missing or not a mapping."""
    current = obj
    for key in keys:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def as_str(value: Any) -> str:
    """Text of a scalar; "" for None, mappings and lists (never their repr)."""
    if value is None or isinstance(value, Mapping | list | tuple):
        return ""
    if isinstance(value, bool):
        # YAML reads `true` into a bool; give back the word Kubernetes would have written.
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return rfc3339(parse_time(value))
    return str(value)


def as_int(value: Any) -> int | None:
    """An int, or a string of digits (Argo Rollouts' observedGeneration); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return None


def as_bool(value: Any) -> bool:
    """True for a YAML/JSON true or the string "true"; anything else is false."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() == "true"


def str_list(value: Any) -> list[str]:
    return [as_str(item) for item in as_list(value) if as_str(item)]


def str_dict(value: Any) -> dict[str, str]:
    """Labels and annotations: string keys to string values."""
    return {str(key): as_str(val) for key, val in as_dict(value).items()}


def metadata(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(namespace, name, uid). A missing name is an error: the object cannot be keyed."""
    meta = as_dict(obj.get("metadata"))
    name = as_str(meta.get("name"))
    if not name:
        raise ValueError("object has no metadata.name")
    return as_str(meta.get("namespace")), name, as_str(meta.get("uid"))


def conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """status.conditions as plain JSON-safe dicts, in the order the controller wrote them."""
    out = []
    for cond in as_list(dig(obj, "status", "conditions")):
        if not isinstance(cond, Mapping) or not as_str(cond.get("type")):
            continue
        out.append(
            {
                "type": as_str(cond.get("type")),
                "status": as_str(cond.get("status")),
                "reason": as_str(cond.get("reason")),
                "message": as_str(cond.get("message")),
                "last_transition_time": rfc3339(parse_time(cond.get("lastTransitionTime"))),
            }
        )
    return out


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    """The first raw condition of a type, as kstatus reads them (first one wins)."""
    for cond in as_list(dig(obj, "status", "conditions")):
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return dict(cond)
    return None


# How deeply a cluster object may nest. Real objects stay far below (an Application with
# Helm values is ~20 levels); anything deeper is hostile or broken, and walking it with
# recursion would hit the interpreter's stack limit (1,000 frames) instead.
MAX_DEPTH = 200


class TooDeep(ValueError):
    """A value nested deeper than MAX_DEPTH levels."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"nested deeper than {limit} levels")


def json_safe(value: Any, *, _depth: int = 0) -> Any:
    """A copy the store can write to a JSON column: datetimes from YAML become RFC 3339 text.

    Raises TooDeep beyond MAX_DEPTH levels, so the recursion stays bounded.
    """
    if isinstance(value, Mapping | list | tuple) and _depth >= MAX_DEPTH:
        raise TooDeep()
    if isinstance(value, Mapping):
        return {str(key): json_safe(val, _depth=_depth + 1) for key, val in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item, _depth=_depth + 1) for item in value]
    if isinstance(value, datetime | date):
        return rfc3339(parse_time(value))
    return value


# PostgreSQL's text and jsonb cannot hold NUL, and no UTF-8 column can hold an unpaired
# surrogate (JSON's "\ud800" decodes to one): either, in one string of one object, failed
# the whole cluster's store. They are shown as U+FFFD, as a decoder shows an invalid byte.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT_CHARACTER = "\ufffd"


def storable_text(value: Any) -> Any:
    """`value` with every NUL and unpaired surrogate in its strings (keys too) replaced by
    U+FFFD; changed in place where it is a dict or list, walked without recursion."""
    if isinstance(value, str):
        return _UNSTORABLE.sub(REPLACEMENT_CHARACTER, value)
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            for key in list(current):
                item = current[key]
                if isinstance(item, str):
                    current[key] = item = _UNSTORABLE.sub(REPLACEMENT_CHARACTER, item)
                elif isinstance(item, dict | list):
                    stack.append(item)
                if isinstance(key, str) and _UNSTORABLE.search(key):
                    del current[key]
                    current[_UNSTORABLE.sub(REPLACEMENT_CHARACTER, key)] = item
        elif isinstance(current, list):
            for index, item in enumerate(current):
                if isinstance(item, str):
                    current[index] = _UNSTORABLE.sub(REPLACEMENT_CHARACTER, item)
                elif isinstance(item, dict | list):
                    stack.append(item)
    return value


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def trimmed(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the detail view keeps it: without managedFields and kubectl's
    last-applied copy, which are often half its size and say nothing about its state.

    Shallow: the store's JSON encoder turns any datetime left by a YAML loader into
    text, so the (large) object is not walked and copied on every poll.
    """
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return dict(obj)
    annotations = metadata.get("annotations")
    if "managedFields" not in metadata and not (isinstance(annotations, Mapping) and LAST_APPLIED in annotations):
        return dict(obj)
    kept = {key: value for key, value in metadata.items() if key != "managedFields"}
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        kept["annotations"] = {key: value for key, value in annotations.items() if key != LAST_APPLIED}
    return {**obj, "metadata": kept}
