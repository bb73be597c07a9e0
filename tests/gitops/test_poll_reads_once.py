"""What a poll used to work out again and again now costs it once (issue 40: CPU per sweep):
the services, read again only when the catalog's revision moves; an AppProject's sync
windows, compiled once for all its apps; and the apps a store announces, loaded once for
both the findings and the silent-failure receivers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.collectors import collect
from gitops.derive.cluster_changes import derive
from gitops.models import Finding, GitOpsApp
from gitops.rows import Snapshot
from gitops.store.read import read_state
from gitops.store.write import write
from gitops.syncwindows import windows as compiled_windows
from portal.findings import derivation
from portal.findings.discipline import SILENT
from portal.kernel.catalog.models import Cluster, Environment, Service
from tests.gitops.test_topology_poll import SHOP_PROJECT, application

pytestmark = pytest.mark.django_db
AT = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
IN_CLUSTER = {"server": "https://kubernetes.default.svc"}


@pytest.fixture
def home() -> Cluster:
    env = Environment.objects.create(name="prod", order=1, production=True)
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    return Cluster.objects.create(name="home", environment=env, connection=Cluster.Connection.API,
                                  api_url="https://home.k8s.example:6443")


def snapshot_of(*objects: dict) -> Snapshot:
    collected = collect({"Application": [o for o in objects if o["kind"] == "Application"],
                         "AppProject": [o for o in objects if o["kind"] == "AppProject"]})
    return Snapshot(apps=collected.apps, projects=collected.projects, listed_kinds={"Application", "AppProject"})


def service_reads(queries: CaptureQueriesContext) -> int:
    return sum('FROM "catalog_service"' in q["sql"] for q in queries.captured_queries)


def test_services_are_read_again_only_when_the_catalog_moves(home):
    with CaptureQueriesContext(connection) as first:
        state = read_state(home, {"Application"})
    assert service_reads(first) == 1 and set(state.service_ids) == {"checkout"}
    with CaptureQueriesContext(connection) as again:
        state = read_state(home, {"Application"})
    assert service_reads(again) == 0 and set(state.service_ids) == {"checkout"}
    # A service added (its save moves the catalog's revision) maps images at the next poll.
    Service.objects.create(name="payments", image_repository="ghcr.io/acme/payments")
    with CaptureQueriesContext(connection) as moved:
        state = read_state(home, {"Application"})
    assert service_reads(moved) == 1
    assert state.service_index["ghcr.io/acme/payments"] == "payments"


def test_a_projects_windows_are_compiled_once_for_all_its_apps(home, monkeypatch):
    compiled: list[int] = []
    compile_window = compiled_windows.compile_window

    def counted(index, raw):
        compiled.append(index)
        return compile_window(index, raw)

    monkeypatch.setattr(compiled_windows, "compile_window", counted)
    apps = [application(f"checkout-{n}", IN_CLUSTER) for n in range(20)]
    snapshot = snapshot_of(SHOP_PROJECT, application("checkout-prod", IN_CLUSTER), *apps)
    changes = derive(read_state(home, snapshot.listed_kinds), snapshot, AT)
    assert compiled == [0]  # the project's one window, for 21 apps
    # Judged all the same: the deny window names checkout-prod only, and is open now.
    blocked = {app.name for app in changes.apps.created if app.sync_blocked}
    assert blocked == {"checkout-prod"}


def test_a_storing_poll_loads_its_apps_once_for_findings_and_silent_failures(home, monkeypatch):
    loads: list[object] = []
    judged_apps = derivation.judged_apps

    def counted(cluster_id, app_ids=None):
        loads.append(app_ids)
        return judged_apps(cluster_id, app_ids)

    monkeypatch.setattr(derivation, "judged_apps", counted)
    snapshot = snapshot_of(SHOP_PROJECT, application("checkout-prod", IN_CLUSTER),
                           application("checkout-eu", IN_CLUSTER))
    write(derive(read_state(home, snapshot.listed_kinds), snapshot, AT))
    assert len(loads) == 1
    # Both receivers judged them: no portal rule covers them, so a failed sync reaches nobody.
    ids = set(GitOpsApp.objects.values_list("pk", flat=True))
    assert set(Finding.objects.filter(rule=SILENT).values_list("app_id", flat=True)) == ids

    # The next announcement loads its apps afresh, never the last one's.
    write(derive(read_state(home, snapshot.listed_kinds), snapshot, AT))
    assert len(loads) == 2


WINDOWS = [
    {"kind": "deny", "schedule": "0 22 * * *", "duration": "10h", "timeZone": "Europe/Amsterdam",
     "applications": ["checkout-*"]},
    {"kind": "allow", "schedule": "0 9 * * 1-5", "duration": "8h", "namespaces": ["shop"], "manualSync": True},
    {"kind": "deny", "schedule": "not cron", "duration": "1h", "clusters": ["edge-*"]},
    "not a window",
    {"kind": "allow", "schedule": "30 * * * *", "duration": "15m", "applications": ["web"], "clusters": ["prod"],
     "andOperator": True},
]


@pytest.mark.parametrize("target", [
    {"name": "checkout-eu", "namespace": "shop", "server": "https://prod:6443", "cluster_name": "prod"},
    {"name": "web", "namespace": "shop", "server": "", "cluster_name": "prod"},
    {"name": "web", "namespace": "ops", "server": "", "cluster_name": "edge-1"},
    {"name": "tools", "namespace": "ops", "server": "", "cluster_name": "staging"},
])
@pytest.mark.parametrize("at", [AT, datetime(2026, 12, 7, 23, 30, tzinfo=UTC),
                                datetime(2026, 12, 8, 9, 40, tzinfo=UTC)])
def test_compiled_windows_judge_as_the_listed_ones(target, at):
    from gitops import syncwindows

    compiled = syncwindows.compile_windows(WINDOWS)
    for manual in (False, True):
        assert syncwindows.evaluate(compiled, target, at, manual) == syncwindows.evaluate(WINDOWS, target, at, manual)
    assert syncwindows.next_edge(compiled, target, at) == syncwindows.next_edge(WINDOWS, target, at)
