"""The stored sync-window verdict follows the clock: when a window edge passes, the
minute task re-judges the app without waiting for the next poll."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from gitops.models import AppProject, GitOpsApp
from gitops.tasks import refresh_sync_windows
from gitops.windowstate import app_target, verdict
from tests.fixtures.seed import seed_app

WINDOWS = [{"kind": "deny", "schedule": "0 * * * *", "duration": "30m", "applications": ["*"],
            "description": "first half of every hour"}]
TARGET = {"name": "a", "namespace": "ns", "server": "https://kubernetes.default.svc", "cluster_name": "in-cluster"}


def test_verdict_inside_a_deny_window_says_until_when_and_the_next_edge():
    at = datetime(2026, 11, 29, 10, 10, tzinfo=UTC)
    state = verdict(WINDOWS, TARGET, manual=False, at=at)
    assert state["sync_blocked"] is True
    assert state["sync_blocked_until"] == datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
    assert state["sync_window"]["description"] == "first half of every hour"
    assert state["window_next_edge"] == datetime(2026, 11, 29, 10, 30, tzinfo=UTC)


def test_allow_only_windows_block_until_the_next_allow_opens():
    allow = [{"kind": "allow", "schedule": "0 2 * * *", "duration": "1h", "applications": ["*"],
              "description": "nightly maintenance"}]
    state = verdict(allow, TARGET, manual=False, at=datetime(2026, 11, 29, 10, 0, tzinfo=UTC))
    assert state["sync_blocked"] and state["sync_window"]["kind"] == "allow"
    assert state["sync_blocked_until"] == datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def test_an_invalid_matching_window_blocks_with_its_reason():
    bad = [{"kind": "deny", "schedule": "@daily", "duration": "1h", "applications": ["*"]}]
    state = verdict(bad, TARGET, manual=False, at=datetime(2026, 11, 29, 10, 0, tzinfo=UTC))
    assert state["sync_blocked"] and state["sync_window"]["kind"] == "error"
    assert state["sync_window"]["error"]


@pytest.mark.django_db
def test_the_minute_task_rejudges_apps_whose_edge_has_passed(catalog):
    now = timezone.now()
    app = seed_app(catalog.prod_eu, "a", destination_namespace="ns", project="default",
                   sync_blocked=True, sync_blocked_until=now - timedelta(seconds=5),
                   window_next_edge=now - timedelta(seconds=5), sync_window={"kind": "deny"})
    untouched = seed_app(catalog.prod_eu, "b", project="default", window_next_edge=now + timedelta(hours=1))
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="default", sync_windows=[])
    assert refresh_sync_windows() == 1
    app.refresh_from_db()
    assert app.sync_blocked is False and app.sync_blocked_until is None
    assert app.window_next_edge is None  # no windows: nothing will change by itself
    expected = verdict([], app_target(untouched), False, now)
    assert GitOpsApp.objects.get(pk=untouched.pk).window_next_edge != expected["window_next_edge"]


@pytest.mark.parametrize("chunk", [1, 2, 2000])
def test_every_due_app_gets_its_own_projects_verdict_whatever_the_chunk_size(catalog, monkeypatch, chunk):
    """The refresh judges a chunk at a time, compiles each (cluster, project) once across chunks
    and writes one UPDATE per distinct verdict: whichever chunk an app falls in, it must end
    with the verdict of its own project's windows, and an app not yet due must not be touched."""
    import gitops.tasks

    now = datetime(2026, 12, 7, 10, 10, tzinfo=UTC)  # inside WINDOWS' first half-hour
    monkeypatch.setattr(timezone, "now", lambda: now)
    monkeypatch.setattr(gitops.tasks, "WINDOW_CHUNK", chunk)
    only_other = [{"kind": "deny", "schedule": "0 * * * *", "duration": "30m", "namespaces": ["other"]}]
    projects = {
        (catalog.prod_eu.pk, "hourly"): WINDOWS,
        (catalog.prod_eu.pk, "default"): [],
        (catalog.prod_us.pk, "hourly"): only_other,  # same name, another cluster: other windows
    }
    for (cluster_id, name), windows in projects.items():
        AppProject.objects.create(cluster_id=cluster_id, namespace="argocd", name=name, sync_windows=windows)
    due = now - timedelta(seconds=5)
    stale = {"sync_blocked": True, "sync_blocked_until": due, "window_next_edge": due, "sync_window": {"kind": "x"}}
    apps = [
        seed_app(catalog.prod_eu, "eu-a", project="hourly", destination_namespace="ns", **stale),
        seed_app(catalog.prod_eu, "eu-b", project="default", destination_namespace="ns", **stale),
        seed_app(catalog.prod_eu, "eu-c", project="hourly", destination_namespace="other", **stale),
        seed_app(catalog.prod_us, "us-a", project="hourly", destination_namespace="ns", **stale),
        seed_app(catalog.prod_us, "us-b", project="hourly", destination_namespace="other", manual_sync=True, **stale),
        seed_app(catalog.prod_us, "us-c", project="gone", destination_namespace="ns", **stale),  # no AppProject row
    ]
    later = seed_app(catalog.prod_us, "later", project="hourly", destination_namespace="other",
                     sync_blocked=False, window_next_edge=now + timedelta(minutes=20))

    assert refresh_sync_windows() == len(apps)

    fields = ("sync_blocked", "sync_blocked_until", "sync_window", "window_next_edge")
    for app in apps:
        windows = projects.get((app.cluster_id, app.project), [])
        expected = verdict(windows, app_target(app), app.manual_sync, now)
        stored = GitOpsApp.objects.values(*fields).get(pk=app.pk)
        assert stored == {name: expected[name] for name in fields}, app.name
    blocked = dict(GitOpsApp.objects.filter(pk__in=[app.pk for app in apps]).values_list("name", "sync_blocked"))
    assert blocked == {"eu-a": True, "eu-b": False, "eu-c": True, "us-a": False, "us-b": True, "us-c": False}
    assert GitOpsApp.objects.values_list("sync_blocked", "window_next_edge").get(pk=later.pk) == (
        False, now + timedelta(minutes=20))
