"""The pull request preview (GET, anyone who may read) and opening it (POST, members and admins).

The change travels in the URL, so any page can link to its preview:
    /pr/preview?kind=upgrade&service=checkout&app=12&to=1.7.0
    /pr/preview?kind=upgrade&item=12:checkout:1.7.0&item=14:cart:2.1.0&mode=grouped
    /pr/preview?kind=upgrade&service=vault&app=w31&to=1.18.0   (w: a workload no GitOps tool deploys,
    a Nomad job, a Compose or ECS service, changed where its portal.git.* labels say)
(`mode=grouped`: one pull request per repository, branch and environment; `each`: one per line).
A chart version change names the chart instead of a service: `item=12:chart=notifications:0.4.0`.
`confirm=1` says the person chose the default branch for an application that follows a tag
(the preview asks first; opening carries it).
The preview is the one page that reads a forge while a person waits: it reads the files of
the change's repository to show the exact diff. Opening queues a job per pull request on the
forge queue (portal.delivery.forge_jobs: it previews again, then writes); pr-opened follows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from forges.pins.parsecache import kept_parses
from gitops.models import ATTENTION_HEALTH, GitOpsApp, Workload
from portal.delivery.change_builders import (
    MAX_CHANGES_PER_PR,
    ChangeError,
    change_for_chart,
    change_for_rollback,
    change_for_workload,
    change_forward,
    group_changes,
)
from portal.delivery.change_previews import preview_change
from portal.delivery.forge_jobs import queue_opens
from portal.delivery.models import PullRequest
from portal.delivery.planner import KINDS, ROLLBACK, UPGRADE, Change
from portal.delivery.pull_requests import DEMO_REFUSAL
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.catalog.models import Service
from portal.kernel.links import CHART_SUBJECT, EACH, GROUPED, safe_http_url
from portal.releases.excerpts import notes_for, share

CONFIRM = "confirm"  # the default branch chosen for an application that follows a tag
CHART_ITEM = CHART_SUBJECT  # an item's "service" that names a chart: a chart version change


def confirmed(params: QueryDict) -> bool:
    return params.get(CONFIRM) == "1"


class RequestError(ValueError):
    pass


@dataclass(frozen=True)
class Item:
    app_id: int | None  # a GitOps application, or
    service: str
    to_version: str
    from_version: str = ""
    workload_id: int | None = None  # a workload outside GitOps (gitops.platforms)

    @property
    def target(self) -> str:
        """How the URL names what the change lands in: `12` or `w31`."""
        return f"w{self.workload_id}" if self.workload_id is not None else str(self.app_id)


def parse_items(params: QueryDict) -> tuple[str, list[Item], str]:
    """(kind, items, mode) from the query string or form; RequestError when it does not read."""
    kind = params.get("kind") or UPGRADE
    if kind not in KINDS:
        raise RequestError(f"unknown kind {kind!r}")
    mode = params.get("mode") or GROUPED
    if mode not in (GROUPED, EACH):
        raise RequestError(f"unknown mode {mode!r}")
    items: list[Item] = []
    if params.get("service") or params.get("app"):
        items.append(_item(params.get("app", ""), params.get("service", ""), params.get("to", ""), params.get("from")))
    for raw in params.getlist("item"):
        parts = raw.split(":")
        if len(parts) not in (3, 4):
            raise RequestError(f"an item is app:service:version, not {raw!r}")
        items.append(_item(*parts))
    if not items:
        raise RequestError("Choose at least one service to change.")
    if len(items) > MAX_CHANGES_PER_PR:
        raise RequestError(f"At most {MAX_CHANGES_PER_PR} changes at once.")
    return kind, list(dict.fromkeys(items)), mode


def _item(app: str, service: str, to: str, from_version: str | None = None) -> Item:
    workload = app[1:] if app.startswith("w") else None
    if not (workload or app).isdigit() or not service or not to:
        raise RequestError("A change names an application (id), a service and a target version.")
    if workload is not None:
        return Item(None, service, to, from_version or "", workload_id=int(workload))
    return Item(int(app), service, to, from_version or "")


@dataclass
class Built:
    """The changes a request names, and the items left out of a request of several, with why
    (a cluster whose Git already pins the version: merged, waiting to deploy)."""

    changes: list[Change]
    left_out: list[str]


def build_changes(kind: str, items: list[Item]) -> Built:
    """The request's changes. One item that cannot become a change fails the request; of
    several, it is left out and said so, unless none can be made."""
    apps = {
        a.pk: a
        for a in GitOpsApp.objects.filter(pk__in=[i.app_id for i in items if i.app_id is not None])
        .select_related("cluster__environment")
    }
    workloads = {
        w.pk: w
        for w in Workload.objects.filter(pk__in=[i.workload_id for i in items if i.workload_id is not None])
        .select_related("cluster__environment")
    }
    services = {s.name: s for s in Service.objects.filter(name__in=[i.service for i in items])}
    built = Built([], [])
    errors: list[str] = []
    for item in items:
        try:
            built.changes.append(_change_of(kind, item, len(items), apps, workloads, services))
        except ChangeError as error:
            if len(items) == 1:
                raise
            errors.append(str(error))
            where = apps.get(item.app_id) if item.app_id is not None else workloads.get(item.workload_id or 0)
            named = f"{where.name} on {where.cluster.name}" if where is not None else item.target
            built.left_out.append(f"{named}: {error}")
    if not built.changes:
        raise ChangeError("; ".join(dict.fromkeys(errors)))
    return built


def _change_of(
    kind: str,
    item: Item,
    count: int,
    apps: dict[int, GitOpsApp],
    workloads: dict[int, Workload],
    services: dict[str, Service],
) -> Change:
    if item.workload_id is not None:
        workload, service = workloads.get(item.workload_id), services.get(item.service)
        if workload is None or service is None:
            raise RequestError(f"No workload {item.workload_id} or no service {item.service!r}.")
        notes = notes_for(service, item.to_version, max_chars=share(count))
        return change_for_workload(kind, workload, service, item.to_version,
                                   from_version=item.from_version or None, release_notes=notes)
    if item.service.startswith(CHART_ITEM):
        chart_app = apps.get(item.app_id)  # type: ignore[arg-type]
        if chart_app is None:
            raise RequestError(f"No application {item.app_id}.")
        failure, since = _failure(chart_app) if kind == ROLLBACK else ("", None)
        return change_for_chart(kind, chart_app, item.to_version, from_version=item.from_version or None,
                                chart=item.service.removeprefix(CHART_ITEM), failure=failure, failing_since=since)
    app, service = apps.get(item.app_id), services.get(item.service)  # type: ignore[arg-type]
    if app is None or service is None:
        raise RequestError(f"No application {item.app_id} or no service {item.service!r}.")
    start = item.from_version or None
    if kind == ROLLBACK:
        failure, since = _failure(app)
        return change_for_rollback(app, service, item.to_version, from_version=start, failure=failure,
                                   failing_since=since)
    # Ticked together, the services may share one pull request: so they share its room.
    notes = notes_for(service, item.to_version, max_chars=share(count))
    return change_forward(kind, app, service, item.to_version, from_version=start, release_notes=notes)


def _failure(app: GitOpsApp) -> tuple[str, datetime | None]:
    """What a rollback's description says went wrong, and since when (nothing when it is healthy now)."""
    if app.health_status not in ATTENTION_HEALTH:
        return "", None
    failure = f"{app.name} on {app.cluster.name} is {app.health_status}"
    if app.health_message:
        failure += f" ({app.health_message[:300]})"
    return failure, app.health_since


