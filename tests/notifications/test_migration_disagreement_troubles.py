"""notifications.0006: apps disagreeing already when the consumer learns of disagreements get their
trouble from the fleet as it is (no StateChange row will ever say so): an existing trouble learns
the disagreement, an app otherwise fine gets one dated from the disagreement's `since`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

AFTER = [("notifications", "0006_trouble_disagreement")]


@pytest.mark.django_db(transaction=True)
def test_disagreeing_apps_get_their_trouble() -> None:
    executor = MigrationExecutor(connection)
    # Every other app as it is now: only this migration is undone.
    before = [n for n in executor.loader.graph.leaf_nodes() if n[0] != "notifications"]
    before.append(("notifications", "0005_chat_messages"))
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    now = timezone.now()
    env = old.get_model("catalog", "Environment").objects.create(name="prod")
    cluster = old.get_model("catalog", "Cluster").objects.create(name="prod-eu-1", environment=env)
    App = old.get_model("gitops", "GitOpsApp")

    def app(name, health, disagreement, hours):
        return App.objects.create(
            cluster=cluster,
            read_from=cluster,
            tool="flux",
            kind="Kustomization",
            namespace="flux-system",
            name=name,
            sync_status="Unknown",
            health_status=health,
            health_since=now - timedelta(hours=hours + 1),
            health_disagreement=disagreement,
            health_disagreement_since=now - timedelta(hours=hours) if disagreement else None,
            first_seen=now - timedelta(days=3),
        )

    fine, quiet, degraded = (
        app("ok", "Healthy", "", 1),
        app("q", "Healthy", "x " * 200, 2),
        app("d", "Degraded", "rule says Healthy", 3),
    )
    old.get_model("notifications", "Trouble").objects.create(
        app=degraded, since=now - timedelta(hours=4), sync_status="Unknown", health_status="Degraded"
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    troubles = {t.app_id: t for t in new.get_model("notifications", "Trouble").objects.all()}
    assert set(troubles) == {quiet.id, degraded.id}
    assert troubles[quiet.id].since == now - timedelta(hours=2)
    assert troubles[quiet.id].disagreement == ("x " * 200)[:300]
    assert (troubles[quiet.id].health_status, troubles[quiet.id].episode_id) == ("Healthy", None)
    # The trouble it had keeps its start; it learns the disagreement.
    assert troubles[degraded.id].since == now - timedelta(hours=4)
    assert troubles[degraded.id].disagreement == "rule says Healthy"
    assert fine.id not in troubles

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
