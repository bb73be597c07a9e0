"""Argo CD sync windows: may this app sync now, which window decides, and until when.

The rules are Argo CD's (`SyncWindows.Matches`, `active`, `inactiveAllows` and `CanSync`
in `pkg/apis/application/v1alpha1/types.go`, v3.5/v3.6 development line):

* A window applies to an app when one of its non-empty selector lists has a glob that
  matches (`applications` -> app name, `clusters` -> destination name or server,
  `namespaces` -> destination namespace); with `andOperator` every non-empty list must
  match (since v3.0). A window without selectors applies to nothing.
* A window is active at `now` when a start `s` of its cron schedule, read on the window
  zone's wall clock with the offset in force at `now`, satisfies `L - duration < s < L`
  where `L` is `now` on that wall clock. Both ends are open; the look-back is the whole
  duration; a schedule that never fires counts as always active.
* Deny beats allow; an active allow wins over inactive ones (since v2.8); when allow
  windows exist but none is active nothing syncs; `manualSync` lets *manual* syncs through
  only when every window that would block has it. Any invalid matching window (schedule
  or duration that does not parse) makes Argo CD refuse every sync (since v2.14).

`syncOverrun` (v3.5) only applies to an operation already running, which a verdict about
"may it sync now" never is, so it is reported but does not change the answer.

Everything here is pure: plain dicts in, frozen dataclasses out, no clock, no database.
Inside, instants are integer nanoseconds since the Unix epoch so that Go's nanosecond
durations compare exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gitops import cronspec
from gitops.cronspec import NS, CronSyntaxError, Schedule

DEFAULT_HORIZON = timedelta(days=400)  # longer than a yearly schedule's gap
_DENSE_LIMIT = 20_000  # run extensions per window and search; beyond that we stop looking
# A TZ=-prefixed schedule is searched one occurrence at a time through the zone, which
# costs far more per step.
_ZONED_LIMIT = 1_000
_ONE_DAY_NS = 86400 * NS
_INT64 = 2**64


# -- Go's time.ParseDuration ---------------------------------------------------------------------

_UNITS_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
             "s": NS, "m": 60 * NS, "h": 3600 * NS}


def parse_go_duration(text: str) -> int:
    """Nanoseconds for a Go duration string (`1h30m`, `1.5h`, `-2m`); ValueError like Go's.

    No day unit, no spaces, units case-sensitive; `0` alone needs no unit.
    """
    if not isinstance(text, str):
        raise ValueError("the duration is not a string")
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if rest == "":
        raise ValueError(f"'{text}' is not a duration")
    total = 0
    while rest:
        match = re.match(r"([0-9]*)(?:\.([0-9]*))?", rest)
        assert match is not None  # the pattern can match the empty string
        whole, fraction = match.group(1), match.group(2)
        if not whole and not fraction:
            raise ValueError(f"'{text}' is not a duration")
        rest = rest[match.end():]
        unit_end = 0
        while unit_end < len(rest) and rest[unit_end] != "." and not ("0" <= rest[unit_end] <= "9"):
            unit_end += 1
        unit = rest[:unit_end]
        rest = rest[unit_end:]
        if not unit:
            raise ValueError(f"'{text}' has a number without a unit (ns, us, ms, s, m, h)")
        if unit not in _UNITS_NS:
            raise ValueError(f"'{text}' uses the unknown unit '{unit}' (Go knows ns, us, ms, s, m, h)")
        scale = _UNITS_NS[unit]
        value = int(whole or "0")
        if value > 2**63 // scale:
            raise ValueError(f"'{text}' is too long for a Go duration")
        value *= scale
        if fraction:
            # Go keeps at most the digits that fit in an int64 and scales in float64.
            digits = ""
            for digit in fraction:
                if int(digits + digit) > 2**63:
                    break
                digits += digit
            if digits and int(digits) > 0:
                value += int(float(int(digits)) * (float(scale) / float(10 ** len(digits))))
            if value > 2**63:
                raise ValueError(f"'{text}' is too long for a Go duration")
        total += value
        if total > 2**63:
            raise ValueError(f"'{text}' is too long for a Go duration")
    if negative:
        return -total
    if total > 2**63 - 1:
        raise ValueError(f"'{text}' is too long for a Go duration")
    return total


def _wrap_int64(value: int) -> int:
    value %= _INT64
    return value - _INT64 if value >= 2**63 else value


# -- gobwas/glob, compiled without separators ----------------------------------------------------

@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str] | None:
    """A regex equivalent to gobwas/glob v0.2.3's reading of `pattern`; None if it does not compile.

    `*`/`**` any run (no separators, so `/` and `.` too), `?` one character, `[abc]`,
    `[a-z]`, `[!...]` classes, `{a,b}` alternatives, `\\` escapes. Case-sensitive, anchored.
    """
    out: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "{":
            depth += 1
            out.append("(?:")
            i += 1
        elif ch == "," and depth:
            out.append("|")
            i += 1
        elif ch == "}" and depth:
            depth -= 1
            out.append(")")
            i += 1
        elif ch == "[":
            parsed = _glob_class(pattern, i + 1)
            if parsed is None:
                return None
            piece, i = parsed
            out.append(piece)
        elif ch == "?":
            out.append(".")
            i += 1
        elif ch == "*":
            out.append(".*")
            i += 2 if pattern[i + 1:i + 2] == "*" else 1
        else:
            breakers = "?*[{}," if depth else "?*[{"
            text, i = _glob_text(pattern, i, breakers)
            out.append(re.escape(text))
    # v0.2.3's parser accepts an unclosed `{` as if it were closed at the end.
    out.append(")" * depth)
    return re.compile("".join(out), re.DOTALL)


def _glob_text(pattern: str, i: int, breakers: str) -> tuple[str, int]:
    chars: list[str] = []
    escaped = False
    while i < len(pattern):
        ch = pattern[i]
        if not escaped:
            if ch == "\\":
                escaped = True
                i += 1
                continue
            if ch in breakers:
                break
        escaped = False
        chars.append(ch)
        i += 1
    # A trailing backslash is dropped silently by v0.2.3.
    return "".join(chars), i


def _glob_class(pattern: str, i: int) -> tuple[str, int] | None:
    negate = False
    low = high = ""
    chars = ""
    want_high = want_close = False
    while True:
        if i >= len(pattern):
            return None
        ch = pattern[i]
        i += 1
        if want_close:
            if ch != "]":
                return None
            break
        if want_high:
            high = ch
            want_close = True
            continue
        if not negate and ch == "!":
            negate = True
            continue
        if pattern[i:i + 1] == "-":
            low = ch
            i += 1
            want_high = True
            continue
        chars, i = _glob_text(pattern, i - 1, "]")
        want_close = True
    is_range = bool(low and high)
    if bool(chars) == is_range or (is_range and high < low):
        return None
    body = (re.escape(low) + "-" + re.escape(high)) if is_range else "".join(re.escape(c) for c in chars)
    return ("[^" if negate else "[") + body + "]", i


def glob_match(pattern: str, value: str) -> bool:
    """Argo CD's `globMatch(pattern, value, allowNegation=false)`: `*` matches everything."""
    if pattern == "*":
        return True
    compiled = compile_glob(pattern)
    return compiled is not None and compiled.fullmatch(value) is not None


