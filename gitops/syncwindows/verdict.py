"""The verdict: may this app sync at an instant, who blocks it, and until when (`CanSync`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from gitops.syncwindows.cron import NS
from gitops.syncwindows.timeline import (
    DEFAULT_HORIZON,
    TooDense,
    is_active,
    search_spans,
    to_datetime,
    to_ns,
    window_edges,
)
from gitops.syncwindows.windows import CompiledWindows, Window, compile_window, match_app, window_label

# A project's `spec.syncWindows` as listed, or compiled once for many apps (`compile_windows`).
Windows = Iterable[Mapping[str, Any]] | CompiledWindows | None


@dataclass(frozen=True)
class SyncWindowVerdict:
    """Whether an app may sync at `at`, and why not.

    `reason` is None when it may, else "invalid" (a matching window does not parse),
    "deny" (an active deny window) or "outside-allow" (allow windows exist, none active).
    `blocking` lists the windows responsible; `blocked_until` is when syncing becomes
    possible again (the end of the deny windows, chained back to back, or the opening of
    the next allow window, then named in `next_allow`). It is None when the app can sync
    now, when only fixing the spec helps (`error`), or when nothing changes before the
    search horizon (`horizon_exceeded`).
    """

    can_sync: bool
    matching: list[dict]
    active: list[dict]
    error: str | None
    blocked_until: datetime | None
    at: datetime
    manual: bool = False
    reason: str | None = None
    blocking: list[dict] = field(default_factory=list)
    next_allow: dict | None = None
    horizon_exceeded: bool = False

    def summary(self, tz: tzinfo = UTC) -> str:
        """One line for a badge, times shown in `tz`."""
        if self.can_sync:
            if not self.matching:
                return "sync allowed: no sync window applies"
            return "sync allowed"
        names = ", ".join(f"'{window_label(w)}'" for w in self.blocking)
        if self.reason == "invalid":
            return f"sync refused: invalid sync window: {self.error}"
        when = ""
        if self.blocked_until is not None:
            local = self.blocked_until.astimezone(tz)
            when = f" until {local:%a %Y-%m-%d %H:%M} {local.tzname()}"
        elif self.horizon_exceeded:
            when = " with no end in sight"
        if self.reason == "deny":
            kind = "deny window" if len(self.blocking) == 1 else "deny windows"
            return f"blocked by {kind} {names}{when}"
        if self.next_allow is not None and self.blocked_until is not None:
            return f"outside allow windows{when}, when '{window_label(self.next_allow)}' opens"
        return f"outside allow windows ({names}){when}"


def _decide(matching: Sequence[Window], active: Sequence[Window], manual: bool
            ) -> tuple[bool, str | None, list[Window]]:
    """Argo CD's `CanSync(isManual)` without an operation start time (so no overrun)."""
    denies = [w for w in active if w.kind == "deny"]
    if denies:
        if manual and all(w.manual_sync for w in denies):
            return True, None, []
        return False, "deny", [w for w in denies if not (manual and w.manual_sync)]
    if any(w.kind == "allow" for w in active):
        return True, None, []
    active_ids = {w.index for w in active}
    inactive_allows = [w for w in matching if w.kind == "allow" and w.index not in active_ids]
    if inactive_allows:
        if manual and all(w.manual_sync for w in inactive_allows):
            return True, None, []
        return False, "outside-allow", [w for w in inactive_allows if not (manual and w.manual_sync)]
    return True, None, []


def matching_windows(windows: Windows, app: Mapping[str, Any]) -> list[Window]:
    """The project's windows that apply to the app, compiled."""
    if isinstance(windows, CompiledWindows):
        return [w for w in windows.windows if match_app(w.raw, app)[0]]
    return [
        compile_window(i, w) for i, w in enumerate(windows or []) if isinstance(w, Mapping) and match_app(w, app)[0]
    ]


def evaluate(windows: Windows, app: Mapping[str, Any], at: datetime,
             manual: bool = False, *, horizon: timedelta = DEFAULT_HORIZON) -> SyncWindowVerdict:
    """Argo CD's answer to "may this app sync at `at`?", plus who blocks it and until when.

    `windows` is the AppProject's `spec.syncWindows`; `app` has `name`, `namespace`,
    `server` and `cluster_name` (the Application's destination). `manual` asks about a
    sync someone starts (API/UI/CLI) rather than an automated one.
    """
    t_ns = to_ns(at)
    at_utc = at.astimezone(UTC)
    matching = matching_windows(windows, app)
    raw_matching = [w.raw for w in matching]
    if not matching:
        return SyncWindowVerdict(can_sync=True, matching=[], active=[], error=None, blocked_until=None,
                                 at=at_utc, manual=manual)
    invalid = [w for w in matching if w.error is not None]
    if invalid:
        first = invalid[0]
        return SyncWindowVerdict(
            can_sync=False, matching=raw_matching, active=[], at=at_utc, manual=manual, reason="invalid",
            error=f"window {first.index} ({first.label}): {first.error}", blocked_until=None,
            blocking=[w.raw for w in invalid])
    active = [w for w in matching if is_active(w, t_ns)]
    can_sync, reason, blocking = _decide(matching, active, manual)
    verdict = SyncWindowVerdict(can_sync=can_sync, matching=raw_matching, active=[w.raw for w in active],
                                error=None, blocked_until=None, at=at_utc, manual=manual, reason=reason,
                                blocking=[w.raw for w in blocking])
    if can_sync:
        return verdict
    until, opening, exceeded = _unblocked_at(matching, t_ns, manual, int(horizon.total_seconds()) * NS)
    return replace(verdict, blocked_until=None if until is None else to_datetime(until),
                   next_allow=opening.raw if opening is not None else None, horizon_exceeded=exceeded)


