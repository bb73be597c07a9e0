"""A service's page: its version policy (admins edit it, with a live check and a preview of
what it would pick per environment before saving) and one GitOps panel per environment and
cluster that deploys it."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from forges import weblinks
from gitops.derive.attention import Attention
from gitops.models import GitOpsApp, RunningVersion, Workload
from gitops.platforms import PLATFORM_KINDS, lines_to_add
from gitops.queries import apps_loaded_with, apps_with_ids_from, with_ids
from portal.delivery import policy_editing
from portal.delivery.current_pins import pin_summary, pinned_versions
from portal.delivery.deploy_holds import DeployHolds, NextDeploy
from portal.delivery.deployments import not_deployed_why
from portal.delivery.holds import held_versions
from portal.delivery.models import AutoPRAttempt
from portal.delivery.upgrades import Behind, BehindLines, UpgradeTargets
from portal.delivery.version_policy import PolicyError, VersionPolicy
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.accounts.teams import refusal
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service
from portal.kernel.changelog.kept import kept
from portal.kernel.links import ArgoCDLinks, argocd_links
from portal.web.badges import Badge, badges_for, finding_badges
from portal.web.policyform import PolicyForm
from portal.web.rollback_offers import offers_for_page
from portal.web.sharedpages import shared_body

PANELS_SHOWN = 10  # full panels per environment, however few need attention
# A service in every cluster of a 1,000-cluster fleet has hundreds of applications an environment
# (2,100 in bench/fleet.py's: 360 needing attention), and drawing each made a page of 1.4 MB in
# 3.5 s. An environment shows at most FULL_AT_MOST full panels (those needing attention among
# them first) and ROWS_AT_MOST compact rows (those needing attention first); the rest are counted
# and listed, paged, by the GitOps page's service and environment filters.
FULL_AT_MOST = 25
ROWS_AT_MOST = 60
# The history stays: the "changes" link reads the commit it replaced from the tool's history.
PANEL_UNSHOWN = ("raw", "conditions", "synced_revisions", "images", "warnings", "health_rules")


@dataclass
class Outside:
    """A running version no GitOps application deploys: where Git pins it (its workload's
    portal.git.* labels) and the upgrade on offer, or the lines that would tell the portal."""

    running: RunningVersion
    git_url: str | None = None
    upgrade_to: str | None = None
    lines_to_add: str = ""  # for a Nomad, Docker or ECS workload without the labels


@dataclass
class Panel:
    """An application's panel; a compact row reads only `app`'s ROW_FIELDS, `badges`, `runs`
    and `upgrade`. `full`: read again with all a full panel shows, and its links (`_complete`)."""

    app: GitOpsApp
    badges: list[Badge]
    attention: bool
    pin_note: str = ""  # "Git pins 1.7.0, runs 1.6.0" when Git and the cluster disagree
    upgrade: Behind | None = None  # the newest acceptable release, when it runs older
    pr_why: str = ""  # why the upgrade's merged pull request does not run yet (deployments.not_deployed_why)
    runs: list[str] = field(default_factory=list)  # the versions of the service it runs
    full: bool = False
    commit_url: str | None = None
    compare_url: str | None = None
    change: tuple[str, str] | None = None  # the commits of the last change of synced commit
    argocd: ArgoCDLinks | None = None  # "via Argo CD <instance>" and the app's deep link (Argo CD apps)
    workloads: list[Workload] = field(default_factory=list)


# What decides whether a panel folds and what its compact row shows: the columns read for
# every application of the service (a service on 500 clusters has hundreds). The full panels,
# a few dozen, are read again with what they show (everything but PANEL_UNSHOWN).
ROW_FIELDS = (
    "cluster", "tool", "kind", "namespace", "name", "sync_status", "sync_since", "sync_since_exact",
    "health_status", "health_since", "health_since_exact",
    "operation_phase", "operation_started_at", "operation_finished_at", "operation_message",
    "health_disagreement", "health_disagreement_since", "manual_sync", "suspended",
    "sync_blocked", "sync_blocked_until", "sync_window", "running",
)


@dataclass
class EnvironmentPanels:
    """One environment's part of the page: its full panels, then its compact rows."""

    environment: Environment
    panels: list[Panel]
    compact: list[Panel]  # drawn by web/_compact_row.html
    rows_attention: int = 0  # compact rows needing attention
    more: int = 0  # applications past ROWS_AT_MOST, listed on the GitOps page
    more_attention: int = 0  # of them, needing attention
    next_deploy: NextDeploy | None = None  # when the service can next deploy here, and what holds it


