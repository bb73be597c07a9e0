"""/api/v1/findings: the open GitOps discipline findings (portal.findings), muted ones left out.

Each finding names its app (with the app's own API URL), the rule with its principle and
what to change. Filters: ``rule``, ``environment``, ``cluster``; ``limit``/``offset`` page
through a stable order (rule, cluster, app, id). ``counts`` is per rule over the whole
filtered set.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.models import Finding
from portal.api import app_address
from portal.api.base_views import PortalAPIView, errors
from portal.findings.discipline import GROUPED, RULES, TOOL_NAMES
from portal.findings.mutes import open_findings

MAX_LIMIT = 1000


class FindingQuerySerializer(serializers.Serializer):
    rule = serializers.ChoiceField(choices=sorted(RULES), required=False, help_text="one rule's findings")
    environment = serializers.CharField(required=False, max_length=100)
    cluster = serializers.CharField(required=False, max_length=100)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=200)
    offset = serializers.IntegerField(required=False, min_value=0, max_value=10_000_000, default=0)


class FindingSerializer(serializers.Serializer):
    rule = serializers.CharField(help_text="the rule's id (portal.findings.discipline.RULES)")
    title = serializers.SerializerMethodField()
    principle = serializers.SerializerMethodField(help_text="why the rule matters, in one line")
    message = serializers.CharField(help_text="what is wrong with this object")
    fix = serializers.SerializerMethodField(help_text="what to change")
    example = serializers.SerializerMethodField(help_text="the change as YAML (an example to adapt)")
    severity = serializers.SerializerMethodField(help_text="how much it matters: high, medium or low")
    cluster = serializers.CharField(source="app.cluster.name")
    environment = serializers.CharField(source="app.cluster.environment.name", allow_null=True)
    tool = serializers.CharField(source="app.tool")
    kind = serializers.CharField(source="app.kind")
    namespace = serializers.CharField(source="app.namespace")
    name = serializers.CharField(source="app.name")
    app_url = serializers.SerializerMethodField(help_text="the app in the API")
    group = serializers.SerializerMethodField(
        help_text="a finding of a whole environment and tool, stored on one of its apps (a missing notification "
                  "rule): 'prod · Argo CD'; null for one app's finding")
    at = serializers.DateTimeField(help_text="the poll that found it")

    def get_title(self, finding: Finding) -> str:
        return RULES[finding.rule].title if finding.rule in RULES else finding.rule

    def get_principle(self, finding: Finding) -> str:
        return RULES[finding.rule].principle if finding.rule in RULES else ""

    def get_fix(self, finding: Finding) -> str:
        return RULES[finding.rule].fix if finding.rule in RULES else ""

    def get_example(self, finding: Finding) -> str:
        return RULES[finding.rule].example if finding.rule in RULES else ""

    def get_severity(self, finding: Finding) -> str:
        return RULES[finding.rule].severity if finding.rule in RULES else ""

    def get_group(self, finding: Finding) -> str | None:
        if finding.rule != GROUPED:
            return None
        environment = finding.app.cluster.environment
        where = environment.name if environment is not None else "unregistered destinations"
        return f"{where} · {TOOL_NAMES.get(finding.app.tool, finding.app.tool)}"

    def get_app_url(self, finding: Finding) -> str:
        app = finding.app
        # The app's own address (portal.api.app_address), from the twin facts the view annotated.
        return self.context["request"].build_absolute_uri(app_address.path(app, app_address.qualifiers(app, finding)))


class FindingListSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="open findings matching the filters")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="rule id -> open findings")
    results = FindingSerializer(many=True, help_text="one page, in the order rule, cluster, app")


def _filtered(params: dict[str, Any]) -> QuerySet[Finding]:
    found = open_findings()
    if params.get("rule"):
        found = found.filter(rule=params["rule"])
    if params.get("environment"):
        found = found.filter(app__cluster__environment__name=params["environment"])
    if params.get("cluster"):
        found = found.filter(app__cluster__name=params["cluster"])
    return found


class FindingListView(PortalAPIView):
    query_serializer_class = FindingQuerySerializer
    pagination_class = None

    @extend_schema(
        operation_id="findings_list",
        summary="Open GitOps discipline findings",
        description="Findings re-derived at every poll (muted ones left out), in the order rule, cluster, app.",
        parameters=[FindingQuerySerializer],
        responses={200: FindingListSerializer, **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        return Response(answer(self.query(request), {"request": request}))


def answer(params: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """The answer to checked query parameters (FindingQuerySerializer): the view's, and the
    MCP `findings` tool's (portal.api.mcp.api_pages), so both say the same."""
    found = _filtered(params)
    counts = dict(found.order_by().values_list("rule").annotate(n=Count("id")).values_list("rule", "n"))
    start = params.get("offset", 0)
    rows = (found.select_related("app", "app__cluster", "app__cluster__environment", "app__read_from")
            .only("rule", "message", "at", "app__tool", "app__kind", "app__namespace", "app__name",
                  "app__cluster__name", "app__cluster__environment__name", "app__read_from__name")
            .annotate(**app_address.twin_facts("app__"))
            .order_by("rule", "app__cluster__name", "app__name", "id")[start:start + params.get("limit", 200)])
    data = FindingSerializer(rows, many=True, context=context).data
    return {"count": sum(counts.values()), "counts": counts, "results": data}
