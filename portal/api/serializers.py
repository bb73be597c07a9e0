"""The API's contract: every field a client may rely on is declared here, with its type.

Responses are built only through these serializers; the OpenAPI schema at /api/schema is
generated from them, so the documentation cannot drift from what is served.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from forges.weblinks import commit_url
from gitops.appfilter import HEALTH_STATUSES, SLUG, SYNC_STATUSES
from gitops.models import ATTENTION_HEALTH, GitOpsApp, StateChange, Workload, sync_held
from portal.delivery.models import PullRequest, ServicePolicy

# Lowercase DNS names (slugs: gitops.appfilter.SLUG): what Kubernetes allows, nothing that could smuggle a path.
DNS_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


class OffsetDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit UTC offset (`+00:00`), never a naive time nor a bare `Z`."""

    def to_representation(self, value: datetime | None) -> str | None:
        if value is None:
            return None
        return value.astimezone(UTC).isoformat()


def inline_enum(choices: list[str]) -> type[serializers.ChoiceField]:
    """A choice field whose enum is written inline in the schema: several fields named `kind`
    with different choices would otherwise compete for one component name."""

    @extend_schema_field({"type": "string", "enum": choices})
    class InlineChoiceField(serializers.ChoiceField):
        pass

    return InlineChoiceField


_STRINGS = {"type": "array", "items": {"type": "string"}}