def _panels(service: Service) -> tuple[list[EnvironmentPanels], list[Outside]]:
    now = timezone.now()
    # A panel never shows the raw object, its history or conditions: a service on hundreds of
    # clusters need not decode them (its sources stay: the synced commit's link reads them).
    # The apps by the ids the link table names (gitops.queries.with_ids_from) and with no join:
    # joined to their clusters, a table never analyzed was walked whole along an index that
    # orders by cluster (418 ms at 100,000 apps); the clusters are a small query of their own.
    deploying = GitOpsApp.services.through.objects.filter(service=service).values("gitopsapp_id")
    apps = apps_loaded_with(apps_with_ids_from(deploying), ROW_FIELDS)
    # What a panel reads of a cluster (a service may run in 1,000): its name, environment and staleness.
    clusters = (Cluster.objects.select_related("environment", "poll").only("name", "environment", "poll__stale_since")
                .in_bulk({app.cluster_id for app in apps}))
    for app in apps:
        app.cluster = clusters[app.cluster_id]

    def placed(app: GitOpsApp) -> tuple[bool, int, str, str, str]:
        env = app.cluster.environment  # as PostgreSQL sorts a NULL order: last
        return (env is None, env.order if env is not None else 0, app.cluster.name, app.namespace, app.name)

    apps.sort(key=placed)
    pinned = pinned_versions([app.pk for app in apps], service)
    # Who is behind, with the applications loaded above rather than a second time.
    found = BehindLines(service=service, today=now.date())
    # A workload outside GitOps has its own table below (`_outside`), not a panel.
    upgrades = {b.app.pk: b for b in found.load(apps={app.pk: app for app in apps}) if b.app is not None}
    why = not_deployed_why([b.past_pr for b in upgrades.values()], now)  # "merged, not deployed — why"
    marked = finding_badges([app.pk for app in apps])
    rule = Attention.at(now)  # once: judged for each of hundreds of applications
    by_env: dict[int, list[Panel]] = defaultdict(list)
    envs = {}
    for app in apps:
        env = app.cluster.environment
        envs[env.id] = env
        runs = (app.running or {}).get(service.name, [])
        upgrade = upgrades.get(app.pk)
        by_env[env.id].append(
            Panel(
                app=app,
                badges=badges_for(app, app.cluster, now, rule=rule) + ([marked[app.pk]] if app.pk in marked else []),
                attention=rule.holds(app),
                pin_note=pin_summary(pinned.get((app.pk, service.name), []), runs),
                upgrade=upgrade,
                pr_why=why.get(upgrade.past_pr.pk, "") if upgrade is not None and upgrade.past_pr is not None else "",
                runs=runs,
            )
        )
    ordered = sorted(envs.values(), key=lambda e: (e.order, e.name))
    holds = DeployHolds.load(now, services=[service.name], environments=[env.name for env in ordered])
    shown = [_fold(env, by_env[env.id], holds.next_deploy(service.name, env.name, now)) for env in ordered]
    _complete([panel for part in shown for panel in part.panels])
    for part in shown:
        part.panels = [panel for panel in part.panels if panel.full]  # one removed since the first read
    return shown, _outside(service, found.targets)


