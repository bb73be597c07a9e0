"""GET /api/v1/workloads: every Deployment, StatefulSet, DaemonSet, CronJob and Rollout the
polls read, with its images, and the GitOps app that deploys it, or none: "running outside
GitOps" (nothing on the cluster claims it, by Argo CD's tracking or Flux's labels).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import F, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import SLUG, YesNoFilter
from gitops.models import Workload
from portal.api.base_views import AtRequestTimeFilterBackend, PortalAPIView, errors, filter_parameters
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.api_fields import OffsetDateTimeField
from portal.api.serializers.app_detail_serializers import ContainerSerializer

WORKLOAD_KINDS = ["Deployment", "StatefulSet", "DaemonSet", "CronJob", "Rollout"]


class WorkloadFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", max_length=63, validators=[RegexValidator(SLUG)],
                                        help_text="cluster name", strip=False)
    environment = django_filters.CharFilter(field_name="cluster__environment__name", max_length=63,
                                            validators=[RegexValidator(SLUG)], help_text="environment name",
                                            strip=False)
    namespace = django_filters.CharFilter(max_length=253, help_text="namespace of the workload", strip=False)
    kind = django_filters.ChoiceFilter(choices=[(k, k) for k in WORKLOAD_KINDS])
    service = django_filters.CharFilter(field_name="running_versions__service__name", max_length=100,
                                        validators=[RegexValidator(SLUG)], distinct=True, strip=False,
                                        help_text="workloads running this catalog service's image")
    outside_gitops = YesNoFilter(method="filter_outside", help_text="true: only workloads no GitOps app deploys; "
                                 "false: only those one does")

    class Meta:
        model = Workload
        fields: list[str] = []

    def __init__(self, data: Any = None, queryset: Any = None, *, at: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(data, queryset, **kwargs)
        self.at = at

    def filter_outside(self, workloads: QuerySet[Workload], name: str, value: bool) -> QuerySet[Workload]:
        return workloads.filter(app__isnull=value)


class WorkloadAppSerializer(serializers.Serializer):
    tool = serializers.CharField()
    kind = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()


class WorkloadItemSerializer(serializers.ModelSerializer):
    """A workload as the cluster's last poll read it."""

    cluster = serializers.CharField(source="cluster.name")
    environment = serializers.CharField(source="cluster.environment.name", allow_null=True)
    containers = serializers.SerializerMethodField()
    app = serializers.SerializerMethodField(help_text="the GitOps app that deploys it; null: running outside GitOps")
    outside_gitops = serializers.SerializerMethodField(help_text="no GitOps app deploys it")
    health_status = serializers.CharField(help_text="kstatus: Current, InProgress, Failed, Terminating or Unknown")
    updated_at = OffsetDateTimeField(help_text="when a poll last wrote it")

    class Meta:
        model = Workload
        fields = ["cluster", "environment", "kind", "namespace", "name", "uid", "health_status", "health_message",
                  "replicas_desired", "replicas_ready", "replicas_updated", "replicas_available", "containers",
                  "app", "outside_gitops", "updated_at"]

    @extend_schema_field(ContainerSerializer(many=True))
    def get_containers(self, workload: Workload) -> list[dict[str, Any]]:
        return ContainerSerializer(
            [{"container": str(c.get("container", "")), "image": str(c.get("image", "")), "init": bool(c.get("init"))}
             for c in workload.containers or [] if isinstance(c, dict)],
            many=True,
        ).data

    @extend_schema_field(WorkloadAppSerializer(allow_null=True))
    def get_app(self, workload: Workload) -> dict[str, str] | None:
        app = workload.app
        if app is None:
            return None
        return {"tool": app.tool, "kind": app.kind, "namespace": app.namespace, "name": app.name}

    def get_outside_gitops(self, workload: Workload) -> bool:
        return workload.app_id is None


def workloads() -> QuerySet[Workload]:
    return (
        Workload.objects.select_related("cluster", "cluster__environment")
        .select_related("app").only(
            "id", "kind", "namespace", "name", "uid", "health_status", "health_message", "replicas_desired",
            "replicas_ready", "replicas_updated", "replicas_available", "containers", "updated_at", "app_id",
            "cluster__name", "cluster__environment__name", "app__tool", "app__kind", "app__namespace", "app__name",
        )
        .annotate(sort_cluster=F("cluster__name"))
    )


ORDERING = Ordering("cluster", (("sort_cluster", "str"), ("namespace", "str"), ("kind", "str"), ("name", "str"),
                                ("id", "int")))


class WorkloadListView(PortalAPIView):
    queryset = Workload.objects.none()  # tells drf-spectacular the model; rows come from the query function
    serializer_class = WorkloadItemSerializer
    filter_backends = [AtRequestTimeFilterBackend]
    filterset_class = WorkloadFilter
    pagination_class = KeysetPagination

    def get_ordering(self) -> Ordering:
        return ORDERING

    @extend_schema(
        operation_id="workloads_list",
        summary="Workloads on every cluster, including those running outside GitOps",
        description="Deployments, StatefulSets, DaemonSets, CronJobs and Argo Rollouts as the last poll of each "
        "cluster saw them, with their images and the GitOps app that deploys each (null: running outside "
        "GitOps). Cursor-paginated; filters combine with AND.",
        parameters=filter_parameters(WorkloadFilter),
        responses={200: WorkloadItemSerializer(many=True), **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        self.query(request)
        self.now = None
        page = self.paginate_queryset(self.filter_queryset(workloads()))
        return self.get_paginated_response(
            WorkloadItemSerializer(page, many=True, context=self.get_serializer_context()).data)
