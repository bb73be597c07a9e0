"""The store: what the last successful poll of each cluster saw, and what changed when.

Pages and the API read only these tables. Values that pages sort or filter on
(problem rank, since-when, sync-window verdict) are written at poll time so that a
page is a handful of indexed queries whatever the fleet size.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone

from gitops.revisions import commit_of
from portal.catalog.models import Cluster, Environment, Service

TOOLS = [("argo", "Argo CD"), ("flux", "Flux")]

# Lower sorts first on /gitops: what is broken before what is merely drifting.
PROBLEM_RANK = {"Degraded": 0, "Missing": 1, "OutOfSync": 2, "Unknown": 3, "Progressing": 4, "Suspended": 5}
RANK_OK = 9
ATTENTION_HEALTH = ("Degraded", "Missing")


class RawJSONField(models.JSONField):
    """A JSONField for what clusters send (whole objects, their history and conditions).

    Having get_placeholder keeps Django 5.2's PostgreSQL bulk insert off its UNNEST
    path, which escapes every large JSON document through array literals (seconds per
    thousand objects); plain multi-row VALUES are several times faster here.
    """

    def __init__(self, *args, **kwargs):
        # Objects read from YAML may hold datetimes; encode them here instead of walking
        # and copying every object on every poll.
        kwargs.setdefault("encoder", DjangoJSONEncoder)
        super().__init__(*args, **kwargs)

    def get_placeholder(self, value, compiler, connection):  # noqa: ARG002 - Django's signature
        return "%s"


def grace_cutoff(at: datetime | None = None) -> datetime:
    """States that began before this instant have lasted past the grace period."""
    at = at or timezone.now()
    return at - timedelta(minutes=settings.PORTAL_ATTENTION_GRACE_MINUTES)


class GitOpsAppQuerySet(models.QuerySet):
    def needing_attention(self, at: datetime | None = None) -> GitOpsAppQuerySet:
        """Out of sync, degraded or missing for longer than the grace period."""
        cutoff = grace_cutoff(at)
        return self.filter(
            Q(sync_status="OutOfSync", sync_since__lte=cutoff)
            | Q(health_status__in=ATTENTION_HEALTH, health_since__lte=cutoff)
        )

    def problems_first(self) -> GitOpsAppQuerySet:
        return self.order_by("problem_rank", "cluster__environment__order", "cluster__name", "namespace", "name")


class GitOpsApp(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="apps")
    tool = models.CharField(max_length=8, choices=TOOLS)
    kind = models.CharField(max_length=40)  # Application | Kustomization | HelmRelease
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    project = models.CharField(max_length=253, blank=True)

    # What Git declares (primary source; all sources in `sources`).
    repo_url = models.CharField(max_length=500, blank=True)
    path = models.CharField(max_length=500, blank=True)
    chart = models.CharField(max_length=253, blank=True)
    target_revision = models.CharField(max_length=253, blank=True)
    sources = models.JSONField(default=list, blank=True)
    destination_server = models.CharField(max_length=500, blank=True)
    destination_name = models.CharField(max_length=253, blank=True)
    destination_namespace = models.CharField(max_length=253, blank=True)

    # What the tool reports.
    sync_status = models.CharField(max_length=16, default="Unknown")
    sync_since = models.DateTimeField(null=True, blank=True)
    synced_revision = models.CharField(max_length=300, blank=True)
    synced_revisions = models.JSONField(default=list, blank=True)
    previous_synced_revision = models.CharField(max_length=300, blank=True)
    revision_changed_at = models.DateTimeField(null=True, blank=True)
    source_revision = models.CharField(max_length=300, blank=True)
    health_status = models.CharField(max_length=16, default="Unknown")
    health_since = models.DateTimeField(null=True, blank=True)
    health_message = models.TextField(blank=True)
    ready_reason = models.CharField(max_length=100, blank=True)
    suspended = models.BooleanField(default=False)
    automated = models.BooleanField(default=False)
    manual_sync = models.BooleanField(default=False)
    operation_phase = models.CharField(max_length=32, blank=True)
    operation_message = models.TextField(blank=True)
    operation_started_at = models.DateTimeField(null=True, blank=True)
    operation_finished_at = models.DateTimeField(null=True, blank=True)
    reconciled_at = models.DateTimeField(null=True, blank=True)
    history = RawJSONField(default=list, blank=True)
    images = models.JSONField(default=list, blank=True)
    conditions = RawJSONField(default=list, blank=True)
    interval = models.CharField(max_length=32, blank=True)
    warnings = models.JSONField(default=list, blank=True)

    # Sync-window verdict (Argo CD) written at poll time and whenever a window edge passes.
    sync_blocked = models.BooleanField(default=False)
    sync_blocked_until = models.DateTimeField(null=True, blank=True)
    sync_window = models.JSONField(default=dict, blank=True)  # {kind, description, schedule, error}
    window_next_edge = models.DateTimeField(null=True, blank=True)

    problem_rank = models.PositiveSmallIntegerField(default=RANK_OK)
    # Services this app deploys (their images run in its workloads, or it names them), and
    # {service: [versions]} running under it, denormalised for list pages.
    services = models.ManyToManyField(Service, blank=True, related_name="apps")
    running = models.JSONField(default=dict, blank=True)
    raw = RawJSONField(default=dict, blank=True)
    # Digest of what the last poll wrote: lets a poll skip an unchanged app without reading raw back.
    fingerprint = models.CharField(max_length=32, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = GitOpsAppQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "tool", "kind", "namespace", "name"], name="uniq_app"),
        ]
        indexes = [
            models.Index(fields=["problem_rank", "cluster", "namespace", "name"]),
            models.Index(fields=["sync_status", "sync_since"]),
            models.Index(fields=["health_status", "health_since"]),
            models.Index(fields=["name"]),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.namespace}/{self.name}"

    def synced_commit(self) -> str | None:
        """The commit the tool last applied, or None when the revision is no commit."""
        return commit_of(self.synced_revision, self.tool, self.chart, self._primary_source_ref())

    def previous_commit(self) -> str | None:
        if not self.previous_synced_revision:
            return None
        return commit_of(self.previous_synced_revision, self.tool, self.chart)

    def _primary_source_ref(self) -> str:
        sources = self.sources or []
        return (sources[0].get("ref") or "") if sources and isinstance(sources[0], dict) else ""

    def needs_attention(self, at: datetime | None = None) -> bool:
        cutoff = grace_cutoff(at)
        if self.sync_status == "OutOfSync" and self.sync_since and self.sync_since <= cutoff:
            return True
        return bool(self.health_status in ATTENTION_HEALTH and self.health_since and self.health_since <= cutoff)


def problem_rank(sync_status: str, health_status: str, suspended: bool) -> int:
    ranks = [PROBLEM_RANK.get(health_status, RANK_OK), PROBLEM_RANK.get(sync_status, RANK_OK)]
    if suspended:
        ranks.append(PROBLEM_RANK["Suspended"])
    return min(ranks)


class AppProject(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="projects")
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    sync_windows = models.JSONField(default=list, blank=True)
    destinations = models.JSONField(default=list, blank=True)
    source_repos = models.JSONField(default=list, blank=True)
    raw = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"], name="uniq_project")]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class Workload(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="workloads")
    app = models.ForeignKey(GitOpsApp, null=True, blank=True, on_delete=models.SET_NULL, related_name="workloads")
    kind = models.CharField(max_length=40)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    containers = RawJSONField(default=list, blank=True)
    replicas_desired = models.IntegerField(null=True, blank=True)
    replicas_ready = models.IntegerField(null=True, blank=True)
    replicas_updated = models.IntegerField(null=True, blank=True)
    replicas_available = models.IntegerField(null=True, blank=True)
    health_status = models.CharField(max_length=16, default="Unknown")
    health_message = models.TextField(blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "namespace", "name"], name="uniq_workload"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.namespace}/{self.kind}/{self.name}"


class RunningVersion(models.Model):
    """One service's image running in one workload: the unit of "what actually runs"."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="running_versions")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="running_versions")
    app = models.ForeignKey(GitOpsApp, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="running_versions")
    container = models.CharField(max_length=253)
    image = models.CharField(max_length=500)
    version = models.CharField(max_length=200)  # tag, or digest when there is no tag

    class Meta:
        indexes = [models.Index(fields=["service", "cluster"])]

    def __str__(self) -> str:
        return f"{self.service_id}@{self.cluster_id}: {self.version}"


class VersionChange(models.Model):
    """A service's running version on a cluster replaced by another."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="version_changes")
    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="version_changes")
    app = models.ForeignKey(GitOpsApp, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    from_version = models.CharField(max_length=200)
    to_version = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.from_version} -> {self.to_version}"


class StateChange(models.Model):
    """One field of one object changing value: "since when", and one notification episode."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="state_changes")
    app = models.ForeignKey(GitOpsApp, null=True, blank=True, on_delete=models.SET_NULL, related_name="state_changes")
    # Kept when the app row is removed: "argo/Application/argocd/checkout".
    object_key = models.CharField(max_length=600)
    field = models.CharField(max_length=32)  # sync | health | presence | suspended | revision
    old = models.CharField(max_length=300, blank=True)
    new = models.CharField(max_length=300, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["app", "field", "at"])]

    def __str__(self) -> str:
        return f"{self.object_key} {self.field}: {self.old} -> {self.new}"
