"""The one RFC 3339 reader, the two writers and the one wording of a duration (portal.kernel.timestamps)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from portal.kernel.timestamps import duration_words, parse_time, rfc3339, utc_stamp


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-11-18T11:09:21Z", datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)),
        ("2025-11-06T23:35:15.038685123+02:00", datetime(2025, 11, 6, 21, 35, 15, 38685, tzinfo=UTC)),
        ("2025-11-18T11:09:21.5Z", datetime(2025, 11, 18, 11, 9, 21, 500000, tzinfo=UTC)),
        (datetime(2018, 7, 18, 4, 40, 44), datetime(2018, 7, 18, 4, 40, 44, tzinfo=UTC)),
        (
            datetime(2018, 7, 18, 6, 40, 44, tzinfo=timezone(timedelta(hours=2))),
            datetime(2018, 7, 18, 4, 40, 44, tzinfo=UTC),
        ),
        (date(2018, 7, 18), datetime(2018, 7, 18, tzinfo=UTC)),
        ("", None),
        (None, None),
        ("yesterday", None),
        (1700000000, None),
    ],
)
def test_parse_time(value: object, expected: datetime | None) -> None:
    parsed = parse_time(value)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # GitHub REST: whole seconds, Z.
        ("2011-01-26T19:01:12Z", datetime(2011, 1, 26, 19, 1, 12, tzinfo=UTC)),
        # GitLab REST: milliseconds, Z.
        ("2024-05-02T13:49:35.853Z", datetime(2024, 5, 2, 13, 49, 35, 853000, tzinfo=UTC)),
        # Gitea REST: the server's own offset.
        ("2024-05-02T15:49:35+02:00", datetime(2024, 5, 2, 13, 49, 35, tzinfo=UTC)),
        # An OCI image config written by BuildKit: Go's nanoseconds (digits past the sixth dropped).
        ("2024-04-23T10:26:53.398277437Z", datetime(2024, 4, 23, 10, 26, 53, 398277, tzinfo=UTC)),
        # Kubernetes MicroTime (events, leases).
        ("2025-11-06T23:35:15.038685Z", datetime(2025, 11, 6, 23, 35, 15, 38685, tzinfo=UTC)),
        # RFC 3339 allows a lowercase z; fromisoformat alone rejects it.
        ("2025-11-18T11:09:21z", datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)),
        # No offset (a hand-written dump): UTC, as Kubernetes writes nothing else.
        ("2025-11-18T11:09:21", datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)),
        # Surrounding blanks from a YAML block scalar.
        (" 2025-11-18T11:09:21Z\n", datetime(2025, 11, 18, 11, 9, 21, tzinfo=UTC)),
    ],
)
def test_parse_time_reads_what_forges_registries_and_kubernetes_write(text: str, expected: datetime) -> None:
    parsed = parse_time(text)
    assert parsed == expected
    assert parsed is not None and parsed.tzinfo is UTC


def test_format_time_round_trips() -> None:
    stamp = datetime(2025, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)
    assert rfc3339(stamp) == "2025-01-02T03:04:05.12Z"
    assert parse_time(rfc3339(stamp)) == stamp
    assert rfc3339(None) == ""
    assert rfc3339(datetime(2025, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))) == "2025-01-02T03:04:05Z"


def test_utc_stamp_is_minutes_in_utc_whatever_the_zone() -> None:
    cet = timezone(timedelta(hours=1))
    assert utc_stamp(datetime(2026, 11, 29, 20, 55, 59, tzinfo=cet)) == "2026-11-29 19:55 UTC"
    assert utc_stamp(datetime(2026, 11, 29, 19, 55)) == "2026-11-29 19:55 UTC"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # Go's zero time: what an unset metav1.Time marshals to (Argo CD's health.lastTransitionTime).
        ("0001-01-01T00:00:00Z", None),
        # The same with an offset that would carry it before year 1.
        ("0001-01-01T00:00:00+01:00", None),
        # "Never" as some writers spell it, e.g. an operationState.finishedAt.
        ("9999-12-31T23:59:59Z", None),
        ("9999-12-31T23:59:59-01:00", None),
        ("1969-12-31T23:59:59Z", None),
        ("1970-01-01T00:00:00Z", datetime(1970, 1, 1, tzinfo=UTC)),
        ("1970-01-01T01:00:00+01:00", datetime(1970, 1, 1, tzinfo=UTC)),
        ("8999-12-31T23:59:59.999999Z", datetime(8999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("9000-01-01T00:00:00Z", None),
        (datetime(1, 1, 1), None),
        (datetime.max, None),
        (datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), None),
        (date(1, 1, 1), None),
        (date(9999, 12, 31), None),
        (date(1970, 1, 1), datetime(1970, 1, 1, tzinfo=UTC)),
    ],
)
def test_parse_time_reads_times_outside_1970_to_9000_as_unknown(value: object, expected: datetime | None) -> None:
    assert parse_time(value) == expected


@pytest.mark.parametrize(
    ("delta", "compact", "spelled"),
    [
        (timedelta(seconds=-5), "less than a minute", "less than a minute"),
        (timedelta(seconds=59), "less than a minute", "less than a minute"),
        (timedelta(minutes=1), "1 min", "a minute"),
        (timedelta(minutes=59, seconds=50), "59 min", "an hour"),  # figures truncate, prose rounds
        (timedelta(hours=2, minutes=30), "2 h 30 min", "2 hours"),
        (timedelta(hours=5, minutes=59), "5 h 59 min", "6 hours"),
        (timedelta(hours=6, minutes=30), "6 h", "6 hours"),
        (timedelta(hours=26), "26 h", "a day"),
        (timedelta(hours=47, minutes=59), "47 h", "2 days"),
        (timedelta(days=6, hours=3), "6 days", "6 days"),
    ],
)
def test_one_wording_of_a_duration_compact_for_figures_spelled_for_prose(
    delta: timedelta, compact: str, spelled: str
) -> None:
    assert duration_words(delta) == compact
    assert duration_words(delta, spelled=True) == spelled