# -- windows -------------------------------------------------------------------------------------

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
class _Window:
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


def _compile(index: int, raw: Mapping[str, Any]) -> _Window:
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
        schedule = cronspec.parse(schedule_text)
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
    return _Window(index=index, raw=window, kind=kind, manual_sync=bool(window.get("manualSync")),
                   schedule=schedule, duration_ns=duration_ns, zone=zone, error=error,
                   warnings=tuple(warnings))


def _app_value(app: Mapping[str, Any], key: str) -> str:
    value = app.get(key)
    return value if isinstance(value, str) else ""


def _match(window: Mapping[str, Any], app: Mapping[str, Any]) -> tuple[bool, list[str]]:
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


def _invalid_patterns(window: Mapping[str, Any]) -> list[str]:
    bad = []
    for key in ("applications", "clusters", "namespaces"):
        for pattern in _strings(window.get(key)):
            if pattern != "*" and compile_glob(pattern) is None:
                bad.append(f"{key} pattern '{pattern}' is not a valid glob; Argo CD treats it as "
                           "matching nothing")
    return bad


# -- activity --------------------------------------------------------------------------------------

def _active(w: _Window, t_ns: int) -> bool:
    """Argo CD's `SyncWindow.active` at `t_ns` for a valid window."""
    assert w.schedule is not None and w.duration_ns is not None
    offset = w.offset_ns(t_ns)
    # Go adds (offset - duration) as one int64 Duration, which wraps on overflow.
    start = w.schedule.go_next(t_ns + _wrap_int64(offset - w.duration_ns))
    return start is None or start < t_ns + offset


class _TooDense(Exception):
    """A window opens and closes too often to chart it up to the horizon."""


