"""One sync window as Argo CD reads it: compiled (schedule, duration, zone), and whether it
applies to an app (`SyncWindows.Matches`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gitops.syncwindows import cron
from gitops.syncwindows.cron import NS, CronSyntaxError, Schedule
from gitops.syncwindows.durations import parse_go_duration
from gitops.syncwindows.globs import compile_glob, glob_match


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    return [item if isinstance(item, str) else str(item) for item in value]


def window_label(window: Mapping[str, Any]) -> str:
    """How a badge names a window: its description, else `kind schedule +duration`."""
    description = str(window.get("description") or "").strip()
    if description:
        return description
    return f"{window.get('kind') or '?'} '{window.get('schedule') or ''}' +{window.get('duration') or ''}"


@dataclass(frozen=True)
class Window:
    index: int
    raw: dict
    kind: str
    manual_sync: bool
    schedule: Schedule | None
    duration_ns: int | None
    zone: ZoneInfo | None  # None is UTC
    error: str | None
    warnings: tuple[str, ...]

    @property
    def label(self) -> str:
        return window_label(self.raw)

    def offset_ns(self, t_ns: int) -> int:
        if self.zone is None:
            return 0
        offset = datetime.fromtimestamp(t_ns // NS, tz=UTC).astimezone(self.zone).utcoffset()
        return int(offset.total_seconds()) * NS if offset is not None else 0


def _zone(name: str) -> tuple[ZoneInfo | None, str | None]:
    # Go's LoadLocation; any failure falls back to UTC with only a log line in Argo CD.
    if name in ("", "UTC"):
        return None, None
    if name == "Local":
        return None, ("timeZone 'Local' is the Argo CD controller's own zone; "
                      "assumed UTC, as in Argo CD's images")
    try:
        return ZoneInfo(name), None
    except (ValueError, OSError, ZoneInfoNotFoundError):
        return None, f"timeZone '{name}' is not a known zone; Argo CD falls back to UTC"


def compile_window(index: int, raw: Mapping[str, Any]) -> Window:
    window = dict(raw)
    kind = str(window.get("kind") or "")
    warnings: list[str] = []
    if kind not in ("allow", "deny"):
        warnings.append(f"kind '{kind}' is neither allow nor deny: Argo CD evaluates the window "
                        "but it never allows or denies anything")
    zone, zone_warning = _zone(str(window.get("timeZone") or ""))
    if zone_warning:
        warnings.append(zone_warning)
    schedule_text = window.get("schedule")
    schedule_text = schedule_text if isinstance(schedule_text, str) else ""
    schedule: Schedule | None = None
    duration_ns: int | None = None
    error: str | None = None
    try:
        schedule = cron.parse(schedule_text)
    except CronSyntaxError as exc:
        error = f"cannot parse schedule '{schedule_text}': {exc}"
    if schedule is not None:
        if schedule.zone is not None:
            warnings.append(f"the schedule's TZ= prefix ({schedule.zone}) applies on top of timeZone; "
                            "Argo CD shifts the time twice")
        if not schedule.fires_ever:
            warnings.append("the schedule never fires; Argo CD then counts the window as always active")
        duration_text = window.get("duration")
        duration_text = duration_text if isinstance(duration_text, str) else ""
        try:
            duration_ns = parse_go_duration(duration_text)
        except ValueError as exc:
            error = f"cannot parse duration '{duration_text}': {exc}"
        if duration_ns is not None and duration_ns <= 0 and schedule.fires_ever:
            warnings.append("a duration of zero or less is never active")
    if window.get("syncOverrun"):
        warnings.append("syncOverrun only lets an already running sync continue; it does not open the window")
    return Window(index=index, raw=window, kind=kind, manual_sync=bool(window.get("manualSync")),
                   schedule=schedule, duration_ns=duration_ns, zone=zone, error=error,
                   warnings=tuple(warnings))


@dataclass(frozen=True)
class CompiledWindows:
    """An AppProject's windows compiled once, to judge many apps by (a poll judges every app of
    a project at once; compiling the windows again per app was most of the verdict's cost)."""

    windows: tuple[Window, ...]


def compile_windows(windows: Iterable[Mapping[str, Any]] | None) -> CompiledWindows:
    """Every window of `spec.syncWindows`, each with its index in the list (entries that are not
    mappings are skipped, as matching skips them)."""
    return CompiledWindows(tuple(compile_window(i, w) for i, w in enumerate(windows or [])
                                 if isinstance(w, Mapping)))


def _app_value(app: Mapping[str, Any], key: str) -> str:
    value = app.get(key)
    return value if isinstance(value, str) else ""


def match_app(window: Mapping[str, Any], app: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """Argo CD's `Matches` for one window, with the reasons in words."""
    name = _app_value(app, "name")
    namespace = _app_value(app, "namespace")
    server = _app_value(app, "server")
    cluster_name = _app_value(app, "cluster_name")
    use_and = bool(window.get("andOperator"))
    applications = _strings(window.get("applications"))
    clusters = _strings(window.get("clusters"))
    namespaces = _strings(window.get("namespaces"))
    why: list[str] = []
    if not (applications or clusters or namespaces):
        return False, ["no applications, namespaces or clusters: the window applies to nothing"]

    def first(patterns: list[str], values: list[str]) -> tuple[str, str] | None:
        for pattern in patterns:
            for value in values:
                if glob_match(pattern, value):
                    return pattern, value
        return None

    checks = (
        ("applications", applications, [name], f"app name '{name}'"),
        ("clusters", clusters, [v for v in (cluster_name, server) if v],
         f"destination name '{cluster_name}' / server '{server}'"),
        ("namespaces", namespaces, [namespace], f"destination namespace '{namespace}'"),
    )
    for label, patterns, values, what in checks:
        if not patterns:
            continue
        hit = first(patterns, values)
        if hit is not None:
            why.append(f"{label}: '{hit[0]}' matches '{hit[1]}'")
            if not use_and:
                return True, why
        else:
            why.append(f"{label}: none of {patterns} matches {what}")
            if use_and:
                return False, [*why, "andOperator: every non-empty list must match"]
    if use_and:
        return True, [*why, "andOperator: every non-empty list matched"]
    return False, why


def invalid_patterns(window: Mapping[str, Any]) -> list[str]:
    bad = []
    for key in ("applications", "clusters", "namespaces"):
        for pattern in _strings(window.get(key)):
            if pattern != "*" and compile_glob(pattern) is None:
                bad.append(f"{key} pattern '{pattern}' is not a valid glob; Argo CD treats it as "
                           "matching nothing")
    return bad


