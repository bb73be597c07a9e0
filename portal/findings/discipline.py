"""GitOps discipline rules: violations a reader of Argo CD and Flux objects can see.

The tools do what they are told; these rules say where what they were told defeats the
point of GitOps (drift left in place, a deploy nobody hears fail, a version Git does not
pin). One pure function per rule over stored rows (`GitOpsApp`, its `AppProject`), each
with its words in portal.findings.rulebook (`RULES`, re-exported here); the rules read from
specs and workloads are in portal.findings.practices. What other layers know comes in as
plain data: a `FindingContext` holds what Git pins (delivery's pins, read by portal.findings.derivation)
and which apps a portal notification rule covers (handed down by portal.notifications); the
raw-Secret rule judges the paths of plain Secrets delivery's pin reader found in Git.
Nothing here reads or writes the database: portal.findings.derivation stores the findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import yaml

from gitops.models import AppProject, GitOpsApp
from gitops.rawobjects import as_bool, as_list, as_str, dig
from portal.findings.rulebook import RULES, FindingRule, Found

OUT_OF_SYNC = "OutOfSync"
SYNC_RUNNING = "Running"


GIT_RULES = frozenset({"raw-secret"})  # judged from what the pin reader found in Git, not from the cluster
# A missing notification rule is one finding per environment and tool, not one per app it leaves
# silent (72 on a fresh install said one thing 72 times): each poll stores which of its apps a
# failed sync would reach nobody from as SILENT rows (a fact, never shown), then the GROUPED
# finding of each environment and tool it touched is written again from every SILENT row of them,
# on one app of the group (`group_silent`).
GROUPED = "no-failure-notification"
SILENT = "silent-sync-failure"
TOOL_NAMES = {"argo": "Argo CD", "flux": "Flux"}
GROUP_NAMED = 5  # apps a grouped finding names; the count says the rest


@dataclass
class FindingContext:
    """What the layers around gitops know, for the rules that need it."""

    # Apps a portal notification rule would tell someone about when they fail (portal.notifications).
    notified_by_portal: set[int] = field(default_factory=set)
    # (app id, service name) -> versions Git pins for that service under the app (portal.delivery).
    git_pins: Mapping[tuple[int, str], list[str]] = field(default_factory=dict)
    # app id -> (since when it is suspended, whether that is the tool's change or the portal's
    # first sight of it suspended), from the stored StateChange rows (portal.findings.derivation).
    suspended_since: Mapping[int, tuple[datetime, bool]] = field(default_factory=dict)


# --- the rules: one pure function each ------------------------------------------------


def automated_sync(app: GitOpsApp) -> Mapping[str, Any] | None:
    """An Argo CD Application's `spec.syncPolicy.automated` when it syncs automatically, else None."""
    if app.tool != "argo":
        return None
    automated = dig(app.raw, "spec", "syncPolicy", "automated")
    if not isinstance(automated, Mapping):
        return None  # absent or null: manual sync
    if "enabled" in automated and not as_bool(automated.get("enabled")):
        return None  # Argo CD 3.x: automated sync switched off
    return automated


def self_heal_off(app: GitOpsApp, *, production: bool) -> Found | None:
    automated = automated_sync(app) if production else None
    if automated is None or as_bool(automated.get("selfHeal")):
        return None
    return Found("self-heal-off", f"Application {app.namespace}/{app.name} syncs automatically but selfHeal is off")


def _any(value: Any) -> bool:
    return as_str(value) == "*"


def project_any_destination(app: GitOpsApp, project: AppProject | None, *, production: bool) -> Found | None:
    if not production or app.tool != "argo" or project is None:
        return None
    for destination in as_list(project.destinations):
        if not isinstance(destination, Mapping):
            continue
        server_any = _any(destination.get("server")) or _any(destination.get("name"))
        if server_any and _any(destination.get("namespace")):
            return Found("project-any-destination",
                         f"AppProject {project.name} (used by {app.name}) allows server '*' and namespace '*'")
    return None


def default_project(app: GitOpsApp, *, production: bool) -> Found | None:
    # An Application without spec.project is in the default project (Argo CD's GetProject).
    if production and app.tool == "argo" and app.project in ("default", ""):
        return Found("default-project", f"Application {app.namespace}/{app.name} is in the default project")
    return None


_SUBSCRIBE = "notifications.argoproj.io/subscribe.on-sync-failed."
_SUBSCRIPTIONS = "notifications.argoproj.io/subscriptions"


def _subscribes_to_sync_failures(raw: Mapping[str, Any] | None) -> bool:
    annotations = dig(raw or {}, "metadata", "annotations")
    if not isinstance(annotations, Mapping):
        return False
    for key, value in annotations.items():
        if isinstance(key, str) and key.startswith(_SUBSCRIBE) and as_str(value).strip():
            return True
    listed = annotations.get(_SUBSCRIPTIONS)
    if isinstance(listed, str) and listed.strip():
        try:
            entries = yaml.safe_load(listed)
        except yaml.YAMLError:
            return False
        for entry in as_list(entries):
            if isinstance(entry, Mapping) and "on-sync-failed" in [as_str(t) for t in as_list(entry.get("trigger"))]:
                return True
    return False


