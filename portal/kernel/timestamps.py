"""Time stamps in and out: the one RFC 3339 reader and the two ways the portal writes a time.

Everything the portal reads a time from (Kubernetes and Argo CD/Flux objects, forge APIs,
OCI image configs, YAML dumps) goes through `parse_time`; everything leaves as aware UTC.
It lives in the kernel because gitops, forges and releases all read times and may not
import each other.

`datetime.fromisoformat` (Python 3.11) does the parsing; it already reads `Z`, a numeric
offset, a space instead of `T` and up to nine fractional digits (Go writes nanoseconds:
`2025-11-18T11:09:21.123456789Z`; the digits past the sixth are dropped). What the
writers produce that it does not read, or reads differently, is handled here:

- a lowercase `z` (RFC 3339 allows it; some Go and Ruby encoders write it) is read as `Z`;
- no offset at all (PyYAML hands an unquoted `...Z` timestamp over as a naive datetime,
  and hand-written dumps leave the zone out) is taken as UTC: Kubernetes only ever
  writes UTC;
- a PyYAML `datetime` or bare `date` is accepted as it is;
- a time before 1970-01-01 or from 9000-01-01 on is read as unknown (None), see `parse_time`.

Written out, a time is either machine text (`rfc3339`, the way Kubernetes writes it,
for JSON columns and API fields) or a short stamp for people in messages (`utc_stamp`,
`2025-11-18 11:09 UTC`: notifications, PR bodies, audit lines; pages show the viewer's
zone instead).

How long something lasted is worded by `duration_words` alone, for pages ("for 3 h", "14 min
ago"), lead times ("2 h 30 min") and alerts ("an hour after 2.5.0 replaced 2.4.0").
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

# The times the portal believes: anything outside is a placeholder, not a moment.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime for an RFC 3339 string, a datetime or a date; None when absent or invalid.

    A time before 1970-01-01 or from 9000-01-01 on is None ("unknown") too. Go marshals an unset
    `metav1.Time` as its zero time, `0001-01-01T00:00:00Z` (Argo CD leaves it in
    `health.lastTransitionTime`), and some writers put `9999-12-31T23:59:59Z` for "never"; neither
    is a moment anything happened. Kept, they sit a step from `datetime.min`/`datetime.max`, so
    shifting them into a viewer's zone or subtracting a window raises OverflowError and the page
    500s. Clamping here, at the one reader, keeps every later formatter and sum in range.
    """
    try:
        parsed = _parse(value)
    except OverflowError:
        # An offset that carries the time past year 1 or 9999 (`0001-01-01T00:00:00+01:00`).
        return None
    if parsed is None or not EARLIEST <= parsed < LATEST:
        return None
    return parsed


def _parse(value: object) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith("z"):
        text = text[:-1] + "Z"
    try:
        return _as_utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def rfc3339(value: datetime | None) -> str:
    """RFC 3339 in UTC with a `Z`, the way Kubernetes writes it (fractions only when present); "" for None."""
    if value is None:
        return ""
    utc = _as_utc(value)
    # isoformat is C and writes the same digits as strftime here, at a third less cost: a poll
    # formats every history entry's times.
    stamp = utc.replace(tzinfo=None).isoformat()
    if utc.microsecond:
        stamp = stamp.rstrip("0")
    return stamp + "Z"


def utc_stamp(value: datetime) -> str:
    """`2025-11-18 11:09 UTC`: a time for a message read by people in any zone (minutes, UTC)."""
    return f"{_as_utc(value):%Y-%m-%d %H:%M} UTC"


def duration_words(delta: timedelta, *, spelled: bool = False) -> str:
    """How long `delta` is, as people read it; a negative one counts as none.

    Compact, the figure pages and lead times show (truncated, so "for 59 min" never reads as an
    hour): "less than a minute", "42 min", "3 h 10 min" (minutes only below 6 h, where they still
    matter), "30 h", then "6 days" from 48 h on.
    Spelled, for prose (alerts: "an hour after 2.5.0 replaced 2.4.0"), rounded to the nearest
    whole unit: "less than a minute", "a minute", "59 minutes", "an hour", "3 hours", "a day",
    "6 days".
    """
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return "less than a minute"
    if spelled:
        minutes = round(seconds / 60)
        if minutes < 60:
            return "a minute" if minutes == 1 else f"{minutes} minutes"
        hours = round(minutes / 60)
        if hours < 24:
            return "an hour" if hours == 1 else f"{hours} hours"
        days = round(hours / 24)
        return "a day" if days == 1 else f"{days} days"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {rest} min" if rest and hours < 6 else f"{hours} h"
    return f"{hours // 24} days"


def _as_utc(value: datetime) -> datetime:
    # A naive datetime from a cluster object or a forge is UTC (see the module docstring).
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
