"""Two data migrations of the early schema, checked on a database of their own that is migrated
from nothing to the early schema and then through the two migrations only. Walking the suite's
database back to the early schema and forward again cost 17 s of a busy suite's CPU
(2026-12-07); migrating an empty database as far as gitops 0006 costs a fraction of that.

- gitops.0006: apps stored before the topology keep their place. Each was filed under the
  cluster that listed it, so that cluster is both where it deploys and where it is read.
- notifications.0003: the StateChange consumer starts from the fleet as it is. History is
  marked consumed; an app in trouble keeps its open episode (nobody hears of it twice) or is
  dated from the state that is wrong; a healthy app has no trouble.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# The catalog and the store as they were then too: later columns have no value in rows made here.
# And the data revision's table, which every write of the store adds a row to (portal.kernel.changelog).
BEFORE = [("notifications", "0002_trouble"), ("gitops", "0005_statechange_processed"),
          ("catalog", "0002_service_source_repository"), ("changelog", "0001_initial")]
TOPOLOGY = [("gitops", "0006_app_destination_read_from")]
TROUBLES = [("notifications", "0003_troubles_from_current_state")]


@pytest.fixture
def early(django_db_blocker: object, tmp_path: Path) -> Iterator[BaseDatabaseWrapper]:
    """The default connection, pointed for the test at an empty database beside the test
    database (on the same server; a file on SQLite), dropped afterwards. The data migrations
    write through the default manager, so the default connection is the one they must use."""
    connection = connections["default"]
    kept = connection.settings_dict["NAME"]
    postgres = connection.vendor == "postgresql"
    name = f"{kept}_early" if postgres else str(tmp_path / "early.sqlite3")
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        if postgres:
            with connection._nodb_cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
                cursor.execute(f'CREATE DATABASE "{name}"')
        # The test database's own session is set aside, not closed: an in-memory SQLite
        # database would be gone with it.
        session, connection.connection = connection.connection, None
        connection.settings_dict["NAME"] = name
        try:
            yield connection
        finally:
            connection.close()
            connection.settings_dict["NAME"] = kept
            connection.connection = session
            if postgres:
                with connection._nodb_cursor() as cursor:
                    cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


def test_apps_keep_their_cluster_and_troubles_start_from_the_current_state(early: BaseDatabaseWrapper) -> None:
    executor = MigrationExecutor(early)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    now = timezone.now()
    env = old.get_model("catalog", "Environment").objects.create(name="prod")
    Cluster = old.get_model("catalog", "Cluster")
    eu, us = (Cluster.objects.create(name=name, environment=env) for name in ("prod-eu-1", "prod-us-1"))
    App = old.get_model("gitops", "GitOpsApp")

    # gitops.0006's apps: one of the same name in each cluster, healthy (no trouble of their own).
    for cluster in (eu, us):
        App.objects.create(cluster=cluster, tool="argo", kind="Application", namespace="argocd", name="checkout",
                           sync_status="Synced", health_status="Healthy", sync_since=now - timedelta(days=1),
                           health_since=now - timedelta(days=1), first_seen=now - timedelta(days=3))

    # notifications.0003's apps.
    def app(name, sync, health, hours):
        return App.objects.create(cluster=eu, tool="argo", kind="Application", namespace="argocd", name=name,
                                  sync_status=sync, health_status=health, sync_since=now - timedelta(hours=hours),
                                  health_since=now - timedelta(hours=hours + 1), first_seen=now - timedelta(days=3))

    healthy, announced, degraded = app("ok", "Synced", "Healthy", 5), app("a", "Synced", "Degraded", 3), \
        app("d", "OutOfSync", "Missing", 2)
    old.get_model("gitops", "StateChange").objects.create(
        cluster=eu, app=degraded, field="health", old="Healthy", new="Missing", at=now - timedelta(hours=3),
        object_key="argo/Application/argocd/d")
    started = now - timedelta(hours=4)
    episode = old.get_model("notifications", "Episode").objects.create(
        kind="app_attention", key="gitops:prod-eu-1/a@x", started_at=started, emitted_at=started, app=announced)

    executor = MigrationExecutor(early)
    executor.migrate(TOPOLOGY)
    new = executor.loader.project_state(TOPOLOGY).apps
    rows = sorted(new.get_model("gitops", "GitOpsApp").objects.filter(name="checkout")
                  .values_list("cluster_id", "read_from_id", "argocd_instance_id"))
    assert rows == [(eu.id, eu.id, None), (us.id, us.id, None)]
    assert not new.get_model("catalog", "Cluster").objects.filter(discovered=True).exists()

    executor = MigrationExecutor(early)
    executor.migrate(TROUBLES)
    new = executor.loader.project_state(TROUBLES).apps
    assert not new.get_model("gitops", "StateChange").objects.filter(processed__isnull=True).exists()
    troubles = {t.app_id: t for t in new.get_model("notifications", "Trouble").objects.all()}
    assert set(troubles) == {announced.id, degraded.id}
    assert (troubles[announced.id].since, troubles[announced.id].episode_id) == (started, episode.id)
    # OutOfSync since 2 h, Missing since 3 h: the trouble began with the older of the two.
    assert troubles[degraded.id].since == now - timedelta(hours=3)
    assert troubles[degraded.id].episode_id is None
    assert (troubles[degraded.id].sync_status, troubles[degraded.id].health_status) == ("OutOfSync", "Missing")
    assert healthy.id not in troubles

