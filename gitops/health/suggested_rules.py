"""The rule that would make a tool see what a custom resource reports (gitops.health.blindspot).

When Flux or Argo CD calls an object healthy that reports a rollback, the fix is a rule in the
tool itself: a Kustomization's ``spec.healthCheckExprs`` entry (CEL) for Flux, an argocd-cm
``resource.customizations.health.<group>_<Kind>`` Lua script for Argo CD. This module writes
one for the kind, generalised from issue 22's DecisionModel rules (tests/gitops/decisionmodel.py):
the failure-type conditions and the phases the app's objects showed are failures, the phases
still in flight are in progress, a stale generation is progress (Flux's CEL checks that
itself), and a Ready condition that is not True is not healthy.

Words from the cluster end up inside Lua and CEL string literals: only plain identifiers are
accepted (a kind, a phase, a condition type); anything else gives no suggestion rather than a
rule someone might paste with a quote in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from gitops.health.blindspot import OwnReport
from gitops.health.rules import ARGO_CD, Tool

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_GROUP = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_VERSION = re.compile(r"v[0-9]+[a-z0-9]{0,20}")


@dataclass(frozen=True)
class SuggestedRule:
    """A rule to add to the tool, where it goes, and its text."""

    tool: Tool
    group: str
    kind: str
    where: str  # "argocd-cm data key resource.customizations.health.<group>_<Kind>", or the healthCheckExprs owner
    text: str

    def as_json(self) -> dict[str, str]:
        return {"tool": self.tool, "group": self.group, "kind": self.kind, "where": self.where, "rule": self.text}


@dataclass(frozen=True)
class _Words:
    failure_types: tuple[str, ...]
    failure_phases: tuple[str, ...]
    in_flight_phases: tuple[str, ...]

    @classmethod
    def of(cls, reports: Iterable[OwnReport]) -> _Words:
        reports = list(reports)
        return cls(
            tuple(sorted({r.condition_type for r in reports if r.condition_type})),
            tuple(sorted({r.phase for r in reports if r.failing and r.phase})),
            tuple(sorted({r.phase for r in reports if not r.failing and r.phase})),
        )

    def all(self) -> tuple[str, ...]:
        return self.failure_types + self.failure_phases + self.in_flight_phases


def suggested_rule(tool: Tool, api_version: str, kind: str, reports: Iterable[OwnReport], *,
                   owner: str = "") -> SuggestedRule | None:
    """The rule for ``kind`` that judges the ``reports`` its objects gave as they report
    themselves; ``owner`` names the Flux object whose ``spec.healthCheckExprs`` it belongs in.
    None when a word is not a plain identifier, or nothing was reported."""
    group, _, version = api_version.rpartition("/")
    words = _Words.of(reports)
    if not (group and _GROUP.fullmatch(group) and _VERSION.fullmatch(version) and _IDENTIFIER.fullmatch(kind)):
        return None
    if not words.all() or not all(_IDENTIFIER.fullmatch(word) for word in words.all()):
        return None
    if tool == ARGO_CD:
        key = f"resource.customizations.health.{group}_{kind}"
        return SuggestedRule(tool, group, kind, f"argocd-cm data key {key}", _lua(kind, words))
    where = f"{owner} spec.healthCheckExprs" if owner else "spec.healthCheckExprs"
    return SuggestedRule(tool, group, kind, where, _cel(api_version, kind, words))


def _quoted(words: Iterable[str], quote: str = '"') -> str:
    return ", ".join(f"{quote}{word}{quote}" for word in words)


def _cel(api_version: str, kind: str, words: _Words) -> str:
    failed = []
    if words.failure_types:
        failed.append(f"has(status.conditions) && status.conditions.exists(c, c.type in "
                      f'[{_quoted(words.failure_types)}] && c.status == "True")')
    if words.failure_phases:
        failed.append(f"has(status.phase) && status.phase in [{_quoted(words.failure_phases)}]")
    entry: dict[str, str] = {"apiVersion": api_version, "kind": kind}
    if words.in_flight_phases:
        entry["inProgress"] = f"has(status.phase) && status.phase in [{_quoted(words.in_flight_phases)}]"
    if failed:
        entry["failed"] = failed[0] if len(failed) == 1 else " || ".join(f"({clause})" for clause in failed)
    # Current when a Ready condition says so; an object without one is current unless the above.
    entry["current"] = ('!has(status.conditions) || !status.conditions.exists(c, c.type == "Ready") '
                        '|| status.conditions.exists(c, c.type == "Ready" && c.status == "True")')
    return yaml.safe_dump([entry], sort_keys=False, width=1000)


_LUA_HEAD = """\
hs = {}
if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the %(kind)s controller"
  return hs
end
if obj.status.observedGeneration ~= nil and obj.metadata.generation ~= nil then
  if obj.status.observedGeneration < obj.metadata.generation then
    hs.status = "Progressing"
    hs.message = "Waiting for generation " .. obj.metadata.generation .. " to be observed"
    return hs
  end
end
local failing = nil
local unready = nil
if obj.status.conditions ~= nil then
  for i, condition in ipairs(obj.status.conditions) do
    if condition.status == "True" and (%(failure_test)s) then
      failing = condition
    end
    if condition.type == "Ready" and condition.status ~= "True" then
      unready = condition
    end
  end
end
local phase = obj.status.phase
"""


def _lua(kind: str, words: _Words) -> str:
    failure_test = " or ".join(f'condition.type == "{word}"' for word in words.failure_types) or "false"
    text = _LUA_HEAD % {"kind": kind, "failure_test": failure_test}
    failure_phases = " or ".join(f'phase == "{word}"' for word in words.failure_phases) or "false"
    text += (f"if failing ~= nil or {failure_phases} then\n"
             '  hs.status = "Degraded"\n'
             "  if failing ~= nil and failing.message ~= nil then hs.message = failing.message "
             "else hs.message = phase end\n"
             "  return hs\n"
             "end\n")
    if words.in_flight_phases:
        in_flight = " or ".join(f'phase == "{word}"' for word in words.in_flight_phases)
        text += (f"if {in_flight} then\n"
                 '  hs.status = "Progressing"\n'
                 "  hs.message = phase\n"
                 "  return hs\n"
                 "end\n")
    text += ("if unready ~= nil then\n"
             '  hs.status = "Progressing"\n'
             "  hs.message = unready.message\n"
             "  return hs\n"
             "end\n"
             'hs.status = "Healthy"\n'
             "return hs\n")
    return text


__all__ = ["SuggestedRule", "suggested_rule"]