def _transitions(zone: ZoneInfo | None, start_ns: int, end_ns: int) -> list[int]:
    """UTC offset changes of `zone` inside (start, end], to the second."""
    if zone is None:
        return []
    found: list[int] = []

    def offset(sec: int) -> timedelta | None:
        return datetime.fromtimestamp(sec, tz=UTC).astimezone(zone).utcoffset()

    # Real zones change offset at most every few weeks, so a daily probe sees every change.
    sec, end = start_ns // NS, -(-end_ns // NS)
    while sec < end:
        step_end = min(sec + 86400, end)
        if offset(step_end) != offset(sec):
            low, high = sec, step_end
            while high - low > 1:
                middle = (low + high) // 2
                if offset(middle) == offset(low):
                    low = middle
                else:
                    high = middle
            found.append(high * NS)
        sec = step_end
    return [t for t in found if start_ns < t <= end_ns]


def _runs(w: _Window, start_ns: int, end_ns: int) -> list[tuple[int, int]]:
    """The open intervals within [start, end] in which the window is active, merged.

    Intervals that only touch (a window reopening the very instant it closes) are merged:
    the single instant between them is of no use to anyone wanting to sync.
    """
    schedule, duration = w.schedule, w.duration_ns
    assert schedule is not None and duration is not None
    if not schedule.fires_ever:
        return [(start_ns, end_ns)]
    if duration <= 0:
        return []
    bounds = [start_ns, *_transitions(w.zone, start_ns, end_ns), end_ns]
    runs: list[tuple[int, int]] = []
    steps = 0
    limit = _DENSE_LIMIT if schedule.zone is None else _ZONED_LIMIT
    for period_start, period_end in zip(bounds, bounds[1:], strict=False):
        offset = w.offset_ns(period_start)
        low, high = period_start + offset - duration, period_end + offset
        occurrence = schedule.next_after(low, high)
        while occurrence is not None and occurrence < high:
            first = occurrence
            run_end = _extend(schedule, occurrence, duration, high)
            steps += 1
            if steps > limit:
                raise _TooDense
            begin, finish = max(first - offset, period_start), min(run_end - offset, period_end)
            if runs and runs[-1][1] >= begin:
                runs[-1] = (runs[-1][0], max(runs[-1][1], finish))
            else:
                runs.append((begin, finish))
            occurrence = schedule.next_after(run_end - 1, high)
    return runs


def _extend(schedule: Schedule, occurrence: int, duration: int, high: int) -> int:
    """End (in schedule time) of the run of overlapping or touching occurrences from `occurrence`."""
    last = occurrence
    for _ in range(_DENSE_LIMIT if schedule.zone is None else _ZONED_LIMIT):
        if schedule.zone is None:
            # Jump over back-to-back minutes in one step, then to the latest start the
            # window's duration still reaches.
            gap = cronspec.next_gap_wall(schedule, cronspec.wall_from_ns(last),
                                         cronspec.wall_from_ns(high + duration))
            if gap is None:
                return high + duration
            last = max(last, cronspec.wall_to_ns(gap) - 60 * NS)
            reach = schedule.prev_before(last + duration + 1, last + 1)
        else:
            reach = schedule.next_after(last, last + duration)
        if reach is None or reach <= last:
            return last + duration
        last = reach
        if last >= high:
            return last + duration
    raise _TooDense


# -- the verdict -----------------------------------------------------------------------------------

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


def _decide(matching: Sequence[_Window], active: Sequence[_Window], manual: bool
            ) -> tuple[bool, str | None, list[_Window]]:
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


def _ns(at: datetime) -> int:
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("`at` must be an aware datetime")
    delta = at - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * 1000


