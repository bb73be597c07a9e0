"""/delivery: pull requests of the last 30 days, how long each took to run in production,
the medians over them all, what is merged but not deployed (and why), and the versions
that run in staging and wait for production.

Reads the store only, in a fixed number of queries whatever the number of rows. Both lists
(promotions waiting, pull requests) are paged on the server, each with its own page number in
the query string beside the filter (service), so a fleet where hundreds of services wait for
hundreds of production clusters draws one page, and the pager's links keep the rest of the view.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from gitops.models import GitOpsApp, Workload
from portal.delivery import leadtimes, promotions
from portal.delivery.change_builders import MAX_CHANGES_PER_PR, no_chart_pr_reasons, no_pr_reason, no_pr_reasons
from portal.delivery.deployments import TRACK_FOR, Fleet, Progress
from portal.delivery.holds import held_versions, rolled_back_on
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.links import safe_http_url
from portal.web.sharedpages import shared_body

PERIOD = timedelta(days=30)
MAX_ROWS = 500  # the period's pull requests read for the counts and medians; the API lists them all
PULL_REQUESTS_PER_PAGE = 50
PROMOTIONS_PER_PAGE = 10
# Production clusters listed per promotion on the whole page; filtered to its service, all of them.
# A version waiting for 60 clusters drew 60 buttons per row: 600 on a page, most of its bytes.
TARGETS_SHOWN = 12
GROUPS_SHOWN = 30  # "Promote <app> → prod" buttons; the rest are on their promotions' pages
MAX_CHART_PROMOTIONS = 50  # chart versions waiting shown on the page
FILTERS = ("service",)


@dataclass
class Row:
    pr: PullRequest
    lead: leadtimes.LeadTime
    progress: Progress | None  # merged and not running yet
    rolled_back_on: date | None = None  # an outside PR proposing a version held since a rollback

    @property
    def who(self) -> str:
        if self.pr.automatic:
            return "automatic"
        if self.pr.opened_outside:
            return "outside the portal"
        return self.pr.opened_by.get_username() if self.pr.opened_by else "—"

    @property
    def link(self) -> str | None:
        return safe_http_url(self.pr.url)

    @property
    def status(self) -> str:
        """running | not deployed | merged | open | opening | closed"""
        if self.pr.running_at:
            return "running"
        if self.progress is not None:
            return "not deployed"
        return self.pr.state

    @property
    def after_opening(self) -> str:
        return leadtimes.lead_time_words(self.lead.from_proposal)

    @property
    def after_merge(self) -> str:
        return leadtimes.lead_time_words(self.lead.from_merge)


@dataclass
class PromotionOffer:
    """One "Open PR → prod" button (or the PR already open for it)."""

    label: str
    cluster: str
    current: str
    # What the preview link proposes: (application, moves, back). None: no GitOps application
    # to change there, or `no_pr`.
    proposes: tuple[int | str, list[tuple[str, str, str]], str] | None
    open_pr: PullRequest | None
    no_pr: str = ""  # why no pull request can be proposed there (no Git location known)
    pinned: str = ""  # what Git pins there when it is not what runs (the PR starts from it)

    @cached_property
    def url(self) -> str | None:
        """Spelled when a page shows it: every waiting promotion has offers (the trains need
        them all) and spelling thousands of links nobody sees cost most of the page's time."""
        return promotions.preview_url(*self.proposes) if self.proposes is not None else None

    @property
    def open_pr_link(self) -> str | None:
        return safe_http_url(self.open_pr.url) if self.open_pr else None


def pull_requests(now: datetime) -> list[PullRequest]:
    since = now - PERIOD
    recent = Q(opened_at__gte=since) | Q(merged_at__gte=since) | Q(closed_at__gte=since) | Q(running_at__gte=since)
    return list(PullRequest.objects.filter(recent).select_related("opened_by").order_by("-opened_at", "-id")[:MAX_ROWS])


