"""The API's querysets: GitOps apps with what the serializer reads, and pull requests.

What GET /api/v1/gitops filters and sorts on is the /gitops page's FilterSet
(gitops.appfilter.GitOpsAppFilter), in the orders of gitops.models.APP_SORTS.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import (
    Case,
    DateTimeField,
    ExpressionWrapper,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from gitops.models import ATTENTION_HEALTH, GitOpsApp, VersionChange
from portal.api import app_address
from portal.delivery.models import PullRequest

# Pull requests not opened yet sort as the oldest possible instant, so every key has a value to page by.
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# How long before an app turned degraded or missing a version change counts as the likely cause.
AFTER_CHANGE_WINDOW = timedelta(days=1)


def base_queryset() -> QuerySet[GitOpsApp]:
    """Apps with everything the serializer reads, in a fixed number of queries, carrying
    their sort keys (a page's cursor is written from its last row's)."""
    return (
        GitOpsApp.objects.select_related("cluster", "cluster__environment", "cluster__poll", "argocd_instance",
                                         "read_from")
        .prefetch_related("services")
        # The whole object is not read: the few facts the API shows from it are picked out
        # by the database (RAW_FACTS), so a page costs the same queries and no big documents.
        .defer("raw", "health_rules")
        .annotate(**RAW_FACTS, **app_address.twin_facts())
        .with_rule_words()
        .with_sort_keys()
    )


# What the API shows of the stored object that has no column of its own, read by the
# database from `raw` (the object as the cluster holds it, gitops.rawobjects.trimmed).
RAW_FACTS = {
    "object_generation": KT("raw__metadata__generation"),
    "object_observed_generation": KT("raw__status__observedGeneration"),
    "attempted_revision": KT("raw__status__lastAttemptedRevision"),
    # Present (any value) when an Argo CD Application uses spec.sources.
    "spec_sources": KT("raw__spec__sources"),
}


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
    """Pull requests that exist on a forge (not a job still `opening`, nor one that failed), filtered."""
    pulls = (
        PullRequest.objects.exclude(state__in=[PullRequest.State.OPENING, PullRequest.State.FAILED])
        .select_related("opened_by", "rendered")
        .defer("rendered__outputs")  # the full output is the portal page's, never the API's
        .annotate(sort_opened_at=Coalesce("opened_at", Value(_NEVER, output_field=DateTimeField())))
    )
    for key in ("state", "kind", "environment"):
        if params.get(key):
            pulls = pulls.filter(**{key: params[key]})
    return pulls
