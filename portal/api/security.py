"""GET /api/v1/security: the Security page's facts as JSON (portal.delivery.exposures): each
service × environment × running version with known vulnerabilities, worst first, the newest
acceptable release and the findings it fixes; the versions not checked and why; since when
OSV and KEV were last read. Same filters as the page (severity, exploited, team, environment)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.auth import BearerTokenAuthentication, HasViewerRole
from portal.api.throttles import TokenRateThrottle
from portal.catalog.models import Environment, Service
from portal.delivery.exposures import FILTER_SEVERITIES, SecurityReport, security_report


def _stamp(value) -> str | None:  # type: ignore[no-untyped-def]
    return value.isoformat() if value else None


def as_json(report: SecurityReport) -> dict:
    return {
        "osv": {
            "last_ok_at": _stamp(report.osv.last_ok_at if report.osv else None),
            "error": report.osv.last_error if report.osv else "",
        },
        "kev": {
            "last_ok_at": _stamp(report.kev.last_ok_at if report.kev else None),
            "error": report.kev.last_error if report.kev else "",
        },
        "exposures": [
            {
                "service": e.service.name,
                "team": e.service.team,
                "environment": e.environment,
                "clusters": e.clusters,
                "version": e.version,
                "platform": e.facts.platform,
                "platform_assumed": e.facts.platform_assumed,
                "vulnerabilities": [
                    {
                        "id": f.key,
                        "osv_ids": list(f.osv_ids),
                        "severity": f.severity,
                        "exploited": f.exploited,
                        "packages": list(f.packages),
                        "fixed_in": list(f.fixed_in),
                        "summary": f.summary,
                    }
                    for f in e.findings
                ],
                "newest_acceptable": e.target,
                "newest_acceptable_checked": e.target_checked,
                "fixed_by_newest_acceptable": e.fixes,
            }
            for e in report.exposures
        ],
        "not_checked": [
            {"service": u.service.name, "environment": u.environment, "version": u.version, "reason": u.reason}
            for u in report.unchecked
        ],
    }


class SecurityView(APIView):
    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [HasViewerRole]
    throttle_classes = [TokenRateThrottle]
    renderer_classes = [JSONRenderer]

    @extend_schema(
        summary="Running versions with known vulnerabilities",
        parameters=[
            OpenApiParameter("severity", str, enum=list(FILTER_SEVERITIES), description="at least this severity"),
            OpenApiParameter("exploited", bool, description="only vulnerabilities exploited in the wild (CISA KEV)"),
            OpenApiParameter("team", str),
            OpenApiParameter("environment", str),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        severity = params.get("severity", "")
        team = params.get("team", "")
        environment = params.get("environment", "")
        report = security_report(
            severity=severity if severity in FILTER_SEVERITIES else "",
            exploited=params.get("exploited", "") in ("1", "true"),
            team=team if Service.objects.filter(team=team).exists() else "",
            environment=environment if Environment.objects.filter(name=environment).exists() else "",
        )
        return Response(as_json(report))
