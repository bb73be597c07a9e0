"""Custom-resource health rules: which rule judges an object, its verdict, and what follows.

Argo CD and Flux misread a custom resource unless someone teaches them: Argo CD gives a
kind with no check no health at all (the app stays Healthy), and Flux's kstatus reads
``Ready=True`` as Current even while the operator reports a rollback. The rules that teach
them live in the cluster (argocd-cm's ``resource.customizations``, a Kustomization's
``healthCheckExprs``) or, for kinds whose tool has none, in the portal (an admin's Lua or
CEL rule per group/kind). This module is the one place that:

- reads those rules (`argocd_cm_rules`, `kustomization_rules`, `PortalRule`) into a
  `HealthRules`, the tool's own rules first, the portal's after;
- evaluates the rule covering an object (`HealthRules.evaluate`), in Argo CD's words;
- says "No health check for <kind>" where an app deploys a custom kind that neither the
  tool's built-ins nor any rule cover (`missing_health_check`);
- compares the tool's verdict with the rule's (`health_disagreement`).

All pure: callers pass the ConfigMap data and objects they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal

import yaml

from gitops.health.argo import workload_health_to_argo
from gitops.health.argocd_builtin import BUNDLED_LUA_HEALTH_CHECKS, GO_HEALTH_CHECKS
from gitops.health.cel import HealthCheckExprs, evaluate_cel
from gitops.health.kstatus_rules import BUILT_IN as KSTATUS_BUILT_IN
from gitops.health.lua import evaluate_lua
from gitops.health.objects import reports_latest_generation
from gitops.rawobjects import as_bool, dig
from gitops.rows import DEGRADED, HEALTH_ORDER, HEALTHY, UNKNOWN

ARGO_CD = "Argo CD"
FLUX = "Flux"
Tool = Literal["Argo CD", "Flux"]

_CUSTOMIZATIONS = "resource.customizations"

# API groups served by Kubernetes itself: kinds there are not custom resources.
KUBERNETES_API_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)
# Flux's own kinds follow kstatus's conventions (Ready, Reconciling, Stalled) by design.
_FLUX_GROUP_SUFFIX = ".toolkit.fluxcd.io"


def group_kind_key(group: str, kind: str) -> str:
    """Argo CD's override key: ``group/Kind``, or ``Kind`` for the core group."""
    return f"{group}/{kind}" if group else kind


def object_group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    group = api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
    return group, kind if isinstance(kind, str) else ""


@dataclass(frozen=True)
class LuaRule:
    """An Argo CD health script for the kinds matching ``pattern`` (a glob over ``group/Kind``)."""

    pattern: str
    script: str
    use_open_libs: bool = False
    source: str = ""

    def covers(self, group: str, kind: str) -> bool:
        return fnmatchcase(group_kind_key(group, kind), self.pattern)


@dataclass(frozen=True)
class CelRule:
    exprs: HealthCheckExprs
    source: str = ""

    def covers(self, group: str, kind: str) -> bool:
        return self.exprs.covers(group, kind)


Rule = LuaRule | CelRule


@dataclass(frozen=True)
class PortalRule:
    """An admin's rule for one group/kind, for kinds whose tool has no rule: Lua or CEL."""

    group: str
    kind: str
    lua: str = ""
    use_open_libs: bool = False
    cel: HealthCheckExprs | None = None

    def rule(self) -> Rule:
        source = f"portal rule for {group_kind_key(self.group, self.kind)}"
        if self.cel is not None:
            return CelRule(self.cel, source)
        return LuaRule(group_kind_key(self.group, self.kind), self.lua, self.use_open_libs, source)


@dataclass(frozen=True)
class HealthVerdict:
    """A rule's verdict on one object, in Argo CD's words (Unknown when the rule failed)."""

    status: str
    message: str
    failed: bool
    source: str


