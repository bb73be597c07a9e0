"""Schedules as Argo CD's robfig/cron parser (five fields, no descriptors) reads them."""

from datetime import UTC, datetime, timedelta

import pytest
from croniter import CroniterBadDateError, croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from gitops.syncwindows import cron
from gitops.syncwindows.cron import NS, CronSyntaxError


def wall_ns(*args):
    return cron.wall_to_ns(datetime(*args))


def occurrences(spec, start, count):
    schedule = cron.parse(spec)
    found, t = [], start
    for _ in range(count):
        t = schedule.next_wall(t, t.year + 10)
        found.append(t)
        t += timedelta(seconds=1)
    return found


@pytest.mark.parametrize("spec", [
    "* * * * *",
    "0 9 * * mon-fri",
    "0 0 1 JAN *",
    "*/15 * * * *",
    "5/15 * * * *",
    "? ? ? ? ?",
    "0 0 * * 0",
    "0 0 * * SUN",
    "+5 * * * *",  # strconv.Atoi accepts a plus sign
    "05 09 * * *",
    "1,,2 * * * *",  # empty list items are dropped
    "0 22 * * 5",
    "10 1 * * *",
    "  0   22 * *  *  ",
    "TZ=UTC 0 0 * * *",
    "CRON_TZ=Europe/Amsterdam 0 0 * * *",
])
def test_accepts_what_robfig_accepts(spec):
    cron.parse(spec)


@pytest.mark.parametrize("spec, reason", [
    ("", "empty"),
    ("@daily", "descriptors"),
    ("@every 1h", "descriptors"),
    ("@hourly", "descriptors"),
    ("* * * * 7", "above the maximum 6"),  # day of week is 0-6 only
    ("* 10 * * 7", "above the maximum 6"),
    ("* * *", "exactly 5 fields"),
    ("* * * *", "exactly 5 fields"),
    ("0 * * * * *", "exactly 5 fields"),  # no seconds field
    ("60 * * * *", "above the maximum 59"),
    ("* 24 * * *", "above the maximum 23"),
    ("* * 0 * *", "below the minimum 1"),
    ("* * 32 * *", "above the maximum 31"),
    ("* * * 0 *", "below the minimum 1"),
    ("* * * 13 *", "above the maximum 12"),
    ("*/0 * * * *", "step must be positive"),
    ("5/0 * * * *", "step must be positive"),
    ("5-1 * * * *", "after its end"),
    ("1-2-3 * * * *", "too many hyphens"),
    ("1/2/3 * * * *", "too many slashes"),
    ("-1 * * * *", "not a number"),
    ("a * * * *", "not a number"),
    ("1_0 * * * *", "not a number"),  # Python's int() would take it, Go's Atoi does not
    ("\uff15 * * * *", "not a number"),  # a full-width digit
    ("* * * foo *", "not a number"),
    ("* * * * monday", "not a number"),  # only three-letter names
    ("TZ=Nowhere/City 0 0 * * *", "unknown time zone"),
    ("TZ=UTC", "followed by a space"),
])
def test_rejects_what_robfig_rejects(spec, reason):
    with pytest.raises(CronSyntaxError, match=reason):
        cron.parse(spec)


def test_star_with_a_range_reads_as_star():
    # robfig ignores anything after `*-`: `*-5` is every minute, not 0-5.
    assert cron.parse("*-5 * * * *").minutes == tuple(range(60))


def test_single_value_with_step_runs_to_the_maximum():
    assert cron.parse("50/3 * * * *").minutes == (50, 53, 56, 59)
    assert cron.parse("* * * * 1/2").weekdays == (1, 3, 5)


def test_names_are_case_insensitive():
    schedule = cron.parse("0 0 * Jan-MAR sun,Sat")
    assert schedule.months == (1, 2, 3)
    assert schedule.weekdays == (0, 6)


def test_a_lone_comma_field_never_fires():
    schedule = cron.parse("0 , * * *")
    assert schedule.hours == ()
    assert not schedule.fires_ever


@pytest.mark.parametrize("spec, first_days", [
    # Both day fields restricted: either may match (Vixie cron).
    ("0 9 1 * 1", [1, 3, 10, 17, 24]),  # June 2024: Sat 1st, then Mondays
    # A `*` in either day field: both must match.
    ("0 9 * * 1", [3, 10, 17, 24, 1]),
    ("0 9 1 * *", [1, 1, 1, 1, 1]),
    ("0 9 ? * 1", [3, 10, 17, 24, 1]),
    # `*/2` is a restriction, so the OR rule applies with day-of-week.
    ("0 9 */2 * 1", [1, 3, 5, 7, 9]),
    # `*/1` keeps the star: AND.
    ("0 9 */1 * 1", [3, 10, 17, 24, 1]),
    # 1-31 lists every day but is not a star: OR makes it daily.
    ("0 9 1-31 * 1", [1, 2, 3, 4, 5]),
])
def test_day_of_month_and_day_of_week(spec, first_days):
    found = occurrences(spec, datetime(2024, 6, 1), 5)
    assert [t.day for t in found] == first_days
    assert all((t.hour, t.minute) == (9, 0) for t in found)


@pytest.mark.parametrize("spec, fires", [
    ("0 0 30 2 *", False),
    ("0 0 31 4,6,9,11 *", False),
    ("0 0 29 2 *", True),
    ("0 0 30 2 1", True),  # OR with Mondays in February
    ("0 0 30 2 ?", False),
    ("* * * * *", True),
])
def test_fires_ever(spec, fires):
    assert cron.parse(spec).fires_ever is fires


