"""/gitops: every application on every cluster, problems first, paged on the server.

Filters live in the query string so a filtered view can be shared; htmx swaps only the
table when a filter changes or the 30-second refresh fires.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, IntegerField, OrderBy, Q, QuerySet, Value, Window
from django.db.models.functions import Concat
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from forges import weblinks
from gitops.appfilter import SORTS, STATUSES, GitOpsAppFilter
from gitops.models import GitOpsApp
from gitops.queries import project_names
from portal.delivery.current_pins import pin_summary, pinned_versions
from portal.delivery.deployments import TRACK_FOR, not_deployed_why
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.kernel.links import argocd_links
from portal.web.badges import badges_for, finding_badges
from portal.web.rollback_offers import offers_for_page
from portal.web.sharedpages import shared_body

PAGE_SIZE = 50


def counted_page(apps: QuerySet[GitOpsApp], number: str | None, listed: QuerySet[GitOpsApp]) -> Page:
    """One page of `apps` and how many match, in one pass over the filtered rows: the total
    rides along each row (COUNT(*) OVER ()), where a Paginator would filter a second time
    to count. Worth it for a text search, which reads every row anyway; without one, the
    first page comes from an index and the Paginator's count is cheap, while a window
    would read and sort every row. The pass reads only the keys (the row's id, the count
    and what the order needs): a search matching 20,000 of 50,000 apps counted and sorted
    them whole, spilling to disk. The page's 50 rows are then read by id from `listed`: the
    same columns, and none of the filters, which the ids passed already (a text search tested
    again on each row is work for nothing). A page past the end falls back to the Paginator,
    which shows the last one."""
    paginator = Paginator(apps, PAGE_SIZE)
    try:
        wanted = int(number or 1)
    except ValueError:
        wanted = 1  # as Paginator.get_page: not a number, the first page
    if wanted < 1:
        return paginator.get_page(wanted)  # as Paginator.get_page: the last page
    start = (wanted - 1) * PAGE_SIZE
    keys = list(_in_scanned_order(apps).annotate(matching=Window(Count("id")))
                .values_list("pk", "matching")[start : start + PAGE_SIZE])
    if not keys and wanted > 1:
        return paginator.get_page(wanted)
    found = listed.order_by().in_bulk([pk for pk, _ in keys])
    rows = [found[pk] for pk, _ in keys if pk in found]  # one removed in between is left out
    paginator.count = keys[0][1] if keys else 0  # type: ignore[misc]  # a cached_property, known now
    return Page(rows, wanted, paginator)


def _in_scanned_order(apps: QuerySet[GitOpsApp]) -> QuerySet[GitOpsApp]:
    """`apps` in the same order, its first key spelled as an expression no index answers
    (`problem_rank + 0`, `name || ''`). A text search tests every row, so the rows are best
    read in the table's own order and sorted; with the bare column PostgreSQL walked the
    column's index instead, hoping the LIMIT would stop it early, and visited every row in
    index order: 229 ms where the scan and sort take 89 (a fifth of 100,000 apps matching)."""
    order = list(apps.query.order_by)
    first = order[0] if order else None
    if not isinstance(first, OrderBy) or not isinstance(first.expression, F) or "__" in first.expression.name:
        return apps  # a computed key (an environment's order, a time) or a cluster's: not this table's index
    column = first.expression.name
    if isinstance(GitOpsApp._meta.get_field(column), IntegerField):
        unindexed = F(column) + 0
    else:
        unindexed = Concat(F(column), Value(""))
    order[0] = OrderBy(unindexed, descending=first.descending)
    return apps.order_by(*order)


def _pins_of(app: GitOpsApp, pins: dict[tuple[int, str], list[str]]) -> list[tuple[str, str]]:
    """(service, "Git pins X[, runs Y]") for each service of the app whose pins were read."""
    found = []
    for (app_id, service), versions in sorted(pins.items()):
        if app_id == app.pk:
            runs = (app.running or {}).get(service, [])
            found.append((service, pin_summary(versions, runs) or f"Git pins {', '.join(versions)}"))
    return found


def pull_requests_for(apps: list[GitOpsApp], now: datetime) -> dict[int, list[PullRequest]]:
    """app id -> the pull requests that change it: open (or being opened), and merged ones whose
    version does not run yet, for the app's services in its environment (and cluster, when the
    PR names clusters). One query for the page, whatever its number of rows."""
    if not apps:
        return {}
    environments = {app.cluster.environment.name for app in apps if app.cluster.environment}
    live = Q(state__in=[PullRequest.State.OPEN, PullRequest.State.OPENING]) | Q(
        state=PullRequest.State.MERGED, running_at__isnull=True, merged_at__gte=now - TRACK_FOR
    )
    prs = list(PullRequest.objects.filter(live, environment__in=environments).order_by("-opened_at", "-id")[:500])
    found: dict[int, list[PullRequest]] = {}
    for app in apps:
        environment = app.cluster.environment.name if app.cluster.environment else None
        services = set(app.running or {})
        for pr in prs:
            if pr.environment != environment:
                continue
            # A chart's version change names no service: it changes the apps that install the chart.
            if not services & set(pr.services or []) and not (app.chart and pr.names_chart(app.chart)):
                continue
            if pr.clusters and app.cluster.name not in pr.clusters:
                continue
            found.setdefault(app.pk, []).append(pr)
    return found


@require_safe
@requires_role(Role.VIEWER)
def gitops_list(request: HttpRequest) -> HttpResponse:
    # The filters and the table are the same for every viewer of this query (sharedpages): an htmx
    # filter change swaps the table only, a full page draws the filters too.
    if request.htmx:
        return HttpResponse(shared_body(request, "gitops-table", "web/_gitops_table.html",
                                        lambda: _context(request)))
    body = shared_body(request, "gitops", "web/_gitops_content.html", lambda: _context(request))
    return render(request, "web/gitops.html", {"body": body})


# The filters _gitops_content.html shows a control for; every other one is kept hidden.
FORM_CONTROLS = frozenset({"q", "environment", "service", "cluster", "tool", "project", "status", "sort", "attention"})


def _context(request: HttpRequest) -> dict:
    # Every name the filter knows (the API's too), as typed: the form shows them and the
    # pager's links keep them. A value the filter cannot read is ignored, not an error.
    params = {key: request.GET.get(key, "").strip() for key in GitOpsAppFilter.base_filters}
    now = timezone.now()
    # The list never shows the raw object or its history: a page of 50 need not decode them
    # (its sources stay: the synced revision's commit link reads the primary source's ref).
    listed = GitOpsApp.objects.select_related("cluster", "cluster__environment", "cluster__poll",
                                              "argocd_instance").defer(
        "raw", "history", "conditions", "synced_revisions", "health_rules"
    ).with_rule_words()
    apps: QuerySet[GitOpsApp] = GitOpsAppFilter(request.GET, listed, at=now).qs
    if params["q"]:
        page = counted_page(apps, request.GET.get("page"), listed)
    else:
        page = Paginator(apps, PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    pins = pinned_versions([app.pk for app in shown])
    prs = pull_requests_for(shown, now)
    why = not_deployed_why({pr.pk: pr for found in prs.values() for pr in found}.values(), now)
    for found in prs.values():
        for pr in found:
            pr.not_deployed_why = why.get(pr.pk, "")  # "merged, not deployed — why" in its badge
    for app in shown:
        # The synced revision links to its commit on the forge, where one can be built safely.
        app.synced_commit_url = weblinks.commit_url(app.repo_url, app.synced_commit())
    marked = finding_badges([app.pk for app in shown])
    rows = [
        (app, badges_for(app, app.cluster, now) + ([marked[app.pk]] if app.pk in marked else []),
         app.needs_attention(now),
         argocd_links(app.argocd_instance, app.namespace, app.name) if app.tool == "argo" else None,
         _pins_of(app, pins), prs.get(app.pk, []))
        for app in shown
    ]
    query = urlencode({k: v for k, v in params.items() if v})
    context = {
        "rows": rows,
        "rollbacks": offers_for_page(request.user, page.object_list),
        "page": page,
        "params": params,
        "query": query,
        "clusters": Cluster.objects.values_list("name", flat=True),
        "environments": Environment.objects.values_list("name", flat=True),
        "services": Service.objects.order_by("name").values_list("name", flat=True),
        # A filter the form has no control for (the API's names, as links carry them) rides along
        # hidden, so that changing another filter does not drop it.
        "kept": [(name, value) for name, value in params.items() if value and name not in FORM_CONTROLS],
        "query_shown": urlencode({k: v for k, v in params.items() if v and k in FORM_CONTROLS}),
        "projects": project_names(),
        "statuses": STATUSES,
        "sorts": SORTS,
    }
    return context
