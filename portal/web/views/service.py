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
from portal.delivery.upgrades import Behind, BehindLines
from portal.links import argocd_app_url
from portal.web.badges import Badge, badges_for, finding_badges
from portal.web.rollback_offers import offers_for_page

PANELS_SHOWN = 10  # full panels per environment (and every one needing attention)
PANEL_UNSHOWN = ("raw", "history", "conditions", "synced_revisions", "images", "warnings", "health_rules")


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
    runs: list[str] = field(default_factory=list)  # the versions of the service it runs


def _panels(service: Service) -> tuple[list[tuple[object, list[Panel], list[Panel]]], list[RunningVersion]]:
    now = timezone.now()
    # A panel never shows the raw object, its history or conditions: a service on hundreds of
    # clusters need not decode them (its sources stay: the synced commit's link reads them).
    apps = (
        GitOpsApp.objects.filter(services=service)
        .defer(*PANEL_UNSHOWN)
        .select_related("cluster", "cluster__environment", "argocd_instance")
        .prefetch_related(Prefetch("workloads", queryset=Workload.objects.order_by("kind", "name")))
        .order_by("cluster__environment__order", "cluster__name", "namespace", "name")
    )
    apps = list(apps)
    pinned = pinned_versions([app.pk for app in apps], service)
    # Who is behind, with the applications loaded above rather than a second time.
    found = BehindLines(service=service, today=now.date())
    upgrades = {b.app.pk: b for b in found.load(apps={app.pk: app for app in apps})}
    marked = finding_badges([app.pk for app in apps])
    by_env: dict[int, list[Panel]] = defaultdict(list)
    envs = {}
    for app in apps:
        env = app.cluster.environment
        envs[env.id] = env
        by_env[env.id].append(
            Panel(
                app=app,
                badges=badges_for(app, app.cluster, now) + ([marked[app.pk]] if app.pk in marked else []),
                attention=app.needs_attention(now),
                commit_url=weblinks.commit_url(app.repo_url, app.synced_commit()),
                compare_url=weblinks.compare_url(app.repo_url, app.previous_commit(), app.synced_commit()),
                argocd_url=argocd_app_url(app.namespace, app.name, app.argocd_instance and app.argocd_instance.ui_url)
                if app.tool == "argo" else None,
                workloads=list(app.workloads.all()),
                pin_note=pin_summary(pinned.get((app.pk, service.name), []), (app.running or {}).get(service.name, [])),
                upgrade=upgrades.get(app.pk),
                runs=(app.running or {}).get(service.name, []),
            )
        )
    unmanaged = list(
        RunningVersion.objects.filter(service=service, app__isnull=True)
        .select_related("cluster", "workload")
        .order_by("cluster__name", "workload__name")
    )
    ordered = sorted(envs.values(), key=lambda e: (e.order, e.name))
    return [(env, *_fold(by_env[env.id])) for env in ordered], unmanaged


def _fold(panels: list[Panel]) -> tuple[list[Panel], list[Panel]]:
    """(full panels, compact rows) of one environment: its first PANELS_SHOWN panels and every
    one needing attention or where Git pins another version stay full; the rest are a row
    each in a table behind a disclosure. A service on a hundred clusters of one environment
    was a page of a hundred panels."""
    full: list[Panel] = []
    compact: list[Panel] = []
    for index, panel in enumerate(panels):
        (full if index < PANELS_SHOWN or panel.attention or panel.pin_note else compact).append(panel)
    return full, compact


def _render(request: HttpRequest, name: str, template: str) -> HttpResponse:
    service = get_object_or_404(Service, name=name)
    environments, unmanaged = _panels(service)
    context = {
        "service": service,
        "environments": environments,
        "unmanaged": unmanaged,
        # Rollbacks are offered on full panels: a compact row needs no attention.
        "rollbacks": offers_for_page(request.user, (panel.app for _, panels, _ in environments for panel in panels)),
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
