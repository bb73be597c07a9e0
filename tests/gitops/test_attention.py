"""The attention rule (gitops.derive.attention) in each of its shapes — the model's check, the
queryset, the SQL a raw read uses, the overview's counts and the matrix's flags — gives the
same answer for every app, at the edges of the grace period and of each state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from gitops.derive.attention import Attention, grace_cutoff
from gitops.models import GitOpsApp
from gitops.queries import app_condition_sql
from portal.web.fleet import attention_flags, fleet_counts
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

AT = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
GRACE = timedelta(minutes=10)
SECOND = timedelta(seconds=1)

# name -> (sync, health, how long ago the state began or None for never recorded, needs attention, which half)
CASES = {
    "degraded-past": ("Synced", "Degraded", GRACE + SECOND, True, "bad"),
    "degraded-exactly": ("Synced", "Degraded", GRACE, True, "bad"),  # "lasted the grace period" includes its end
    "degraded-new": ("Synced", "Degraded", GRACE - SECOND, False, None),
    "missing-past": ("Synced", "Missing", timedelta(hours=3), True, "bad"),
    "outofsync-past": ("OutOfSync", "Healthy", GRACE + SECOND, True, "drifted"),
    "outofsync-new": ("OutOfSync", "Healthy", timedelta(minutes=3), False, None),
    "both-past": ("OutOfSync", "Degraded", timedelta(hours=1), True, "both"),
    "progressing-long": ("Synced", "Progressing", timedelta(hours=5), True, "stuck"),
    "progressing-short": ("Synced", "Progressing", timedelta(minutes=29), False, None),
    "unknown-long": ("Unknown", "Unknown", timedelta(hours=5), False, None),
    "healthy": ("Synced", "Healthy", timedelta(days=2), False, None),
    "degraded-since-unknown": ("OutOfSync", "Degraded", None, False, None),
}


@pytest.fixture
def fleet(catalog, settings):
    settings.PORTAL_ATTENTION_GRACE_MINUTES = 10
    settings.PORTAL_STUCK_PROGRESSING_MINUTES = 30
    apps = {}
    for name, (sync, health, ago, _, _) in CASES.items():
        app = seed_app(catalog.prod_eu, name, service=catalog.payments, sync=sync, health=health,
                       since=ago or timedelta(0), now=AT)
        if ago is None:
            GitOpsApp.objects.filter(pk=app.pk).update(sync_since=None, health_since=None)
        apps[name] = app
    return apps


def expected() -> set[str]:
    return {name for name, case in CASES.items() if case[3]}


def test_the_model_check_and_the_querysets_agree_on_every_case(fleet):
    loaded = {app.name: app.needs_attention(AT) for app in GitOpsApp.objects.all()}
    assert {name for name, needs in loaded.items() if needs} == expected()
    assert set(GitOpsApp.objects.needing_attention(AT).values_list("name", flat=True)) == expected()
    # Every other app, including those whose since-time was never recorded.
    assert set(GitOpsApp.objects.not_needing_attention(AT).values_list("name", flat=True)) == set(CASES) - expected()


def test_the_compiled_sql_selects_what_the_queryset_selects(fleet):
    rule = Attention.at(AT)
    for condition in (rule.q(), rule.unhealthy_q(), rule.out_of_sync_q(), rule.stuck_q(), rule.sync_failed_q()):
        sql, params = app_condition_sql(condition)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT name FROM {GitOpsApp._meta.db_table} WHERE {sql}", params)  # noqa: S608
            raw = {name for (name,) in cursor.fetchall()}
        assert raw == set(GitOpsApp.objects.filter(condition).values_list("name", flat=True))


def test_the_matrix_flags_each_half_that_holds(fleet, catalog):
    flags = attention_flags(AT)[(catalog.payments.id, catalog.prod_eu.id)]
    got: dict[str, set[str]] = {}
    for flag in flags:
        got.setdefault(flag.app, set()).add(flag.severity)
    halves = {"bad": {"bad"}, "drifted": {"warn"}, "both": {"bad", "warn"}, "stuck": {"warn"}}
    assert got == {name: halves[case[4]] for name, case in CASES.items() if case[3]}
    since = {flag.app: flag.since for flag in flags if flag.severity == "bad"}
    # Read as epoch seconds (a float; SQLite's julianday arithmetic keeps it to some microseconds).
    assert abs(since["degraded-exactly"] - (AT - GRACE)) < timedelta(milliseconds=1)


def test_the_overview_counts_follow_the_same_rule(fleet):
    counts = fleet_counts(AT)
    assert counts["attention"] == len(expected())
    assert counts["degraded"] == sum(1 for case in CASES.values() if case[4] in ("bad", "both"))
    assert counts["out_of_sync"] == sum(1 for case in CASES.values() if case[4] in ("drifted", "both"))


def test_the_grace_period_comes_from_settings(fleet, settings):
    settings.PORTAL_ATTENTION_GRACE_MINUTES = 2
    assert grace_cutoff(AT) == AT - timedelta(minutes=2)
    names = set(GitOpsApp.objects.needing_attention(AT).values_list("name", flat=True))
    assert names == expected() | {"degraded-new", "outofsync-new"}
    assert "progressing-short" not in names  # the stuck limit is its own setting
    assert GitOpsApp.objects.get(name="outofsync-new").needs_attention(AT)


def test_the_rule_on_loaded_rows_reads_both_halves():
    rule = Attention(cutoff=AT)
    assert rule.unhealthy("Missing", AT) and not rule.unhealthy("Missing", AT + SECOND)
    assert not rule.unhealthy("Progressing", AT - GRACE) and not rule.unhealthy("Degraded", None)
    assert rule.out_of_sync("OutOfSync", AT) and not rule.out_of_sync("Synced", AT - GRACE)
    assert not rule.out_of_sync("OutOfSync", None)


def test_every_app_that_needs_attention_is_a_candidate_of_the_partial_index(fleet, catalog):
    """`Attention.candidates_q` (the partial index's predicate, which the matrix's query adds)
    must hold wherever any part of the rule does, or the matrix would lose those problems."""
    old = AT - timedelta(hours=2)
    seed_app(catalog.prod_eu, "sync-failed", service=catalog.payments, now=AT, operation_phase="Error",
             operation_finished_at=old)
    seed_app(catalog.prod_eu, "sync-running", service=catalog.payments, now=AT, operation_phase="Running",
             operation_started_at=old)
    seed_app(catalog.prod_eu, "rule-disagrees", service=catalog.payments, now=AT,
             health_disagreement="Certificate web: not ready", health_disagreement_since=old)
    rule = Attention.at(AT)
    parts = (rule.unhealthy_q(), rule.out_of_sync_q(), rule.stuck_q(), rule.sync_failed_q(), rule.disagreement_q())
    for part in parts:
        assert GitOpsApp.objects.filter(part).exists()  # each part finds an app here
        assert not GitOpsApp.objects.filter(part).exclude(Attention.candidates_q()).exists()
    # And it narrows: a healthy, synced app is none.
    assert not GitOpsApp.objects.filter(Attention.candidates_q(), name="healthy").exists()
    flagged = {flag.app for flags in attention_flags(AT).values() for flag in flags}
    assert {"sync-failed", "sync-running", "rule-disagrees"} <= flagged