def _complete(panels: list[Panel]) -> None:
    """Read the full panels' applications with what a full panel shows, and their workloads
    (two queries however many there are), and give each its links."""
    # By their ids, joined to nothing (see `_panels`): the clusters are the panels' own.
    full = (
        with_ids(GitOpsApp.objects.all(), [panel.app.pk for panel in panels])
        .defer(*PANEL_UNSHOWN)
        .with_rule_words()
        .prefetch_related(Prefetch("workloads", queryset=Workload.objects.order_by("kind", "name")))
        .in_bulk()
    )
    instances = ArgoCDInstance.objects.in_bulk({app.argocd_instance_id for app in full.values()} - {None})
    for panel in panels:
        if panel.app.pk in full:
            full[panel.app.pk].cluster = panel.app.cluster
            full[panel.app.pk].argocd_instance = instances.get(full[panel.app.pk].argocd_instance_id)
    for panel in panels:
        app = full.get(panel.app.pk)
        if app is None:
            continue
        panel.app, panel.full = app, True
        panel.commit_url = weblinks.commit_url(app.repo_url, app.synced_commit())
        panel.change = app.last_change()
        panel.compare_url = weblinks.compare_url(app.repo_url, *panel.change) if panel.change else None
        panel.argocd = argocd_links(app.argocd_instance, app.namespace, app.name) if app.tool == "argo" else None
        panel.workloads = list(app.workloads.all())


def _outside(service: Service, targets: UpgradeTargets | None) -> list[Outside]:
    rows = []
    for running in (RunningVersion.objects.filter(service=service, app__isnull=True, workload__isnull=False)
                    .select_related("cluster__environment", "workload").order_by("cluster__name", "workload__name")):
        workload = running.workload
        assert workload is not None
        row = Outside(running)
        if workload.git_repo and workload.git_path:
            row.git_url = weblinks.repository_url(workload.git_repo)
            if running.cluster.environment is not None:
                targets = targets or UpgradeTargets([service])  # none yet: no GitOps app runs it older
                row.upgrade_to = targets.target(service.pk, running.version)
        elif workload.kind in PLATFORM_KINDS:
            row.lines_to_add = lines_to_add(workload.kind)
        rows.append(row)
    return rows


def _fold(environment: Environment, panels: list[Panel], next_deploy: NextDeploy | None) -> EnvironmentPanels:
    """One environment's part of the page. Its first PANELS_SHOWN panels and every one
    needing attention or where Git
    pins another version stay full, up to FULL_AT_MOST; the rest are a row each in a table
    behind a disclosure, those needing attention first, up to ROWS_AT_MOST. A service on a
    hundred clusters of one environment was a page of a hundred panels."""
    full: list[Panel] = []
    urgent: list[Panel] = []  # needing attention or pinned elsewhere, past the full panels' cap
    compact: list[Panel] = []
    for index, panel in enumerate(panels):
        wanted = panel.attention or bool(panel.pin_note)
        if (index < PANELS_SHOWN or wanted) and len(full) < FULL_AT_MOST:
            full.append(panel)
        else:
            (urgent if wanted else compact).append(panel)
    rows, unshown = (urgent + compact)[:ROWS_AT_MOST], (urgent + compact)[ROWS_AT_MOST:]
    return EnvironmentPanels(environment, full, rows, next_deploy=next_deploy,
                             rows_attention=sum(1 for panel in rows if panel.attention),
                             more=len(unshown), more_attention=sum(1 for panel in unshown if panel.attention))


def _policy_context(service: Service, user: object, form: PolicyForm | None = None) -> dict[str, object]:
    """The policy section: the stored document, what it picks per environment, and for an
    admin the form (bound to what they sent, when a save was refused)."""
    stored = policy_editing.stored_document(service)
    problem = ""
    try:
        policy = VersionPolicy.from_dict(stored)
    except PolicyError as exc:  # stored before a check existed: shown, and fixable on the form
        policy, problem = None, str(exc)
    is_admin = has_role(user, Role.ADMIN)
    if is_admin and form is None:
        form = PolicyForm(stored=stored)
    today = timezone.now().date()
    # What the policy picks and the automatic job's attempts: the same for every viewer until the
    # data changes (portal.kernel.changelog.kept); the form is each admin's own.
    shared = kept("service-policy", (service.name, json.dumps(stored, sort_keys=True), today.isoformat()),
                  lambda: {"policy_preview": policy_editing.preview(service, policy, today) if policy else [],
                           "auto_attempts": _auto_attempts(service)})
    return {
        "policy": stored,
        "policy_json": json.dumps(stored, indent=2),
        "policy_problem": problem,
        "policy_form": form if is_admin else None,
        "policy_held": held_versions(service),
        "policy_can_release": has_role(user, Role.MEMBER) and refusal(user, [service]) is None,
        **shared,
    }


