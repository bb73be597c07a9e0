"""The app lists' order keys that live on other tables, kept on the app row.

/gitops and /api/v1/gitops list apps problems first, then by environment order and cluster
name (gitops.models.APP_SORTS). Read through joins, those two keys make PostgreSQL sort every
matching row before it can return the first fifty, and on a table it has no statistics for
(a database filled a moment ago) it does so through nested loops: 595 ms for /gitops at
100,000 apps (issue 40). Kept on the row as `sort_env` and `sort_cluster`, the whole order is
one index (GitOpsApp.Meta), and a page is read from its first fifty entries.

A copy must never go stale, so every change that moves an app's keys rewrites them here:
- the store, after writing a poll: new apps, and apps a hub's poll moved to another
  destination (gitops.store.write);
- a cluster renamed or moved to another environment, an environment's order changed
  (receivers connected in GitopsConfig.ready);
- the migration that added them.
Each rewrite touches only rows whose copy differs, so a poll that changed nothing writes nothing.
"""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from gitops.models import NO_ENVIRONMENT_ORDER, GitOpsApp
from portal.kernel.catalog.models import Cluster, Environment


def refresh(apps: QuerySet[GitOpsApp]) -> int:
    """Rewrite the order keys of those of `apps` whose copy differs from their cluster's; how many."""
    environment_order = Coalesce("cluster__environment__order", Value(NO_ENVIRONMENT_ORDER))
    stale = apps.filter(~Q(sort_cluster=Subquery(_cluster_name())) | ~Q(sort_env=environment_order))
    return stale.update(
        sort_cluster=Subquery(_cluster_name()),
        sort_env=Coalesce(Subquery(_environment_order()), Value(NO_ENVIRONMENT_ORDER)),
    )


def _cluster_name() -> QuerySet:
    return Cluster.objects.filter(pk=OuterRef("cluster_id")).values("name")[:1]


def _environment_order() -> QuerySet:
    return Cluster.objects.filter(pk=OuterRef("cluster_id")).values("environment__order")[:1]


# --- receivers (connected in GitopsConfig.ready) ---------------------------------------------


def on_cluster_saved(sender: object, instance: Cluster, created: bool, update_fields: Any = None,
                     **kwargs: object) -> None:
    """A renamed cluster, or one moved to another environment: its apps' keys follow."""
    if created or (update_fields is not None and not {"name", "environment"} & set(update_fields)):
        return
    refresh(GitOpsApp.objects.filter(cluster_id=instance.pk))


def on_environment_saved(sender: object, instance: Environment, created: bool, update_fields: Any = None,
                         **kwargs: object) -> None:
    """An environment's new place in the order: its clusters' apps' keys follow."""
    if created or (update_fields is not None and "order" not in set(update_fields)):
        return
    refresh(GitOpsApp.objects.filter(cluster__environment_id=instance.pk))
