"""GET /api/v1/security: the Security page's facts as JSON (portal.delivery.exposures): each
service × environment × running version with known vulnerabilities, worst first, the newest
acceptable release and the findings it fixes; the versions not checked and why; since when
OSV and KEV were last read. Same filters as the page (severity, exploited, team, environment)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import SLUG
from portal.api.base_views import PortalAPIView, errors
from portal.api.serializers.api_fields import inline_enum
from portal.delivery.exposures import FILTER_SEVERITIES, SecurityReport, security_report
from portal.kernel.catalog.models import Environment, Service


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
                # null, never [], when it is not known: "unknown" is not "fixes nothing".
                "fixed_by_newest_acceptable": e.fixes if e.target_checked else None,
                "fixed_by_newest_acceptable_unknown": e.fixes_unknown,
            }
            for e in report.exposures
        ],
        "not_checked": [
            {"service": u.service.name, "environment": u.environment, "version": u.version, "reason": u.reason}
            for u in report.unchecked
        ],
    }


def report(params: dict[str, Any]) -> dict[str, Any]:
    """The answer to checked query parameters (SecurityQuerySerializer); an unknown team or
    environment filters nothing, as on the page."""
    team, environment = params.get("team", ""), params.get("environment", "")
    return as_json(security_report(
        severity=params.get("severity", ""),
        exploited=bool(params.get("exploited")),
        team=team if Service.objects.filter(team=team).exists() else "",
        environment=environment if Environment.objects.filter(name=environment).exists() else "",
    ))


class SecurityQuerySerializer(serializers.Serializer):
    severity = inline_enum(list(FILTER_SEVERITIES))(
        choices=list(FILTER_SEVERITIES), required=False, help_text="at least this severity"
    )
    exploited = serializers.BooleanField(
        required=False, help_text="only vulnerabilities exploited in the wild (CISA KEV)"
    )
    team = serializers.CharField(max_length=100, required=False)
    environment = serializers.RegexField(SLUG, max_length=63, required=False)


class SecurityView(PortalAPIView):
    query_serializer_class = SecurityQuerySerializer

    @extend_schema(
        operation_id="security_list",
        summary="Running versions with known vulnerabilities",
        description="Each service × environment × running version with known vulnerabilities (from its image's SBOM "
        "matched against OSV; exploited = CISA KEV), worst first, with the newest acceptable release and the findings "
        "it fixes; the versions not checked and why; since when OSV and KEV were last read. The /security page's "
        "facts and filters. Unknown parameters are refused.",
        parameters=[SecurityQuerySerializer],
        responses={200: OpenApiTypes.OBJECT, **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        return Response(report(self.query(request)))
