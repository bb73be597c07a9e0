"""The app lists' order keys that live on other tables, kept on the app row.

/gitops and /api/v1/gitops list apps problems first, then by environment order and cluster
name (gitops.models.APP_SORTS). Read through joins, those two keys make PostgreSQL sort every
matching row before it can return the first fifty, and on a table it has no statistics for
(a database filled a moment ago) it does so through nested loops: 595 ms for /gitops at
100,000 apps (issue 40). Kept on the row as `sort_env` and `sort_cluster`, the whole order is
one index (GitOpsApp.Meta), and a page is read from its first fifty entries.

A copy must never go stale, so every change that moves an app's keys rewrites them here:
- the store: the apps a poll creates or rewrites (a hub's app moved to another destination
  among them) carry their cluster's keys, written with the rest of the row (`fill`);
- a cluster renamed or moved to another environment, an environment's order changed
  (receivers connected in GitopsConfig.ready), and an app saved alone (`refresh_cluster`);
- the migration that added them.
A rewrite touches only rows whose copy differs, so an unchanged poll writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from gitops.models import NO_ENVIRONMENT_ORDER, GitOpsApp
from portal.kernel.catalog.models import Cluster, Environment

FIELDS = ["sort_env", "sort_cluster"]


def _keys(cluster_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
    """cluster id -> (environment order, name): the keys its apps carry."""
    rows = Cluster.objects.filter(pk__in=sorted(set(cluster_ids))).values_list("pk", "environment__order", "name")
    return {pk: (NO_ENVIRONMENT_ORDER if order is None else order, name) for pk, order, name in rows}


def fill(apps: list[GitOpsApp]) -> None:
    """Give apps about to be written (created or rewritten by a poll) their cluster's keys: one
    query for all of their clusters, none when there are no apps."""
    if not apps:
        return
    keys = _keys(app.cluster_id for app in apps)
    for app in apps:
        app.sort_env, app.sort_cluster = keys.get(app.cluster_id, (NO_ENVIRONMENT_ORDER, ""))


def refresh_cluster(cluster_id: int) -> int:
    """Rewrite the keys of the cluster's apps whose copy differs; how many."""
    keys = _keys([cluster_id])
    if cluster_id not in keys:
        return 0
    order, name = keys[cluster_id]
    stale = GitOpsApp.objects.filter(Q(cluster_id=cluster_id) & (~Q(sort_env=order) | ~Q(sort_cluster=name)))
    return stale.update(sort_env=order, sort_cluster=name)


# --- receivers (connected in GitopsConfig.ready) ---------------------------------------------


def on_cluster_saved(sender: object, instance: Cluster, created: bool, update_fields: Any = None,
                     **kwargs: object) -> None:
    """A renamed cluster, or one moved to another environment: its apps' keys follow."""
    if created or (update_fields is not None and not {"name", "environment"} & set(update_fields)):
        return
    refresh_cluster(instance.pk)


def on_environment_saved(sender: object, instance: Environment, created: bool, update_fields: Any = None,
                         **kwargs: object) -> None:
    """An environment's new place in the order: its clusters' apps' keys follow."""
    if created or (update_fields is not None and "order" not in set(update_fields)):
        return
    # One statement for all its clusters' apps (an environment of 250 clusters asked 500 before).
    GitOpsApp.objects.filter(cluster__environment=instance).exclude(sort_env=instance.order).update(
        sort_env=instance.order)
