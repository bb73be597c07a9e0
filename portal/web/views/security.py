"""/security: services × environments running versions with known vulnerabilities (from their
SBOMs, OSV and CISA KEV), worst first, each with the newest acceptable release and what it
fixes, and Open PR for members; filters by severity, exploited, team and environment in the
query string. Reads the store only (portal.delivery.exposures); when OSV or KEV could not be
read the page says since when they were not checked, never "no vulnerabilities"."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from portal.delivery.exposures import FILTER_SEVERITIES, security_report
from portal.kernel.accounts.roles import Role, has_role, requires_role
from portal.kernel.catalog.models import Environment, Service


def filters(params) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The filters as the query string gives them; an unknown value filters nothing."""
    severity = params.get("severity", "").strip()
    team = params.get("team", "").strip()
    environment = params.get("environment", "").strip()
    return {
        "severity": severity if severity in FILTER_SEVERITIES else "",
        "exploited": "1" if params.get("exploited", "") in ("1", "true", "on") else "",
        "team": team if Service.objects.filter(team=team).exists() else "",
        "environment": environment if Environment.objects.filter(name=environment).exists() else "",
    }


@require_safe
@requires_role(Role.VIEWER)
def security(request: HttpRequest) -> HttpResponse:
    chosen = filters(request.GET)
    report = security_report(
        severity=chosen["severity"],
        exploited=bool(chosen["exploited"]),
        team=chosen["team"],
        environment=chosen["environment"],
    )
    context = {
        "report": report,
        "params": chosen,
        "filtered": any(chosen.values()),
        "severity_choices": FILTER_SEVERITIES,
        "team_choices": sorted(set(Service.objects.exclude(team="").values_list("team", flat=True))),
        "environment_choices": Environment.objects.values_list("name", flat=True),
        "can_act": has_role(request.user, Role.MEMBER),
    }
    return render(request, "web/security.html", context)
