"""/calendar: one environment's next 14 days as a timeline of what holds deploys, and when each
of its services can next deploy. Filtered by service and cluster in the query string.

The lanes come from portal.delivery.deploy_calendar and the answers from
portal.delivery.deploy_holds (the badges' own window code); this module only lays them out:
each band's place on a 1000-wide SVG row (attributes, not inline styles) and its times in
UTC and in the window's own zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from portal.delivery.deploy_calendar import DAYS, Calendar, Lane, environment_calendar
from portal.delivery.deploy_holds import DeployHolds, NextDeploy
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.catalog.models import Cluster, Environment, Service

WIDTH = 1000  # the SVG rows' user units


@dataclass(frozen=True)
class DrawnBand:
    x: float
    width: float
    utc: str  # "Mon 23 Mar 11:00 – 13:00 UTC"
    local: str  # the same in the window's zone, "" when that is UTC


@dataclass(frozen=True)
class DrawnLane:
    lane: Lane
    bands: list[DrawnBand]
    apps_url: str


def _span_words(start: datetime, end: datetime, zone: ZoneInfo) -> str:
    start, end = start.astimezone(zone), end.astimezone(zone)
    until = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%a %d %b %H:%M}"
    return f"{start:%a %d %b %H:%M} – {until} {end.tzname()}"


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return ZoneInfo("UTC")  # as Argo CD, which falls back to UTC for a zone it cannot load


def _drawn(calendar: Calendar, lane: Lane, service: str) -> DrawnLane:
    total = (calendar.end - calendar.start).total_seconds()
    zone = _zone(lane.time_zone)
    utc = ZoneInfo("UTC")
    bands = [
        DrawnBand(
            x=round((band.start - calendar.start).total_seconds() / total * WIDTH, 2),
            width=max(round((band.end - band.start).total_seconds() / total * WIDTH, 2), 1.0),
            utc=_span_words(band.start, band.end, utc),
            local="" if lane.time_zone == "UTC" else _span_words(band.start, band.end, zone),
        )
        for band in lane.bands
    ]
    return DrawnLane(lane, bands, gitops_url(calendar.environment, lane, service))


def gitops_url(environment: str, lane: Lane, service: str) -> str:
    """/gitops filtered to the apps a lane holds, as near as its filters can say."""
    params = {"environment": environment}
    if lane.project:
        params["project"] = lane.project
    if lane.kind in ("suspended", "manual"):
        params["status"] = lane.kind
    if service:
        params["service"] = service
    return reverse("gitops") + "?" + urlencode(params)


def _choice(value: str, choices: list[str]) -> str:
    return value if value in choices else ""


@require_safe
@requires_role(Role.VIEWER)
def calendar(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    environments = list(Environment.objects.order_by("order", "name").values_list("name", flat=True))
    environment = _choice(request.GET.get("environment", ""), environments) or (environments[0] if environments
                                                                                   else "")
    clusters = list(Cluster.objects.filter(environment__name=environment).order_by("name")
                    .values_list("name", flat=True))
    services = list(Service.objects.order_by("name").values_list("name", flat=True))
    cluster = _choice(request.GET.get("cluster", ""), clusters)
    service = _choice(request.GET.get("service", ""), services)
    holds = DeployHolds.load(start, environments=[environment], services=[service] if service else None,
                             clusters=[cluster] if cluster else None)
    drawn = environment_calendar(holds, environment, start, service=service or None)
    shown_services = sorted({name for app in drawn.apps for name in app.services})
    answers: list[NextDeploy] = [answer for name in shown_services
                                 if (answer := holds.next_deploy(name, environment, now)) is not None]
    days = [(start + timedelta(days=d), round(d * WIDTH / DAYS, 2)) for d in range(DAYS)]
    return render(request, "web/calendar.html", {
        "environment": environment, "environments": environments, "clusters": clusters, "services": services,
        "params": {"environment": environment, "cluster": cluster, "service": service},
        "filtered": bool(cluster or service),
        "calendar": drawn, "lanes": [_drawn(drawn, lane, service) for lane in drawn.lanes],
        "answers": answers, "days": days, "width": WIDTH,
        "now_x": round((now - start).total_seconds() / (drawn.end - start).total_seconds() * WIDTH, 2),
        "now": now,
    })
