"""What the two rule languages (Lua, CEL) share: the object as plain JSON and the outcome.

A health rule comes from a cluster (argocd-cm, a Kustomization) or from an admin, so it is
untrusted code run inside the poller. Both evaluators hand it only a plain-JSON copy of the
object (strings, numbers, booleans, lists, string-keyed maps: what the Kubernetes API
returns), never a Python object it could reach into, and both report a broken or hostile
rule the same way: an outcome whose message starts with ``rule failed:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, NamedTuple

from gitops.rows import UNKNOWN
from portal.kernel.timestamps import parse_time, rfc3339

RULE_FAILED_PREFIX = "rule failed: "
# A rule's message ends up on pages and in alerts; a script must not be able to flood them.
MAX_MESSAGE_CHARS = 1024
# Deeper than any real object; guards the conversion against self-referencing dumps.
_MAX_DEPTH = 64


class RuleOutcome(NamedTuple):
    """One evaluation of one rule on one object.

    ``status`` is in the rule language's own vocabulary (Argo CD's health words for Lua,
    kstatus's for CEL); a failed rule says Unknown, as Argo CD does when a script errors.
    """

    status: str
    message: str
    failed: bool


def rule_failed(reason: str) -> RuleOutcome:
    return RuleOutcome(UNKNOWN, clip(RULE_FAILED_PREFIX + reason), True)


def clip(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[: MAX_MESSAGE_CHARS - 1] + "…"


class NotPlainJSON(ValueError):
    """The object holds something the Kubernetes API would never return."""


def plain_json(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` with only JSON types, as the API server would have sent it.

    YAML dumps carry datetimes for timestamps: they become RFC 3339 strings, as in the
    API. Anything else that is not JSON (or nesting deeper than any real object) raises
    `NotPlainJSON`, so no Python object is ever handed to a rule.
    """
    if depth > _MAX_DEPTH:
        raise NotPlainJSON("object nested too deeply")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return value
    if isinstance(value, datetime | date):
        return rfc3339(parse_time(value))
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotPlainJSON(f"a map key is a {type(key).__name__}, not a string")
            out[key] = plain_json(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [plain_json(item, depth + 1) for item in value]
    raise NotPlainJSON(f"a value of type {type(value).__name__} is not JSON")
