"""gitops.app_order: the environment order and cluster name copied onto each app row for the
lists' order stay equal to what the joins would read, through polls, renames, moves and
re-ordered environments, and /gitops lists apps in that order."""

from __future__ import annotations

import json
import re

from django.db import connection
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops import app_order
from gitops.models import NO_ENVIRONMENT_ORDER, GitOpsApp
from gitops.polling import store_snapshot
from gitops.rows import ARGO, HEALTHY, SYNCED, AppRow, Snapshot
from portal.kernel.catalog.models import Cluster, Environment


def _snapshot(*names: str, health: str = HEALTHY) -> Snapshot:
    return Snapshot(apps=[AppRow(tool=ARGO, kind="Application", namespace="argocd", name=name, sync_status=SYNCED,
                                 health_status=health, raw={"metadata": {"name": name, "resourceVersion": "1"}})
                          for name in names],
                    workloads=[], listed_kinds={"Application", "AppProject"})


def _copied() -> dict[str, tuple[int, str]]:
    return {app.name: (app.sort_env, app.sort_cluster) for app in GitOpsApp.objects.all()}


def _joined() -> dict[str, tuple[int, str]]:
    """What the joins say, the definition the copy must equal."""
    rows = GitOpsApp.objects.annotate(
        env=Coalesce("cluster__environment__order", Value(NO_ENVIRONMENT_ORDER))).values_list(
        "name", "env", "cluster__name")
    return {name: (env, cluster) for name, env, cluster in rows}


def test_the_copy_follows_polls_renames_moves_and_reordered_environments(db):
    dev, prod = Environment.objects.create(name="dev", order=0), Environment.objects.create(name="prod", order=3)
    east = Cluster.objects.create(name="east", environment=prod)
    lab = Cluster.objects.create(name="lab", environment=None)
    store_snapshot(east, _snapshot("a", "b"), timezone.now())
    store_snapshot(lab, _snapshot("c"), timezone.now())
    assert _copied() == _joined() == {"a": (3, "east"), "b": (3, "east"), "c": (NO_ENVIRONMENT_ORDER, "lab")}

    east.name = "prod-east"
    east.save()
    lab.environment = dev
    lab.save(update_fields=["environment"])
    assert _copied() == _joined() == {"a": (3, "prod-east"), "b": (3, "prod-east"), "c": (0, "lab")}

    prod.order = 1
    prod.save()
    assert _copied() == _joined() == {"a": (1, "prod-east"), "b": (1, "prod-east"), "c": (0, "lab")}

    # A row saved alone (the admin) gets its keys too.
    single = GitOpsApp.objects.create(cluster=lab, tool=ARGO, kind="Application", namespace="argocd", name="d")
    assert (single.sort_env, single.sort_cluster) == (0, "lab") and _copied() == _joined()


def test_a_poll_or_save_that_moves_nothing_writes_no_key(db):
    prod = Environment.objects.create(name="prod", order=3)
    east = Cluster.objects.create(name="east", environment=prod)
    store_snapshot(east, _snapshot("a", "b"), timezone.now())
    assert app_order.refresh_cluster(east.pk) == 0
    east.enabled = not east.enabled
    east.save(update_fields=["enabled"])
    prod.production = True
    prod.save()
    assert _copied() == {"a": (3, "east"), "b": (3, "east")}
    app = GitOpsApp.objects.get(name="a")
    with CaptureQueriesContext(connection) as saved:
        app.save(update_fields=["health_message"])  # a field that moves no key: its cluster is not read
    assert not [q for q in saved.captured_queries if "catalog_cluster" in q["sql"]]


def test_gitops_lists_problems_first_then_by_environment_and_cluster(db, client, users):
    dev, prod = Environment.objects.create(name="dev", order=0), Environment.objects.create(name="prod", order=3)
    zeta, alpha, mid = (Cluster.objects.create(name=name, environment=env)
                        for name, env in (("zeta", dev), ("alpha", prod), ("mid", dev)))
    store_snapshot(zeta, _snapshot("z-2", "z-1"), timezone.now())
    store_snapshot(alpha, _snapshot("a-ok", "a-down", health="Degraded"), timezone.now())
    store_snapshot(mid, _snapshot("m-1"), timezone.now())
    zeta.name = "beta"  # renamed: now before "mid" among dev's clusters
    zeta.save()
    client.force_login(users["viewer"])
    for path in ("/gitops", "/api/v1/gitops"):
        body = client.get(path).content.decode()
        shown = re.findall(r'data-app="([^"]+)"', body) or [app["name"] for app in json.loads(body)["results"]]
        # Degraded first (prod's); then dev's clusters by name, beta before mid; names last.
        assert shown == ["a-down", "a-ok", "z-1", "z-2", "m-1"], path
