"""Cron schedules exactly as Argo CD reads a sync window's `schedule`.

Argo CD parses schedules with robfig/cron v3 configured for five fields
(minute, hour, day of month, month, day of week) and no descriptors, and asks
`Schedule.Next(t)` for the first start strictly after `t`. This module
re-implements both from the library's documented rules (robfig/cron v3.0.1
`parser.go`/`spec.go`, the version Argo CD pins up to v3.6) so that a schedule
Argo CD rejects is rejected here with the reason, and one it accepts fires at
the same instants.

Times are handled as integer nanoseconds since the Unix epoch. For a schedule
without a `TZ=`/`CRON_TZ=` prefix the library works in the location of the
time it is given, and Argo CD always gives it UTC, so an occurrence is a naive
wall-clock minute read as if it were UTC ("wall nanoseconds"). A prefix moves
the search into that zone with the library's own daylight-saving handling;
`Schedule.go_next` reproduces that too.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

NS = 1_000_000_000
_MINUTE_NS = 60 * NS
_EPOCH = datetime(1970, 1, 1)
_MAX_YEAR = 9990  # keep a margin below datetime's year 9999 for "+5 years" searches


class CronSyntaxError(ValueError):
    """A schedule robfig/cron (as configured by Argo CD) refuses to parse."""


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_MONTH_NAMES = {n: i for i, n in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_DOW_NAMES = {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}

MINUTES = _Bounds("minute", 0, 59)
HOURS = _Bounds("hour", 0, 23)
DAYS_OF_MONTH = _Bounds("day of month", 1, 31)
MONTHS = _Bounds("month", 1, 12, _MONTH_NAMES)
DAYS_OF_WEEK = _Bounds("day of week", 0, 6, _DOW_NAMES)
_FIELDS = (MINUTES, HOURS, DAYS_OF_MONTH, MONTHS, DAYS_OF_WEEK)

# Go's strings.Fields splits on unicode.IsSpace, which (unlike str.split) does not
# count the ASCII information separators U+001C..U+001F as space.
_GO_SPACE = re.compile(
    "[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1


def _go_fields(text: str) -> list[str]:
    return [part for part in _GO_SPACE.split(text) if part]


def _go_lower(text: str) -> str:
    # strings.ToLower maps rune by rune; Python's lower() expands U+0130 to two
    # characters where Go gives a plain "i".
    return "".join("i" if ch == "\u0130" else ch.lower() for ch in text)


def _atoi(expr: str, bounds: _Bounds) -> int:
    # strconv.Atoi: optional sign, ASCII digits only, must fit in an int64.
    if not _ATOI.fullmatch(expr) or abs(int(expr)) > _INT64_MAX + (expr.startswith("-")):
        raise CronSyntaxError(f"{bounds.name}: '{expr}' is not a number")
    value = int(expr)
    if value < 0:
        raise CronSyntaxError(f"{bounds.name}: negative number {value} is not allowed in '{expr}'")
    return value


def _int_or_name(expr: str, bounds: _Bounds) -> int:
    if bounds.names is not None:
        named = bounds.names.get(_go_lower(expr))
        if named is not None:
            return named
    return _atoi(expr, bounds)


def _parse_range(expr: str, bounds: _Bounds) -> tuple[set[int], bool]:
    """One comma-separated term: `*`, `?`, `a`, `a-b`, each optionally `/step`."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = False
    if low_and_high[0] in ("*", "?"):
        # robfig never looks past the star: `*-5` reads as `*`.
        start, end, star = bounds.low, bounds.high, True
    else:
        start = _int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds)
        else:
            raise CronSyntaxError(f"{bounds.name}: too many hyphens in '{expr}'")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _atoi(range_and_step[1], bounds)
        if len(low_and_high) == 1:
            end = bounds.high  # `N/step` runs from N to the field's maximum
        if step > 1:
            star = False  # `*/2` is a restriction for the day-of-month/day-of-week rule
    else:
        raise CronSyntaxError(f"{bounds.name}: too many slashes in '{expr}'")
    if start < bounds.low:
        raise CronSyntaxError(f"{bounds.name}: {start} is below the minimum {bounds.low} in '{expr}'")
    if end > bounds.high:
        raise CronSyntaxError(f"{bounds.name}: {end} is above the maximum {bounds.high} in '{expr}'")
    if start > end:
        raise CronSyntaxError(f"{bounds.name}: range start {start} is after its end {end} in '{expr}'")
    if step == 0:
        raise CronSyntaxError(f"{bounds.name}: step must be positive in '{expr}'")
    return set(range(start, end + 1, step)), star


