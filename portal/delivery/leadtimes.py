"""Lead times of pull requests that reached production, and their medians. Pure.

Proposal → production: from when the PR was opened to when its version ran everywhere it
targets (`running_at`). Merge → production: from its merge to the same moment. A PR that
the portal linked rather than opened (`opened_outside`) counts from when the forge says it
was opened, like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from portal.kernel.timestamps import duration_words


@dataclass(frozen=True)
class LeadTime:
    from_proposal: timedelta | None
    from_merge: timedelta | None


def lead_time(opened_at: datetime | None, merged_at: datetime | None, running_at: datetime | None) -> LeadTime:
    if running_at is None:
        return LeadTime(None, None)
    return LeadTime(
        running_at - opened_at if opened_at and opened_at <= running_at else None,
        running_at - merged_at if merged_at and merged_at <= running_at else None,
    )


def median_of(durations: Iterable[timedelta | None]) -> timedelta | None:
    values = sorted(d.total_seconds() for d in durations if d is not None)
    return timedelta(seconds=median(values)) if values else None


@dataclass(frozen=True)
class Medians:
    from_proposal: timedelta | None
    from_merge: timedelta | None
    count: int  # pull requests that reached production


def medians(times: Iterable[LeadTime]) -> Medians:
    reached = [t for t in times if t.from_proposal is not None or t.from_merge is not None]
    return Medians(
        median_of(t.from_proposal for t in reached), median_of(t.from_merge for t in reached), len(reached)
    )


def lead_time_words(delta: timedelta | None) -> str:
    """A lead time as the Delivery page shows it ("42 min", "2 h 30 min": the one wording of a
    duration, portal.kernel.timestamps.duration_words); "—" when it did not reach production."""
    return "—" if delta is None else duration_words(delta)