@dataclass(frozen=True)
class HealthRules:
    """The rules known for one Argo CD instance or one Flux Kustomization, in precedence order.

    ``rules``: the tool's own first (exact Argo CD keys before wildcards, as Argo CD looks
    them up; Kustomization entries in list order), then the portal's. ``errors`` are
    configuration problems found while reading them (a ``resource.customizations`` block
    that is not YAML, a key Argo CD would reject).
    """

    rules: tuple[Rule, ...] = ()
    errors: tuple[str, ...] = ()

    def with_portal_rules(self, portal: Iterable[PortalRule]) -> HealthRules:
        return HealthRules(self.rules + tuple(rule.rule() for rule in portal), self.errors)

    def rule_for(self, group: str, kind: str) -> Rule | None:
        for rule in self.rules:
            if rule.covers(group, kind):
                return rule
        return None

    def covers(self, group: str, kind: str) -> bool:
        return self.rule_for(group, kind) is not None

    def evaluate(self, obj: Mapping[str, Any]) -> HealthVerdict | None:
        """The covering rule's verdict on ``obj`` in Argo CD's words; None when no rule covers it."""
        rule = self.rule_for(*object_group_kind(obj))
        if rule is None:
            return None
        if isinstance(rule, LuaRule):
            outcome = evaluate_lua(rule.script, obj, use_open_libs=rule.use_open_libs)
            return HealthVerdict(outcome.status, outcome.message, outcome.failed, rule.source)
        outcome = evaluate_cel(rule.exprs, obj)
        status = UNKNOWN if outcome.failed else workload_health_to_argo(outcome.status)
        return HealthVerdict(status, outcome.message, outcome.failed, rule.source)


def _override_key(group_kind: str) -> str | None:
    """argocd-cm ``<group>_<kind>`` (or ``<kind>``) as ``group/Kind``; None if Argo CD rejects it."""
    parts = group_kind.split("_")
    if len(parts) == 2:
        return f"{parts[0]}/{parts[1]}"
    if len(parts) == 1 and group_kind:
        return "*/*" if group_kind == "all" else group_kind
    return None


def argocd_cm_rules(data: Mapping[str, Any]) -> HealthRules:
    """The Lua health checks of an ``argocd-cm`` ConfigMap's ``data``, in both key styles.

    - the ``resource.customizations`` YAML block: ``{"group/Kind": {"health.lua": …,
      "health.lua.useOpenLibs": true}}``, keys may hold wildcards;
    - split keys ``resource.customizations.health.<group>_<kind>`` and
      ``resource.customizations.useOpenLibs.<group>_<kind>`` (core kinds without
      ``<group>_``), which Argo CD applies after the block, so they win.
    """
    scripts: dict[str, str] = {}
    open_libs: dict[str, bool] = {}
    sources: dict[str, str] = {}
    errors: list[str] = []

    block = data.get(_CUSTOMIZATIONS)
    if isinstance(block, str) and block.strip():
        try:
            parsed = yaml.safe_load(block)
        except yaml.YAMLError:
            parsed = None
            errors.append(f"argocd-cm {_CUSTOMIZATIONS} is not valid YAML")
        if isinstance(parsed, Mapping):
            for key, override in parsed.items():
                if not isinstance(key, str) or not isinstance(override, Mapping):
                    continue
                script = override.get("health.lua")
                if isinstance(script, str) and script.strip():
                    scripts[key] = script
                    sources[key] = f"argocd-cm {_CUSTOMIZATIONS} {key}"
                if "health.lua.useOpenLibs" in override:
                    open_libs[key] = as_bool(override.get("health.lua.useOpenLibs"))
        elif parsed is not None:
            errors.append(f"argocd-cm {_CUSTOMIZATIONS} is not a map of group/Kind")

    for name in sorted(key for key in data if isinstance(key, str)):
        parts = name.split(".", 3)
        if len(parts) < 4 or f"{parts[0]}.{parts[1]}" != _CUSTOMIZATIONS:
            continue
        kind_of, group_kind = parts[2], parts[3]
        if kind_of not in ("health", "useOpenLibs"):
            continue
        key = _override_key(group_kind)
        if key is None:
            errors.append(f"argocd-cm key {name}: group kind should be <group>_<kind> or <kind>")
            continue
        value = data[name]
        if kind_of == "health" and isinstance(value, str) and value.strip():
            scripts[key] = value
            sources[key] = f"argocd-cm {name}"
        elif kind_of == "useOpenLibs":
            open_libs[key] = as_bool(value)

    exact = [key for key in scripts if not _is_glob(key)]
    wildcards = sorted(key for key in scripts if _is_glob(key))
    rules = tuple(
        LuaRule(key, scripts[key], open_libs.get(key, False), sources[key]) for key in sorted(exact) + wildcards
    )
    return HealthRules(rules, tuple(errors))


def _is_glob(key: str) -> bool:
    return any(char in key for char in "*?[")


def kustomization_rules(kustomization: Mapping[str, Any]) -> HealthRules:
    """A Flux Kustomization's (or HelmRelease's) ``spec.healthCheckExprs`` as rules, in list order.

    Flux evaluates them only when ``wait`` or ``healthChecks`` is set; which objects get
    checked is the caller's business, the rules are the same. helm-controller reads the same
    field since v1.5.0 (Flux 2.8).
    """
    entries = dig(kustomization, "spec", "healthCheckExprs")
    namespace = dig(kustomization, "metadata", "namespace") or ""
    name = dig(kustomization, "metadata", "name") or ""
    owner = kustomization.get("kind") if kustomization.get("kind") == "HelmRelease" else "Kustomization"
    rules: list[Rule] = []
    errors: list[str] = []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        source = f"{owner} {namespace}/{name} healthCheckExprs[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(f"{source} is not an object")
            continue
        rules.append(CelRule(HealthCheckExprs.from_spec(entry), source))
    return HealthRules(tuple(rules), tuple(errors))