def _unblocked_at(matching: Sequence[Window], t_ns: int, manual: bool, horizon_ns: int
                  ) -> tuple[int | None, Window | None, bool]:
    """First instant from which syncing is possible for a stretch of time, up to the horizon."""
    checked_until = t_ns
    for span_end in search_spans(t_ns, horizon_ns):
        try:
            edges = window_edges(matching, t_ns, span_end)
        except TooDense:
            return None, None, True
        candidates = [(t_ns, []), *edges] if checked_until == t_ns else edges
        for edge, opening in candidates:
            if edge < checked_until:
                continue
            # Verdicts only change at edges, so the instant just after one speaks for
            # the whole stretch up to the next.
            probe = edge + 1
            active = [w for w in matching if is_active(w, probe)]
            if _decide(matching, active, manual)[0]:
                allow = next((w for w in opening if w.kind == "allow"), None)
                return edge, allow, False
        checked_until = span_end
    return None, None, True


@dataclass(frozen=True)
class VerdictSpan:
    """A stretch of time over which the verdict does not change: `evaluate` at any instant
    strictly inside (start, end) answers `can_sync`, `reason` and `blocking` as here."""

    start: datetime
    end: datetime
    can_sync: bool
    reason: str | None
    blocking: list[dict]


def verdict_spans(windows: Windows, app: Mapping[str, Any], start: datetime,
                  end: datetime, manual: bool = False) -> list[VerdictSpan]:
    """The verdict for this app from `start` to `end`, as consecutive spans, each a different answer.

    The same rules as `evaluate` (`_decide` over the windows active just after each edge), so a
    calendar drawn from these spans says what a badge would say at any instant in them. At an
    edge instant itself Argo CD counts every window opening or closing there as inactive (both
    ends are open), a nanosecond no one can use; the span that starts there speaks for it.
    Raises TooDense when a window opens and closes too often to chart.
    """
    t0, t1 = to_ns(start), to_ns(end)
    matching = matching_windows(windows, app)
    invalid = [w for w in matching if w.error is not None]
    if not matching or invalid:
        return [VerdictSpan(start.astimezone(UTC), end.astimezone(UTC), can_sync=not invalid,
                            reason="invalid" if invalid else None, blocking=[w.raw for w in invalid])]
    bounds = [t0, *(edge for edge, _ in window_edges(matching, t0, t1)), t1]
    spans: list[VerdictSpan] = []
    keys: list[tuple[bool, str | None, tuple[int, ...]]] = []
    for begin, finish in zip(bounds, bounds[1:], strict=False):
        probe = begin + 1  # the verdict is constant strictly between two edges
        active = [w for w in matching if is_active(w, probe)]
        can_sync, reason, blocking = _decide(matching, active, manual)
        key = (can_sync, reason, tuple(w.index for w in blocking))
        if keys and keys[-1] == key:
            spans[-1] = replace(spans[-1], end=to_datetime(finish))
            continue
        keys.append(key)
        spans.append(VerdictSpan(to_datetime(begin), to_datetime(finish), can_sync=can_sync, reason=reason,
                                 blocking=[w.raw for w in blocking]))
    return spans


def next_edge(windows: Windows, app: Mapping[str, Any], at: datetime, *,
              horizon: timedelta = DEFAULT_HORIZON) -> datetime | None:
    """The next instant after `at` at which a window applying to this app opens or closes.

    The store re-evaluates the verdict then. None when nothing changes within the horizon
    (or a window changes too often to chart, in which case re-check on the next poll).
    """
    t_ns = to_ns(at)
    valid = [w for w in matching_windows(windows, app) if w.error is None]
    if not valid:
        return None
    for span_end in search_spans(t_ns, int(horizon.total_seconds()) * NS):
        try:
            edges = window_edges(valid, t_ns, span_end)
        except TooDense:
            return None
        if edges:
            return to_datetime(edges[0][0])
    return None

