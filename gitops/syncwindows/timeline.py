"""When a compiled window is active, and the instants at which windows open or close.

Instants are integer nanoseconds since the Unix epoch, so that Go's nanosecond
durations compare exactly; `to_ns`/`to_datetime` convert at the edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from gitops.syncwindows import cron
from gitops.syncwindows.cron import NS, Schedule
from gitops.syncwindows.durations import wrap_int64
from gitops.syncwindows.windows import Window

DEFAULT_HORIZON = timedelta(days=400)  # longer than a yearly schedule's gap
_DENSE_LIMIT = 20_000  # run extensions per window and search; beyond that we stop looking
# A TZ=-prefixed schedule is searched one occurrence at a time through the zone, which
# costs far more per step.
_ZONED_LIMIT = 1_000
_ONE_DAY_NS = 86400 * NS


def is_active(w: Window, t_ns: int) -> bool:
    """Argo CD's `SyncWindow.active` at `t_ns` for a valid window."""
    assert w.schedule is not None and w.duration_ns is not None
    offset = w.offset_ns(t_ns)
    # Go adds (offset - duration) as one int64 Duration, which wraps on overflow.
    start = w.schedule.go_next(t_ns + wrap_int64(offset - w.duration_ns))
    return start is None or start < t_ns + offset


class TooDense(Exception):
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


def active_runs(w: Window, start_ns: int, end_ns: int) -> list[tuple[int, int]]:
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
                raise TooDense
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
            gap = cron.next_gap_wall(schedule, cron.wall_from_ns(last), cron.wall_from_ns(high + duration))
            if gap is None:
                return high + duration
            last = max(last, cron.wall_to_ns(gap) - 60 * NS)
            reach = schedule.prev_before(last + duration + 1, last + 1)
        else:
            reach = schedule.next_after(last, last + duration)
        if reach is None or reach <= last:
            return last + duration
        last = reach
        if last >= high:
            return last + duration
    raise TooDense


def to_ns(at: datetime) -> int:
    """Nanoseconds since the epoch of an aware datetime, exactly."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("`at` must be an aware datetime")
    delta = at - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * 1000


def to_datetime(ns: int) -> datetime:
    # Round up to the microsecond so that the instant shown is never before the change.
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=-(-ns // 1000))


def window_edges(valid: Sequence[Window], start_ns: int, end_ns: int) -> list[tuple[int, list[Window]]]:
    """Instants in (start, end) where a window opens or closes, with the windows opening there."""
    edges: dict[int, list[Window]] = {}
    for w in valid:
        for begin, finish in active_runs(w, start_ns, end_ns):
            if start_ns < begin < end_ns:
                edges.setdefault(begin, []).append(w)
            if start_ns < finish < end_ns:
                edges.setdefault(finish, [])
    return sorted(edges.items())


def search_spans(start_ns: int, horizon_ns: int) -> Iterable[int]:
    # Look a day ahead first, then further: most answers are hours away.
    for days in (1, 8, 32):
        if days * _ONE_DAY_NS < horizon_ns:
            yield start_ns + days * _ONE_DAY_NS
    yield start_ns + horizon_ns


def occurrences(w: Window, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """When one valid window is active between `start` and `end`: `active_runs` as datetimes.

    Each pair is the open interval Argo CD counts as active (the edge instants themselves are
    not); runs that touch are one. Raises TooDense for a window too busy to chart.
    """
    return [(to_datetime(begin), to_datetime(finish)) for begin, finish in active_runs(w, to_ns(start), to_ns(end))]
