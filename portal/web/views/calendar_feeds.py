"""Calendar feeds: the page where a user makes and revokes secret feed addresses, and the
feeds themselves (`.ics`, per environment or per service) that calendar apps fetch.

A calendar app sends no bearer token, so the secret is in the address
(portal.kernel.accounts.calendarfeeds). An unknown or revoked secret, or one whose user may no
longer read the portal, answers 404 exactly like a feed that does not exist: the address gives
nothing away. A feed shows what its user sees on /calendar (reading is not team-scoped in the
portal: team scope limits actions, not what a viewer may see).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from portal.delivery.deploy_calendar import environment_calendar
from portal.delivery.deploy_holds import DeployHolds
from portal.kernel.accounts import calendarfeeds
from portal.kernel.accounts.models import CalendarFeed
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.catalog.models import Environment, Service
from portal.web import ics_feeds

CONTENT_TYPE = "text/calendar; charset=utf-8"


@never_cache  # the one response that shows a new secret must not be kept by any cache
@requires_role(Role.VIEWER)
def feeds(request: HttpRequest) -> HttpResponse:
    created = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            feed, plain = calendarfeeds.issue(request.user, request.POST.get("name", ""))
            # Rendered, not redirected: the secret lives only in this response.
            created = {"feed": feed, "environments": _addresses(request, plain, "calendar-feed-environment",
                                                               Environment.objects.order_by("order", "name")),
                       "services": _addresses(request, plain, "calendar-feed-service",
                                              Service.objects.order_by("name"))}
        elif action == "revoke":
            feed_id = request.POST.get("feed", "")
            if feed_id.isdigit() and calendarfeeds.revoke(request.user, int(feed_id)):
                messages.success(request, "Feed revoked: its addresses answer 404 from now on.")
            else:
                messages.error(request, "No such active feed.")
            return redirect("calendar-feeds")
        else:
            messages.error(request, "Unknown action.")
            return redirect("calendar-feeds")
    return render(request, "web/calendar_feeds.html", {
        "feeds": CalendarFeed.objects.filter(user=request.user), "created": created,
    })


def _addresses(request: HttpRequest, plain: str, view: str, rows: object) -> list[tuple[str, str]]:
    names = rows.values_list("name", flat=True)  # type: ignore[attr-defined]
    return [(name, request.build_absolute_uri(reverse(view, args=[plain, name]))) for name in names]


def _resolved(secret: str) -> CalendarFeed:
    """The feed of this secret, or 404 before anything else is read."""
    feed = calendarfeeds.resolve(secret)
    if feed is None:
        raise Http404("No such feed.")
    calendarfeeds.touch(feed)
    return feed


def _feed_response(request: HttpRequest, title: str, environments: list[str], service: str | None) -> HttpResponse:
    now = timezone.now()
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    holds = DeployHolds.load(start, environments=environments, services=[service] if service else None)
    calendars = [environment_calendar(holds, name, start, service=service) for name in environments]

    def link(environment: str) -> str:
        query = {"environment": environment, **({"service": service} if service else {})}
        return request.build_absolute_uri(reverse("calendar") + "?" + urlencode(query))

    body = ics_feeds.feed(title, calendars, link, now)
    response = HttpResponse(body, content_type=CONTENT_TYPE)
    response["Cache-Control"] = "private, no-store"
    return response


@require_safe
def environment_feed(request: HttpRequest, secret: str, name: str) -> HttpResponse:
    _resolved(secret)
    if not Environment.objects.filter(name=name).exists():
        raise Http404("No such feed.")
    return _feed_response(request, f"Deploys to {name}", [name], None)


@require_safe
def service_feed(request: HttpRequest, secret: str, name: str) -> HttpResponse:
    _resolved(secret)
    if not Service.objects.filter(name=name).exists():
        raise Http404("No such feed.")
    environments = list(Environment.objects.order_by("order", "name").values_list("name", flat=True))
    return _feed_response(request, f"Deploys of {name}", environments, name)
