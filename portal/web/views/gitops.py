"""/gitops: every application on every cluster, problems first, paged on the server.

Filters live in the query string so a filtered view can be shared; htmx swaps only the
table when a filter changes or the 30-second refresh fires.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, QuerySet, Window
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.accounts.roles import Role, requires_role
from portal.catalog.models import Cluster, Environment
from portal.web.badges import badges_for

PAGE_SIZE = 50
SORTS = {
    "problems": ("problem_rank", "cluster__environment__order", "cluster__name", "namespace", "name"),
    "name": ("name", "cluster__name", "namespace"),
    "cluster": ("cluster__name", "namespace", "name"),
    "environment": ("cluster__environment__order", "cluster__name", "name"),
    "sync_since": ("sync_since", "name"),
    "health_since": ("health_since", "name"),
}
STATUS_FILTERS = {
    "degraded": Q(health_status__in=("Degraded", "Missing")),
    "missing": Q(health_status="Missing"),
    "outofsync": Q(sync_status="OutOfSync"),
    "progressing": Q(health_status="Progressing"),
    "healthy": Q(health_status="Healthy", sync_status="Synced"),
    "suspended": Q(suspended=True),
    "manual": Q(manual_sync=True),
}


def filtered_apps(params: dict[str, str], at=None) -> QuerySet[GitOpsApp]:
    at = at or timezone.now()
    apps = GitOpsApp.objects.select_related("cluster", "cluster__environment")
    if params.get("cluster"):
        apps = apps.filter(cluster__name=params["cluster"])
    if params.get("environment"):
        apps = apps.filter(cluster__environment__name=params["environment"])
    if params.get("tool") in ("argo", "flux"):
        apps = apps.filter(tool=params["tool"])
    if params.get("project"):
        apps = apps.filter(project=params["project"])
    status = params.get("status", "")
    if status == "blocked":
        apps = apps.filter(sync_blocked=True).filter(Q(sync_blocked_until__isnull=True) | Q(sync_blocked_until__gt=at))
    elif status in STATUS_FILTERS:
        apps = apps.filter(STATUS_FILTERS[status])
    if params.get("q"):
        text = params["q"][:200]
        apps = apps.filter(
            Q(name__icontains=text) | Q(namespace__icontains=text) | Q(repo_url__icontains=text)
            | Q(path__icontains=text) | Q(chart__icontains=text)
        )
    if params.get("attention") == "1":
        apps = apps.needing_attention(at)
    return apps.order_by(*SORTS.get(params.get("sort", ""), SORTS["problems"]))


def counted_page(apps: QuerySet[GitOpsApp], number: str | None) -> Page:
    """One page of `apps` and how many match, in one pass over the filtered rows: the total
    rides along each row (COUNT(*) OVER ()), where a Paginator would filter a second time
    to count. Worth it for a text search, which reads every row anyway; without one, the
    first page comes from an index and the Paginator's count is cheap, while a window
    would read and sort every row. A page past the end falls back to the Paginator, which
    shows the last one."""
    paginator = Paginator(apps, PAGE_SIZE)
    try:
        wanted = int(number or 1)
    except ValueError:
        wanted = 1  # as Paginator.get_page: not a number, the first page
    if wanted < 1:
        return paginator.get_page(wanted)  # as Paginator.get_page: the last page
    start = (wanted - 1) * PAGE_SIZE
    rows = list(apps.annotate(matching=Window(Count("id")))[start : start + PAGE_SIZE])
    if not rows and wanted > 1:
        return paginator.get_page(wanted)
    paginator.count = rows[0].matching if rows else 0  # type: ignore[misc]  # a cached_property, known now
    return Page(rows, wanted, paginator)


@requires_role(Role.VIEWER)
def gitops_list(request: HttpRequest) -> HttpResponse:
    keys = ("cluster", "environment", "tool", "project", "status", "q", "attention", "sort")
    params = {key: request.GET.get(key, "").strip() for key in keys}
    now = timezone.now()
    # The list never shows the raw object or its history: a page of 50 need not decode them.
    apps = filtered_apps(params, now).defer("raw", "history", "conditions", "sources", "synced_revisions")
    if params["q"]:
        page = counted_page(apps, request.GET.get("page"))
    else:
        page = Paginator(apps, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(app, badges_for(app, app.cluster, now), app.needs_attention(now)) for app in page.object_list]
    query = urlencode({k: v for k, v in params.items() if v})
    context = {
        "rows": rows,
        "page": page,
        "params": params,
        "query": query,
        "clusters": Cluster.objects.values_list("name", flat=True),
        "environments": Environment.objects.values_list("name", flat=True),
        "projects": GitOpsApp.objects.exclude(project="")
        .values_list("project", flat=True)
        .distinct()
        .order_by("project"),
        "statuses": ["degraded", "missing", "outofsync", "progressing", "healthy", "suspended", "manual", "blocked"],
        "sorts": list(SORTS),
    }
    template = "web/_gitops_table.html" if request.htmx else "web/gitops.html"
    return render(request, template, context)
