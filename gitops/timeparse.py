"""Timestamps from cluster objects as timezone-aware UTC datetimes.

Kubernetes writes RFC 3339 (`2025-11-18T11:09:21Z`, sometimes with fractional seconds
or a numeric offset). Objects read from YAML files arrive differently: PyYAML turns an
unquoted timestamp into a `datetime` (or a bare date into a `date`) already, so every
shape is accepted here and everything leaves as aware UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

# Go writes up to nine fractional digits; datetime keeps six, so the rest is cut
# before parsing rather than trusting every Python version to truncate quietly.
_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime for an RFC 3339 string or a datetime; None when absent or invalid."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        return None
    text = _FRACTION.sub(r"\1", value.strip())
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return _as_utc(parsed)


def format_time(value: datetime | None) -> str:
    """RFC 3339 in UTC with a `Z`, the way Kubernetes writes it; "" for None."""
    if value is None:
        return ""
    utc = _as_utc(value)
    stamp = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        stamp += f".{utc.microsecond:06d}".rstrip("0")
    return stamp + "Z"


def _as_utc(value: datetime) -> datetime:
    # A naive datetime from a cluster object is UTC: Kubernetes writes only UTC, and
    # PyYAML drops the zone of `...Z` timestamps into a naive value.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
