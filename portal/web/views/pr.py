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
The preview shows the exact diff from the files of the change's repository, read on the forge
queue (portal.delivery.preview_jobs): the page answers at once, from a result kept a few minutes
or with what is being read, and htmx asks pr-preview-result until it fills in. Opening queues
a job per pull request on the forge queue (portal.delivery.forge_jobs: it previews again, then
writes); pr-opened follows them.
With team scope on, a member outside a changed service's owning team sees the preview with the
refusal instead of the button, and opening is refused with it (portal.kernel.accounts.teams).
The parsing lives in portal.delivery.change_requests, shared with the API and MCP.
"""

from __future__ import annotations

from urllib.parse import urlencode

import yaml
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from portal.delivery.change_builders import MAX_CHANGES_PER_PR, ChangeError
from portal.delivery.change_requests import (  # noqa: F401 - Item, Built: the names pages and tests knew here
    Built,
    Item,
    RequestError,
    build_changes,
    confirmed,
    parse_items,
    pull_requests_for,
    services_of,
)
from portal.delivery.forge_jobs import queue_opens
from portal.delivery.models import PullRequest
from portal.delivery.preview_jobs import previews_for, reading
from portal.delivery.pull_requests import DEMO_REFUSAL
from portal.delivery.rendered_diff import stored_diffs
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.accounts.teams import refusal
from portal.kernel.links import safe_http_url


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
    return render(request, "web/preview.html", _preview_context(request, kind, items, mode, built, again=True))


@require_GET
@requires_role(Role.VIEWER)
def pr_preview_result(request: HttpRequest) -> HttpResponse:
    """The preview's body once the forge worker stored it, else the progress block again (htmx polls)."""
    try:
        kind, items, mode = parse_items(request.GET)
        built = build_changes(kind, items)
    except (RequestError, ChangeError) as error:
        return render(request, "web/_preview_body.html", {"task_error": str(error), "ready": True,
                                                           "next": _safe_next(request, request.GET.get("next"))})
    context = _preview_context(request, kind, items, mode, built, again=False)
    return render(request, "web/_preview_body.html" if context["ready"] else "web/_preview_progress.html", context)


def _preview_context(
    request: HttpRequest, kind: str, items: list[Item], mode: str, built: Built, *, again: bool
) -> dict[str, object]:
    """What the page shows: the previews computed on the forge queue (stored, or being read),
    with this request's own form, team refusal and confirmation around them."""
    confirm = confirmed(request.GET)
    can_act = has_role(request.user, Role.MEMBER)
    # A member outside the owning team sees the diff, and why they cannot open it.
    team_refusal = refusal(request.user, services_of(built.changes)) if can_act else None
    spec = _spec(kind, items, mode)
    groups = pull_requests_for(built.changes, mode)
    found = previews_for(spec + ("&confirm=1" if confirm else ""), again=again)
    previews = found.previews or []
    return {
        "kind": kind,
        "mode": mode,
        "ready": found.ready,
        "task_error": found.error,
        "reading": reading(groups),
        "query": request.GET.urlencode(),
        "previews": previews,
        "spec": spec,
        "items": items,
        "left_out": built.left_out,
        "can_act": can_act and team_refusal is None,
        "team_refusal": team_refusal,
        "demo": settings.DEMO_MODE,
        "demo_refusal": DEMO_REFUSAL,
        "openable": sum(1 for p in previews if p.can_open),
        "confirm": confirm,
        "to_confirm": [p for p in previews if p.needs_confirmation],
        "next": _safe_next(request, request.GET.get("next")),
    }


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
    refused = refusal(request.user, services_of(built.changes))
    if refused is not None:
        messages.error(request, f"Not opened: {refused}")
        return redirect(reverse("pr-preview") + "?" + _spec(kind, items, mode))
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
    rows = list(
        PullRequest.objects.filter(pk__in=ids).select_related("opened_by", "rendered")
        .defer("rendered__outputs").order_by("id")
    )
    for row in rows:
        row.safe_url = safe_http_url(row.url)
        stored = getattr(row, "rendered", None)
        row.rendered_head = stored.head if stored is not None else ""
        row.rendered_diffs = stored_diffs(stored.apps) if stored is not None else []
    return {"pull_requests": rows, "running": any(r.state == PullRequest.State.OPENING for r in rows),
            "query": request.GET.urlencode()}


@require_GET
@requires_role(Role.VIEWER)
def pr_rendered(request: HttpRequest, pk: int) -> HttpResponse:
    """Every object both sides rendered, per application, at the head the diff was made at: the
    page the pull request's comment and the follow page link as the full rendered output."""
    row = get_object_or_404(PullRequest.objects.select_related("rendered"), pk=pk)
    stored = getattr(row, "rendered", None)
    outputs = [
        {"app": str(output.get("app") or ""), "before": _yaml(output.get("before")),
         "after": _yaml(output.get("after"))}
        for output in (stored.outputs if stored is not None else [])
        if isinstance(output, dict)
    ]
    return render(request, "web/rendered.html", {"pr": row, "safe_url": safe_http_url(row.url),
                                                 "head": stored.head if stored else "", "outputs": outputs})


def _yaml(objects: object) -> str:
    documents = objects if isinstance(objects, list) else []
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False) if documents else ""


def _safe_next(request: HttpRequest, target: str | None) -> str:
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return reverse("updates")
