"""The sync-window verdict stored on each app: can it deploy now, and if not, until when.

Argo CD apps are judged by their AppProject's windows (gitops.syncwindows, Argo CD's
exact rules); a suspended Flux object is held like a window with no end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from gitops import syncwindows
from gitops.rows import AppRow, ProjectRow

NO_END_IN_SIGHT = "no end in sight"


def held_until(until: datetime | None, stamp: Callable[[datetime], str]) -> str:
    """How long a sync window holds an app, in the one wording the badge, the alerts and the
    assistant share: "until <time>", or "with no end in sight" when the stored verdict names no
    end (the windows reopen as they close, or nothing changes within the search horizon).
    `stamp` writes the time: the viewer's zone on a page, UTC in a message."""
    return f"until {stamp(until)}" if until is not None else f"with {NO_END_IN_SIGHT}"


def window_name(window: Mapping[str, Any]) -> str:
    """The stored window as people know it: its description, else its schedule; "" if neither."""
    return str(window.get("description") or window.get("schedule") or "")


def _describe(window: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": window.get("kind", ""),
        "description": window.get("description", ""),
        "schedule": window.get("schedule", ""),
        "duration": window.get("duration", ""),
        "time_zone": window.get("timeZone", ""),
        "manual_sync_allowed": bool(window.get("manualSync")),
    }


def app_target(row_or_app: Any) -> dict[str, str]:
    """The `app` argument of syncwindows.evaluate, from a row or a stored app."""
    return {
        "name": row_or_app.name,
        "namespace": row_or_app.destination_namespace,
        "server": row_or_app.destination_server,
        "cluster_name": row_or_app.destination_name,
    }


def verdict(windows: syncwindows.Windows, target: dict[str, str], manual: bool, at: datetime) -> dict[str, Any]:
    result = syncwindows.evaluate(windows, target, at, manual=manual)
    blocking = list(getattr(result, "blocking", None) or [])
    window: dict[str, Any] = {}
    if result.error:
        window = {"kind": "error", "error": result.error}
    elif not result.can_sync:
        chosen = blocking[0] if blocking else next((w for w in result.matching if w.get("kind") == "allow"), {})
        window = _describe(chosen) if chosen else {"kind": "deny"}
        if not blocking and chosen.get("kind") == "allow":
            window["kind"] = "allow"  # allow windows exist, none is open
        if getattr(result, "horizon_exceeded", False):
            window["no_end_in_horizon"] = True
    return {
        "sync_blocked": not result.can_sync,
        "sync_blocked_until": result.blocked_until if not result.can_sync else None,
        "sync_window": window,
        "window_next_edge": syncwindows.next_edge(windows, target, at),
    }


class ProjectWindows:
    """A poll's AppProjects by name, each one's sync windows compiled on first use and then
    judged for every app of the project (`window_state`)."""

    def __init__(self, projects: Mapping[str, ProjectRow]) -> None:
        self.projects = projects
        self._compiled: dict[str, syncwindows.CompiledWindows] = {}

    def of(self, name: str) -> syncwindows.CompiledWindows | None:
        """The project's windows, compiled; None when the poll knows no such project."""
        compiled = self._compiled.get(name)
        if compiled is None:
            project = self.projects.get(name)
            if project is None:
                return None
            compiled = self._compiled[name] = syncwindows.compile_windows(project.sync_windows or [])
        return compiled


def window_state(row: AppRow, projects: ProjectWindows, at: datetime) -> dict[str, Any] | None:
    """Fields for GitOpsApp, or None to leave them as they are (project not readable)."""
    if row.tool == "flux":
        if row.suspended:
            return {"sync_blocked": True, "sync_blocked_until": None,
                    "sync_window": {"kind": "suspend", "description": "spec.suspend: true"}, "window_next_edge": None}
        return {"sync_blocked": False, "sync_blocked_until": None, "sync_window": {}, "window_next_edge": None}
    windows = projects.of(row.project or "default")
    if windows is None:
        return None if not projects.projects else {
            "sync_blocked": False, "sync_blocked_until": None, "sync_window": {}, "window_next_edge": None,
        }
    return verdict(windows, app_target(row), row.manual_sync, at)
