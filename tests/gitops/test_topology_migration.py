"""Migration 0006: apps stored before the topology keep their place. Each was filed under
the cluster that listed it, so that cluster is both where it deploys and where it is read."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("gitops", "0005_statechange_processed"), ("catalog", "0002_service_source_repository")]
AFTER = [("gitops", "0006_app_destination_read_from")]


@pytest.mark.django_db(transaction=True)
def test_existing_apps_are_read_from_the_cluster_they_were_filed_under() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    env = old.get_model("catalog", "Environment").objects.create(name="prod")
    Cluster = old.get_model("catalog", "Cluster")
    eu, us = (Cluster.objects.create(name=name, environment=env) for name in ("prod-eu-1", "prod-us-1"))
    App = old.get_model("gitops", "GitOpsApp")
    for cluster in (eu, us):
        App.objects.create(cluster=cluster, tool="argo", kind="Application", namespace="argocd", name="checkout")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    rows = sorted(new.get_model("gitops", "GitOpsApp").objects.values_list("cluster_id", "read_from_id",
                                                                           "argocd_instance_id"))
    assert rows == [(eu.id, eu.id, None), (us.id, us.id, None)]
    assert not new.get_model("catalog", "Cluster").objects.filter(discovered=True).exists()

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
