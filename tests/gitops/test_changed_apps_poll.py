"""A poll that finds only some apps' objects changed collects those alone and keeps the other rows
as stored (gitops.derive.unchanged.ObjectVersions); one that finds anything they depend on changed
collects everything. Through the real path: kubernetes client → emulator → collectors → store."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops import collectors, polling
from gitops.models import ClusterObjectVersions, GitOpsApp, StateChange, Workload
from gitops.signals import cluster_stored
from portal.kernel.catalog.models import Cluster, Service
from tests.gitops import test_unchanged_poll as unchanged_poll
from tests.gitops.test_unchanged_poll import demo_objects, writes

pytestmark = pytest.mark.django_db
# The demo cluster prod-eu-1 behind the emulator, and the count of full collects, as there.
cluster = unchanged_poll.cluster
collector_runs = unchanged_poll.collector_runs


@pytest.fixture
def app_rows(monkeypatch):
    """The names of the Applications the collectors built a row for, in the order they did."""
    built: list[str] = []
    real = collectors.application_row

    def counting(obj):
        built.append(obj["metadata"]["name"])
        return real(obj)

    monkeypatch.setattr(collectors, "application_row", counting)
    return built


class _Announced(list):
    every_app: list[bool]
    running_moved: list[bool]


@pytest.fixture
def stored_signals():
    """The clusters announced as stored (what the matrix's read model refreshes on)."""
    sent: _Announced = _Announced()

    def receiver(sender, cluster, **kwargs):
        sent.append(cluster.name)
        every_app.append(kwargs["every_app"])
        running_moved.append(kwargs["running_moved"])

    every_app: list[bool] = []
    running_moved: list[bool] = []
    sent.every_app, sent.running_moved = every_app, running_moved
    cluster_stored.connect(receiver, dispatch_uid="test-changed-apps")
    yield sent
    cluster_stored.disconnect(dispatch_uid="test-changed-apps")


def applications() -> list[dict]:
    return [copy.deepcopy(o) for o in demo_objects() if o.get("kind") == "Application"]


def restamped(app: dict, minutes: int = 3) -> dict:
    """The app as Argo CD writes it after a reconciliation that changed nothing."""
    app = copy.deepcopy(app)
    app["status"]["reconciledAt"] = (timezone.now() + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return app


# Where a poll keeps what it read object by object: bookkeeping of the poll, not the store.
POLL_MEMORY = ('"gitops_clusterpoll"', '"gitops_clusterobjectversions"')


def gitops_writes(queries) -> list[str]:
    """Writes to the store: every gitops table but the poll's own memory."""
    return [sql for sql in writes(queries.captured_queries)
            if '"gitops_' in sql and not any(table in sql for table in POLL_MEMORY)]


def test_restamped_apps_are_not_even_collected(cluster, collector_runs, app_rows, kube_emulator, stored_signals):
    """Argo CD's reconciliation moved only their stamps: their meaning is as stored."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    before = {a.name: (a.updated_at, a.fingerprint) for a in GitOpsApp.objects.filter(read_from=cluster)}
    app_rows.clear()
    stored_signals.clear()
    kube_emulator.add_all(restamped(app) for app in applications()[:4])

    with CaptureQueriesContext(connection) as queries:
        report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok and not report.unchanged and report.collected == 0
    assert app_rows == [] and len(collector_runs) == 1, "no collector ran"
    written = writes(queries.captured_queries)
    assert written and all(any(t in sql for t in POLL_MEMORY) for sql in written), "only that the cluster was read"
    assert stored_signals == []
    after = {a.name: (a.updated_at, a.fingerprint) for a in GitOpsApp.objects.filter(read_from=cluster)}
    assert after == before
    assert polling.poll(cluster, at=at + timedelta(minutes=2)).unchanged


def test_what_a_poll_keeps_object_by_object_is_not_read_with_its_cluster(cluster):
    """About 175 bytes an app: a row that selects its cluster (every page, every alert) must not
    decode 17 KB of it at 100 apps."""
    assert polling.poll(cluster, at=timezone.now()).ok
    kept = ClusterObjectVersions.objects.get(cluster=cluster).versions
    assert len(kept["apps"]["Application"]) == len(applications())
    sql = str(GitOpsApp.objects.select_related("cluster").query)
    assert "versions" not in sql


def test_restamped_apps_without_a_kept_meaning_are_collected_alone_and_write_nothing(
        cluster, collector_runs, app_rows, kube_emulator, stored_signals):
    """What a poll stored before meanings were kept (or lost them): those apps are collected
    again, and the store's fingerprint finds their rows unchanged."""
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    kept = ClusterObjectVersions.objects.get(cluster=cluster).versions
    ClusterObjectVersions.keep(cluster.pk, {k: v for k, v in kept.items() if k != "meanings"})
    apps = applications()
    assert len(app_rows) == len(apps) == 12
    before = {a.name: (a.updated_at, a.fingerprint) for a in GitOpsApp.objects.filter(read_from=cluster)}
    changed = apps[:4]
    app_rows.clear()
    stored_signals.clear()
    kube_emulator.add_all(restamped(app) for app in changed)  # a new resourceVersion each

    with CaptureQueriesContext(connection) as queries:
        report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok and not report.unchanged
    assert report.collected == 4
    assert sorted(app_rows) == sorted(app["metadata"]["name"] for app in changed)
    assert len(collector_runs) == 1, "no full collect"
    assert gitops_writes(queries) == []
    written = writes(queries.captured_queries)
    assert written and all(any(t in sql for t in POLL_MEMORY) for sql in written), "only that the cluster was read"
    assert stored_signals == [], "nothing to refresh"
    assert report.stored is not None and report.stored.updated == 0
    after = {a.name: (a.updated_at, a.fingerprint) for a in GitOpsApp.objects.filter(read_from=cluster)}
    assert after == before

    # The next poll reads what this one recorded: unchanged.
    assert polling.poll(cluster, at=at + timedelta(minutes=2)).unchanged


def test_a_changed_app_is_written_alone_with_its_state_change(cluster, collector_runs, app_rows, kube_emulator,
                                                              stored_signals):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    app = restamped(next(a for a in applications() if a["metadata"]["name"] == "catalog-prod"))
    running = GitOpsApp.objects.get(read_from=cluster, name="catalog-prod").running
    assert running, "catalog-prod runs its Deployment's version"
    app["status"]["health"] = {"status": "Degraded", "message": "Back-off restarting failed container"}
    app_rows.clear()
    kube_emulator.add(app)

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.collected == 1 and app_rows == ["catalog-prod"]
    assert stored_signals[-1] == "prod-eu-1", "its change announced"
    # Announced as some of the cluster's apps (its silent-failure groups are left alone), the
    # full poll before it as all of them.
    assert stored_signals.every_app[0] is True and stored_signals.every_app[-1] is False
    # Its health changed, not what runs: the layers placing services by running versions skip it.
    assert stored_signals.running_moved[0] is True and stored_signals.running_moved[-1] is False
    stored = GitOpsApp.objects.get(read_from=cluster, name="catalog-prod")
    assert stored.health_status == "Degraded"
    assert stored.running == running, "its workloads were not collected again, and still count"
    assert StateChange.objects.filter(app=stored, field="health", new="Degraded").count() == 1
    untouched = GitOpsApp.objects.filter(read_from=cluster).exclude(name="catalog-prod")
    assert all(a.updated_at == at for a in untouched)
    assert Workload.objects.filter(cluster=cluster, app=stored).exists()


def test_a_changed_sync_window_rederives_its_apps(cluster, collector_runs, app_rows, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    assert not GitOpsApp.objects.get(read_from=cluster, name="catalog-prod").sync_blocked
    project = copy.deepcopy(next(o for o in demo_objects() if o.get("kind") == "AppProject"
                                 and o["metadata"]["name"] == "shop"))
    project["spec"]["syncWindows"] = [{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
                                       "applications": ["*"], "manualSync": False, "timeZone": "UTC"}]
    kube_emulator.add(project)
    kube_emulator.add(restamped(applications()[0]))

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.collected is None and len(collector_runs) == 2, "a full collect"
    shop = GitOpsApp.objects.filter(read_from=cluster, project="shop")
    assert shop.count() >= 5 and all(a.sync_blocked for a in shop)


def test_a_deleted_app_is_removed_and_an_added_one_stored(cluster, collector_runs, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    gone = applications()[1]
    kube_emulator.remove(gone)
    kube_emulator.add(restamped(applications()[0]))

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.ok and report.collected is None
    assert not GitOpsApp.objects.filter(read_from=cluster, name=gone["metadata"]["name"]).exists()
    added = copy.deepcopy(gone)
    added["metadata"].update(name="catalog-canary", uid="7d1c3f0e-5b0a-4c1e-9a51-3f6c2a9b8e11")
    kube_emulator.add(added)

    report = polling.poll(cluster, at=at + timedelta(minutes=2))

    assert report.ok and report.collected is None
    assert GitOpsApp.objects.filter(read_from=cluster, name="catalog-canary").exists()
    assert GitOpsApp.objects.filter(read_from=cluster).count() == 12


def test_a_new_service_rederives_the_apps(cluster, collector_runs, app_rows, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    Service.objects.filter(name="catalog").delete()
    assert polling.poll(cluster, at=at + timedelta(minutes=1)).collected is None
    assert "catalog" not in GitOpsApp.objects.get(read_from=cluster, name="catalog-prod").running
    kube_emulator.add(restamped(applications()[2]))
    Service.objects.create(name="catalog", image_repository="ghcr.io/acme-shop/catalog")

    report = polling.poll(cluster, at=at + timedelta(minutes=2))

    assert report.collected is None and len(collector_runs) == 3
    stored = GitOpsApp.objects.get(read_from=cluster, name="catalog-prod")
    assert "catalog" in stored.running
    assert stored.services.filter(name="catalog").exists()


def test_a_changed_workload_means_a_full_collect(cluster, collector_runs, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    deployment = copy.deepcopy(next(o for o in demo_objects() if o.get("kind") == "Deployment"
                                    and o["metadata"]["name"] == "catalog"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["image"] = container["image"].rsplit(":", 1)[0] + ":9.9.9"
    kube_emulator.add(deployment)
    kube_emulator.add(restamped(applications()[0]))

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.collected is None and len(collector_runs) == 2
    assert "9.9.9" in GitOpsApp.objects.get(read_from=cluster, name="catalog-prod").running["catalog"]


def test_an_app_that_claims_other_resources_means_a_full_collect(cluster, collector_runs, app_rows, kube_emulator):
    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    app = restamped(next(a for a in applications() if a["metadata"]["name"] == "catalog-prod"))
    app["status"]["resources"] = [r for r in app["status"]["resources"] if r.get("kind") != "Deployment"]
    app_rows.clear()
    kube_emulator.add(app)

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.collected is None and len(collector_runs) == 2
    assert len(app_rows) == 13, "the changed app, then every app"
    stored = GitOpsApp.objects.get(read_from=cluster, name="catalog-prod")
    assert not Workload.objects.filter(cluster=cluster, app=stored, kind="Deployment").exists()


def test_a_full_poll_still_runs_every_ten_minutes(cluster, collector_runs, kube_emulator):
    from gitops.derive.unchanged import FULL_POLL_EVERY

    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    kube_emulator.add(restamped(applications()[0]))
    assert polling.poll(cluster, at=at + timedelta(minutes=1)).collected == 0, "only its stamps moved"
    kube_emulator.add(restamped(applications()[0], minutes=6))

    report = polling.poll(cluster, at=at + FULL_POLL_EVERY)  # the latest a full poll may fall due

    assert report.collected is None and len(collector_runs) == 2
    assert Cluster.objects.get(pk=cluster.pk).poll.listing_full_at == at + FULL_POLL_EVERY


def test_a_changed_app_has_its_findings_said_again_alone(cluster, collector_runs, app_rows, kube_emulator):
    """Each finding is one app's: a poll that collected one app re-derives that app's findings,
    and every other app's stay as they were (not deleted and written again)."""
    from gitops.models import Finding

    at = timezone.now()
    assert polling.poll(cluster, at=at).ok
    others = set(Finding.objects.filter(app__read_from=cluster).exclude(app__name="catalog-prod")
                 .values_list("pk", "rule", "at"))
    assert others, "the demo cluster's apps have findings"
    assert not Finding.objects.filter(app__name="catalog-prod", rule="self-heal-off").exists()
    app = restamped(next(a for a in applications() if a["metadata"]["name"] == "catalog-prod"))
    app["spec"]["syncPolicy"]["automated"]["selfHeal"] = False
    kube_emulator.add(app)

    report = polling.poll(cluster, at=at + timedelta(minutes=1))

    assert report.collected == 1 and len(collector_runs) == 1
    assert Finding.objects.filter(app__name="catalog-prod", rule="self-heal-off").exists()
    assert set(Finding.objects.filter(app__read_from=cluster).exclude(app__name="catalog-prod")
               .values_list("pk", "rule", "at")) == others