def no_failure_notification(app: GitOpsApp, project: AppProject | None, context: FindingContext) -> Found | None:
    """Argo CD: no on-sync-failed subscription on the app or its project; Flux: no Alert names it
    (unknown when Alerts could not be read); and no portal notification rule covers it."""
    if app.pk in context.notified_by_portal:
        return None
    if app.tool == "argo":
        if _subscribes_to_sync_failures(app.raw) or _subscribes_to_sync_failures(project.raw if project else None):
            return None
        return Found("no-failure-notification",
                     f"Application {app.namespace}/{app.name}: no on-sync-failed subscription and no portal rule")
    if app.flux_alerts is None or app.flux_alerts:
        return None
    return Found("no-failure-notification",
                 f"{app.kind} {app.namespace}/{app.name}: no Flux Alert names it and no portal rule covers it")


_EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def chart_unpinned(app: GitOpsApp) -> Found | None:
    if app.kind != "HelmRelease":
        return None
    chart = dig(app.raw, "spec", "chart", "spec")
    if not isinstance(chart, Mapping):
        return None  # spec.chartRef: the OCIRepository or HelmChart it names pins the version
    version = as_str(chart.get("version")).strip()
    if _EXACT_VERSION.match(version):
        return None
    shown = version or "(none: the latest)"
    return Found("chart-unpinned", f"HelmRelease {app.namespace}/{app.name} asks for chart "
                                   f"{as_str(chart.get('chart'))} version {shown}")


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def go_duration(text: str) -> timedelta | None:
    """A Go duration ("24h", "1h30m", "90m"), as Flux's intervals are written; None if it is not one."""
    text = text.strip()
    if not text:
        return None
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return timedelta(seconds=sum(float(n) * _UNIT_SECONDS[u] for n, u in parts))


def wide_interval(app: GitOpsApp, *, production: bool) -> Found | None:
    if not production or app.kind != "Kustomization":
        return None
    interval = go_duration(app.interval or as_str(dig(app.raw, "spec", "interval")))
    if interval is None or interval < timedelta(hours=24):
        return None
    return Found("wide-interval", f"Kustomization {app.namespace}/{app.name} reconciles every {app.interval}")


def no_health_gate(app: GitOpsApp, *, production: bool) -> Found | None:
    if not production or app.kind != "Kustomization":
        return None
    spec = dig(app.raw, "spec")
    if not isinstance(spec, Mapping) or as_bool(spec.get("wait")) or as_list(spec.get("healthChecks")):
        return None
    return Found("no-health-gate", f"Kustomization {app.namespace}/{app.name} has neither wait nor healthChecks")


def orphaned_resources(app: GitOpsApp) -> Found | None:
    if app.tool != "argo":
        return None
    for condition in as_list(app.conditions) or as_list(dig(app.raw, "status", "conditions")):
        if isinstance(condition, Mapping) and as_str(condition.get("type")) == "OrphanedResourceWarning":
            message = as_str(condition.get("message"))[:200] or "orphaned resources"
            return Found("orphaned-resources", f"Application {app.namespace}/{app.name}: {message}")
    return None


def hand_change(app: GitOpsApp, context: FindingContext) -> Found | None:
    if app.sync_status != OUT_OF_SYNC or app.operation_phase == SYNC_RUNNING:
        return None
    for service, running in sorted((app.running or {}).items()):
        pinned = context.git_pins.get((app.pk, service))
        if not pinned or not running or set(running) & set(pinned):
            continue
        return Found("hand-change", f"{service} runs {', '.join(running)} under {app.name}; Git pins "
                                    f"{', '.join(pinned)}; the app is OutOfSync and no sync is under way")
    return None


def raw_secret(app: GitOpsApp, paths: Iterable[str]) -> Found | None:
    shown = sorted(paths)
    if not shown:
        return None
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return Found("raw-secret", f"{', '.join(shown[:3])}{more} under {app.name}'s path hold a plain Secret")


def findings_for(app: GitOpsApp, *, production: bool, project: AppProject | None,
                 context: FindingContext) -> list[Found]:
    """The findings of one app judged from the cluster and Git's pins: all but the raw-Secret one
    (judged from Git's files) and the silent sync failure (`no_failure_notification`, judged
    with the portal's notification rules)."""
    checks = (
        self_heal_off(app, production=production),
        project_any_destination(app, project, production=production),
        default_project(app, production=production),
        chart_unpinned(app),
        wide_interval(app, production=production),
        no_health_gate(app, production=production),
        orphaned_resources(app),
        hand_change(app, context),
    )
    return [found for found in checks if found is not None]


__all__ = ["GIT_RULES", "GROUPED", "RULES", "SILENT", "FindingContext", "FindingRule", "Found", "findings_for"]


def group_message(tool: str, environment: str | None, members: Sequence[tuple[str, str]]) -> str:
    """The GROUPED finding's words for the silent apps `members` ((name, cluster), in order) of
    one tool in one environment. Pure."""
    where = f"in {environment}" if environment else "on unregistered destinations"
    named = ", ".join(f"{name} on {cluster}" for name, cluster in members[:GROUP_NAMED])
    more = f" and {len(members) - GROUP_NAMED} more" if len(members) > GROUP_NAMED else ""
    count = f"{len(members)} {TOOL_NAMES.get(tool, tool)} application{'s' if len(members) != 1 else ''}"
    return (f"No notification rule {where}: a failed sync of {count} notifies nobody ({named}{more}); "
            "no portal rule covers them and no on-sync-failed subscription or Flux Alert names them")
