"""/matrix: services × environments, each cell the versions that run there (portal.web.fleet),
with "Open PR → X" where a line runs behind; and the cell partial a folded cell's disclosure
loads, so that a fleet of 500 clusters draws its problems and a summary per cell, not every
line, and the lines behind a disclosure cost nothing until someone opens it. Services come
SERVICES_PER_PAGE at a time, by name: 400 services drew 2,000 lines and 870 KB in one page."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from gitops.models import RunningVersion
from gitops.queries import apps_with_ids_from
from portal.delivery.change_builders import MAX_CHANGES_PER_PR, NO_PR_COLUMNS, no_pr_reasons_of
from portal.delivery.chart_upgrades import ChartBehind, charts_behind
from portal.delivery.deployments import not_deployed_why
from portal.delivery.models import PullRequest
from portal.delivery.planner import UPGRADE
from portal.delivery.upgrades import UpgradeTargets
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.catalog.models import Service
from portal.kernel.links import CHART_SUBJECT, OfferItem
from portal.releases.versions import parse_tag
from portal.web.badges import pr_state
from portal.web.cells import CellChartOffer, CellViews, LineOffer, preview_href, release
from portal.web.fleet import CellLine, ServiceRow, service_rows
from portal.web.hotpath import folded_html, render_matrix
from portal.web.sharedpages import shared_body

SERVICES_PER_PAGE = 100


@require_safe
@requires_role(Role.VIEWER)
def matrix(request: HttpRequest) -> HttpResponse:
    can_open = has_role(request.user, Role.MEMBER)

    def body_context() -> dict:
        # Rows show a service's name and team; its image aliases (JSON) are not read.
        page = Paginator(Service.objects.only("id", "name", "team"), SERVICES_PER_PAGE).get_page(
            request.GET.get("page"))
        environments, rows = service_rows(list(page.object_list))
        offers = upgrade_offers(rows, can_open=can_open)
        render_matrix(rows, lambda row, line: offers.get(id(line)), chart_offers(can_open=can_open))
        return {"environments": environments, "rows": rows, "page": page}

    body = shared_body(request, "matrix", "web/_matrix_body.html", body_context,
                       after=lambda context: release(context["rows"]))
    if request.htmx:
        return HttpResponse(body)
    return render(request, "web/matrix.html", {"body": body})


@require_safe
@requires_role(Role.VIEWER)
def matrix_cell(request: HttpRequest) -> HttpResponse:
    """The lines a folded cell keeps behind its disclosure (`Cell.fold`), for htmx to put in
    it when opened: the same lines, offers and titles as the matrix would draw there."""
    service = get_object_or_404(Service.objects.only("id", "name", "team"), name=request.GET.get("service", ""))
    environment = request.GET.get("environment", "")
    environments, rows = service_rows([service])
    [row] = rows
    cell = next((cell for cell in row.cells if cell.environment.name == environment), None)
    if cell is None:
        raise Http404("no such environment")
    offers = upgrade_offers(rows, folded=True, can_open=has_role(request.user, Role.MEMBER))
    summary, lines = CellViews(lambda row, line: offers.get(id(line))).folded(row, cell)
    return HttpResponse(folded_html(summary, lines))


def chart_offers(*, can_open: bool) -> dict[tuple[int, str], CellChartOffer]:
    """Each cell's chart offer: the applications of a (service, environment) that pin a chart
    behind the newest version the policy accepts (`chart_upgrades.charts_behind`, a fixed handful of
    queries for the whole page, one when no chart versions are known). The oldest pin speaks
    for the cell; one application links to its preview, several to the Updates page's charts."""
    found: dict[tuple[int, str], list[ChartBehind]] = {}
    for line in charts_behind():
        if line.target and line.service is not None and line.open_pr is None:
            found.setdefault((line.service.id, line.environment), []).append(line)
    offers = {}
    for key, lines in found.items():
        first = min(lines, key=lambda line: parse_tag(line.pin.version).key)  # type: ignore[union-attr]
        assert first.target is not None
        no_pr = first.no_pr if len(lines) == 1 else ""
        if not can_open or no_pr:
            href = ""
        elif len(lines) == 1:
            href = preview_href(UPGRADE, [OfferItem(first.app.pk, CHART_SUBJECT + first.pin.ref.chart, first.target)])
        else:
            href = reverse("updates") + "#charts"
        offers[key] = CellChartOffer(first.pin.ref.chart, first.pin.version, first.target, href, len(lines), no_pr)
    return offers


