"""Sync windows give Argo CD's answers.

The first tables carry the meaning of Argo CD's own unit tests in
pkg/apis/application/v1alpha1/types_test.go (TestSyncWindows_Active,
TestSyncWindows_InactiveAllows, TestSyncWindow_Active, TestSyncWindows_Matches,
TestSyncWindows_CanSync), pinned to a fixed day instead of "today".
"""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from gitops.syncwindows import evaluate

DAY = (2024, 6, 5)  # a Wednesday, New York on daylight time (UTC-4)
UTC_M4 = timezone(timedelta(hours=-4))
APP = {"name": "test-app", "namespace": "default", "server": "cluster1", "cluster_name": "clusterName"}


def at_hour(hour, tz=UTC, minute=0):
    return datetime(*DAY, hour, minute, tzinfo=tz)


def window(kind, schedule, duration, time_zone="", **extra):
    return {"kind": kind, "schedule": schedule, "duration": duration, "timeZone": time_zone,
            "applications": ["*"], **extra}


def active_indexes(windows, at):
    result = evaluate(windows, APP, at)
    return [windows.index(w) for w in result.active]


# -- TestSyncWindows_Active -------------------------------------------------------------------

@pytest.mark.parametrize("name, windows, at, expected", [
    ("MatchFirst", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")], at_hour(11), [0]),
    ("MatchSecond", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")], at_hour(15), [1]),
    ("MatchBoth", [window("allow", "* 10 * * *", "3h"), window("allow", "* 11 * * *", "3h")], at_hour(12), [0, 1]),
    ("MatchNone", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")], at_hour(17), []),
    ("MatchFirst-NonUTC", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")],
     at_hour(11 - 4, UTC_M4), [0]),
    ("MatchSecond-NonUTC", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")],
     at_hour(15 - 4, UTC_M4), [1]),
    ("MatchNone-NonUTC", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")],
     at_hour(17 - 4, UTC_M4), []),
    ("MatchFirst-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                      window("allow", "* 14 * * *", "2h", "America/New_York")], at_hour(16), [0]),
    ("MatchSecond-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                       window("allow", "* 14 * * *", "2h", "America/New_York")], at_hour(20), [1]),
    ("MatchNone-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                     window("allow", "* 14 * * *", "2h", "America/New_York")], at_hour(22), []),
    ("MatchFirst-PositiveTimeZoneSpecified", [window("allow", "* 8 * * *", "2h", "Asia/Dhaka"),
                                              window("allow", "* 12 * * *", "2h", "Asia/Dhaka")], at_hour(3), [0]),
])
def test_active_windows(name, windows, at, expected):
    assert active_indexes(windows, at) == expected


@pytest.mark.parametrize("windows", [
    [window("allow", "* 10 * * 7", "3h"), window("allow", "* 11 * * 7", "3h")],  # MatchNone-InvalidSchedule
    [window("allow", "* 10 * * *", "3a"), window("allow", "* 11 * * *", "3a")],  # MatchNone-InvalidDuration
])
def test_invalid_windows_report_an_error_and_nothing_active(windows):
    result = evaluate(windows, APP, at_hour(12))
    assert result.error
    assert result.active == []
    assert result.can_sync is False


# -- TestSyncWindows_InactiveAllows -------------------------------------------------------------

@pytest.mark.parametrize("name, windows, at, inactive", [
    ("MatchFirst", [window("allow", "* 10 * * *", "2h"), window("allow", "* 5 * * *", "2h")], at_hour(6), [0]),
    ("MatchSecond", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")], at_hour(11), [1]),
    ("MatchBoth", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")], at_hour(17), [0, 1]),
    ("MatchNone", [window("allow", "* 10 * * *", "4h"), window("allow", "* 11 * * *", "4h")], at_hour(12), []),
    ("MatchFirst-NonUTC", [window("allow", "* 10 * * *", "2h"), window("allow", "* 5 * * *", "2h")],
     at_hour(6 - 4, UTC_M4), [0]),
    ("MatchBoth-NonUTC", [window("allow", "* 10 * * *", "2h"), window("allow", "* 14 * * *", "2h")],
     at_hour(17 - 4, UTC_M4), [0, 1]),
    ("MatchFirst-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                      window("allow", "* 5 * * *", "2h", "America/New_York")], at_hour(11), [0]),
    ("MatchSecond-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                       window("allow", "* 14 * * *", "2h", "America/New_York")], at_hour(16), [1]),
    ("MatchBoth-TimeZoneSpecified", [window("allow", "* 10 * * *", "2h", "America/New_York"),
                                     window("allow", "* 14 * * *", "2h", "America/New_York")], at_hour(6), [0, 1]),
    ("MatchFirst-PositiveTimeZoneSpecified", [window("allow", "* 8 * * *", "2h", "Asia/Dhaka"),
                                              window("allow", "* 12 * * *", "2h", "Asia/Dhaka")], at_hour(7), [0]),
])
def test_inactive_allow_windows(name, windows, at, inactive):
    result = evaluate(windows, APP, at)
    assert [i for i, w in enumerate(windows) if w not in result.active] == inactive
    # Allow windows exist: syncing is possible exactly when one of them is active.
    assert result.can_sync is (len(inactive) < len(windows))


# -- TestSyncWindow_Active ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["allow", "deny"])
@pytest.mark.parametrize("at, active", [
    (at_hour(11), True),
    (at_hour(13), False),
    (at_hour(11 - 4, UTC_M4), True),  # the same instants given in another offset
    (at_hour(13 - 4, UTC_M4), False),
])
def test_single_window_active(kind, at, active):
    w = window(kind, "* 10 * * *", "2h")
    assert (evaluate([w], APP, at).active == [w]) is active


# -- TestSyncWindows_Matches --------------------------------------------------------------------

@pytest.mark.parametrize("selectors, matches", [
    ({"namespaces": ["default"]}, True),
    ({"clusters": ["cluster1"]}, True),  # destination server
    ({"clusters": ["clusterName"]}, True),  # destination name
    ({"applications": ["test-app"]}, True),
    ({"applications": ["test-*"]}, True),
    ({"applications": ["app1"], "namespaces": ["public"]}, False),  # NoMatch
    ({}, False),  # no selectors: applies to nothing
    ({"applications": ["TEST-APP"]}, False),  # case-sensitive
    ({"applications": ["!other"]}, False),  # no negation in sync windows
    ({"applications": ["[web"]}, False),  # does not compile: matches nothing
    ({"applications": ["test-ap?"]}, True),
    ({"applications": ["{prod,test}-app"]}, True),
    ({"applications": ["[st]est-app"]}, True),
    ({"applications": ["[!t]est-app"]}, False),
    ({"clusters": ["cluster*"]}, True),
    ({"namespaces": ["*"]}, True),
])
def test_matching(selectors, matches):
    w = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", **selectors}
    assert (evaluate([w], APP, at_hour(11)).matching == [w]) is matches


AND_APP = {"name": "billing", "namespace": "prod", "server": "https://10.0.0.1", "cluster_name": "eu-1"}


@pytest.mark.parametrize("selectors, and_matches, or_matches", [
    ({"applications": ["billing"], "namespaces": ["prod"]}, True, True),
    ({"applications": ["billing"], "namespaces": ["staging"]}, False, True),
    ({"applications": ["other"], "namespaces": ["prod"]}, False, True),
    ({"applications": ["other"], "namespaces": ["staging"]}, False, False),
    ({"applications": ["bill*"], "clusters": ["eu-*"], "namespaces": ["prod"]}, True, True),
    ({"applications": ["bill*"], "clusters": ["us-*"], "namespaces": ["prod"]}, False, True),
    ({"namespaces": ["prod"]}, True, True),  # empty lists are ignored, not failed
    ({"clusters": ["https://10.0.0.*"]}, True, True),
])
def test_and_operator(selectors, and_matches, or_matches):
    w_and = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", "andOperator": True, **selectors}
    w_or = {**w_and, "andOperator": False}
    assert (evaluate([w_and], AND_APP, at_hour(11)).matching == [w_and]) is and_matches
    assert (evaluate([w_or], AND_APP, at_hour(11)).matching == [w_or]) is or_matches


def test_empty_destination_name_and_server_are_not_matched():
    app = {"name": "a", "namespace": "", "server": "", "cluster_name": ""}
    w = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", "clusters": ["*"]}
    # `*` is special-cased to match anything, but an empty cluster identifier is skipped.
    assert evaluate([w], app, at_hour(11)).matching == []
    ns = {**w, "clusters": [], "namespaces": ["*"]}
    assert evaluate([ns], app, at_hour(11)).matching == [ns]


def test_windows_for_other_apps_are_ignored_even_when_invalid():
    other = {"kind": "deny", "schedule": "@daily", "duration": "1d", "applications": ["other"]}
    result = evaluate([other], APP, at_hour(11))
    assert result.can_sync and result.error is None and result.matching == []


# -- TestSyncWindows_CanSync --------------------------------------------------------------------

NOW = at_hour(11)
INACTIVE = "0 21 * * *"  # ten hours after NOW, like Argo CD's inactiveCronSchedule()


def built(*specs):
    windows = []
    for kind, active, manual in specs:
        windows.append({"kind": kind, "schedule": "* * * * *" if active else INACTIVE, "duration": "1h",
                        "applications": ["test-app"], "namespaces": ["public"], "manualSync": manual})
    return windows


@pytest.mark.parametrize("specs, manual, can_sync", [
    ([("deny", False, True)], True, True),
    ([("deny", False, False)], True, True),
    ([("allow", False, True), ("allow", False, False)], True, False),
    ([("allow", True, True)], True, True),
    ([("allow", True, False)], True, True),
    ([("allow", True, False)], False, True),
    ([("allow", True, False), ("deny", False, False)], True, True),
    ([("allow", True, False), ("deny", False, False)], False, True),
    ([("allow", False, False)], True, False),
    ([("allow", False, False)], False, False),
    ([("allow", False, True)], True, True),
    ([("allow", False, True)], False, False),
    ([("allow", False, False), ("deny", False, False)], True, False),
    ([("allow", False, False), ("deny", False, False)], False, False),
    ([("allow", True, False), ("allow", False, False)], False, True),
    ([("deny", True, False)], True, False),
    ([("deny", True, False)], False, False),
    ([("deny", True, True)], True, True),
    ([("deny", True, True)], False, False),
    ([("deny", True, True), ("deny", True, True), ("deny", True, True), ("deny", True, False)], True, False),
    ([("deny", True, True), ("deny", True, True), ("deny", True, True), ("deny", True, False)], False, False),
    ([("allow", True, False), ("deny", True, False)], True, False),
    ([("allow", True, False), ("deny", True, True)], True, True),
    ([("allow", True, False), ("deny", True, True)], False, False),
])
def test_can_sync(specs, manual, can_sync):
    assert evaluate(built(*specs), APP, NOW, manual=manual).can_sync is can_sync


def test_can_sync_refuses_with_invalid_windows():
    windows = [
        {"kind": kind, "schedule": "* 10 * * 7", "duration": "1h", "applications": ["test-app"], "manualSync": m}
        for kind, m in (("allow", False), ("deny", False), ("allow", True), ("deny", True))
    ]
    for manual in (False, True):
        result = evaluate(windows, APP, NOW, manual=manual)
        assert result.can_sync is False
        assert result.reason == "invalid"
        assert "window 0" in result.error and "above the maximum 6" in result.error
        assert result.blocked_until is None


def test_no_windows_no_verdict_to_give():
    result = evaluate([], APP, NOW)
    assert result.can_sync and result.matching == [] and result.blocked_until is None
    assert evaluate(None, APP, NOW).can_sync
