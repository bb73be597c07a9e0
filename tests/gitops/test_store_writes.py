"""How a poll writes: new rows through the fast insert path, unchanged apps left alone.

Runs on SQLite and, in CI, on PostgreSQL, where new rows go in through COPY with ids
taken from the table's sequence first.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops.derive.app_changes import fingerprint
from gitops.derive.cluster_changes import derive
from gitops.models import GitOpsApp, RunningVersion, StateChange, VersionChange
from gitops.polling import store_snapshot
from gitops.rows import ARGO, HEALTHY, SYNCED, AppRow, ContainerImage, Snapshot, WorkloadRow
from gitops.store.bulk import bulk_insert_rows
from gitops.store.read import catalog_services, read_state
from gitops.store.write import write
from portal.kernel.catalog.models import Cluster, Environment, Service

pytestmark = pytest.mark.django_db


def test_inserted_rows_get_ids_and_keep_every_value(db):
    env = Environment.objects.create(name="qa", order=1)
    cluster = Cluster.objects.create(name="qa-1", environment=env)
    at = timezone.now().replace(microsecond=123000)
    apps = [
        GitOpsApp(cluster=cluster, tool="argo", kind="Application", namespace="argocd", name=f"app-{i}",
                  sync_status="OutOfSync", sync_since=at, suspended=i == 1, problem_rank=i,
                  raw={"metadata": {"name": f"app-{i}"}, "note": "quote ' tab \t newline \n backslash \\ é"},
                  history=[{"revision": "abc", "deployedAt": at}], warnings=["w"], running={"svc": ["1.0.0"]},
                  sync_window={"kind": "deny", "description": "it's \"frozen\""})
        for i in range(3)
    ]
    bulk_insert_rows(GitOpsApp, apps)
    assert all(a.pk for a in apps) and len({a.pk for a in apps}) == 3
    stored = {a.pk: a for a in GitOpsApp.objects.filter(cluster=cluster)}
    assert set(stored) == {a.pk for a in apps}
    second = stored[apps[1].pk]
    assert (second.name, second.suspended, second.problem_rank, second.sync_since) == ("app-1", True, 1, at)
    assert second.raw["note"] == "quote ' tab \t newline \n backslash \\ é"
    assert second.history[0]["revision"] == "abc" and second.history[0]["deployedAt"].startswith(at.date().isoformat())
    assert second.sync_window["description"] == "it's \"frozen\"" and second.running == {"svc": ["1.0.0"]}
    # The sequence moved on: an ordinary insert afterwards gets a fresh id.
    later = GitOpsApp.objects.create(cluster=cluster, tool="flux", kind="Kustomization", namespace="flux-system",
                                     name="later")
    assert later.pk not in stored
    changes = [StateChange(cluster=cluster, app=apps[0], object_key="k", field="sync", old="", new="x", at=at)]
    bulk_insert_rows(StateChange, changes)
    assert StateChange.objects.get(pk=changes[0].pk).app_id == apps[0].pk


def test_fingerprint_ignores_only_the_stamps_of_a_reconciliation():
    at = timezone.now()
    base = {"sync_status": "Synced", "running": {"svc": ["1.0.0"]}, "reconciled_at": at,
            "raw": {"metadata": {"name": "a", "resourceVersion": "41"},
                    "status": {"reconciledAt": "2026-11-29T09:00:00Z", "sync": {"status": "Synced"}}}}
    # Argo CD's reconciliation that changed nothing: a new resourceVersion and reconciledAt.
    restamped = {**base, "reconciled_at": at + timedelta(minutes=3),
                 "raw": {"metadata": {"name": "a", "resourceVersion": "42"},
                         "status": {"reconciledAt": "2026-11-29T09:03:00Z", "sync": {"status": "Synced"}}}}
    assert fingerprint(base) == fingerprint(restamped)
    # Any other change of the object counts, even one no column reads.
    relabelled = {**base, "raw": {"metadata": {"name": "a", "resourceVersion": "42", "labels": {"team": "b"}},
                                  "status": base["raw"]["status"]}}
    assert fingerprint(base) != fingerprint(relabelled)
    # What the portal derives beside the object counts too (workloads, windows).
    assert fingerprint(base) != fingerprint({**base, "running": {"svc": ["1.1.0"]}})
    assert fingerprint(base) == fingerprint({**base, "updated_at": timezone.now()})
    # A manifest file has no resourceVersion: the whole object is digested.
    file_a = {**base, "raw": {"metadata": {"name": "a"}, "status": {"sync": "Synced"}}}
    file_b = {**base, "raw": {"metadata": {"name": "a"}, "status": {"sync": "OutOfSync"}}}
    assert fingerprint(file_a) != fingerprint(file_b)


def test_rows_copied_without_instances_take_the_model_defaults(db):
    from gitops.store.bulk import copy_rows

    env = Environment.objects.create(name="qa", order=1)
    cluster = Cluster.objects.create(name="qa-1", environment=env)
    before = timezone.now()
    copy_rows(StateChange, [
        {"cluster_id": cluster.id, "object_key": "argo/Application/argocd/a", "field": "sync", "new": "OutOfSync"},
        {"cluster_id": cluster.id, "object_key": "argo/Application/argocd/b", "field": "health", "old": "Healthy",
         "new": "Degraded", "at": before},
    ])
    rows = {c.object_key.rsplit("/", 1)[1]: c for c in StateChange.objects.filter(cluster=cluster)}
    assert (rows["a"].old, rows["a"].new, rows["a"].app_id) == ("", "OutOfSync", None)
    assert rows["a"].at >= before  # the field's default, not NULL
    assert (rows["b"].old, rows["b"].at) == ("Healthy", before)
    copy_rows(StateChange, [])  # nothing to write is not an error


@pytest.mark.django_db(transaction=True)  # autocommit, as a caller outside a poll would be
def test_changed_rows_are_written_without_a_transaction_around(db):
    from gitops.store.bulk import bulk_update_rows

    env = Environment.objects.create(name="qa", order=1)
    cluster = Cluster.objects.create(name="qa-1", environment=env)
    apps = [GitOpsApp.objects.create(cluster=cluster, tool="argo", kind="Application", namespace="argocd",
                                     name=f"app-{i}") for i in range(3)]
    for i, app in enumerate(apps):
        app.sync_status, app.raw, app.problem_rank = "OutOfSync", {"metadata": {"name": app.name}, "n": i}, i
    bulk_update_rows(GitOpsApp, apps[:2], ["sync_status", "raw", "problem_rank"])
    bulk_update_rows(GitOpsApp, apps[2:], ["sync_status", "raw", "problem_rank"])  # the same staging table again
    stored = {a.name: a for a in GitOpsApp.objects.filter(cluster=cluster)}
    assert [(stored[a.name].sync_status, stored[a.name].raw["n"], stored[a.name].problem_rank) for a in apps] == [
        ("OutOfSync", 0, 0), ("OutOfSync", 1, 1), ("OutOfSync", 2, 2)
    ]


def _fleet_snapshot(count: int, tag: str) -> Snapshot:
    """`count` Argo CD apps, each deploying one Deployment that runs checkout:`tag`."""
    apps, workloads = [], []
    for i in range(count):
        name = f"checkout-{i}"
        apps.append(AppRow(tool=ARGO, kind="Application", namespace="argocd", name=name, sync_status=SYNCED,
                           health_status=HEALTHY, raw={"metadata": {"name": name, "resourceVersion": tag}}))
        workloads.append(WorkloadRow(
            kind="Deployment", namespace="shop", name=name, health_status="Current",
            containers=[ContainerImage("app", f"ghcr.io/acme/checkout:{tag}", "ghcr.io", "acme/checkout", tag, "")],
            app_key=(ARGO, "Application", "argocd", name),
        ))
    return Snapshot(apps=apps, workloads=workloads, listed_kinds={"Application", "AppProject", "Deployment"})


def _queries_to_store(cluster: Cluster, snapshot: Snapshot, at) -> int:
    with CaptureQueriesContext(connection) as queries:
        store_snapshot(cluster, snapshot, at)
    return len(queries)


def test_a_poll_costs_the_same_number_of_queries_for_3_apps_or_15(db):
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    # One environment each, so that the matrix's lines of one never move with the other's;
    # 15 wide rows still fit one of SQLite's bulk_create batches (999 parameters).
    small, large = (
        Cluster.objects.create(name=f"c-{n}", environment=Environment.objects.create(name=f"prod-{n}", order=n))
        for n in (3, 15)
    )
    at = timezone.now()
    catalog_services()  # read once for both: a poll reads them again only when the catalog moves
    # First sight (everything inserted), the same again (nothing written), then every
    # app's version replaced (every row rewritten, a VersionChange each).
    for step, tag in enumerate(["1.0.0", "1.0.0", "1.1.0"]):
        when = at + timedelta(minutes=step)
        assert _queries_to_store(small, _fleet_snapshot(3, tag), when) == _queries_to_store(
            large, _fleet_snapshot(15, tag), when
        )
    assert VersionChange.objects.filter(cluster=large).count() == 15
    assert RunningVersion.objects.filter(cluster=large, version="1.1.0").count() == 15


def test_the_store_only_writes_what_derive_decided(db):
    """A poll that finds everything as it was writes no row of the cluster's tables."""
    env = Environment.objects.create(name="prod", order=3, production=True)
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    cluster = Cluster.objects.create(name="c-1", environment=env)
    at = timezone.now()
    store_snapshot(cluster, _fleet_snapshot(4, "1.0.0"), at)
    state = read_state(cluster, {"Application", "AppProject", "Deployment"})
    changes = derive(state, _fleet_snapshot(4, "1.0.0"), at + timedelta(minutes=1))
    assert (changes.apps.created, changes.apps.updated, changes.apps.gone, changes.apps.state_changes) == (
        [], [], [], []
    )
    assert changes.workloads is not None
    assert (changes.workloads.created, changes.workloads.updated, changes.workloads.running_added,
            changes.workloads.running_stale) == ([], [], [], [])
    with CaptureQueriesContext(connection) as queries:
        write(changes)
    tables = ("gitops_gitopsapp", "gitops_workload", "gitops_runningversion", "gitops_statechange",
              "gitops_versionchange", "gitops_gitopsapp_services")
    writes = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "COPY"))
              and any(table in q["sql"] for table in tables)]
    assert writes == []
