"""Every window of a project with why it does or does not apply, for "why won't it deploy?"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from gitops.syncwindows.timeline import DEFAULT_HORIZON, is_active, to_ns
from gitops.syncwindows.verdict import SyncWindowVerdict, evaluate
from gitops.syncwindows.windows import compile_window, invalid_patterns, match_app


@dataclass(frozen=True)
class WindowExplanation:
    """One window's part in the verdict: does it apply, is it valid, is it open."""

    index: int
    window: dict
    label: str
    matches: bool
    why: list[str]
    valid: bool
    error: str | None
    active: bool | None  # None when the window does not parse
    warnings: list[str]


@dataclass(frozen=True)
class Explanation:
    app: dict
    at: datetime
    manual: bool
    windows: list[WindowExplanation]
    verdict: SyncWindowVerdict


def explain(windows: Iterable[Mapping[str, Any]] | None, app: Mapping[str, Any], at: datetime,
            manual: bool = False, *, horizon: timedelta = DEFAULT_HORIZON) -> Explanation:
    """Every window of the project, with why it does or does not apply, and the verdict."""
    window_list = [w for w in (windows or []) if isinstance(w, Mapping)]
    t_ns = to_ns(at)
    lines = []
    for index, raw in enumerate(window_list):
        compiled = compile_window(index, raw)
        matches, why = match_app(raw, app)
        valid = compiled.error is None
        warnings = [*compiled.warnings, *invalid_patterns(raw)]
        if not valid and not matches:
            warnings.append("invalid, but it does not apply to this app, so it does not block it")
        lines.append(WindowExplanation(
            index=index, window=dict(raw), label=compiled.label, matches=matches, why=why, valid=valid,
            error=compiled.error, active=is_active(compiled, t_ns) if valid else None, warnings=warnings))
    return Explanation(app=dict(app), at=at.astimezone(UTC), manual=manual, windows=lines,
                       verdict=evaluate(window_list, app, at, manual, horizon=horizon))


def format_explanation(explanation: Explanation, tz: tzinfo = UTC) -> str:
    """Plain text answering "why won't it deploy?" for a management command."""
    app = explanation.app
    at = explanation.at.astimezone(tz)
    sync = "manual" if explanation.manual else "automated"
    out = [f"App '{app.get('name', '')}' -> namespace '{app.get('namespace', '')}' on "
           f"'{app.get('cluster_name') or app.get('server') or ''}', {sync} sync at "
           f"{at:%Y-%m-%d %H:%M:%S} {at.tzname()}"]
    if not explanation.windows:
        out.append("The project has no sync windows.")
    for line in explanation.windows:
        window = line.window
        state = ("invalid" if not line.valid else "active" if line.active else "inactive")
        flags = [f for f, on in (("manualSync", window.get("manualSync")),
                                 ("andOperator", window.get("andOperator")),
                                 ("syncOverrun", window.get("syncOverrun"))) if on]
        zone = window.get("timeZone") or "UTC"
        described = str(window.get("description") or "").strip()
        out.append(f"[{line.index}] {described + ': ' if described else ''}{window.get('kind')} "
                   f"'{window.get('schedule')}' for {window.get('duration')} ({zone})"
                   f"{' ' + ', '.join(flags) if flags else ''}")
        out.append(f"    {'applies' if line.matches else 'does not apply'}: {'; '.join(line.why)}")
        out.append(f"    {state}" + (f": {line.error}" if line.error else ""))
        out.extend(f"    note: {warning}" for warning in line.warnings)
    out.append("Verdict: " + explanation.verdict.summary(tz))
    return "\n".join(out)
