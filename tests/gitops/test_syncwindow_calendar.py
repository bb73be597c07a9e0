"""The calendar's spans say what the badge's verdict says, minute by minute over a week.

`verdict_spans` charts a stretch of time with the same rules as `evaluate`; these tests hold the
two together for the windows of the Argo CD reference's examples and of the demo fleet's
AppProjects, over weeks that cross a DST change (Europe/Berlin springs forward on 2026-03-29,
America/New_York falls back on 2026-11-01), for automated and manual syncs.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from gitops.syncwindows import compile_window, evaluate, occurrences, verdict_spans

ROOT = Path(__file__).resolve().parents[2]
APP = {"name": "checkout", "namespace": "shop", "server": "https://kubernetes.default.svc",
       "cluster_name": "in-cluster"}
BERLIN_SPRING = datetime(2026, 3, 25, tzinfo=UTC)  # a week around 2026-03-29
NEW_YORK_FALL = datetime(2026, 10, 28, 17, 0, tzinfo=UTC)  # a week around 2026-11-01
SAO_PAULO_LAUNCH = datetime(2026, 12, 3, tzinfo=UTC)
WEEK = timedelta(days=7)
# The verdict's search for "until when" is not what these tests compare; keep it short.
NO_SEARCH = timedelta(minutes=1)


def w(kind, schedule, duration, **extra):
    return {"kind": kind, "schedule": schedule, "duration": duration, "applications": ["*"], **extra}


def demo_windows(cluster: str, project: str) -> list[dict]:
    path = ROOT / "examples" / "clusters" / cluster / "argocd" / "appprojects.yaml"
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["metadata"]["name"] == project:
            return doc["spec"]["syncWindows"]
    raise AssertionError(f"no AppProject {project} in {path}")


# Each case: windows, the app, the week's start, and whether the sync asked about is manual.
CASES = {
    # argocd.md §1.2: open on both ends, a starred minute field, overlapping starts, long look-back.
    "deny-hour": ([w("deny", "0 10 * * *", "1h")], APP, BERLIN_SPRING, False),
    "starred-minute-allow": ([w("allow", "* 10 * * *", "2h")], APP, BERLIN_SPRING, False),
    "overlapping-starts-always-open": ([w("deny", "0 * * * *", "3h")], APP, BERLIN_SPRING, False),
    "weekend-freeze-look-back": ([w("deny", "0 22 * * 5", "60h", description="weekend freeze")], APP,
                                 BERLIN_SPRING, False),
    "never-fires-denies-always": ([w("deny", "0 0 30 2 *", "1h")], APP, BERLIN_SPRING, False),
    # argocd.md §1.2: wall-clock durations across New York's fall-back.
    "new-york-fall-back": ([w("deny", "0 1 * * *", "1h", timeZone="America/New_York"),
                            w("allow", "30 1 * * *", "2h", timeZone="America/New_York")], APP,
                           NEW_YORK_FALL, False),
    "deny-beats-allow-manual": ([w("allow", "0 9 * * 1-5", "8h", timeZone="Europe/Berlin"),
                                 w("deny", "0 12 * * *", "90m", timeZone="Europe/Berlin", manualSync=True)],
                                APP, BERLIN_SPRING, True),
    "and-operator-cluster": ([{**w("deny", "0 18 * * *", "14h"), "clusters": ["in-cluster"],
                               "andOperator": True}], APP, BERLIN_SPRING, False),
    # The demo fleet's AppProjects (examples/clusters/*/argocd/appprojects.yaml).
    "demo-payments-freeze": (demo_windows("prod-eu-1", "payments"),
                             {**APP, "name": "payments-api", "namespace": "payments"}, BERLIN_SPRING, False),
    "demo-platform-auth": (demo_windows("prod-eu-1", "platform"),
                           {**APP, "name": "auth", "namespace": "auth"}, BERLIN_SPRING, False),
    "demo-platform-notifications-manual": (demo_windows("prod-eu-1", "platform"),
                                           {**APP, "name": "notifications", "namespace": "notifications"},
                                           BERLIN_SPRING, True),
    "demo-hub-launch-freeze": (demo_windows("mgmt-hub", "regions"),
                               {**APP, "server": "https://prod-sa-1.k8s.acme-shop.internal:6443",
                                "cluster_name": "prod-sa-1"}, SAO_PAULO_LAUNCH, False),
}


def _answer(verdict):
    return verdict.can_sync, verdict.reason, verdict.blocking


def _span_at(spans, at):
    found = [s for s in spans if s.start < at < s.end]
    assert len(found) == 1, f"{at} lies in {len(found)} spans"
    return found[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_spans_equal_the_verdict_minute_by_minute(case):
    windows, app, start, manual = CASES[case]
    spans = verdict_spans(windows, app, start, start + WEEK, manual=manual)
    assert spans[0].start == start and spans[-1].end == start + WEEK
    assert all(a.end == b.start for a, b in zip(spans, spans[1:], strict=False))
    # Half a minute past each minute: windows open and close on whole minutes only.
    for minute in range(7 * 24 * 60):
        at = start + timedelta(minutes=minute, seconds=30)
        span = _span_at(spans, at)
        assert _answer(evaluate(windows, app, at, manual, horizon=NO_SEARCH)) == (
            span.can_sync, span.reason, span.blocking), f"{case} at {at}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_span_edges_are_where_the_verdict_changes(case):
    windows, app, start, manual = CASES[case]
    spans = verdict_spans(windows, app, start, start + WEEK, manual=manual)
    tick = timedelta(microseconds=1)
    for before, after in zip(spans, spans[1:], strict=False):
        assert _answer(before) != _answer(after)
        assert _answer(evaluate(windows, app, after.start - tick, manual, horizon=NO_SEARCH)) == _answer(before)
        assert _answer(evaluate(windows, app, after.start + tick, manual, horizon=NO_SEARCH)) == _answer(after)


def test_the_week_crossing_berlin_spring_forward_shifts_the_utc_hour():
    # 10:00 Berlin is 09:00 UTC before 2026-03-29 and 08:00 UTC from then on.
    window = compile_window(0, w("deny", "0 10 * * *", "1h", timeZone="Europe/Berlin"))
    runs = occurrences(window, BERLIN_SPRING, BERLIN_SPRING + WEEK)
    assert [(s.day, s.hour, e.hour) for s, e in runs] == [
        (25, 9, 10), (26, 9, 10), (27, 9, 10), (28, 9, 10), (29, 8, 9), (30, 8, 9), (31, 8, 9)]


def test_occurrences_are_the_windows_active_stretches():
    window = compile_window(0, w("allow", "* 10 * * *", "2h"))
    runs = occurrences(window, datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 3, tzinfo=UTC))
    assert runs == [(datetime(2026, 6, 1, 10, tzinfo=UTC), datetime(2026, 6, 1, 12, 59, tzinfo=UTC)),
                    (datetime(2026, 6, 2, 10, tzinfo=UTC), datetime(2026, 6, 2, 12, 59, tzinfo=UTC))]


def test_an_invalid_window_refuses_the_whole_stretch():
    spans = verdict_spans([w("deny", "0 10 * * *", "1d")], APP, BERLIN_SPRING, BERLIN_SPRING + WEEK)
    assert [(s.can_sync, s.reason) for s in spans] == [(False, "invalid")]
    assert not evaluate([w("deny", "0 10 * * *", "1d")], APP, BERLIN_SPRING + WEEK / 2).can_sync