def _auto_attempts(service: Service) -> list[tuple[str, AutoPRAttempt]]:
    """The automatic job's last attempt in each environment, in pipeline order (then by name)."""
    # Names only: an application's raw object is never read for a page.
    shown = AutoPRAttempt.objects.select_related("app__cluster", "workload__cluster").defer("app__raw")
    latest = shown.latest_per_environment(service)
    if not latest:
        return []
    order = {name: i for i, name in enumerate(Environment.objects.order_by("order", "name")
                                              .values_list("name", flat=True))}
    return sorted(latest.items(), key=lambda pair: (order.get(pair[0], len(order)), pair[0]))


def _render(request: HttpRequest, name: str, template: str, *, form: PolicyForm | None = None,
            status: int = 200) -> HttpResponse:
    service = get_object_or_404(Service, name=name)
    can_act = has_role(request.user, Role.MEMBER)

    def panels_context() -> dict:
        environments, unmanaged = _panels(service)
        return {
            "service": service,
            "environments": environments,
            "unmanaged": unmanaged,
            # Rollbacks are offered on full panels: a compact row needs no attention.
            "rollbacks": offers_for_page(request.user,
                                         (panel.app for part in environments for panel in part.panels)),
            "can_act": can_act,
        }

    # The panels are the same for every viewer of this service (sharedpages), the policy section
    # is not: an admin's form carries their CSRF token.
    panels = shared_body(request, "service-panels", "web/_service_panels.html", panels_context,
                         vary=(service.name,))
    if template == "web/_service_panels.html":
        return HttpResponse(panels, status=status)
    context = {"service": service, "panels": panels, "can_act": can_act,
               "source_url": weblinks.repository_url(service.source_repository)}
    context.update(_policy_context(service, request.user, form))
    return render(request, template, context, status=status)


@require_safe
@requires_role(Role.VIEWER)
def service_page(request: HttpRequest, name: str) -> HttpResponse:
    return _render(request, name, "web/service.html")


@require_safe
@requires_role(Role.VIEWER)
def service_panels(request: HttpRequest, name: str) -> HttpResponse:
    """The panels alone, for the page's 30-second htmx refresh."""
    return _render(request, name, "web/_service_panels.html")


def _back_unless_posted(request: HttpRequest, name: str) -> HttpResponse | None:
    """A policy URL opened with GET (a link followed, a reload) changes nothing: back to the page."""
    if request.method == "POST":
        return None
    return redirect(reverse("service", kwargs={"name": name}) + "#policy")


@requires_role(Role.ADMIN)
def service_policy_check(request: HttpRequest, name: str) -> HttpResponse:
    """Live validation (htmx, as the form changes): the problem, or what the policy being
    typed would pick per environment. Nothing is saved."""
    if (back := _back_unless_posted(request, name)) is not None:
        return back
    service = get_object_or_404(Service, name=name)
    form = PolicyForm(request.POST, stored=policy_editing.stored_document(service))
    today = timezone.now().date()
    picks = policy_editing.preview(service, form.policy, today) if form.is_valid() and form.policy else []
    return render(request, "web/_policy_check.html", {"form": form, "picks": picks, "service": service})


@requires_role(Role.ADMIN)
def service_policy_save(request: HttpRequest, name: str) -> HttpResponse:
    """Save the policy (audited); a refused one comes back on the page with what is wrong."""
    if (back := _back_unless_posted(request, name)) is not None:
        return back
    service = get_object_or_404(Service, name=name)
    form = PolicyForm(request.POST, stored=policy_editing.stored_document(service))
    if not form.is_valid() or form.policy is None:
        return _render(request, name, "web/service.html", form=form, status=400)
    policy_editing.save(service, form.policy, request.user, via="service page")
    return redirect(reverse("service", kwargs={"name": service.name}) + "?policy=saved#policy")
