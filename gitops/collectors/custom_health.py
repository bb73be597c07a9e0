"""Custom-resource health at poll time: which custom kinds to read, and each app's verdicts.

Argo CD and Flux misread a custom resource nobody taught them (gitops.health.rules). A poll
therefore reads the rules the tools hold (argocd-cm, each Kustomization's
``healthCheckExprs``) and the portal's own, lists only the custom kinds that some app
deploys AND some rule covers, and judges each such object here. Pure: the poll passes in
what it read; this module reads nothing.

Per app it stores (`AppRow.health_rules`, `health_disagreement`, `health_unchecked`,
`rule_health`):

- every judged object with the rule's verdict, the tool's own word and the rule's source;
- the disagreements between the tool and the rule ("Flux: Current, but DecisionModel
  support-router is RolledBack: candidate failed the gate") — they need attention;
- "No health check for <kind>" for a custom kind neither the tool nor a rule covers;
- why a kind could not be judged (no permission to list it, a broken rule);
- with no rule at all, the tool's blind spot (gitops.health.blindspot): the custom kinds an app
  deploys that nothing checks are read too (`blind_spot_kinds`, within a per-poll budget), and
  an object the tool calls healthy while it reports failure or work in flight is a
  disagreement, with the rule that would make the tool agree (gitops.health.suggested_rules).

A broken or hostile rule yields "rule failed: …" for the objects it covers and never stops
the poll: each evaluation is sandboxed (gitops.health.lua/cel) and bounded, a rule that
ran into its limits is not run again in the same poll, and the whole pass has a budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from gitops.health import kstatus
from gitops.health.blindspot import OwnReport, blind_spot
from gitops.health.rules import (
    ARGO_CD,
    FLUX,
    HealthDisagreement,
    HealthRules,
    HealthVerdict,
    PortalRule,
    Rule,
    Tool,
    argocd_cm_rules,
    health_disagreement,
    is_custom_kind,
    kustomization_rules,
    missing_health_check,
    object_group_kind,
)
from gitops.health.sandbox import RULE_FAILED_PREFIX
from gitops.health.suggested_rules import suggested_rule
from gitops.kinds import KindSpec
from gitops.rawobjects import as_list, as_str, dig
from gitops.rows import ARGO, HEALTH_ORDER, UNKNOWN, AppRow
from gitops.rows import FLUX as FLUX_TOOL

PORTAL_RULE_SOURCE = "portal rule for "  # gitops.health.rules.PortalRule.rule
HEALTH_RULES = "health-rules"  # the capability: argocd-cm and the custom kinds rules cover
ARGOCD_CM = "argocd-cm"
CONFIGMAP = KindSpec("", "ConfigMap", "configmaps", ("v1",), HEALTH_RULES)

# How long one poll may spend judging custom resources, all apps together; past it, the
# rest are "rule failed: … budget" (a poll must finish whatever the rules do).
POLL_BUDGET_SECONDS = 30.0
# A rule failing after this long ran into its limits (a loop, a huge allocation): the
# same rule is not run again on the next objects of this poll.
SLOW_FAILURE_SECONDS = 0.2
# Objects kept per app in the stored JSON (the count of all is kept too).
KEPT_OBJECTS = 50
MAX_SHOWN = 2000  # characters of the sentences a page shows in one cell
# The custom kinds no rule covers are read only to find the tools' blind spot: a poll lists at
# most this many of them (those most apps deploy first) and stops listing more once it holds
# this many of their objects. A list costs one request per 500 objects and its objects are
# kept in memory for the poll; the cap keeps a cluster full of CRDs from doubling every poll.
MAX_BLIND_SPOT_KINDS = 20
MAX_BLIND_SPOT_OBJECTS = 5000


def plural_of(kind: str) -> str:
    """The resource name Kubernetes derives for a CRD kind that names no other (its English plural)."""
    lower = kind.lower()
    if lower.endswith("y") and not lower.endswith(("ay", "ey", "oy", "uy")):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


@dataclass(frozen=True)
class HealthInputs:
    """What a poll read for the health rules; the poll fills it, `judge_apps` reads it."""

    argocd_cm: Mapping[str, Any] | None = None  # argocd-cm's data; None when not read
    portal: tuple[PortalRule, ...] = ()
    objects: Mapping[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # (group, kind)
    not_read: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (group, kind) -> why, in words
    errors: tuple[str, ...] = ()  # reading the rules failed (argocd-cm forbidden, …)

    def argocd_rules(self) -> HealthRules:
        return argocd_cm_health_rules(self.argocd_cm)


def argocd_cm_health_rules(data: Mapping[str, Any] | None) -> HealthRules:
    return argocd_cm_rules(data) if data else HealthRules()


def app_rules(row: AppRow, argocd: HealthRules, portal: Iterable[PortalRule]) -> HealthRules:
    """The rules that judge ``row``'s objects: its tool's (argocd-cm; the Kustomization's
    ``healthCheckExprs``), then the portal's."""
    return _rules_for(row.tool, row.kind, row.raw, argocd, portal)


