"""A service's page: one GitOps panel per environment and cluster that deploys it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from forges import weblinks
from gitops.models import GitOpsApp, RunningVersion, Workload
from portal.accounts.roles import Role, has_role, requires_role
from portal.catalog.models import Service
from portal.delivery.gitpins import pin_summary, pinned_versions
from portal.delivery.upgrades import Behind, behind
from portal.links import argocd_app_url
from portal.web.badges import Badge, badges_for
from portal.web.rollback_offers import offers_for_page


@dataclass
class Panel:
    app: GitOpsApp
    badges: list[Badge]
    attention: bool
    commit_url: str | None
    compare_url: str | None
    argocd_url: str | None
    workloads: list[Workload] = field(default_factory=list)
    pin_note: str = ""  # "Git pins 1.7.0, runs 1.6.0" when Git and the cluster disagree
    upgrade: Behind | None = None  # the newest acceptable release, when it runs older


def _panels(service: Service) -> tuple[list[tuple[object, list[Panel]]], list[RunningVersion]]:
    now = timezone.now()
    apps = (
        GitOpsApp.objects.filter(services=service)
        .select_related("cluster", "cluster__environment")
        .prefetch_related(Prefetch("workloads", queryset=Workload.objects.order_by("kind", "name")))
        .order_by("cluster__environment__order", "cluster__name", "namespace", "name")
    )
    apps = list(apps)
    pinned = pinned_versions([app.pk for app in apps], service)
    upgrades = {b.app.pk: b for b in behind(service=service, today=now.date())}
    by_env: dict[int, list[Panel]] = defaultdict(list)
    envs = {}
    for app in apps:
        env = app.cluster.environment
        envs[env.id] = env
        by_env[env.id].append(
            Panel(
                app=app,
                badges=badges_for(app, app.cluster, now),
                attention=app.needs_attention(now),
                commit_url=weblinks.commit_url(app.repo_url, app.synced_commit()),
                compare_url=weblinks.compare_url(app.repo_url, app.previous_commit(), app.synced_commit()),
                argocd_url=argocd_app_url(app.namespace, app.name) if app.tool == "argo" else None,
                workloads=list(app.workloads.all()),
                pin_note=pin_summary(pinned.get((app.pk, service.name), []), (app.running or {}).get(service.name, [])),
                upgrade=upgrades.get(app.pk),
            )
        )
    unmanaged = list(
        RunningVersion.objects.filter(service=service, app__isnull=True)
        .select_related("cluster", "workload")
        .order_by("cluster__name", "workload__name")
    )
    ordered = sorted(envs.values(), key=lambda e: (e.order, e.name))
    return [(env, by_env[env.id]) for env in ordered], unmanaged


def _render(request: HttpRequest, name: str, template: str) -> HttpResponse:
    service = get_object_or_404(Service, name=name)
    environments, unmanaged = _panels(service)
    context = {
        "service": service,
        "environments": environments,
        "unmanaged": unmanaged,
        "rollbacks": offers_for_page(request.user, (panel.app for _, panels in environments for panel in panels)),
        "can_act": has_role(request.user, Role.MEMBER),
        "source_url": weblinks.repository_url(service.source_repository),
    }
    return render(request, template, context)


@requires_role(Role.VIEWER)
def service_page(request: HttpRequest, name: str) -> HttpResponse:
    return _render(request, name, "web/service.html")


@requires_role(Role.VIEWER)
def service_panels(request: HttpRequest, name: str) -> HttpResponse:
    """The panels alone, for the page's 30-second htmx refresh."""
    return _render(request, name, "web/_service_panels.html")
