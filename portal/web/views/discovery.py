"""/discovery (admins): running images no service claims, with where they run and a suggested
service each; tick several and add them as services at once, or ignore what is no service
(sidecars, cluster add-ons). The rules live in gitops.discovery; this view only reads the
form and shows the outcome. Every write is a POST by an admin, and audited there."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from gitops.discovery import AppRef, NewService, add_services, ignore_images, unclaimed_images, unignore_images
from gitops.models import GitOpsApp
from portal.kernel.accounts.roles import Role, requires_role


@requires_role(Role.ADMIN)
def discovery(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _act(request)
    show_ignored = request.GET.get("ignored") == "1"
    images = unclaimed_images(include_ignored=show_ignored)
    return render(request, "web/discovery.html", {"images": images, "show_ignored": show_ignored})


def _act(request: HttpRequest) -> HttpResponse:
    ticked = [r for r in request.POST.getlist("image") if r]
    action = request.POST.get("action", "")
    if not ticked:
        messages.error(request, "Tick at least one image first.")
        return redirect("discovery")
    if action == "ignore":
        done = ignore_images(ticked, request.user)
        messages.info(request, f"Ignored {len(done)} image(s): they are no longer listed.")
        return redirect("discovery")
    if action == "unignore":
        done = unignore_images(ticked, request.user)
        messages.info(request, f"{len(done)} image(s) are listed again.")
        return redirect("discovery")
    if action != "add":
        messages.error(request, "Unknown action.")
        return redirect("discovery")
    chosen = [
        NewService(repository=r, name=request.POST.get(f"name:{r}", "").strip(),
                   team=request.POST.get(f"team:{r}", "").strip())
        for r in ticked
    ]
    added = add_services(chosen, request.user)
    if added.errors:
        for error in added.errors:
            messages.error(request, error)
        messages.error(request, "No service was added.")
        return redirect("discovery")
    for service in added.services:
        apps = added.claimed.get(service.name, [])
        messages.success(request, f"Added {service.name} ({service.image_repository}): claims {len(apps)} app(s).")
    _poll_claimed(added.claimed.values())
    return redirect("discovery")


def _poll_claimed(claimed: Iterable[Iterable[AppRef]]) -> None:
    """The apps are linked; their running versions come with the next poll of the clusters
    that report them (and of their destinations, when read, for the workloads there): ask
    for it now, as adding a discovered cluster does."""
    from gitops.derive.destinations import reads_workloads
    from gitops.tasks import poll_soon

    ids = [app.id for apps in claimed for app in apps]
    apps = GitOpsApp.objects.filter(id__in=ids).select_related("cluster")
    clusters = {app.read_from_id for app in apps} | {app.cluster_id for app in apps if reads_workloads(app.cluster)}
    for cluster_id in sorted(clusters):
        poll_soon(cluster_id)