def is_custom_kind(group: str) -> bool:
    return group not in KUBERNETES_API_GROUPS


def tool_has_builtin_check(tool: Tool, group: str, kind: str) -> bool:
    """Whether ``tool`` judges this kind by itself, beyond reading a generic Ready condition."""
    key = group_kind_key(group, kind)
    if tool == ARGO_CD:
        return key in GO_HEALTH_CHECKS or any(fnmatchcase(key, pattern) for pattern in BUNDLED_LUA_HEALTH_CHECKS)
    return key in KSTATUS_BUILT_IN or group.endswith(_FLUX_GROUP_SUFFIX)


def missing_health_check(tool: Tool, group: str, kind: str, rules: HealthRules) -> str | None:
    """ "No health check for <kind>" when an app's custom kind has no check at all, else None.

    Its health may then be overstated: Argo CD gives it no health (the app stays
    Healthy) and kstatus calls it Current as soon as Ready is True.
    """
    if not kind or not is_custom_kind(group) or rules.covers(group, kind) or tool_has_builtin_check(tool, group, kind):
        return None
    return f"No health check for {kind}"


@dataclass(frozen=True)
class HealthDisagreement:
    """The tool's verdict and a rule's differ; it needs attention like Degraded."""

    tool: Tool
    tool_status: str  # in the tool's words: kstatus's for Flux, Argo CD's for Argo CD
    rule_status: str  # in Argo CD's words
    sentence: str
    attention: str = field(default=DEGRADED)


_NO_HEALTH = "no health"


def health_disagreement(
    obj: Mapping[str, Any], *, tool: Tool, tool_status: str, verdict: HealthVerdict | None
) -> HealthDisagreement | None:
    """The disagreement between ``tool_status`` and ``verdict`` on ``obj``, or None when they agree.

    ``tool_status`` is Flux's kstatus word or Argo CD's health word; ``""`` for Argo CD
    means it gave the object no health, which it ranks with Healthy. A failed rule or an
    Unknown on either side is no disagreement: there is nothing to compare. The sentence
    names the object's own state (``status.phase`` when it has one) and the rule's
    message: "Flux: Current, but DecisionModel support-router is RolledBack: candidate
    failed the gate". While the controller has not observed the latest generation its phase
    speaks of an older spec, so the rule's word stands instead: "Argo CD: no health, but
    DecisionModel stale-gen: Progressing — Waiting for generation 5 to be observed".
    """
    if verdict is None or verdict.failed or verdict.status not in HEALTH_ORDER or verdict.status == UNKNOWN:
        return None
    tool_word = workload_health_to_argo(tool_status) if tool == FLUX else (tool_status or HEALTHY)
    if tool_word == UNKNOWN or tool_word == verdict.status:
        return None
    _, kind = object_group_kind(obj)
    name = dig(obj, "metadata", "name") or ""
    shown = tool_status or _NO_HEALTH
    phase = dig(obj, "status", "phase")
    if not reports_latest_generation(obj):
        # Its phase speaks of an older spec ("Ready" while generation 5 is not observed): the
        # rule's verdict is what the object is now.
        said = verdict.status + (f" — {verdict.message}" if verdict.message else "")
        return HealthDisagreement(tool, tool_status, verdict.status, f"{tool}: {shown}, but {kind} {name}: {said}")
    state = phase if isinstance(phase, str) and phase else verdict.status
    detail = state
    if verdict.message and verdict.message != state:
        detail = verdict.message if verdict.message.startswith(f"{state}:") else f"{state}: {verdict.message}"
    sentence = f"{tool}: {shown}, but {kind} {name} is {detail}"
    return HealthDisagreement(tool, tool_status, verdict.status, sentence)


__all__ = [
    "ARGO_CD",
    "FLUX",
    "KUBERNETES_API_GROUPS",
    "CelRule",
    "HealthDisagreement",
    "HealthRules",
    "HealthVerdict",
    "LuaRule",
    "PortalRule",
    "Rule",
    "argocd_cm_rules",
    "health_disagreement",
    "is_custom_kind",
    "kustomization_rules",
    "missing_health_check",
    "object_group_kind",
    "tool_has_builtin_check",
]