@extend_schema_field({
    "type": "object",
    "description": "the service's version policy, the JSON the service page, the admin and the fleet file edit",
    "properties": {
        "accept": {"type": "string", "enum": ["any", "major", "minor", "patch"]},
        "range": {"type": "string", "description": "node-semver range; empty: any"},
        "allow_tags": {**_STRINGS, "description": "regexes; a tag must contain one"},
        "ignore_tags": {**_STRINGS, "description": "regexes; a tag containing one is skipped"},
        "ignore_prereleases": {"type": "boolean"},
        "auto_pr": {"type": "object", "additionalProperties": {"type": "string",
                                                               "enum": ["none", "major", "minor", "patch"]},
                    "description": "environment -> largest jump that gets an automatic pull request"},
        "pr_reviewers": {**_STRINGS, "description": "logins, and teams as @org/team"},
        "pr_labels": _STRINGS,
        "put_off": {"type": "array", "items": {"type": "object", "properties": {
            "version": {"type": "string"}, "until": {"type": "string", "format": "date"}}}},
    },
})
class VersionPolicyField(serializers.Field):
    """`policy` of a service (read-only): declare it on the service serializer as
    `policy = VersionPolicyField()`; select_related("version_policy") keeps it one query."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.update(source="*", read_only=True)
        super().__init__(**kwargs)

    def to_representation(self, service: Any) -> dict[str, Any]:
        return ServicePolicy.document_of(service)


WINDOW_KINDS = ["allow", "deny", "suspend", "error"]
PULL_REQUEST_KINDS = ["upgrade", "promotion", "rollback"]
# `opening` rows are a worker's claim before the forge answered: not a pull request yet, never listed.
PULL_REQUEST_STATES = ["open", "merged", "closed"]
CHECKS = ["pass", "running", "fail", "none"]


# --- errors ---------------------------------------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, snake_case: branch on this.")
    message = serializers.CharField(help_text="For people: what went wrong and what to do.")
    details = serializers.DictField(help_text="Specifics, e.g. the invalid parameters; may be empty.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# --- GitOps applications --------------------------------------------------------------


class SyncWindowSerializer(serializers.Serializer):
    kind = inline_enum(WINDOW_KINDS)(
        choices=WINDOW_KINDS,
        help_text="deny: a deny window is active; allow: none of the allow windows is open; "
        "suspend: Flux reconciliation is suspended; error: a matching window is invalid and Argo CD refuses syncs.",
    )
    description = serializers.CharField(allow_blank=True)
    schedule = serializers.CharField(allow_blank=True, help_text="cron expression of the window")
    duration = serializers.CharField(allow_blank=True)
    time_zone = serializers.CharField(allow_blank=True)
    manual_sync_allowed = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)


class AfterChangeSerializer(serializers.Serializer):
    """A version change on the same cluster in the day before the app turned degraded or missing."""

    service = serializers.CharField()
    at = OffsetDateTimeField()

    def get_fields(self) -> dict[str, serializers.Field]:
        # `from` is a Python keyword, so it cannot be a class attribute; `to` keeps it company.
        fields = super().get_fields()
        return {
            "service": fields["service"],
            "from": serializers.CharField(help_text="version(s) running before"),
            "to": serializers.CharField(help_text="version(s) running after"),
            "at": fields["at"],
        }


class GitPinSerializer(serializers.Serializer):
    service = serializers.CharField()
    version = serializers.CharField()
    path = serializers.CharField(help_text="file in the repository")
    line = serializers.IntegerField()


class AppSerializer(serializers.Serializer):
    """One GitOps application (Argo CD Application, Flux Kustomization or HelmRelease)."""

    # Context: `request` and `now`, the instant every time-dependent field is judged at. Rows come
    # from portal.api.filters (annotated with the after_change_* values).

    cluster = serializers.CharField(source="cluster.name", help_text="the cluster the application deploys to")
    environment = serializers.CharField(
        source="cluster.environment.name", allow_null=True,
        help_text="its cluster's environment; null while that cluster is an unregistered (discovered) destination",
    )
    argocd_instance = serializers.CharField(
        source="argocd_instance.name", allow_null=True, help_text="the Argo CD instance that manages it; null for Flux"
    )
    tool = serializers.ChoiceField(choices=["argo", "flux"])
    kind = serializers.ChoiceField(choices=["Application", "Kustomization", "HelmRelease"])
    namespace = serializers.CharField(help_text="namespace of the Application/Kustomization/HelmRelease object")
    name = serializers.CharField()
    project = serializers.CharField(allow_blank=True, help_text="Argo CD AppProject; empty for Flux")
    repo_url = serializers.CharField(allow_blank=True, help_text="primary source's repository, as the tool holds it")
    path = serializers.SerializerMethodField(help_text="path in the repository; null for a Helm chart source")
    chart = serializers.SerializerMethodField(help_text="Helm chart name; null for a Git path source")
    target_revision = serializers.CharField(allow_blank=True, help_text="branch, tag, range or commit Git declares")
    synced_revision = serializers.CharField(allow_blank=True, help_text="revision last applied, as the tool wrote it")
    commit_url = serializers.SerializerMethodField(help_text="web page of the applied commit; null if not a commit")
    sync_status = serializers.ChoiceField(choices=SYNC_STATUSES)
    sync_since = OffsetDateTimeField(allow_null=True)
    health_status = serializers.ChoiceField(choices=HEALTH_STATUSES)
    health_since = OffsetDateTimeField(allow_null=True)
    needs_attention = serializers.SerializerMethodField(
        help_text="out of sync, degraded or missing for longer than the grace period (as on the portal's pages)"
    )
    health_disagreement = serializers.CharField(
        allow_blank=True, help_text="where the tool's health and a custom-resource health rule differ, in words "
        "(needs attention like Degraded); empty when they agree")
    sync_blocked = serializers.SerializerMethodField(help_text="a sync window or a suspension holds deploys now")
    sync_blocked_until = serializers.SerializerMethodField(
        help_text="when the block ends; null when there is no known end or it has already passed"
    )
    sync_window = serializers.SerializerMethodField(help_text="the window that blocks; null when nothing blocks")
    manual_sync = serializers.BooleanField(help_text="no automated sync: deploys only when someone syncs")
    suspended = serializers.BooleanField(help_text="Flux spec.suspend")
    services = serializers.SerializerMethodField(help_text="catalog services this application deploys")
    running_versions = serializers.DictField(
        source="running", child=serializers.ListField(child=serializers.CharField()),
        help_text="service name -> versions running under this application",
    )
    git_pins = serializers.SerializerMethodField(
        help_text="the image versions Git pins under the app's path at the branch it follows "
        "({service, version, path, line}); null until the portal has read them"
    )
    after_change = serializers.SerializerMethodField(
        help_text="for a degraded or missing app: the newest version change on its cluster in the day before it "
        "turned so (its health_since); null otherwise"
    )
    cluster_stale_since = OffsetDateTimeField(
        source="cluster.stale_since", allow_null=True,
        help_text="set when the cluster's last polls failed: the data is the last good one",
    )
    portal_url = serializers.SerializerMethodField(help_text="the service's page, or the filtered /gitops view")
    api_url = serializers.SerializerMethodField(help_text="this application in the API, with workloads and changes")

    def _now(self) -> datetime:
        return self.context["now"]

    def _blocked_until(self, app: GitOpsApp) -> tuple[bool, datetime | None]:
        # The verdict is stored at poll time; an end already past means the window has closed.
        if not sync_held(app.sync_blocked, app.sync_blocked_until, self._now()):
            return False, None
        return True, app.sync_blocked_until

    def get_path(self, app: GitOpsApp) -> str | None:
        return app.path or None

    def get_chart(self, app: GitOpsApp) -> str | None:
        return app.chart or None

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_commit_url(self, app: GitOpsApp) -> str | None:
        return commit_url(app.repo_url, app.synced_commit())

    def get_needs_attention(self, app: GitOpsApp) -> bool:
        return app.needs_attention(self._now())

    def get_sync_blocked(self, app: GitOpsApp) -> bool:
        return self._blocked_until(app)[0]

    @extend_schema_field(OffsetDateTimeField(allow_null=True))
    def get_sync_blocked_until(self, app: GitOpsApp) -> str | None:
        return OffsetDateTimeField().to_representation(self._blocked_until(app)[1])

    @extend_schema_field(SyncWindowSerializer(allow_null=True))
    def get_sync_window(self, app: GitOpsApp) -> dict[str, Any] | None:
        if not self._blocked_until(app)[0]:
            return None
        window = app.sync_window or {}
        return SyncWindowSerializer({
            "kind": window.get("kind") if window.get("kind") in WINDOW_KINDS else "deny",
            "description": window.get("description", ""),
            "schedule": window.get("schedule", ""),
            "duration": window.get("duration", ""),
            "time_zone": window.get("time_zone", ""),
            "manual_sync_allowed": bool(window.get("manual_sync_allowed")),
            "error": window.get("error", ""),
        }).data

    def get_services(self, app: GitOpsApp) -> list[str]:
        return sorted(service.name for service in app.services.all())

    @extend_schema_field(GitPinSerializer(many=True, allow_null=True))
    def get_git_pins(self, app: GitOpsApp) -> list[dict[str, Any]] | None:
        return (self.context.get("git_pins") or {}).get(app.id)

    @extend_schema_field(AfterChangeSerializer(allow_null=True))
    def get_after_change(self, app: GitOpsApp) -> dict[str, Any] | None:
        if app.health_status not in ATTENTION_HEALTH or getattr(app, "after_change_at", None) is None:
            return None
        return AfterChangeSerializer({
            "service": app.after_change_service, "from": app.after_change_from, "to": app.after_change_to,
            "at": app.after_change_at,
        }).data

    @extend_schema_field(serializers.URLField())
    def get_portal_url(self, app: GitOpsApp) -> str:
        services = self.get_services(app)
        if len(services) == 1:
            path = reverse("service", kwargs={"name": services[0]})
        else:
            path = reverse("gitops") + "?" + _query({"cluster": app.cluster.name, "q": app.name})
        return self.context["request"].build_absolute_uri(path)

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_api_url(self, app: GitOpsApp) -> str | None:
        # Names come from the cluster (a hand-written manifest may lack metadata.namespace): only
        # those the detail route documents can form its URL; any other app has no detail link.
        if not (re.fullmatch(SLUG, app.cluster.name) and re.fullmatch(DNS_NAME, app.namespace)
                and re.fullmatch(DNS_NAME, app.name)):
            return None
        path = reverse("api-gitops-detail", kwargs={"cluster": app.cluster.name, "namespace": app.namespace,
                                                    "name": app.name})
        return self.context["request"].build_absolute_uri(path + "?" + _query({"kind": app.kind}))


def _query(params: dict[str, str]) -> str:
    return urlencode(params)


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
    health_message = serializers.CharField(allow_blank=True)
    operation_phase = serializers.CharField(allow_blank=True, help_text="last sync operation (Argo CD)")
    operation_message = serializers.CharField(allow_blank=True)
    reconciled_at = OffsetDateTimeField(allow_null=True)
    workloads = WorkloadSerializer(many=True)
    state_changes = serializers.SerializerMethodField(help_text="the most recent changes, newest first")

    @extend_schema_field(StateChangeSerializer(many=True))
    def get_state_changes(self, app: GitOpsApp) -> list[dict[str, Any]]:
        return StateChangeSerializer(self.context.get("state_changes", []), many=True).data


# --- query parameters (the list's are gitops.appfilter.GitOpsAppFilter) -----------------


class GitOpsDetailQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["Application", "Kustomization", "HelmRelease"], required=False,
        help_text="needed only when a Flux Kustomization and HelmRelease share the name",
    )


# --- pull requests --------------------------------------------------------------------


class PullRequestSerializer(serializers.ModelSerializer):
    """A pull request the portal opened, or one opened elsewhere that it linked (opened_outside)."""

    kind = inline_enum(PULL_REQUEST_KINDS)(choices=PULL_REQUEST_KINDS)
    services = serializers.ListField(child=serializers.CharField(), help_text="service names")
    environment = serializers.CharField(allow_blank=True)
    clusters = serializers.ListField(child=serializers.CharField(), help_text="cluster names")
    repository = serializers.CharField(help_text="the repository's web URL")
    number = serializers.IntegerField(allow_null=True)
    url = serializers.SerializerMethodField(help_text="the pull request's page")
    state = inline_enum(PULL_REQUEST_STATES)(choices=PULL_REQUEST_STATES)
    checks = inline_enum(CHECKS)(choices=CHECKS, help_text="the forge's checks on the head commit")
    opened_by = serializers.CharField(source="opened_by.username", allow_null=True,
                                      help_text="who asked the portal to open it; null when automatic or outside")
    opened_at = OffsetDateTimeField(allow_null=True)
    merged_at = OffsetDateTimeField(allow_null=True)
    closed_at = OffsetDateTimeField(allow_null=True)
    running_at = OffsetDateTimeField(allow_null=True, help_text="when the new version was first seen running")

    class Meta:
        model = PullRequest
        fields = ["kind", "services", "environment", "clusters", "repository", "number", "url", "title", "state",
                  "checks", "from_version", "to_version", "automatic", "opened_by", "opened_at", "merged_at",
                  "closed_at", "running_at", "opened_outside"]

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_url(self, pull: PullRequest) -> str | None:
        return pull.url or None


class PullRequestQuerySerializer(serializers.Serializer):
    state = inline_enum(PULL_REQUEST_STATES)(choices=PULL_REQUEST_STATES, required=False)
    kind = inline_enum(PULL_REQUEST_KINDS)(choices=PULL_REQUEST_KINDS, required=False)
    environment = serializers.RegexField(SLUG, max_length=63, required=False)