def rows_for(prs: list[PullRequest], now: datetime) -> list[Row]:
    waiting = [
        pr for pr in prs
        if pr.state == PullRequest.State.MERGED and pr.running_at is None and pr.to_version
        and pr.merged_at and pr.merged_at >= now - TRACK_FOR
    ]
    fleet = Fleet.for_pull_requests(waiting)
    ids = {pr.pk for pr in waiting}
    held = held_versions() if any(pr.opened_outside for pr in prs) else []
    return [
        Row(pr, leadtimes.lead_time(pr.opened_at, pr.merged_at, pr.running_at),
            fleet.progress(pr, now) if pr.pk in ids else None,
            rolled_back_on(held, pr) if pr.opened_outside else None)
        for pr in prs
    ]


def _open_promotions() -> dict[tuple[str, str, str], PullRequest]:
    """(service, cluster, version) -> a promotion PR open for it."""
    found: dict[tuple[str, str, str], PullRequest] = {}
    for pr in PullRequest.objects.filter(
        kind=PullRequest.Kind.PROMOTION, state__in=[PullRequest.State.OPENING, PullRequest.State.OPEN]
    ):
        versions = [v.strip() for v in pr.to_version.split(",")]
        for index, service in enumerate(pr.services or []):
            version = versions[index] if index < len(versions) else versions[0]
            for cluster in pr.clusters or []:
                found.setdefault((service, cluster, version), pr)
    return found


def _why_not(target: promotions.Target, no_pr: dict[int, str], outside: dict[int, Workload]) -> str:
    """Why no promotion PR can be proposed for this production target ("" when one can)."""
    if target.app_id is not None:
        return no_pr.get(target.app_id, "")
    workload = outside.get(target.workload_id) if target.workload_id is not None else None
    return no_pr_reason(workload) if workload is not None else ""


def promotion_offers(
    back: str, found: list[promotions.Promotion], groups: list[promotions.AppPromotion]
) -> tuple[
    list[tuple[promotions.Promotion, list[PromotionOffer]]],
    list[tuple[promotions.AppPromotion, str]],
    list[tuple[promotions.Train, str | None]],
]:
    """Each promotion's "Open PR → prod" per production cluster (or the PR open for it), a
    preview link per application group, and per production environment one link promoting
    everything that waits there and can be proposed (None: more moves than one request holds)."""
    pending = _open_promotions()
    no_pr = no_pr_reasons(
        [t.app_id for p in found for t in p.targets if t.app_id is not None] + [g.app_id for g in groups]
    )
    # A production workload outside GitOps: the PR goes where its portal.git.* labels say.
    outside = Workload.objects.select_related("cluster").in_bulk(
        [t.workload_id for p in found for t in p.targets if t.workload_id is not None])
    waiting = []
    for promotion in found:
        offers = [
            PromotionOffer(
                label=f"Open PR → {promotion.production}",
                cluster=target.cluster,
                current=target.current,
                pinned=target.pinned,
                proposes=(target.ref, [(promotion.service, target.start, promotion.version)], back)
                if target.ref is not None and not _why_not(target, no_pr, outside) else None,
                open_pr=pending.get((promotion.service, target.cluster, promotion.version)),
                no_pr=_why_not(target, no_pr, outside),
            )
            for target in promotion.targets
        ]
        waiting.append((promotion, offers))
    # An application with no Git location gets no group button; its lines say why.
    # A train takes what its rows offer: not a target with no Git location or a PR already open.
    blocked = {
        id(target) for promotion, row in waiting for target, offer in zip(promotion.targets, row, strict=True)
        if offer.proposes is None or offer.open_pr is not None
    }
    train_list = [
        (train, promotions.train_url(train, back) if len(train.moves) <= MAX_CHANGES_PER_PR else None)
        for train in promotions.trains(found, lambda target: id(target) in blocked)
    ]
    grouped = [
        (group, promotions.preview_url(group.app_id, group.moves, back))
        for group in groups
        if group.app_id not in no_pr
    ]
    return waiting, grouped, train_list


@dataclass(frozen=True)
class ChartPromotionOffer:
    """One "Open PR → prod" for a chart version (or why there is none)."""

    app: str
    cluster: str
    current: str
    url: str | None
    no_pr: str = ""