def _rules_for(tool: str, kind: str, raw: Mapping[str, Any], argocd: HealthRules,
               portal: Iterable[PortalRule]) -> HealthRules:
    if tool == ARGO:
        own = argocd
    else:
        # A Kustomization's expressions, or a HelmRelease's (helm-controller v1.5.0, Flux 2.8).
        own = kustomization_rules(raw)
    return own.with_portal_rules(portal)


def tool_of(row: AppRow) -> Tool:
    return cast(Tool, ARGO_CD if row.tool == ARGO else FLUX)


def deployed_kinds(row: AppRow) -> dict[tuple[str, str], str]:
    """The custom (group, kind)s an app deploys, with an API version to list them in.

    From Argo CD's ``status.resources`` (group, version, kind) or Flux's
    ``status.inventory`` (``id`` and ``v``)."""
    return _deployed(row.tool, row.raw)


def _deployed(tool: str, raw: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    status = raw.get("status") if isinstance(raw, Mapping) else None
    if not isinstance(status, Mapping):
        return out
    if tool == ARGO:
        for entry in as_list(status.get("resources")):
            if isinstance(entry, Mapping):
                group, kind = as_str(entry.get("group")), as_str(entry.get("kind"))
                if kind and is_custom_kind(group):
                    out.setdefault((group, kind), as_str(entry.get("version")))
        return out
    for entry in as_list(dig(status, "inventory", "entries")):
        if not isinstance(entry, Mapping):
            continue
        key = _inventory_key(as_str(entry.get("id")))
        if key is not None and is_custom_kind(key[0]):
            out.setdefault((key[0], key[1]), as_str(entry.get("v")))
    return out


def _inventory_key(text: str) -> tuple[str, str] | None:
    _, sep, rest = text.partition("_")
    rest, sep2, kind = rest.rpartition("_")
    _, sep3, group = rest.rpartition("_")
    if not (sep and sep2 and sep3 and kind):
        return None
    return group, kind


_APP_KINDS = {"Application": ARGO, "Kustomization": FLUX_TOOL, "HelmRelease": FLUX_TOOL}


# Each listed app object that deploys custom kinds: its tool, those kinds (with the version it
# names) and the rules that apply to it.
Deployments = list[tuple[str, dict[tuple[str, str], str], HealthRules]]


def app_deployments(objects_by_kind: Mapping[str, Any], argocd: HealthRules,
                    portal: Iterable[PortalRule]) -> Deployments:
    """Over the listed app objects as they came (no rows built), once a poll: `wanted_kinds` and
    `blind_spot_kinds` both read it."""
    portal = tuple(portal)
    found: Deployments = []
    for app_kind, tool in _APP_KINDS.items():
        for raw in as_list(objects_by_kind.get(app_kind)):
            if not isinstance(raw, Mapping):
                continue
            deployed = _deployed(tool, raw)
            if deployed:
                found.append((tool, deployed, _rules_for(tool, app_kind, raw, argocd, portal)))
    return found


def wanted_kinds(deployments: Deployments) -> dict[tuple[str, str], KindSpec]:
    """The custom kinds worth listing: deployed by an app AND covered by a rule for that app;
    nothing when no rule exists."""
    out: dict[tuple[str, str], KindSpec] = {}
    for _tool, deployed, rules in deployments:
        if not rules.rules:
            continue
        for (group, kind), version in deployed.items():
            if (group, kind) in out or not rules.covers(group, kind):
                continue
            out[(group, kind)] = KindSpec(group, kind, plural_of(kind), (version or "v1",), HEALTH_RULES)
    return out


def blind_spot_kinds(deployments: Deployments) -> list[tuple[tuple[str, str], KindSpec]]:
    """The custom kinds apps deploy that neither the tool nor any rule checks, those most apps
    deploy first: read so that the tool's blind spot shows without a rule."""
    apps_deploying: dict[tuple[str, str], int] = {}
    specs: dict[tuple[str, str], KindSpec] = {}
    for tool, deployed, rules in deployments:
        said = cast(Tool, ARGO_CD if tool == ARGO else FLUX)
        for (group, kind), version in deployed.items():
            if missing_health_check(said, group, kind, rules) is None:
                continue
            apps_deploying[(group, kind)] = apps_deploying.get((group, kind), 0) + 1
            specs.setdefault((group, kind), KindSpec(group, kind, plural_of(kind), (version or "v1",), HEALTH_RULES))
    order = sorted(apps_deploying, key=lambda key: (-apps_deploying[key], key))
    return [(key, specs[key]) for key in order]


@dataclass
class _Judge:
    """One poll's evaluations: the rules that ran into their limits, and the time spent."""

    budget: float = POLL_BUDGET_SECONDS
    spent: float = 0.0
    broken: dict[int, str] = field(default_factory=dict)  # id(rule) -> its failure
    evaluations: int = 0

    def verdict(self, rule: Rule, obj: Mapping[str, Any]) -> HealthVerdict:
        source = rule.source
        if id(rule) in self.broken:
            return HealthVerdict(UNKNOWN, self.broken[id(rule)] + " (not run again in this poll)", True, source)
        if self.spent >= self.budget:
            return HealthVerdict(
                UNKNOWN, f"{RULE_FAILED_PREFIX}this poll's {self.budget:.0f} s for health rules is spent", True, source
            )
        started = time.monotonic()
        try:
            verdict = HealthRules((rule,)).evaluate(obj)
        except Exception as exc:  # noqa: BLE001 - a rule must never stop the poll, whatever it does
            verdict = HealthVerdict(UNKNOWN, f"{RULE_FAILED_PREFIX}{type(exc).__name__}: {exc}"[:1024], True, source)
        took = time.monotonic() - started
        self.spent += took
        self.evaluations += 1
        if verdict is None:  # cannot happen: the rule covers the object
            return HealthVerdict(UNKNOWN, f"{RULE_FAILED_PREFIX}no verdict", True, source)
        if verdict.failed and took >= SLOW_FAILURE_SECONDS:
            self.broken[id(rule)] = verdict.message
        return verdict


def _is_portal_rule(rule: Rule) -> bool:
    return rule.source.startswith(PORTAL_RULE_SOURCE)


def _tool_status(row: AppRow, obj: Mapping[str, Any], argo_health: Mapping[tuple, str]) -> str:
    """The tool's own word for the object: Argo CD's status.resources health ("" = none), kstatus for Flux."""
    if row.tool == ARGO:
        group, kind = object_group_kind(obj)
        key = (group, kind, as_str(dig(obj, "metadata", "namespace")), as_str(dig(obj, "metadata", "name")))
        return argo_health.get(key, "")
    status, _ = kstatus(obj)
    return status


def _argo_resource_health(row: AppRow) -> dict[tuple, str]:
    out: dict[tuple, str] = {}
    for entry in as_list(dig(row.raw, "status", "resources")):
        if isinstance(entry, Mapping):
            key = (as_str(entry.get("group")), as_str(entry.get("kind")), as_str(entry.get("namespace")),
                   as_str(entry.get("name")))
            out[key] = as_str(dig(entry, "health", "status"))
    return out


def judge_apps(apps: Iterable[AppRow], inputs: HealthInputs, *, budget: float = POLL_BUDGET_SECONDS) -> int:
    """Fill each app's health-rule fields from ``inputs``; returns the number of evaluations."""
    argocd = inputs.argocd_rules()
    index: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for (group, kind), objects in inputs.objects.items():
        for obj in objects:
            if isinstance(obj, Mapping):
                namespace, name = as_str(dig(obj, "metadata", "namespace")), as_str(dig(obj, "metadata", "name"))
                index[(group, kind, namespace, name)] = obj
    judge = _Judge(budget=budget)
    for row in apps:
        _judge_app(row, app_rules(row, argocd, inputs.portal), index, inputs, judge, argocd)
    return judge.evaluations


def _judge_app(row: AppRow, rules: HealthRules, index: Mapping[tuple, dict[str, Any]], inputs: HealthInputs,
               judge: _Judge, argocd: HealthRules) -> None:
    deployed = deployed_kinds(row)
    if not deployed:
        return
    tool = tool_of(row)
    unchecked = sorted({m for (group, kind) in deployed if (m := missing_health_check(tool, group, kind, rules))})
    errors = list(rules.errors if row.tool != ARGO else argocd.errors + tuple(inputs.errors))
    hidden: list[str] = []  # the kinds this poll could not read, in words ("RBAC hides DecisionModel: …")
    objects: list[dict[str, Any]] = []
    disagreements: list[HealthDisagreement] = []
    blind: dict[tuple[str, str], tuple[str, list[OwnReport]]] = {}  # (group, kind) -> apiVersion, reports
    argo_health = _argo_resource_health(row) if row.tool == ARGO else {}
    judged = 0
    statuses: set[str] = set()
    for resource in row.resources:
        ruled = rules.covers(resource.group, resource.kind)
        if not ruled and missing_health_check(tool, resource.group, resource.kind, rules) is None:
            continue  # the tool judges the kind itself (or it is not a custom kind)
        why = inputs.not_read.get((resource.group, resource.kind))
        if why:
            for said in (errors, hidden):
                if why not in said:
                    said.append(why)
            continue
        obj = index.get((resource.group, resource.kind, resource.namespace, resource.name))
        if obj is None:
            continue
        tool_status = _tool_status(row, obj, argo_health)
        if not ruled:
            if row.tool == ARGO and not _argo_health_is_known(row, inputs):
                continue
            found = blind_spot(obj, tool=tool, tool_status=tool_status)
            if found is not None:
                disagreements.append(found[0])
                api_version = as_str(obj.get("apiVersion"))
                blind.setdefault((resource.group, resource.kind), (api_version, []))[1].append(found[1])
            continue
        rule = rules.rule_for(resource.group, resource.kind)
        assert rule is not None
        verdict = judge.verdict(rule, obj)
        judged += 1
        disagreement = None
        # Flux judges by its Kustomization's own expressions when they cover the kind: its
        # verdict is the rule's. Argo CD writes what its check gave into status.resources.
        if row.tool == ARGO or _is_portal_rule(rule):
            disagreement = health_disagreement(obj, tool=tool, tool_status=tool_status, verdict=verdict)
        if disagreement is not None:
            disagreements.append(disagreement)
        if verdict.failed and verdict.message not in errors:
            errors.append(verdict.message)
        statuses.add(verdict.status)
        if len(objects) < KEPT_OBJECTS:
            objects.append({
                "group": resource.group, "kind": resource.kind, "namespace": resource.namespace,
                "name": resource.name, "status": verdict.status, "message": verdict.message,
                "failed": verdict.failed, "source": verdict.source, "tool_status": tool_status,
                "disagrees": disagreement is not None,
            })
    worst = _worst(statuses)
    row.rule_health = worst
    row.health_disagreement = "; ".join(d.sentence for d in disagreements)[:MAX_SHOWN]
    row.health_unchecked = ", ".join(unchecked)[:300]
    suggested = _suggestions(row, blind)
    if objects or unchecked or errors or disagreements:
        row.health_rules = {
            "objects": objects,
            "judged": judged,
            # What pages, the API and MCP show beside the tool's health (read as JSON keys, the
            # rest of this document stays unread): the rule's word on the worst objects, why a
            # kind was not read, the rules that would make the tool agree.
            "message": rule_message(objects, worst),
            "hidden": "; ".join(hidden)[:MAX_SHOWN],
            "suggested": suggested,
            "disagreements": [d.sentence for d in disagreements][:KEPT_OBJECTS],
            "unchecked": unchecked,
            "errors": errors[:20],
        }


def _argo_health_is_known(row: AppRow, inputs: HealthInputs) -> bool:
    """Whether "no health" in the Application means Argo CD has no check for the kind. With
    ``resourceHealthSource: appTree`` Argo CD writes no resource's health into the Application,
    so that is known only when argocd-cm was read (its checks are then among the rules)."""
    return as_str(dig(row.raw, "status", "resourceHealthSource")) != "appTree" or inputs.argocd_cm is not None


def _worst(statuses: set[str]) -> str:
    ranks = [HEALTH_ORDER.index(status) for status in statuses if status in HEALTH_ORDER]
    return HEALTH_ORDER[max(ranks)] if ranks else ""


SHOWN_VERDICTS = 3  # objects whose verdict a page names, the worst first


def rule_message(objects: list[dict[str, Any]], worst: str) -> str:
    """The rules' verdict in words, on the objects with the worst one: "DecisionModel
    support-router: Degraded — candidate r42 failed gate; rolled back"."""
    said = []
    for judged in objects:
        if judged["status"] != worst:
            continue
        text = f"{judged['kind']} {judged['name']}: {judged['status']}"
        if judged["message"] and judged["message"] != judged["status"]:
            text += f" — {judged['message']}"
        said.append(text)
    more = len(said) - SHOWN_VERDICTS
    return ("; ".join(said[:SHOWN_VERDICTS]) + (f"; and {more} more" if more > 0 else ""))[:MAX_SHOWN]


def _suggestions(row: AppRow, blind: Mapping[tuple[str, str], tuple[str, list[OwnReport]]]) -> list[dict[str, str]]:
    """Per kind the tool misreads, the rule to add to the tool (argocd-cm; this Flux object's
    healthCheckExprs)."""
    out = []
    owner = "" if row.tool == ARGO else f"{row.kind} {row.namespace}/{row.name}"
    for (_, kind), (api_version, reports) in sorted(blind.items()):
        rule = suggested_rule(tool_of(row), api_version, kind, reports, owner=owner)
        if rule is not None:
            out.append(rule.as_json())
    return out


__all__ = [
    "ARGOCD_CM",
    "CONFIGMAP",
    "MAX_BLIND_SPOT_KINDS",
    "MAX_BLIND_SPOT_OBJECTS",
    "HEALTH_RULES",
    "HealthInputs",
    "app_deployments",
    "app_rules",
    "blind_spot_kinds",
    "deployed_kinds",
    "judge_apps",
    "plural_of",
    "rule_message",
    "wanted_kinds",
]