def _parse_field(field: str, bounds: _Bounds) -> tuple[tuple[int, ...], bool]:
    values: set[int] = set()
    star = False
    # strings.FieldsFunc drops empty terms, so `1,,2` is `1,2` and `,` is an empty set.
    for expr in (term for term in field.split(",") if term):
        term_values, term_star = _parse_range(expr, bounds)
        values |= term_values
        star = star or term_star
    return tuple(sorted(values)), star


@dataclass(frozen=True)
class Schedule:
    """A parsed five-field schedule. Occurrences fall on second 0 of a matching minute."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    weekdays: tuple[int, ...]  # 0 = Sunday
    days_star: bool
    weekdays_star: bool
    zone: str | None = None  # a TZ=/CRON_TZ= prefix naming a zone other than UTC

    # -- matching -------------------------------------------------------------------------------

    def day_matches(self, day: date) -> bool:
        """robfig's rule: AND when either day field has a `*`/`?` term, else OR (Vixie cron)."""
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.days_star or self.weekdays_star:
            return dom and dow
        return dom or dow

    def matches(self, wall: datetime) -> bool:
        """Whether the schedule fires at this naive wall-clock instant."""
        return (wall.second == 0 and wall.microsecond == 0 and wall.minute in self.minutes
                and wall.hour in self.hours and wall.month in self.months
                and self.day_matches(wall.date()))

    @property
    def fires_ever(self) -> bool:
        """False for schedules such as `0 0 30 2 *` that have no occurrence in any year.

        Argo CD counts such a window as always active (robfig returns the zero time,
        which is before every instant).
        """
        if not (self.minutes and self.hours and self.months):
            return False
        for month in self.months:
            longest = 29 if month == 2 else calendar.monthrange(2001, month)[1]
            for day in range(1, longest + 1):
                # Across the years every calendar day falls on every weekday.
                if self.days_star or self.weekdays_star:
                    if day in self.days and self.weekdays:
                        return True
                elif day in self.days or self.weekdays:
                    return True
        return False

    # -- search on naive wall-clock time ---------------------------------------------------------

    def next_wall(self, start: datetime, last_year: int) -> datetime | None:
        """First occurrence at or after naive `start`, in a year no later than `last_year`."""
        if not self.fires_ever:
            return None
        last_year = min(last_year, _MAX_YEAR)
        t = start.replace(second=0, microsecond=0)
        if t < start:
            t += timedelta(minutes=1)
        while t.year <= last_year:
            if t.month not in self.months:
                i = bisect.bisect_right(self.months, t.month)
                t = (datetime(t.year, self.months[i], 1) if i < len(self.months)
                     else datetime(t.year + 1, self.months[0], 1))
                continue
            if not self.day_matches(t.date()):
                t = datetime(t.year, t.month, t.day) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                i = bisect.bisect_right(self.hours, t.hour)
                t = (t.replace(hour=self.hours[i], minute=0) if i < len(self.hours)
                     else datetime(t.year, t.month, t.day) + timedelta(days=1))
                continue
            if t.minute not in self.minutes:
                i = bisect.bisect_right(self.minutes, t.minute)
                t = (t.replace(minute=self.minutes[i]) if i < len(self.minutes)
                     else t.replace(minute=0) + timedelta(hours=1))
                continue
            return t
        return None

    def prev_wall(self, before: datetime, first_year: int) -> datetime | None:
        """Last occurrence strictly before naive `before`, in a year no earlier than `first_year`."""
        if not self.fires_ever:
            return None
        t = before.replace(second=0, microsecond=0)
        if t == before:
            t -= timedelta(minutes=1)
        while t.year >= max(first_year, 2):
            if t.month not in self.months:
                i = bisect.bisect_left(self.months, t.month)
                t = (_month_end(t.year, self.months[i - 1]) if i > 0
                     else _month_end(t.year - 1, self.months[-1]))
                continue
            if not self.day_matches(t.date()):
                t = datetime(t.year, t.month, t.day) - timedelta(minutes=1)
                continue
            if t.hour not in self.hours:
                i = bisect.bisect_left(self.hours, t.hour)
                t = (t.replace(hour=self.hours[i - 1], minute=59) if i > 0
                     else datetime(t.year, t.month, t.day) - timedelta(minutes=1))
                continue
            if t.minute not in self.minutes:
                i = bisect.bisect_left(self.minutes, t.minute)
                t = (t.replace(minute=self.minutes[i - 1]) if i > 0
                     else t.replace(minute=0) - timedelta(minutes=1))
                continue
            return t
        return None

    # -- robfig Schedule.Next, as Argo CD calls it ----------------------------------------------

    def go_next(self, x_ns: int) -> int | None:
        """robfig `Next(x)` for an instant `x` in UTC, as nanoseconds; None for Go's zero time.

        Without a zone prefix the answer is in wall nanoseconds (a naive minute read as UTC).
        The search starts at the next whole second and gives up after the fifth
        calendar year following it, exactly as the library does.
        """
        start_s = x_ns // NS + 1
        if self.zone is not None:
            found = _go_next_in_zone(self, start_s, ZoneInfo(self.zone))
            return None if found is None else found * NS
        start = wall_from_ns(start_s * NS)
        found_wall = self.next_wall(start, start.year + 5)
        return None if found_wall is None else wall_to_ns(found_wall)

    def next_after(self, x_ns: int, until_ns: int) -> int | None:
        """First occurrence strictly after `x_ns` and no later than `until_ns`, no year quirk."""
        if self.zone is not None:
            found = self.go_next(x_ns)
            while found is None and x_ns < until_ns:
                # The five-year limit ran out before `until_ns`; continue from there.
                x_ns += 5 * 365 * 86400 * NS
                found = self.go_next(x_ns)
            return found if found is not None and found <= until_ns else None
        start = wall_from_ns((x_ns // NS + 1) * NS)
        found_wall = self.next_wall(start, wall_from_ns(until_ns).year)
        if found_wall is None:
            return None
        found_ns = wall_to_ns(found_wall)
        return found_ns if found_ns <= until_ns else None

    def prev_before(self, x_ns: int, since_ns: int) -> int | None:
        """Last occurrence strictly before `x_ns` and no earlier than `since_ns`.

        Only for schedules without a zone prefix (wall nanoseconds); robfig has no
        backwards search whose daylight-saving behaviour we could copy.
        """
        if self.zone is not None:
            raise ValueError("backwards search is not defined for a zone-prefixed schedule")
        found_wall = self.prev_wall(_wall_from_ns_ceil(x_ns), wall_from_ns(since_ns).year)
        if found_wall is None:
            return None
        found_ns = wall_to_ns(found_wall)
        return found_ns if found_ns >= since_ns else None


def _month_end(year: int, month: int) -> datetime:
    return datetime(year, month, calendar.monthrange(year, month)[1], 23, 59)


def wall_from_ns(ns: int) -> datetime:
    """Naive datetime for wall nanoseconds (floored to the microsecond)."""
    return _EPOCH + timedelta(microseconds=ns // 1000)


def _wall_from_ns_ceil(ns: int) -> datetime:
    return _EPOCH + timedelta(microseconds=-(-ns // 1000))


def wall_to_ns(wall: datetime) -> int:
    delta = wall - _EPOCH
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * 1000


# A fleet's AppProjects repeat a handful of schedules: a service page of 2,100 apps compiled 2,400
# windows, and parsing their schedules again was 0.46 s of it. A Schedule is frozen, so one
# parse serves every window that names the same text.
@functools.lru_cache(maxsize=4096)
def parse(spec: str) -> Schedule:
    """Parse a schedule the way Argo CD's `cron.NewParser(Minute|Hour|Dom|Month|Dow)` does."""
    if not isinstance(spec, str) or spec == "":
        raise CronSyntaxError("the schedule is empty")
    zone: str | None = None
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        space = spec.find(" ")
        if space == -1:
            # robfig slices up to the first space without checking it exists and panics.
            raise CronSyntaxError("a TZ= prefix must be followed by a space and the five fields")
        name = spec[spec.index("=") + 1:space]
        zone = _prefix_zone(name)
        spec = spec[space:].strip()
    if spec.startswith("@"):
        raise CronSyntaxError(f"descriptors such as '{spec}' are not accepted; use five fields")
    fields = _go_fields(spec)
    if len(fields) != 5:
        raise CronSyntaxError(f"expected exactly 5 fields (minute hour day-of-month month day-of-week), "
                              f"found {len(fields)}")
    parsed = [_parse_field(field, bounds) for field, bounds in zip(fields, _FIELDS, strict=True)]
    return Schedule(
        text=spec, minutes=parsed[0][0], hours=parsed[1][0], days=parsed[2][0], months=parsed[3][0],
        weekdays=parsed[4][0], days_star=parsed[2][1], weekdays_star=parsed[4][1], zone=zone,
    )


def _prefix_zone(name: str) -> str | None:
    # Go's LoadLocation: "" and "UTC" are UTC; "Local" is the controller's own zone,
    # which robfig treats as "the location of the time given", i.e. UTC here too.
    if name in ("", "UTC", "Local"):
        return None
    try:
        ZoneInfo(name)
    except (ValueError, OSError, ZoneInfoNotFoundError) as exc:
        raise CronSyntaxError(f"the TZ= prefix names an unknown time zone '{name}'") from exc
    return name


# -- robfig's search inside a zone (TZ=/CRON_TZ= prefix) ------------------------------------------

def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 for a proleptic Gregorian date whose month is 1..12."""
    return date(year, month, 1).toordinal() - 719163 + (day - 1)


def _offset_s(unix_s: int, zone: ZoneInfo) -> int:
    offset = datetime.fromtimestamp(unix_s, tz=UTC).astimezone(zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def _go_date(year: int, month: int, day: int, hour: int, minute: int, second: int, zone: ZoneInfo) -> int:
    """Go's time.Date (normalising overflowing fields) in `zone`, as Unix seconds."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    local = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    offset = _offset_s(local, zone)
    unix = local - offset
    # Go looks the offset up at the local reading first and, if the result falls in
    # another zone period, again at the result: this decides skipped and repeated hours.
    corrected = _offset_s(unix, zone)
    if corrected != offset:
        unix = local - corrected
    return unix


def _go_next_in_zone(schedule: Schedule, start_s: int, zone: ZoneInfo) -> int | None:
    if not schedule.fires_ever:
        return None

    def wall(unix_s: int) -> datetime:
        return datetime.fromtimestamp(unix_s, tz=UTC).astimezone(zone).replace(tzinfo=None)

    t = start_s
    year_limit = wall(t).year + 5
    added = False
    while True:  # each pass is robfig's WRAP label
        w = wall(t)
        if w.year > year_limit:
            return None
        wrapped = False
        while w.month not in schedule.months:
            if not added:
                added = True
                t = _go_date(w.year, w.month, 1, 0, 0, 0, zone)
                w = wall(t)
            t = _go_date(w.year, w.month + 1, w.day, w.hour, w.minute, w.second, zone)
            w = wall(t)
            if w.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not schedule.day_matches(w.date()):
            if not added:
                added = True
                t = _go_date(w.year, w.month, w.day, 0, 0, 0, zone)
                w = wall(t)
            t = _go_date(w.year, w.month, w.day + 1, w.hour, w.minute, w.second, zone)
            w = wall(t)
            if w.hour != 0:  # midnight skipped or repeated by a DST change
                t += (24 - w.hour) * 3600 if w.hour > 12 else -w.hour * 3600
                w = wall(t)
            if w.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while w.hour not in schedule.hours:
            if not added:
                added = True
                t = _go_date(w.year, w.month, w.day, w.hour, 0, 0, zone)
            t += 3600
            w = wall(t)
            if w.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while w.minute not in schedule.minutes:
            if not added:
                added = True
                t -= t % 60
            t += 60
            w = wall(t)
            if w.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while w.second != 0:
            added = True
            t += 1
            w = wall(t)
            if w.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return t


def _first_missing_after(present: tuple[int, ...], after: int, high: int) -> int | None:
    values = set(present)
    for value in range(after + 1, high + 1):
        if value not in values:
            return value
    return None


def next_gap_wall(schedule: Schedule, start: datetime, last: datetime) -> datetime | None:
    """First whole minute at or after `start` that is not an occurrence, up to `last`.

    Used to skip over runs of back-to-back minutes (`* 10 * * *`) in one step when
    working out how long a window stays open.
    """
    t = start.replace(second=0, microsecond=0)
    if t < start:
        t += timedelta(minutes=1)
    full_minutes = len(schedule.minutes) == 60
    while t <= last:
        if t.month not in schedule.months or not schedule.day_matches(t.date()) or t.hour not in schedule.hours:
            return t
        if t.minute not in schedule.minutes:
            return t
        missing = _first_missing_after(schedule.minutes, t.minute, 59)
        if missing is not None:
            return t.replace(minute=missing)
        if full_minutes:
            hour = _first_missing_after(schedule.hours, t.hour, 23)
            if hour is not None:
                return t.replace(hour=hour, minute=0)
            t = datetime(t.year, t.month, t.day) + timedelta(days=1)
        else:
            t = t.replace(minute=0) + timedelta(hours=1)
    return None
