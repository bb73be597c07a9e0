"""When windows open and close: boundaries, time zones, chains, and what the badge says."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitops.collectors import application_row
from gitops.syncwindows import cron, evaluate, explain, format_explanation, next_edge, parse_go_duration
from gitops.syncwindows.timeline import to_datetime, to_ns

APP = {"name": "checkout", "namespace": "shop", "server": "https://kubernetes.default.svc",
       "cluster_name": "in-cluster"}
NY = ZoneInfo("America/New_York")


def w(kind, schedule, duration, **extra):
    return {"kind": kind, "schedule": schedule, "duration": duration, "applications": ["*"], **extra}


def utc(*args):
    return datetime(*args, tzinfo=UTC)


def is_active(window, at):
    return evaluate([window], APP, at).active == [window]


# -- boundaries -------------------------------------------------------------------------------

def test_window_is_open_on_both_ends():
    deny = w("deny", "0 10 * * *", "1h")
    assert not is_active(deny, utc(2024, 6, 5, 10, 0))
    assert is_active(deny, utc(2024, 6, 5, 10, 0, 0, 1))
    assert is_active(deny, utc(2024, 6, 5, 10, 59, 59, 999999))
    assert not is_active(deny, utc(2024, 6, 5, 11, 0))


def test_a_star_minute_field_starts_the_window_every_minute():
    allow = w("allow", "* 10 * * *", "2h")
    assert is_active(allow, utc(2024, 6, 5, 12, 58))
    assert not is_active(allow, utc(2024, 6, 5, 12, 59))


def test_window_across_midnight():
    deny = w("deny", "0 22 * * *", "4h")
    assert is_active(deny, utc(2024, 6, 5, 23, 30))
    assert is_active(deny, utc(2024, 6, 6, 1, 59))
    assert not is_active(deny, utc(2024, 6, 6, 2, 0))
    result = evaluate([deny], APP, utc(2024, 6, 6, 1, 0))
    assert result.blocked_until == utc(2024, 6, 6, 2, 0)


def test_look_back_is_the_whole_duration():
    freeze = w("deny", "0 22 * * 5", "60h", description="weekend freeze")
    assert is_active(freeze, utc(2024, 6, 10, 9, 59))  # Monday morning
    result = evaluate([freeze], APP, utc(2024, 6, 8, 12, 0))
    assert result.blocked_until == utc(2024, 6, 10, 10, 0)
    assert result.summary() == "blocked by deny window 'weekend freeze' until Mon 2024-06-10 10:00 UTC"


def test_zero_and_negative_durations_are_never_active():
    for duration in ("0", "0s", "-1h"):
        assert not is_active(w("deny", "* * * * *", duration), utc(2024, 6, 5, 10, 30))


def test_a_schedule_that_never_fires_is_always_active():
    deny = w("deny", "0 0 30 2 *", "1h")
    result = evaluate([deny], APP, utc(2024, 6, 5, 10, 30))
    assert result.active == [deny] and not result.can_sync
    assert result.blocked_until is None and result.horizon_exceeded


def test_overlapping_occurrences_keep_a_window_open():
    always = w("deny", "0 * * * *", "3h")
    assert is_active(always, utc(2024, 6, 5, 10, 0))


# -- time zones -------------------------------------------------------------------------------

def test_time_zone_is_wall_clock_across_spring_forward():
    # 01:30 EST start, 2h by the wall clock: closed at 03:40 EDT after only 70 real minutes.
    deny = w("deny", "30 1 * * *", "2h", timeZone="America/New_York")
    assert is_active(deny, datetime(2024, 3, 10, 1, 40, tzinfo=NY))
    assert is_active(deny, datetime(2024, 3, 10, 3, 29, tzinfo=NY))
    assert not is_active(deny, datetime(2024, 3, 10, 3, 31, tzinfo=NY))
    assert not is_active(deny, datetime(2024, 3, 10, 3, 40, tzinfo=NY))


def test_time_zone_start_that_does_not_exist_still_opens():
    deny = w("deny", "30 2 * * *", "1h", timeZone="America/New_York")
    # 02:30 does not exist on 2024-03-10; at 03:10 EDT the wall clock reads past it.
    assert is_active(deny, datetime(2024, 3, 10, 3, 10, tzinfo=NY))


def test_time_zone_repeated_hour_on_fall_back():
    deny = w("deny", "0 1 * * *", "1h", timeZone="America/New_York")
    first = datetime(2024, 11, 3, 1, 30, tzinfo=NY, fold=0)  # EDT
    second = datetime(2024, 11, 3, 1, 30, tzinfo=NY, fold=1)  # EST, an hour later
    assert is_active(deny, first) and is_active(deny, second)
    assert not is_active(deny, datetime(2024, 11, 3, 2, 0, tzinfo=NY))


def test_blocked_until_across_a_dst_change_uses_the_new_offset():
    # Window 01:30-03:30 wall clock; on 2024-03-10 03:30 EDT is 07:30 UTC.
    deny = w("deny", "30 1 * * *", "2h", timeZone="America/New_York")
    result = evaluate([deny], APP, datetime(2024, 3, 10, 1, 45, tzinfo=NY))
    assert result.blocked_until == utc(2024, 3, 10, 7, 30)


def test_unknown_time_zone_falls_back_to_utc_with_a_warning():
    deny = w("deny", "0 10 * * *", "1h", timeZone="Mars/Olympus_Mons")
    assert is_active(deny, utc(2024, 6, 5, 10, 30))
    assert evaluate([deny], APP, utc(2024, 6, 5, 10, 30)).error is None
    lines = explain([deny], APP, utc(2024, 6, 5, 10, 30)).windows
    assert any("falls back to UTC" in note for note in lines[0].warnings)


# -- invalid windows --------------------------------------------------------------------------

@pytest.mark.parametrize("schedule, duration, fragment", [
    ("@daily", "1h", "descriptors"),
    ("0 22 * * 7", "1h", "above the maximum 6"),
    ("0 22 * *", "1h", "exactly 5 fields"),
    ("0 22 * * *", "1d", "unknown unit 'd'"),
    ("0 22 * * *", "", "not a duration"),
    ("0 22 * * *", "1 h", "unknown unit ' h'"),
    ("0 22 * * *", "1H", "unknown unit 'H'"),
    ("0 22 * * *", "10", "without a unit"),
])
def test_invalid_matching_window_blocks_every_sync(schedule, duration, fragment):
    broken = w("allow", schedule, duration)
    for manual in (False, True):
        result = evaluate([w("allow", "* * * * *", "1h"), broken], APP, utc(2024, 6, 5, 10, 30), manual=manual)
        assert not result.can_sync
        assert result.reason == "invalid" and fragment in result.error
        assert result.blocking == [broken]


def test_first_invalid_window_in_spec_order_is_reported():
    windows = [w("deny", "0 1 * * *", "2x"), w("deny", "@weekly", "1h")]
    assert "window 0" in evaluate(windows, APP, utc(2024, 6, 5)).error


@pytest.mark.parametrize("text, ns", [
    ("1h", 3600 * 10**9), ("1h30m", 5400 * 10**9), ("1.5h", 5400 * 10**9), ("90m", 5400 * 10**9),
    ("0", 0), ("-0", 0), ("+2s", 2 * 10**9), ("1us", 1000), ("1\u00b5s", 1000), ("1\u03bcs", 1000),
    (".5s", 5 * 10**8), ("1.s", 10**9), ("-1m", -60 * 10**9), ("1h1h", 7200 * 10**9),
    ("2562047h47m16.854775807s", 2**63 - 1),
])
def test_go_durations(text, ns):
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize("text", ["", "1d", "1w", "h", ".s", "1", "00", "1h ", " 1h", "1H", "2562048h", "1e3s", "+"])
def test_go_durations_rejected(text):
    with pytest.raises(ValueError):
        parse_go_duration(text)


# -- deciding ---------------------------------------------------------------------------------

def test_deny_beats_an_active_allow():
    windows = [w("allow", "0 9 * * *", "8h"), w("deny", "0 12 * * *", "1h", description="lunch")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 12, 30))
    assert not result.can_sync and result.reason == "deny" and result.blocking == [windows[1]]
    assert result.blocked_until == utc(2024, 6, 5, 13, 0)
    assert evaluate(windows, APP, utc(2024, 6, 5, 13, 30)).can_sync


def test_allow_windows_exist_but_none_active():
    windows = [w("allow", "0 22 * * *", "1h", description="nightly")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 12, 0))
    assert not result.can_sync and result.reason == "outside-allow"
    assert result.blocked_until == utc(2024, 6, 5, 22, 0)
    assert result.next_allow == windows[0]
    assert result.summary() == "outside allow windows until Wed 2024-06-05 22:00 UTC, when 'nightly' opens"


def test_only_inactive_denies_allow_syncing():
    assert evaluate([w("deny", "0 22 * * *", "1h")], APP, utc(2024, 6, 5, 12, 0)).can_sync


def test_manual_sync_passes_an_active_deny_that_allows_it():
    windows = [w("deny", "0 9 * * *", "8h", manualSync=True)]
    at = utc(2024, 6, 5, 12, 0)
    assert not evaluate(windows, APP, at).can_sync
    assert evaluate(windows, APP, at, manual=True).can_sync


def test_manual_sync_on_active_deny_ignores_inactive_allows():
    # Inactive allows are not consulted once a deny is active.
    windows = [w("deny", "0 9 * * *", "8h", manualSync=True), w("allow", "0 22 * * *", "1h")]
    assert evaluate(windows, APP, utc(2024, 6, 5, 12, 0), manual=True).can_sync


def test_manual_block_names_only_the_windows_without_manual_sync():
    windows = [w("deny", "0 9 * * *", "8h", manualSync=True), w("deny", "0 11 * * *", "2h", description="hard")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 12, 0), manual=True)
    assert not result.can_sync and result.blocking == [windows[1]]
    assert result.blocked_until == utc(2024, 6, 5, 13, 0)  # the manualSync deny no longer matters


def test_unknown_kind_counts_for_nothing():
    windows = [w("Deny", "* * * * *", "1h")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 12, 0))
    assert result.can_sync and result.active == windows


# -- blocked_until ----------------------------------------------------------------------------

def test_deny_windows_chained_back_to_back():
    windows = [
        w("deny", "0 8 * * *", "2h", description="first"),
        w("deny", "0 10 * * *", "2h", description="second"),  # starts the instant the first ends
        w("deny", "30 11 * * *", "90m", description="third"),  # overlaps the second
    ]
    result = evaluate(windows, APP, utc(2024, 6, 5, 9, 0))
    assert result.blocking == [windows[0]]
    assert result.blocked_until == utc(2024, 6, 5, 13, 0)


def test_deny_ending_into_no_allow_waits_for_the_allow():
    windows = [w("deny", "0 8 * * *", "2h"), w("allow", "0 14 * * *", "1h", description="afternoon")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 9, 0))
    assert result.reason == "deny"
    assert result.blocked_until == utc(2024, 6, 5, 14, 0)
    assert result.next_allow == windows[1]


def test_allow_window_that_opens_under_a_deny_does_not_end_the_block():
    windows = [w("allow", "0 10 * * *", "4h"), w("deny", "0 9 * * *", "3h")]
    result = evaluate(windows, APP, utc(2024, 6, 5, 9, 30))
    assert result.blocked_until == utc(2024, 6, 5, 12, 0)


def test_nothing_opens_within_the_horizon():
    windows = [w("allow", "0 0 1 1 *", "1h")]
    result = evaluate(windows, APP, utc(2024, 6, 5), horizon=timedelta(days=30))
    assert not result.can_sync and result.blocked_until is None and result.horizon_exceeded
    yearly = evaluate(windows, APP, utc(2024, 6, 5))
    assert yearly.blocked_until == utc(2025, 1, 1) and not yearly.horizon_exceeded


def test_blocked_until_is_none_when_it_can_sync():
    result = evaluate([w("allow", "* * * * *", "1h")], APP, utc(2024, 6, 5))
    assert result.can_sync and result.blocked_until is None and not result.horizon_exceeded


# -- next_edge --------------------------------------------------------------------------------

def test_next_edge_is_the_next_opening_or_closing():
    windows = [w("allow", "0 9 * * 1-5", "8h"), w("deny", "0 12 * * *", "1h")]
    assert next_edge(windows, APP, utc(2024, 6, 5, 8, 0)) == utc(2024, 6, 5, 9, 0)
    assert next_edge(windows, APP, utc(2024, 6, 5, 9, 0)) == utc(2024, 6, 5, 12, 0)
    assert next_edge(windows, APP, utc(2024, 6, 5, 12, 30)) == utc(2024, 6, 5, 13, 0)
    assert next_edge(windows, APP, utc(2024, 6, 5, 13, 0)) == utc(2024, 6, 5, 17, 0)
    assert next_edge(windows, APP, utc(2024, 6, 7, 17, 0)) == utc(2024, 6, 8, 12, 0)  # weekend: the deny


def test_next_edge_skips_windows_for_other_apps_and_invalid_ones():
    other = {**w("deny", "0 9 * * *", "1h"), "applications": ["other"]}
    assert next_edge([other, w("deny", "@daily", "1h")], APP, utc(2024, 6, 5)) is None


def test_next_edge_with_a_zone():
    windows = [w("deny", "0 22 * * *", "1h", timeZone="Europe/Amsterdam")]
    assert next_edge(windows, APP, utc(2024, 6, 5, 12, 0)) == utc(2024, 6, 5, 20, 0)


# -- explanations -----------------------------------------------------------------------------

def test_explain_lists_every_window_with_reasons():
    windows = [
        {**w("deny", "0 22 * * 5", "60h", description="weekend freeze"), "applications": [], "namespaces": ["shop"]},
        {**w("allow", "0 9 * * *", "8h"), "applications": ["billing-*"]},
        {**w("deny", "@daily", "1h"), "applications": ["billing"]},
    ]
    explanation = explain(windows, APP, utc(2024, 6, 8, 12, 0))
    first, second, third = explanation.windows
    assert first.matches and first.active and first.valid
    assert "namespaces: 'shop' matches 'shop'" in first.why
    assert not second.matches and "none of ['billing-*']" in second.why[0]
    assert not third.valid and not third.matches and third.active is None
    assert any("does not apply to this app" in note for note in third.warnings)
    text = format_explanation(explanation)
    assert "[0] weekend freeze: deny '0 22 * * 5' for 60h (UTC)" in text
    assert "Verdict: blocked by deny window 'weekend freeze' until Mon 2024-06-10 10:00 UTC" in text


def test_explanation_in_the_viewers_zone():
    windows = [w("allow", "0 22 * * *", "1h")]
    text = format_explanation(explain(windows, APP, utc(2024, 6, 5, 12, 0)), tz=ZoneInfo("Europe/Berlin"))
    assert "until Thu 2024-06-06 00:00 CEST" in text


def test_explain_flags_bad_globs():
    windows = [{**w("deny", "* * * * *", "1h"), "applications": ["[web"]}]
    line = explain(windows, APP, utc(2024, 6, 5)).windows[0]
    assert not line.matches and any("not a valid glob" in note for note in line.warnings)


# -- manual vs automated ----------------------------------------------------------------------

@pytest.mark.parametrize("application, manual", [
    ({"spec": {}}, True),
    ({"spec": {"syncPolicy": {}}}, True),
    ({"spec": {"syncPolicy": {"automated": None}}}, True),
    ({"spec": {"syncPolicy": {"automated": {}}}}, False),
    ({"spec": {"syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}}, False),
    ({"spec": {"syncPolicy": {"automated": {"enabled": False}}}}, True),
    ({"spec": {"syncPolicy": {"automated": {"enabled": True}}}}, False),
    ({}, True),
])
def test_an_application_without_automated_sync_is_judged_as_a_manual_sync(application, manual):
    # What the store hands to evaluate(manual=...): the collector's reading of the spec.
    row = application_row({"metadata": {"name": "web", "namespace": "argocd"}, **application})
    assert row.manual_sync is manual


# -- properties -------------------------------------------------------------------------------

simple_schedules = st.sampled_from([
    "0 10 * * *", "* 10 * * *", "30 */3 * * *", "0 22 * * 5", "15 8 1 * 1", "0 0 * * 0,6", "*/20 9-17 * * 1-5",
])
durations = st.sampled_from(["30m", "1h", "2h", "90m", "24h", "60h", "5m"])
zones = st.sampled_from(["", "America/New_York", "Asia/Kolkata", "Europe/Berlin"])
instants = st.datetimes(min_value=datetime(2023, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(UTC))


def brute_force_active(schedule_text, duration_text, zone_name, at):
    """The rule restated: some start s on the zone's wall clock with L - d < s < L."""
    schedule = cron.parse(schedule_text)
    duration = timedelta(microseconds=parse_go_duration(duration_text) // 1000)
    offset = at.astimezone(ZoneInfo(zone_name)).utcoffset() if zone_name else timedelta(0)
    wall = (at + offset).replace(tzinfo=None)
    s = (wall - duration).replace(second=0, microsecond=0)
    while s < wall:
        if wall - duration < s and schedule.matches(s):
            return True
        s += timedelta(minutes=1)
    return False


@settings(max_examples=120, deadline=None)
@given(simple_schedules, durations, zones, instants)
def test_active_agrees_with_the_rule_restated(schedule, duration, zone, at):
    window = w("deny", schedule, duration, timeZone=zone)
    assert is_active(window, at) is brute_force_active(schedule, duration, zone, at)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["allow", "deny"]), simple_schedules, durations, zones),
                min_size=1, max_size=3), instants, st.booleans())