def pull_requests_for(changes: list[Change], mode: str) -> list[tuple[Change, ...]]:
    if mode == EACH:
        return [(change,) for change in changes]
    return group_changes(changes)


def _spec(kind: str, items: list[Item], mode: str) -> str:
    pairs: list[tuple[str, str]] = [("kind", kind), ("mode", mode)]
    pairs += [
        ("item", ":".join([i.target, i.service, i.to_version] + ([i.from_version] if i.from_version else [])))
        for i in items
    ]
    return urlencode(pairs)


@require_GET
@requires_role(Role.VIEWER)
def pr_preview(request: HttpRequest) -> HttpResponse:
    if not any(key in request.GET for key in ("item", "service", "app")):
        messages.info(request, "Choose what to change on Updates, a service page or Delivery first.")
        return redirect("updates")
    try:
        kind, items, mode = parse_items(request.GET)
        built = build_changes(kind, items)
    except (RequestError, ChangeError) as error:
        return render(request, "web/preview.html", {"error": str(error)}, status=400)
    confirm = confirmed(request.GET)
    with kept_parses():  # the files of a commit previewed before are not parsed again either
        previews = [preview_change(group, confirm_default_branch=confirm)
                    for group in pull_requests_for(built.changes, mode)]
    can_act = has_role(request.user, Role.MEMBER)
    context = {
        "kind": kind,
        "mode": mode,
        "previews": previews,
        "spec": _spec(kind, items, mode),
        "items": items,
        "left_out": built.left_out,
        "can_act": can_act,
        "demo": settings.DEMO_MODE,
        "demo_refusal": DEMO_REFUSAL,
        "openable": sum(1 for p in previews if p.can_open),
        "confirm": confirm,
        "to_confirm": [p for p in previews if p.needs_confirmation],
        "next": _safe_next(request, request.GET.get("next")),
    }
    return render(request, "web/preview.html", context)


