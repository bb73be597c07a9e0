"""What /api/v1/gitops can filter and sort on, as queryset operations.

The filters mean what the /gitops page's filters mean; `needs_attention` is the pages'
grace-period rule (GitOpsApp.needs_attention / needing_attention).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import (
    Case,
    DateTimeField,
    ExpressionWrapper,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from forges.models import PullRequest
from gitops.models import ATTENTION_HEALTH, GitOpsApp, VersionChange

# Nullable times sort as the oldest possible instant, so every key has a value to page by.
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# Sort name -> keys as (attribute, type); all ascending, ties broken by the unique id.
SORTS: dict[str, tuple[tuple[str, str], ...]] = {
    "problems": (("problem_rank", "int"), ("sort_env", "int"), ("sort_cluster", "str"), ("namespace", "str"),
                 ("name", "str"), ("id", "int")),
    "name": (("name", "str"), ("sort_cluster", "str"), ("namespace", "str"), ("id", "int")),
    "cluster": (("sort_cluster", "str"), ("namespace", "str"), ("name", "str"), ("id", "int")),
    "environment": (("sort_env", "int"), ("sort_cluster", "str"), ("namespace", "str"), ("name", "str"),
                    ("id", "int")),
    "sync_since": (("sort_sync_since", "datetime"), ("id", "int")),
    "health_since": (("sort_health_since", "datetime"), ("id", "int")),
}
SORT_CHOICES = [*SORTS, *(f"-{name}" for name in SORTS)]
DEFAULT_SORT = "problems"
# How long before an app turned degraded or missing a version change counts as the likely cause.
AFTER_CHANGE_WINDOW = timedelta(days=1)


def base_queryset() -> QuerySet[GitOpsApp]:
    """Apps with everything the serializer reads, in a fixed number of queries."""
    return (
        GitOpsApp.objects.select_related("cluster", "cluster__environment")
        .prefetch_related("services")
        .defer("raw", "history", "conditions", "images", "warnings", "synced_revisions")
        .annotate(
            sort_env=F("cluster__environment__order"),
            sort_cluster=F("cluster__name"),
            sort_sync_since=Coalesce("sync_since", Value(_NEVER, output_field=DateTimeField())),
            sort_health_since=Coalesce("health_since", Value(_NEVER, output_field=DateTimeField())),
        )
    )


def filter_apps(apps: QuerySet[GitOpsApp], params: dict[str, Any], at: datetime) -> QuerySet[GitOpsApp]:
    if params.get("cluster"):
        apps = apps.filter(cluster__name=params["cluster"])
    if params.get("environment"):
        apps = apps.filter(cluster__environment__name=params["environment"])
    if params.get("service"):
        apps = apps.filter(services__name=params["service"])  # one link per (app, service): no duplicates
    if params.get("tool"):
        apps = apps.filter(tool=params["tool"])
    if params.get("sync"):
        apps = apps.filter(sync_status=params["sync"])
    if params.get("health"):
        apps = apps.filter(health_status=params["health"])
    attention = params.get("needs_attention")
    if attention is True:
        apps = apps.needing_attention(at)
    elif attention is False:
        apps = apps.exclude(pk__in=GitOpsApp.objects.needing_attention(at).values("pk"))
    return apps


AFTER_CHANGE_FIELDS = {"after_change_service": "service__name", "after_change_from": "from_version",
                       "after_change_to": "to_version", "after_change_at": "at"}


def _day_before(value: Any) -> Any:
    if connection.vendor == "sqlite":
        # Django's datetime arithmetic on SQLite calls back into Python for every row it
        # compares (100+ ms for a page); SQLite's strftime is native. It writes the same
        # text format Django stores, to the millisecond: precise enough for a day's window.
        return Func(Value("%Y-%m-%d %H:%M:%f"), value, Value("-1 day"), function="strftime",
                    output_field=DateTimeField())
    return ExpressionWrapper(value - AFTER_CHANGE_WINDOW, output_field=DateTimeField())


def with_after_change(apps: QuerySet[GitOpsApp]) -> QuerySet[GitOpsApp]:
    """Annotate `after_change_{service,from,to,at}`: the newest VersionChange on the app's
    cluster in the day before a degraded or missing app turned so (its health_since).

    Part of the page's own query, so a page costs the same number of queries whether or
    not it holds such an app; the database evaluates it only for degraded and missing rows.
    """
    since = OuterRef("health_since")
    latest = VersionChange.objects.filter(
        cluster_id=OuterRef("cluster_id"), at__lte=since, at__gte=_day_before(since)
    ).order_by("-at", "-id")
    turned = Q(health_status__in=ATTENTION_HEALTH, health_since__isnull=False)
    return apps.annotate(**{
        name: Case(When(turned, then=Subquery(latest.values(field)[:1])), default=None)
        for name, field in AFTER_CHANGE_FIELDS.items()
    })


def pull_requests(params: dict[str, Any]) -> QuerySet[PullRequest]:
    """Pull requests that exist on a forge (not a worker's `opening` claim), filtered."""
    pulls = (
        PullRequest.objects.exclude(state=PullRequest.State.OPENING)
        .select_related("opened_by")
        .annotate(sort_opened_at=Coalesce("opened_at", Value(_NEVER, output_field=DateTimeField())))
    )
    for key in ("state", "kind", "environment"):
        if params.get(key):
            pulls = pulls.filter(**{key: params[key]})
    return pulls
