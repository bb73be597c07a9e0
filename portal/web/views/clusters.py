"""The catalog as people see it: environments, their clusters with poll status, services.

Clusters come CLUSTERS_PER_PAGE at a time, in environment order then by name, discovered
destinations last: a row carries its poll state, warnings and forms, so a fleet of 1,000
clusters on one page weighed 700 KB and took a second to draw. Each environment's heading
says how many clusters it has in all, so a page of one environment's tail still reads right.

Actions: a member may ask for a poll now; an admin may switch a cluster's polling on or
off (configuration), add a discovered destination (a cluster an Argo CD instance deploys to
that no catalog cluster matched) to an environment in one click, the environment suggested
from its name, and create or revoke the token of a cluster's in-cluster agent (shown once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from gitops.clusterpoll import PollState
from gitops.derive.topology import suggest_environment
from gitops.models import GitOpsApp
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.audit.models import record
from portal.kernel.catalog import agents
from portal.kernel.catalog.models import AgentToken, Cluster, Environment, Service


@dataclass(frozen=True)
class ClusterRow:
    """A catalog cluster with what the page adds: its app count, its live agent tokens and how its
    polls stand (gitops.clusterpoll.ClusterPoll.state; None before its first poll)."""

    cluster: Cluster
    app_count: int
    agent_tokens: list[AgentToken] = field(default_factory=list)
    poll_state: PollState | None = None


CLUSTERS_PER_PAGE = 100


@require_safe
@requires_role(Role.VIEWER)
def cluster_list(request: HttpRequest) -> HttpResponse:
    # Meta.ordering does not apply to a grouped query: said again.
    environments = list(Environment.objects.annotate(cluster_count=Count("clusters")).order_by("order", "name"))
    listed = Cluster.objects.select_related("environment", "poll").order_by(
        F("environment__order").asc(nulls_last=True), "environment__name", "name"
    )
    page = Paginator(listed, CLUSTERS_PER_PAGE).get_page(request.GET.get("page"))
    clusters = list(page.object_list)
    rows = _rows(clusters)
    by_env: dict[int, list[ClusterRow]] = {}
    discovered: list[tuple[ClusterRow, str]] = []
    names = [env.name for env in environments]
    for row in rows:
        if row.cluster.environment_id is None:
            discovered.append((row, suggest_environment(row.cluster.destination_label, names)))
        else:
            by_env.setdefault(row.cluster.environment_id, []).append(row)
    # An environment shows where its clusters are; one without any, on the first page only.
    shown = [(env, by_env.get(env.id, [])) for env in environments
             if env.id in by_env or (env.cluster_count == 0 and page.number == 1)]
    context = {
        "environments": shown,
        "all_environments": environments,
        "discovered": discovered,
        "page": page,
        "services": Service.objects.only("name", "image_repository", "team"),  # not its aliases (JSON)
        "cluster_count": sum(env.cluster_count for env in environments),
    }
    return render(request, "web/clusters.html", context)


def _rows(clusters: list[Cluster]) -> list[ClusterRow]:
    """The page's clusters with their app counts, live agent tokens and poll states: two
    queries for the page, each reading only its clusters' rows (the apps' cluster index)."""
    ids = [cluster.id for cluster in clusters]
    # Counted from the apps' cluster index alone: grouping the join by every cluster column
    # read each application row (raw objects and all) to count them.
    app_counts = dict(
        GitOpsApp.objects.filter(cluster_id__in=ids).order_by().values_list("cluster_id").annotate(Count("cluster_id"))
    )
    tokens: dict[int, list[AgentToken]] = {}
    for token in AgentToken.objects.filter(revoked_at__isnull=True, cluster_id__in=ids,
                                           cluster__connection=Cluster.Connection.AGENT):
        tokens.setdefault(token.cluster_id, []).append(token)
    now = timezone.now()
    return [ClusterRow(cluster, app_counts.get(cluster.id, 0), tokens.get(cluster.id, []), _poll_state(cluster, now))
            for cluster in clusters]


def _poll_state(cluster: Cluster, now: datetime) -> PollState | None:
    poll = getattr(cluster, "poll", None)  # gitops.ClusterPoll, made by the first poll
    return poll.state(now) if poll is not None else None


@require_POST
@requires_role(Role.MEMBER)
def poll_now(request: HttpRequest, name: str) -> HttpResponse:
    from gitops.tasks import poll_soon

    cluster = get_object_or_404(Cluster, name=name)
    poll_soon(cluster.id)
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


@require_POST
@requires_role(Role.ADMIN)
def add_discovered(request: HttpRequest, name: str) -> HttpResponse:
    """A discovered destination joins an environment: its apps count there from now on
    (matrix, notifications, upgrades), their versions as its Argo CD reports them until an
    admin gives it connection details of its own."""
    cluster = get_object_or_404(Cluster, name=name)
    if not cluster.discovered:
        messages.info(request, f"{cluster.name} is in the catalog already.")
        return redirect("clusters")
    environment = Environment.objects.filter(name=request.POST.get("environment", "")).first()
    if environment is None:
        messages.error(request, f"Choose an environment for {cluster.name}.")
        return redirect("clusters")
    cluster.environment = environment
    cluster.discovered = False
    cluster.enabled = True
    cluster.save(update_fields=["environment", "discovered", "enabled"])
    record(request.user, "cluster.added", cluster.name, environment=environment.name,
           destination=cluster.destination_label)
    # Its apps run services only once it has an environment: the next poll of the Argo CD
    # that reports them links them; ask for it now.
    from gitops.tasks import poll_soon

    for read_from in set(cluster.apps.values_list("read_from_id", flat=True)):
        poll_soon(read_from)
    messages.info(request, f"{cluster.name} is in {environment.name}; its apps are filed there from the next poll.")
    return redirect("clusters")


@require_POST
@requires_role(Role.ADMIN)
def create_agent_token(request: HttpRequest, name: str) -> HttpResponse:
    """A token for the cluster's agent, on a page of its own: the only time it is shown."""
    cluster = get_object_or_404(Cluster, name=name)
    if cluster.connection != Cluster.Connection.AGENT:
        messages.error(request, f"{cluster.name} is not read by an agent: set its connection to "
                                f"\u201c{Cluster.Connection(Cluster.Connection.AGENT).label}\u201d first.")
        return redirect("clusters")
    row, token = agents.issue(cluster, request.user.get_username())
    record(request.user, "agent_token.created", cluster.name, token=row.prefix)
    response = render(request, "web/agent_token.html", {
        "cluster": cluster, "token": token, "row": row, "portal_base_url": settings.PORTAL_BASE_URL})
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@requires_role(Role.ADMIN)
def revoke_agent_token(request: HttpRequest, name: str, token_id: int) -> HttpResponse:
    row = get_object_or_404(AgentToken, pk=token_id, cluster__name=name)
    agents.revoke(row)
    record(request.user, "agent_token.revoked", name, token=row.prefix)
    messages.info(request, f"The agent token {row.prefix}… of {name} is revoked; its agent stops at its next push.")
    return redirect("clusters")