def chart_promotion_offers(
    back: str, service: str = ""
) -> list[tuple[promotions.ChartPromotion, list[ChartPromotionOffer]]]:
    """Chart versions pinned in staging and older in production, each production application's offer."""
    found = promotions.chart_promotions()[:MAX_CHART_PROMOTIONS]
    if service:
        found = [p for p in found if p.chart == service]
    # Where each chart version is declared (not always where the image tag is).
    no_pr = no_chart_pr_reasons(
        GitOpsApp.objects.filter(pk__in={app_id for p in found for app_id, *_ in p.targets}).select_related("cluster")
    )
    return [
        (
            p,
            [
                ChartPromotionOffer(app, cluster, current,
                           None if app_id in no_pr else promotions.chart_preview_url(app_id, p.chart, p.version,
                                                                                     current, back),
                           no_pr.get(app_id, ""))
                for app_id, app, cluster, current in p.targets
            ],
        )
        for p in found
    ]


def _filters(request: HttpRequest) -> dict[str, str]:
    return {key: request.GET.get(key, "").strip() for key in FILTERS}


def _query(params: dict[str, str], **pages: int) -> str:
    """The page's query string: its filters and the two lists' page numbers past the first."""
    kept = {k: v for k, v in params.items() if v}
    kept.update({name: str(number) for name, number in pages.items() if number > 1})
    return urlencode(kept)


def context_for(request: HttpRequest, now: datetime) -> dict:
    params = _filters(request)
    rows = rows_for(pull_requests(now), now)
    medians = leadtimes.medians(row.lead for row in rows)  # over every pull request, not one page
    if params["service"]:
        shown_rows = [row for row in rows if params["service"] in (row.pr.services or [])]
    else:
        shown_rows = rows
    back = reverse("delivery")
    found, groups = promotions.load()
    if params["service"]:
        found = [p for p in found if p.service == params["service"]]
        groups = [g for g in groups if any(service == params["service"] for service, _, _ in g.moves)]
    # Offers of every waiting promotion (a fixed number of queries), so that a train promotes all
    # of them, not only the shown page's; the table shows a page of them.
    offers, grouped, trains = promotion_offers(back, found, groups[:GROUPS_SHOWN])
    waiting = Paginator(offers, PROMOTIONS_PER_PAGE).get_page(request.GET.get("promotions_page"))
    shown_offers = None if params["service"] else TARGETS_SHOWN
    pr_page = Paginator(shown_rows, PULL_REQUESTS_PER_PAGE).get_page(request.GET.get("pr_page"))
    return {
        "chart_promotions": chart_promotion_offers(back, params["service"]),
        "rows": rows,
        "pr_page": pr_page,
        "medians": medians,
        "median_proposal": leadtimes.lead_time_words(medians.from_proposal),
        "median_merge": leadtimes.lead_time_words(medians.from_merge),
        "not_deployed": [row for row in rows if row.progress is not None],
        # (promotion, its offers shown, how many more production clusters wait)
        "promotions": [(p, row[:shown_offers], len(row[shown_offers:]) if shown_offers else 0)
                       for p, row in waiting.object_list],
        "promotions_page": waiting,
        "groups": grouped,
        "trains": trains,
        "more_groups": max(0, len(groups) - GROUPS_SHOWN),
        "params": params,
        "filter_query": _query(params),
        "refresh_query": _query(params, promotions_page=waiting.number, pr_page=pr_page.number),
        "promotions_query": _query(params, pr_page=pr_page.number),
        "pr_query": _query(params, promotions_page=waiting.number),
        "service_choices": sorted({p.service for p in found} | {s for row in rows for s in row.pr.services or []})
        if not params["service"] else [params["service"]],
        "can_act": has_role(request.user, Role.MEMBER),
        "period_days": PERIOD.days,
    }


@require_safe
@requires_role(Role.VIEWER)
def delivery(request: HttpRequest) -> HttpResponse:
    body = shared_body(request, "delivery", "web/_delivery_body.html",
                       lambda: context_for(request, timezone.now()))
    if getattr(request, "htmx", False):
        return HttpResponse(body)
    return render(request, "web/delivery.html", {"body": body})