def upgrade_offers(rows: list[ServiceRow], *, folded: bool = False, can_open: bool = True) -> dict[int, LineOffer]:
    """"Open PR → X" for each line that runs older than the newest release its service's
    policy accepts, keyed by the line's id(): the lines in sight of each cell, or with
    `folded` those behind its disclosure (`Cell.fold`), for the cell partial. A line that a
    pull request proposes shows its state (the one badge, `badges.pr_state`) instead:
    open or merged replaces the offer, closed without merging shows beside it. Everyone sees
    the state; only `can_open` (members) get the offer. A fixed handful of queries, whatever
    the fleet size: the targets and pull requests, the reasons merges wait, then the
    applications of only the lines that are behind."""
    targets = UpgradeTargets([row.service for row in rows])
    behind: list[tuple[ServiceRow, str, CellLine, str, str]] = []
    for row in rows:
        for cell in row.cells:
            for line in cell.fold()[1 if folded else 0]:
                current = UpgradeTargets.current(line.versions)
                target = targets.target(row.service.id, current, cell.environment.name) if current else None
                if current and target:
                    behind.append((row, cell.environment.name, line, current, target))
    if not behind:
        return {}
    shown = {
        id(line): targets.open_pr(row.service.name, environment, target)
        or targets.past_pr(row.service.name, environment, target)
        for row, environment, line, _, target in behind
    }
    why = not_deployed_why(shown.values())
    offers: dict[int, LineOffer] = {}
    waiting = []
    for item in behind:
        row, environment, line, current, target = item
        pr = shown[id(line)]
        state = pr_state(pr, why.get(pr.pk, ""), compact=True) if pr is not None else None
        # Open or merged replaces the offer; Git already pinning the target means merged and
        # waiting to deploy: nothing to propose either.
        if pr is not None and pr.state != PullRequest.State.CLOSED:
            offers[id(line)] = LineOffer(target, "", "", pr=state)
        elif target in line.pinned or not can_open:
            if state is not None:
                offers[id(line)] = LineOffer(target, "", "", pr=state)
        else:
            waiting.append((item, state))
    behind = [item for item, _ in waiting]
    closed = {id(item[2]): state for item, state in waiting}
    if not behind:
        return offers
    clusters = {c for _, _, line, _, _ in behind for c in line.cluster_ids}
    apps: dict[tuple[int, int], set[int]] = {}
    # Where each line's applications are, then their columns (`no_pr_reasons_of`) read by the
    # ids the same rows name (`apps_with_ids_from`): one join of the two kept a plan only
    # while the tables had statistics.
    running = (
        RunningVersion.objects.filter(service__in=[row.service.id for row, *_ in behind], cluster__in=clusters)
        .exclude(app=None)
        .order_by()
    )
    for service_id, cluster_id, app_id in running.values_list("service_id", "cluster_id", "app_id").distinct():
        apps.setdefault((service_id, cluster_id), set()).add(app_id)
    located = apps_with_ids_from(running.values("app_id")).values_list(*NO_PR_COLUMNS)

    # The applications that cannot get a pull request (no Git location), with why.
    no_pr = no_pr_reasons_of(located)
    for row, environment, line, current, target in behind:
        service = row.service
        found = sorted({a for c in line.cluster_ids for a in apps.get((service.id, c), ())})
        app_ids = [a for a in found if a not in no_pr]
        if found and not app_ids:
            offers[id(line)] = LineOffer(target, "", "", pr=closed.get(id(line)), no_pr=no_pr[found[0]])
            continue
        if not app_ids:
            continue
        # The line says what runs where; the title adds only what the link does (a title per
        # offer is paid for on every line of a large matrix).
        title = f"from {current}: the newest release its policy accepts is {target}"
        if len(app_ids) > MAX_CHANGES_PER_PR:
            href = reverse("updates") + "?" + urlencode({"service": service.name, "environment": environment})
            title += f" ({len(app_ids)} applications: choose them on the Updates page)"
        else:
            href = preview_href(UPGRADE, [OfferItem(app_id, service.name, target) for app_id in app_ids])
        offers[id(line)] = LineOffer(target, href, title, pr=closed.get(id(line)))
    return offers
