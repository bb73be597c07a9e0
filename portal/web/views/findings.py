"""/findings: GitOps discipline findings (portal.findings), counted by rule, environment
and team, each linking its app and saying what to change; members mute one on one app
with a reason (audited) and unmute it. The rules and their storage live in portal.findings:
this view only reads and shows them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from gitops.models import Finding, FindingMute, GitOpsApp
from portal.findings.discipline import GROUPED, RULES, TOOL_NAMES, FindingRule
from portal.findings.mutes import mute, open_findings, unmute
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.accounts.teams import refusal

PAGE_SIZE = 100
NO_TEAM = "no team"
NO_ENVIRONMENT = "unregistered destination"


@dataclass(frozen=True)
class FindingRow:
    """One open finding as the page shows it: the rule's words, the app's teams, and for a
    finding that stands for an environment and tool (group_silent) that tool's name."""

    finding: Finding
    definition: FindingRule | None
    team: str
    group: str


@dataclass(frozen=True)
class MutedRow:
    mute: FindingMute
    definition: FindingRule | None


def _team_of(app: GitOpsApp) -> str:
    teams = sorted({s.team for s in app.services.all() if s.team})
    return ", ".join(teams) if teams else NO_TEAM


def findings_with_context(found: QuerySet[Finding]) -> QuerySet[Finding]:
    return found.select_related("app", "app__cluster", "app__cluster__environment").prefetch_related(
        "app__services").defer("app__raw", "app__history", "app__health_rules", "app__conditions")


def counts(rows: list[Finding]) -> dict[str, list[tuple[str, int]]]:
    by_rule: Counter[str] = Counter()
    by_environment: Counter[str] = Counter()
    by_team: Counter[str] = Counter()
    for finding in rows:
        by_rule[finding.rule] += 1
        environment = finding.app.cluster.environment
        by_environment[environment.name if environment else NO_ENVIRONMENT] += 1
        for team in _team_of(finding.app).split(", "):
            by_team[team] += 1
    return {
        "rule": sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])),
        "environment": sorted(by_environment.items(), key=lambda kv: (-kv[1], kv[0])),
        "team": sorted(by_team.items(), key=lambda kv: (-kv[1], kv[0])),
    }


@require_safe
@requires_role(Role.VIEWER)
def findings(request: HttpRequest) -> HttpResponse:
    rule = request.GET.get("rule", "")
    environment = request.GET.get("environment", "")
    team = request.GET.get("team", "")
    everything = list(findings_with_context(open_findings()).order_by("rule", "app__cluster__name", "app__name"))
    summary = counts(everything)
    shown = [
        f for f in everything
        if (not rule or f.rule == rule)
        and (not environment or (f.app.cluster.environment.name if f.app.cluster.environment else NO_ENVIRONMENT)
             == environment)
        and (not team or team in _team_of(f.app).split(", "))
    ]
    page = Paginator(shown, PAGE_SIZE).get_page(request.GET.get("page"))
    # A finding for an environment and tool (portal.findings.derivation.group_silent) is said as
    # such, not as the one app it is stored on.
    rows = [FindingRow(finding, RULES.get(finding.rule), _team_of(finding.app),
                       TOOL_NAMES.get(finding.app.tool, finding.app.tool) if finding.rule == GROUPED else "")
            for finding in page]
    mutes = FindingMute.objects.select_related("app", "app__cluster").defer("app__raw", "app__history",
                                                                          "app__health_rules").order_by("-at")[:200]
    muted = [MutedRow(m, RULES.get(m.rule)) for m in mutes]
    return render(request, "web/findings.html", {
        "page": page, "rows": rows, "counts": summary,
        "rule_counts": [(rule_id, RULES.get(rule_id), count) for rule_id, count in summary["rule"]],
        "total": len(everything), "filtered": len(shown),
        "params": {"rule": rule, "environment": environment, "team": team}, "muted": muted,
    })


@require_POST
@requires_role(Role.MEMBER)
def mute_finding(request: HttpRequest) -> HttpResponse:
    app = get_object_or_404(GitOpsApp.objects.only("id", "tool", "kind", "namespace", "name"),
                            pk=request.POST.get("app", "0") if request.POST.get("app", "").isdigit() else 0)
    rule = request.POST.get("rule", "")
    refused = refusal(request.user, app.services.all())
    if refused is not None:
        messages.error(request, f"Not changed: {refused}")
        return redirect("findings")
    try:
        if request.POST.get("action") == "unmute":
            unmute(app, rule, request.user)
            messages.info(request, f"{RULES[rule].title if rule in RULES else rule} on {app.name} is shown again.")
        else:
            mute(app, rule, request.POST.get("reason", ""), request.user)
            messages.info(request, f"Muted {RULES[rule].title} on {app.name}.")
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("findings")
