"""One GitOps application as GET /api/v1/gitops/<cluster>/<namespace>/<name> serves it: the
list's fields plus its workloads and recent state changes; and that route's query."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gitops.appfilter import SLUG
from gitops.models import GitOpsApp, StateChange, Workload
from portal.api.serializers.api_fields import OffsetDateTimeField
from portal.api.serializers.app_serializers import AppSerializer, ReadyConditionSerializer


class ConditionSerializer(ReadyConditionSerializer):
    type = serializers.CharField(help_text="condition type as the controller wrote it (Ready, Reconciling, "
                                 "Released, SyncError, OrphanedResourceWarning, …)")


class ContainerSerializer(serializers.Serializer):
    name = serializers.CharField(source="container")
    image = serializers.CharField()
    init = serializers.BooleanField(default=False)


class WorkloadSerializer(serializers.ModelSerializer):
    containers = serializers.SerializerMethodField()

    class Meta:
        model = Workload
        fields = ["kind", "namespace", "name", "health_status", "health_message", "replicas_desired",
                  "replicas_ready", "replicas_updated", "replicas_available", "containers"]

    @extend_schema_field(ContainerSerializer(many=True))
    def get_containers(self, workload: Workload) -> list[dict[str, Any]]:
        containers = [c for c in workload.containers or [] if isinstance(c, dict)]
        return ContainerSerializer(
            [{"container": str(c.get("container", "")), "image": str(c.get("image", "")), "init": bool(c.get("init"))}
             for c in containers],
            many=True,
        ).data


class StateChangeSerializer(serializers.ModelSerializer):
    at = OffsetDateTimeField()

    class Meta:
        model = StateChange
        fields = ["field", "old", "new", "at"]


class AppDetailSerializer(AppSerializer):
    """One application with what it runs and how its state changed (newest first)."""

    # Context, beyond AppSerializer's: `state_changes`, the app's recent StateChange rows.

    # Same values as the list's `kind`; a plain string here so that the schema has one enum component
    # for them (two components sharing an enum would get a hashed name).
    kind = serializers.CharField(help_text="Application, Kustomization or HelmRelease")
    conditions = serializers.SerializerMethodField(help_text="status.conditions as the controller wrote them")
    workloads = WorkloadSerializer(many=True)
    state_changes = serializers.SerializerMethodField(help_text="the most recent changes, newest first")

    @extend_schema_field(ConditionSerializer(many=True))
    def get_conditions(self, app: GitOpsApp) -> list[dict[str, Any]]:
        keys = ("type", "status", "reason", "message", "last_transition_time")
        return [{key: str(c.get(key) or "") for key in keys} for c in app.conditions or [] if isinstance(c, dict)]

    @extend_schema_field(StateChangeSerializer(many=True))
    def get_state_changes(self, app: GitOpsApp) -> list[dict[str, Any]]:
        return StateChangeSerializer(self.context.get("state_changes", []), many=True).data


# --- query parameters (the list's are gitops.appfilter.GitOpsAppFilter) -----------------


class GitOpsDetailQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["Application", "Kustomization", "HelmRelease"], required=False,
        help_text="needed only when apps of several kinds share the path (a Flux Kustomization and HelmRelease)",
    )
    # Issue 41: Applications of one namespace/name in two Argo CD instances deploying to one cluster.
    read_from = serializers.RegexField(
        SLUG, max_length=100, required=False,
        help_text="the cluster whose poll reported the app (the list's `read_from`): needed only when apps of "
        "one kind share the path, e.g. two Argo CD instances deploying to one cluster",
    )
    instance = serializers.RegexField(
        SLUG, max_length=63, required=False,
        help_text="the Argo CD instance that manages the app (the list's `argocd_instance`): an alternative "
        "to read_from where the instance is registered",
    )
