"""The catalog as people see it: environments, their clusters with poll status, services.

Two actions: a member may ask for a poll now; an admin may switch a cluster's polling
on or off (configuration).
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from portal.accounts.roles import Role, requires_role
from portal.audit.models import record
from portal.catalog.models import Cluster, Environment, Service


@requires_role(Role.VIEWER)
def cluster_list(request: HttpRequest) -> HttpResponse:
    environments = list(Environment.objects.all())
    clusters = list(Cluster.objects.select_related("environment").annotate(app_count=Count("apps")))
    by_env: dict[int, list[Cluster]] = {}
    for cluster in clusters:
        by_env.setdefault(cluster.environment_id, []).append(cluster)
    context = {
        "environments": [(env, by_env.get(env.id, [])) for env in environments],
        "services": Service.objects.all(),
        "cluster_count": len(clusters),
    }
    return render(request, "web/clusters.html", context)


@require_POST
@requires_role(Role.MEMBER)
def poll_now(request: HttpRequest, name: str) -> HttpResponse:
    from gitops.tasks import poll_cluster

    cluster = get_object_or_404(Cluster, name=name)
    poll_cluster.delay(cluster.id)
    record(request.user, "cluster.poll_requested", cluster.name)
    messages.info(request, f"A poll of {cluster.name} is queued; this page shows its result when it lands.")
    return redirect("clusters")


@require_POST
@requires_role(Role.ADMIN)
def set_enabled(request: HttpRequest, name: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster, name=name)
    cluster.enabled = request.POST.get("enabled") == "1"
    cluster.save(update_fields=["enabled"])
    record(request.user, "cluster.enabled" if cluster.enabled else "cluster.disabled", cluster.name)
    messages.info(request, f"Polling of {cluster.name} is {'on' if cluster.enabled else 'off'}.")
    return redirect("clusters")
