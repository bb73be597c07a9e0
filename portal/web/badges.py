"""The badges shown wherever an application appears: why it will not (or may not) deploy.

Pure: takes an app row and its cluster as stored, and the time to judge at. Also the one
place that decides a badge's CSS class for a sync, health or workload state, and its markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from django.utils import timezone
from django.utils.safestring import SafeString

from gitops.models import sync_held


@dataclass(frozen=True)
class Badge:
    kind: str  # window | manual | suspended | stale
    label: str
    title: str


def _stamp(at: datetime) -> str:
    try:
        local = timezone.localtime(at)
    except OverflowError:  # too near year 1 or 9999 to shift into the viewer's zone: say it in UTC
        local = at.astimezone(UTC)
    if abs((at - timezone.now()).total_seconds()) < 6 * 86400:
        return local.strftime("%a %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def window_badge(app: object, at: datetime) -> Badge | None:
    """A sync-window badge while the stored verdict still holds at `at`.

    The verdict is written at poll time and re-evaluated at each window edge; a
    blocked_until already in the past means the window has closed, so nothing is shown.
    """
    until = getattr(app, "sync_blocked_until", None)
    if not sync_held(getattr(app, "sync_blocked", False), until, at):
        return None
    window = getattr(app, "sync_window", None) or {}
    if window.get("kind") == "suspend":
        return None  # shown as the "suspended" badge
    if window.get("error"):
        return Badge("window", "sync window error", f"Argo CD refuses every sync: {window['error']}")
    name = window.get("description") or window.get("schedule") or "sync window"
    kind = window.get("kind", "deny")
    if kind == "allow":
        title = "no allow window is open"
        title += f"; until the next allow window opens at {_stamp(until)}" if until else " and none opens soon"
        if name:
            title += f" ('{name}')"
    else:
        title = f"deny '{name}'" + (f" until {_stamp(until)}" if until else "")
    if window.get("manual_sync_allowed"):
        title += " — a manual sync is allowed"
    return Badge("window", "sync window", title)


def badges_for(app: object, cluster: object, at: datetime | None = None) -> list[Badge]:
    at = at or timezone.now()
    badges: list[Badge] = []
    window = window_badge(app, at)
    if window:
        badges.append(window)
    if getattr(app, "manual_sync", False):
        badges.append(Badge("manual", "manual sync", "No automated sync: it deploys only when someone syncs it."))
    if getattr(app, "suspended", False):
        badges.append(Badge("suspended", "suspended", "Flux reconciliation is suspended (spec.suspend: true)."))
    stale_since = getattr(cluster, "stale_since", None)
    if stale_since:
        name = getattr(cluster, "name", "the cluster")
        title = f"{name} not polled successfully since {_stamp(stale_since)}: showing the last good data."
        badges.append(Badge("stale", "stale", title))
    return badges


# The CSS class of a badge for each state, decided here only: templates reach these through
# the `sync_class`, `health_class`, `workload_class` and `jump_class` filters, and cells.py draws its
# badges with `badge_html`, the one spelling of a badge's markup.
SYNC_CLASSES = {"Synced": "ok", "OutOfSync": "warn"}
HEALTH_CLASSES = {"Healthy": "ok", "Progressing": "warn", "Degraded": "bad", "Missing": "bad"}
# A workload's kstatus; any state but these two (InProgress, Terminating, Unknown) is on its way.
WORKLOAD_CLASSES = {"Current": "ok", "Failed": "bad"}
# How far an upgrade jumps: a major version may break what depends on it.
JUMP_CLASSES = {"major": "warn"}


def sync_class(status: str | None) -> str:
    return SYNC_CLASSES.get(status or "", "")


def health_class(status: str | None) -> str:
    return HEALTH_CLASSES.get(status or "", "")


def workload_class(status: str | None) -> str:
    return WORKLOAD_CLASSES.get(status or "", "warn")


def jump_class(jump: str | None) -> str:
    return JUMP_CLASSES.get(jump or "", "")


SEVERITY_CLASSES = {"critical": "bad", "high": "bad", "moderate": "warn", "low": "", "unknown": ""}


def severity_class(severity: str) -> str:
    """A known vulnerability's badge: critical and high are bad, moderate a warning (Security page)."""
    return SEVERITY_CLASSES.get(severity, "")


def badge_html(kind: str, label: str, title: str = "") -> SafeString:
    """`<span class="badge KIND" title="TITLE">LABEL</span>`, every part escaped."""
    css = f"badge {escape(kind)}" if kind else "badge"
    hover = f' title="{escape(title)}"' if title else ""
    return SafeString(f'<span class="{css}"{hover}>{escape(label)}</span>')