@requires_role(Role.MEMBER)
def pr_open(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        # Opening is a POST; a GET (a bookmarked or pasted link) shows the preview instead.
        query = request.GET.urlencode()
        return redirect(reverse("pr-preview") + (f"?{query}" if query else ""))
    try:
        kind, items, mode = parse_items(request.POST)
        built = build_changes(kind, items)
    except (RequestError, ChangeError) as error:
        messages.error(request, str(error))
        return redirect("updates")
    # Queued as jobs on the forge queue; the follow page shows each one's steps as it runs.
    results = queue_opens(pull_requests_for(built.changes, mode), request.user,
                          confirm_default_branch=confirmed(request.POST))
    opened = [result.pull_request.pk for result in results if result.pull_request is not None]
    for result in results:
        if not result.ok:
            messages.error(request, result.message)
    url = reverse("pr-opened")
    if opened:
        url += "?" + urlencode([("id", pk) for pk in opened])
    return redirect(url)


@require_GET
@requires_role(Role.VIEWER)
def pr_opened(request: HttpRequest) -> HttpResponse:
    ids = [int(i) for i in request.GET.getlist("id") if i.isdigit()][:MAX_CHANGES_PER_PR]
    return render(request, "web/opened.html", _opened_context(request, ids))


@require_GET
@requires_role(Role.VIEWER)
def pr_opened_rows(request: HttpRequest) -> HttpResponse:
    """The follow page's rows alone (htmx polls it while a job runs)."""
    ids = [int(i) for i in request.GET.getlist("id") if i.isdigit()][:MAX_CHANGES_PER_PR]
    return render(request, "web/opened_rows.html", _opened_context(request, ids))


def _opened_context(request: HttpRequest, ids: list[int]) -> dict[str, object]:
    rows = list(PullRequest.objects.filter(pk__in=ids).select_related("opened_by").order_by("id"))
    for row in rows:
        row.safe_url = safe_http_url(row.url)
    return {"pull_requests": rows, "running": any(r.state == PullRequest.State.OPENING for r in rows),
            "query": request.GET.urlencode()}


def _safe_next(request: HttpRequest, target: str | None) -> str:
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return reverse("updates")