def test_blocked_until_is_the_first_moment_it_can_sync(specs, at, manual):
    windows = [w(kind, schedule, duration, timeZone=zone, manualSync=i % 2 == 0)
               for i, (kind, schedule, duration, zone) in enumerate(specs)]
    result = evaluate(windows, APP, at, manual=manual)
    if result.can_sync or result.blocked_until is None:
        return
    until = result.blocked_until
    assert until >= at
    assert evaluate(windows, APP, until + timedelta(seconds=1), manual=manual).can_sync
    # Sampled instants before it are all blocked (single instants where windows touch aside).
    step = (until - at) / 17
    for i in range(1, 17):
        probe = at + step * i
        if probe.second or probe.microsecond:
            assert not evaluate(windows, APP, probe, manual=manual).can_sync


def test_internal_ns_conversion_round_trips():
    at = utc(2024, 6, 5, 10, 0, 0, 123456)
    assert to_datetime(to_ns(at)) == at
    with pytest.raises(ValueError):
        to_ns(datetime(2024, 6, 5))


def test_cron_tz_prefix_shifts_twice_like_argo_cd():
    # timeZone moves "now" onto Berlin's wall clock, then the prefix reads the schedule in
    # Berlin again: the window opens two hours early (08:00-09:00 Berlin time in summer).
    deny = w("deny", "CRON_TZ=Europe/Berlin 0 10 * * *", "1h", timeZone="Europe/Berlin")
    assert is_active(deny, utc(2024, 6, 5, 6, 30))
    assert not is_active(deny, utc(2024, 6, 5, 8, 30))
    assert evaluate([deny], APP, utc(2024, 6, 5, 6, 30)).blocked_until == utc(2024, 6, 5, 7, 0)
    notes = explain([deny], APP, utc(2024, 6, 5, 6, 30)).windows[0].warnings
    assert any("shifts the time twice" in note for note in notes)


def test_windows_that_change_too_often_to_chart_say_so():
    result = evaluate([w("deny", "*/2 * * * *", "3m")], APP, utc(2024, 6, 5, 12, 1))
    assert not result.can_sync and result.blocked_until is None and result.horizon_exceeded