def _datetime(ns: int) -> datetime:
    # Round up to the microsecond so that the instant shown is never before the change.
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=-(-ns // 1000))


def _matching(windows: Iterable[Mapping[str, Any]] | None, app: Mapping[str, Any]) -> list[_Window]:
    return [_compile(i, w) for i, w in enumerate(windows or []) if isinstance(w, Mapping) and _match(w, app)[0]]


def _edges(valid: Sequence[_Window], start_ns: int, end_ns: int) -> list[tuple[int, list[_Window]]]:
    """Instants in (start, end) where a window opens or closes, with the windows opening there."""
    edges: dict[int, list[_Window]] = {}
    for w in valid:
        for begin, finish in _runs(w, start_ns, end_ns):
            if start_ns < begin < end_ns:
                edges.setdefault(begin, []).append(w)
            if start_ns < finish < end_ns:
                edges.setdefault(finish, [])
    return sorted(edges.items())


def _search_spans(start_ns: int, horizon_ns: int) -> Iterable[int]:
    # Look a day ahead first, then further: most answers are hours away.
    for days in (1, 8, 32):
        if days * _ONE_DAY_NS < horizon_ns:
            yield start_ns + days * _ONE_DAY_NS
    yield start_ns + horizon_ns


def evaluate(windows: Iterable[Mapping[str, Any]] | None, app: Mapping[str, Any], at: datetime,
             manual: bool = False, *, horizon: timedelta = DEFAULT_HORIZON) -> SyncWindowVerdict:
    """Argo CD's answer to "may this app sync at `at`?", plus who blocks it and until when.

    `windows` is the AppProject's `spec.syncWindows`; `app` has `name`, `namespace`,
    `server` and `cluster_name` (the Application's destination). `manual` asks about a
    sync someone starts (API/UI/CLI) rather than an automated one.
    """
    t_ns = _ns(at)
    at_utc = at.astimezone(UTC)
    matching = _matching(windows, app)
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
    active = [w for w in matching if _active(w, t_ns)]
    can_sync, reason, blocking = _decide(matching, active, manual)
    verdict = SyncWindowVerdict(can_sync=can_sync, matching=raw_matching, active=[w.raw for w in active],
                                error=None, blocked_until=None, at=at_utc, manual=manual, reason=reason,
                                blocking=[w.raw for w in blocking])
    if can_sync:
        return verdict
    until, opening, exceeded = _unblocked_at(matching, t_ns, manual, int(horizon.total_seconds()) * NS)
    return replace(verdict, blocked_until=None if until is None else _datetime(until),
                   next_allow=opening.raw if opening is not None else None, horizon_exceeded=exceeded)


def _unblocked_at(matching: Sequence[_Window], t_ns: int, manual: bool, horizon_ns: int
                  ) -> tuple[int | None, _Window | None, bool]:
    """First instant from which syncing is possible for a stretch of time, up to the horizon."""
    checked_until = t_ns
    for span_end in _search_spans(t_ns, horizon_ns):
        try:
            edges = _edges(matching, t_ns, span_end)
        except _TooDense:
            return None, None, True
        candidates = [(t_ns, []), *edges] if checked_until == t_ns else edges
        for edge, opening in candidates:
            if edge < checked_until:
                continue
            # Verdicts only change at edges, so the instant just after one speaks for
            # the whole stretch up to the next.
            probe = edge + 1
            active = [w for w in matching if _active(w, probe)]
            if _decide(matching, active, manual)[0]:
                allow = next((w for w in opening if w.kind == "allow"), None)
                return edge, allow, False
        checked_until = span_end
    return None, None, True


def next_edge(windows: Iterable[Mapping[str, Any]] | None, app: Mapping[str, Any], at: datetime, *,
              horizon: timedelta = DEFAULT_HORIZON) -> datetime | None:
    """The next instant after `at` at which a window applying to this app opens or closes.

    The store re-evaluates the verdict then. None when nothing changes within the horizon
    (or a window changes too often to chart, in which case re-check on the next poll).
    """
    t_ns = _ns(at)
    valid = [w for w in _matching(windows, app) if w.error is None]
    if not valid:
        return None
    for span_end in _search_spans(t_ns, int(horizon.total_seconds()) * NS):
        try:
            edges = _edges(valid, t_ns, span_end)
        except _TooDense:
            return None
        if edges:
            return _datetime(edges[0][0])
    return None


# -- explanations ------------------------------------------------------------------------------

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
    t_ns = _ns(at)
    lines = []
    for index, raw in enumerate(window_list):
        compiled = _compile(index, raw)
        matches, why = _match(raw, app)
        valid = compiled.error is None
        warnings = [*compiled.warnings, *_invalid_patterns(raw)]
        if not valid and not matches:
            warnings.append("invalid, but it does not apply to this app, so it does not block it")
        lines.append(WindowExplanation(
            index=index, window=dict(raw), label=compiled.label, matches=matches, why=why, valid=valid,
            error=compiled.error, active=_active(compiled, t_ns) if valid else None, warnings=warnings))
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


def is_manual_sync(application: Mapping[str, Any]) -> bool:
    """True when the Application only deploys when someone syncs it (no automated policy).

    `spec.syncPolicy.automated` absent or null, or `automated.enabled: false` (v3.1+).
    """
    spec = application.get("spec") or {}
    policy = (spec.get("syncPolicy") or {}) if isinstance(spec, Mapping) else {}
    automated = policy.get("automated") if isinstance(policy, Mapping) else None
    if automated is None:
        return True
    if isinstance(automated, Mapping) and automated.get("enabled") is False:
        return True
    return False