def test_go_next_is_strictly_after_and_on_whole_minutes():
    schedule = cron.parse("0 10 * * *")
    exactly = wall_ns(2024, 6, 5, 10, 0)
    assert schedule.go_next(exactly) == wall_ns(2024, 6, 6, 10, 0)
    assert schedule.go_next(exactly - 1) == exactly
    assert schedule.go_next(exactly - NS // 2) == exactly


def test_go_next_gives_up_after_five_years_like_robfig():
    # Leap days: 2096 then 2104 (2100 is not a leap year); 2104 is past 2096 + 5.
    schedule = cron.parse("0 0 29 2 *")
    assert schedule.go_next(wall_ns(2096, 3, 1)) is None
    assert schedule.go_next(wall_ns(2025, 3, 1)) == wall_ns(2028, 2, 29)


def test_go_next_never_firing_is_zero_time():
    assert cron.parse("0 0 30 2 *").go_next(wall_ns(2024, 1, 1)) is None


def test_zone_prefix_searches_in_that_zone():
    schedule = cron.parse("CRON_TZ=Europe/Berlin 0 10 * * *")
    at = int(datetime(2024, 6, 5, 0, 0, tzinfo=UTC).timestamp()) * NS
    # 10:00 CEST is 08:00 UTC.
    assert schedule.go_next(at) == int(datetime(2024, 6, 5, 8, 0, tzinfo=UTC).timestamp()) * NS
    winter = int(datetime(2024, 1, 5, 0, 0, tzinfo=UTC).timestamp()) * NS
    assert schedule.go_next(winter) == int(datetime(2024, 1, 5, 9, 0, tzinfo=UTC).timestamp()) * NS


def test_zone_prefix_over_spring_forward_keeps_robfig_behaviour():
    # 02:30 does not exist in New York on 2024-03-10; robfig moves to the next day.
    schedule = cron.parse("TZ=America/New_York 30 2 * * *")
    before = int(datetime(2024, 3, 10, 6, 0, tzinfo=UTC).timestamp()) * NS
    found = schedule.go_next(before)
    assert found is not None
    assert datetime.fromtimestamp(found // NS, tz=UTC) == datetime(2024, 3, 11, 6, 30, tzinfo=UTC)


def test_local_and_utc_prefixes_change_nothing():
    assert cron.parse("TZ=Local 0 10 * * *").zone is None
    assert cron.parse("CRON_TZ=UTC 0 10 * * *").zone is None


def test_prev_and_gap_searches():
    schedule = cron.parse("* 10 * * *")
    assert schedule.prev_wall(datetime(2024, 6, 5, 12, 0), 2000) == datetime(2024, 6, 5, 10, 59)
    assert schedule.prev_wall(datetime(2024, 6, 5, 10, 30), 2000) == datetime(2024, 6, 5, 10, 29)
    assert schedule.prev_wall(datetime(2024, 6, 5, 10, 30, 1), 2000) == datetime(2024, 6, 5, 10, 30)
    assert cron.next_gap_wall(schedule, datetime(2024, 6, 5, 10, 0), datetime(2025, 1, 1)) == datetime(
        2024, 6, 5, 11, 0)
    always = cron.parse("* * * * *")
    assert cron.next_gap_wall(always, datetime(2024, 6, 5), datetime(2024, 7, 1)) is None


# -- cross-checks ------------------------------------------------------------------------------

field_values = {
    "minute": st.sampled_from(["*", "0", "*/7", "5-20/5", "59", "0,30", "15/20"]),
    "hour": st.sampled_from(["*", "0", "23", "9-17", "*/5", "22,2"]),
    "dom": st.sampled_from(["*", "1", "15", "31", "29", "1-7", "*/10", "?"]),
    "month": st.sampled_from(["*", "2", "jan-mar", "*/4", "6,12"]),
    "dow": st.sampled_from(["*", "0", "1-5", "sat", "*/3", "?", "6"]),
}
specs = st.builds(lambda m, h, d, mo, w: f"{m} {h} {d} {mo} {w}", *field_values.values())
starts = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1))


@settings(max_examples=150, deadline=None)
@given(specs, starts)
def test_next_and_prev_agree_with_a_minute_by_minute_scan(spec, start):
    schedule = cron.parse(spec)
    found = schedule.next_wall(start, start.year + 5)
    if found is None:
        return
    assert found >= start and schedule.matches(found)
    # Nothing fires between `start` and the answer: scan back from it.
    back = schedule.prev_wall(found, start.year - 1)
    assert back is None or back < start
    if found - start < timedelta(days=3):
        t = start.replace(second=0, microsecond=0)
        while t < found:
            assert t < start or not schedule.matches(t)
            t += timedelta(minutes=1)


@settings(max_examples=150, deadline=None)
@given(specs, starts)
def test_occurrences_agree_with_croniter_where_both_define_them(spec, start):
    fields = spec.split()
    # croniter's reading of the day-of-month/day-of-week rule differs from robfig's for
    # steps; compare where at least one day field is a plain star.
    if fields[2] not in ("*", "?") and fields[4] not in ("*", "?"):
        return
    spec_for_croniter = spec.replace("?", "*")
    schedule = cron.parse(spec)
    reference = croniter(spec_for_croniter, start - timedelta(microseconds=1))
    if not schedule.fires_ever:
        with pytest.raises(CroniterBadDateError):
            reference.get_next(datetime)
        return
    t = start
    for _ in range(5):
        mine = schedule.next_wall(t, t.year + 12)
        theirs = reference.get_next(datetime)
        assert mine == theirs
        t = mine + timedelta(minutes=1)
