"""The store: what the last successful poll of each cluster saw, and what changed when.

Pages and the API read only these tables. Values that pages sort or filter on
(problem rank, since-when, sync-window verdict) are written at poll time so that a
page is a handful of indexed queries whatever the fleet size.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.fields.json import KT, KeyTransform
from django.db.models.functions import Coalesce
from django.utils import timezone

# The poll's bookkeeping tables live beside the poll's code; imported here to be the app's models.
from gitops.clusterpoll import ClusterObjectVersions as ClusterObjectVersions
from gitops.clusterpoll import ClusterPoll as ClusterPoll

# The attention rule lives in gitops.derive.attention; its names stay importable from here.
from gitops.derive.attention import ATTENTION_HEALTH as ATTENTION_HEALTH
from gitops.derive.attention import Attention
from gitops.derive.attention import grace_cutoff as grace_cutoff
from gitops.health.cel import HealthCheckExprs
from gitops.health.rules import PortalRule
from gitops.revisions import commit_of
from gitops.rows import ARGO
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service
from portal.kernel.fields import UnsizedCharField

TOOLS = [("argo", "Argo CD"), ("flux", "Flux")]

# Lower sorts first on /gitops: what is broken before what is merely drifting.
PROBLEM_RANK = {"Degraded": 0, "Missing": 1, "OutOfSync": 2, "Unknown": 3, "Progressing": 4, "Suspended": 5}
RANK_OK = 9

# Every order the lists of apps offer (/gitops and /api/v1/gitops): a sort's keys, all
# ascending, as (field or sort key, type). Each ends with the unique id, so an order is
# total and the API's keyset pages can start strictly after a row. "problems" is the default.
APP_SORTS: dict[str, tuple[tuple[str, str], ...]] = {
    "problems": (("problem_rank", "int"), ("sort_env", "int"), ("sort_cluster", "str"), ("namespace", "str"),
                 ("name", "str"), ("id", "int")),
    "name": (("name", "str"), ("sort_cluster", "str"), ("namespace", "str"), ("id", "int")),
    "cluster": (("sort_cluster", "str"), ("namespace", "str"), ("name", "str"), ("id", "int")),
    "environment": (("sort_env", "int"), ("sort_cluster", "str"), ("namespace", "str"), ("name", "str"),
                    ("id", "int")),
    "sync_since": (("sort_sync_since", "datetime"), ("id", "int")),
    "health_since": (("sort_health_since", "datetime"), ("id", "int")),
}
PROBLEMS_FIRST = "problems"
# A time never set sorts as the oldest possible instant, so every key has a value to page by
# and both databases put it in the same place.
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# A discovered cluster has no environment yet: its apps sort after every environment's.
NO_ENVIRONMENT_ORDER = 2**31 - 1
# The computed keys; `sort_env` and `sort_cluster` are columns (gitops.app_order keeps them).
_SORT_KEYS = {
    "sort_sync_since": Coalesce("sync_since", Value(_NEVER, output_field=DateTimeField())),
    "sort_health_since": Coalesce("health_since", Value(_NEVER, output_field=DateTimeField())),
}


class RawJSONField(models.JSONField):
    """A JSONField for what clusters send (whole objects, their history and conditions).

    Having get_placeholder keeps Django 5.2's PostgreSQL bulk insert off its UNNEST
    path, which escapes every large JSON document through array literals (seconds per
    thousand objects); plain multi-row VALUES are several times faster here."""

    def __init__(self, *args, **kwargs):
        # Objects read from YAML may hold datetimes; encode them here instead of walking
        # and copying every object on every poll.
        kwargs.setdefault("encoder", DjangoJSONEncoder)
        super().__init__(*args, **kwargs)

    def get_placeholder(self, value, compiler, connection):  # noqa: ARG002 - Django's signature
        return "%s"


class GitOpsAppQuerySet(models.QuerySet):
    def needing_attention(self, at: datetime | None = None) -> GitOpsAppQuerySet:
        """Out of sync, degraded or missing for longer than the grace period (gitops.derive.attention)."""
        return self.filter(Attention.at(at).q())

    def not_needing_attention(self, at: datetime | None = None) -> GitOpsAppQuerySet:
        """Every other app (Django's exclude keeps apps whose since-time is not set)."""
        return self.exclude(Attention.at(at).q())

    def blocked(self, at: datetime | None = None) -> GitOpsAppQuerySet:
        """Deploys held now by a sync window or a suspension: the verdict stored at poll time,
        unless the end it named has passed since."""
        return self.filter(blocked_q(at or timezone.now()))

    def with_rule_words(self) -> GitOpsAppQuerySet:
        """Rows carrying what the custom-resource health rules say (gitops.collectors.custom_health),
        picked out of the deferred `health_rules` document by the database: `rule_message` (the
        rules' verdict in words), `health_not_read` (the kinds not read, e.g. "RBAC hides …") and
        `health_suggested` (the rules that would make the tool agree). None when never judged."""
        return self.annotate(rule_message=KT("health_rules__message"), health_not_read=KT("health_rules__hidden"),
                             health_suggested=KeyTransform("suggested", "health_rules"))

    def with_sort_keys(self) -> GitOpsAppQuerySet:
        """Rows carrying the computed keys of APP_SORTS (`sort_sync_since`, …), e.g. to write a cursor."""
        return self.annotate(**_SORT_KEYS)

    def sorted_by(self, sort: str) -> GitOpsAppQuerySet:
        """In the order APP_SORTS names; a leading "-" reverses it."""
        descending = sort.startswith("-")
        order = []
        for key, _ in APP_SORTS[sort.removeprefix("-")]:
            # A computed key not selected already is ordered by as an expression, not aliased:
            # its joins then stay out of a Paginator's COUNT(*) of the same queryset.
            computed = key in _SORT_KEYS and key not in self.query.annotations
            expression = _SORT_KEYS[key] if computed else F(key)
            order.append(expression.desc() if descending else expression.asc())
        return self.order_by(*order)

    def problems_first(self) -> GitOpsAppQuerySet:
        """Degraded, missing, out of sync, … before what is fine (PROBLEM_RANK), then by
        environment, cluster, namespace and name."""
        return self.sorted_by(PROBLEMS_FIRST)


# Apps held back from syncing, by a sync window or by being suspended: few, and counted on the
# overview; a partial index over them (GitOpsApp.Meta) lets the count skip every other app.
HELD_Q = Q(sync_blocked=True) | Q(suspended=True)


def may_install_a_chart() -> Q:
    """The rows that may install a chart: a chart in the primary columns, or an Argo CD
    Application whose primary source has no path (a `ref` source listed before the chart,
    as ApplicationSets of multi-source apps often write them); `portal.releases.charts.chart_pin`
    then decides. Here, beside the model, because a partial index of those few rows
    (GitOpsApp.Meta) lets /delivery's and /updates' chart reads skip every other app."""
    return ~Q(chart="") | Q(tool=ARGO, path="")


def blocked_q(at: datetime) -> Q:
    """See GitOpsAppQuerySet.blocked; a Q to count with as well as to filter by."""
    return Q(sync_blocked=True) & (Q(sync_blocked_until__isnull=True) | Q(sync_blocked_until__gt=at))


def sync_held(sync_blocked: bool, sync_blocked_until: datetime | None, at: datetime) -> bool:
    """`blocked_q` for a row already loaded: the stored verdict holds at `at` unless the end it
    named has passed (the window has closed since the poll)."""
    return bool(sync_blocked) and (sync_blocked_until is None or sync_blocked_until > at)


class GitOpsApp(models.Model):
    # The cluster the app deploys to (its destination, gitops.derive.topology): every page files the
    # app, its environment and its running versions there. `read_from` is the cluster whose
    # poll reported it (the Argo CD instance's own cluster for a hub); a poll replaces the
    # rows it read, wherever they point.
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="apps")
    read_from = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="apps_read")
    argocd_instance = models.ForeignKey(
        ArgoCDInstance, null=True, blank=True, on_delete=models.SET_NULL, related_name="apps"
    )
    tool = models.CharField(max_length=8, choices=TOOLS)
    kind = UnsizedCharField(max_length=40)  # Application | Kustomization | HelmRelease
    namespace = UnsizedCharField(max_length=253)
    name = UnsizedCharField(max_length=253)
    uid = UnsizedCharField(max_length=64, blank=True)
    project = UnsizedCharField(max_length=253, blank=True)

    # What Git declares (primary source; all sources in `sources`).
    repo_url = UnsizedCharField(max_length=500, blank=True)
    path = UnsizedCharField(max_length=500, blank=True)
    chart = UnsizedCharField(max_length=253, blank=True)
    target_revision = UnsizedCharField(max_length=253, blank=True)
    sources = models.JSONField(default=list, blank=True)
    destination_server = UnsizedCharField(max_length=500, blank=True)
    destination_name = UnsizedCharField(max_length=253, blank=True)
    destination_namespace = UnsizedCharField(max_length=253, blank=True)

    # What the tool reports.
    sync_status = models.CharField(max_length=16, default="Unknown")
    # "Since when" is the tool's own time where it records one (gitops.derive.app_changes.since_when);
    # `*_since_exact` is False where it records none and the time is the portal's first sight
    # of the app in that state: "at least since" then, never "since".
    sync_since = models.DateTimeField(null=True, blank=True)
    sync_since_exact = models.BooleanField(default=False)
    synced_revision = UnsizedCharField(max_length=300, blank=True)
    synced_revisions = models.JSONField(default=list, blank=True)
    previous_synced_revision = UnsizedCharField(max_length=300, blank=True)
    revision_changed_at = models.DateTimeField(null=True, blank=True)
    source_revision = UnsizedCharField(max_length=300, blank=True)
    health_status = models.CharField(max_length=16, default="Unknown")
    health_since = models.DateTimeField(null=True, blank=True)
    health_since_exact = models.BooleanField(default=False)
    health_message = models.TextField(blank=True)
    ready_reason = UnsizedCharField(max_length=100, blank=True)
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

    # Custom-resource health rules (gitops.collectors.custom_health): the rules' worst verdict on the
    # app's custom objects, where the tool's verdict and a rule's differ (needs attention, like
    # Degraded, from `health_disagreement_since` on), the custom kinds nothing checks, and the
    # per-object details (JSON: deferred on pages).
    rule_health = models.CharField(max_length=16, blank=True)
    health_disagreement = models.TextField(blank=True)
    health_disagreement_since = models.DateTimeField(null=True, blank=True)
    health_unchecked = UnsizedCharField(max_length=300, blank=True)
    health_rules = RawJSONField(default=dict, blank=True)
    # Flux: the Alerts forwarding this object's failures; null when they could not be read.
    flux_alerts = models.JSONField(null=True, blank=True, default=None)

    # Sync-window verdict (Argo CD) written at poll time and whenever a window edge passes.
    sync_blocked = models.BooleanField(default=False)
    sync_blocked_until = models.DateTimeField(null=True, blank=True)
    sync_window = models.JSONField(default=dict, blank=True)  # {kind, description, schedule, error}
    window_next_edge = models.DateTimeField(null=True, blank=True)

    problem_rank = models.PositiveSmallIntegerField(default=RANK_OK)
    # Its cluster's environment order and name, for the lists' order (gitops.app_order says why).
    sort_env = models.PositiveIntegerField(default=NO_ENVIRONMENT_ORDER)
    sort_cluster = UnsizedCharField(max_length=63, blank=True)
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
            models.UniqueConstraint(fields=["read_from", "tool", "kind", "namespace", "name"], name="uniq_app"),
        ]
        indexes = [
            # The whole default order of the lists (APP_SORTS): a first page is its first entries.
            models.Index(fields=["problem_rank", "sort_env", "sort_cluster", "namespace", "name", "id"],
                         name="gitopsapp_problems_order_idx"),
            models.Index(fields=["sync_status", "sync_since"]),
            models.Index(fields=["health_status", "health_since"]),
            models.Index(fields=["name"]),
            # The projects the GitOps page's filter offers, read by skipping from one to the next
            # (gitops.queries.project_names) instead of a DISTINCT over every app.
            models.Index(fields=["project"], name="gitopsapp_project_idx"),
            # The apps that can need attention (a few in a thousand): what the matrix's and the
            # overview's problem queries read (Attention.candidates_q says why).
            models.Index(fields=["cluster"], condition=Attention.candidates_q(), name="gitopsapp_attention_idx"),
            models.Index(fields=["cluster"], condition=HELD_Q, name="gitopsapp_held_idx"),
            models.Index(fields=["cluster"], condition=may_install_a_chart(), name="gitopsapp_chart_idx"),
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # An app read from the cluster it deploys to (a standalone Argo CD, Flux) needs no
        # second cluster named. Read through __dict__: a deferred field is never loaded here.
        values = self.__dict__
        if values.get("read_from_id", 0) is None and values.get("cluster_id") is not None:
            self.read_from_id = values["cluster_id"]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.namespace}/{self.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        from gitops import app_order  # a row saved alone (the admin, a test) gets its order keys too
        moved = kwargs.get("update_fields") is None or {"cluster", "cluster_id"} & set(kwargs["update_fields"])
        if moved and app_order.refresh_cluster(self.cluster_id):
            self.refresh_from_db(fields=["sort_env", "sort_cluster"])

    def synced_commit(self) -> str | None:
        """The commit the tool last applied, or None when the revision is no commit."""
        return commit_of(self.synced_revision, self.tool, self.chart, self._primary_source_ref())

    def previous_commit(self) -> str | None:
        if not self.previous_synced_revision:
            return None
        return commit_of(self.previous_synced_revision, self.tool, self.chart)

    def last_change(self) -> tuple[str, str] | None:
        """(before, after): the commits of the app's last change of synced commit, for a "changes"
        link. The portal's own sighting between two polls when it saw one; else the tool's history
        (Argo CD's and a Kustomization's `status.history`, latest last): its last deployment and
        the one before naming another commit. None for a first sync, or where revisions are no
        commits (a HelmRelease's chart versions)."""
        if self.previous_synced_revision:
            before, after = self.previous_commit(), self.synced_commit()
            return (before, after) if before and after and before != after else None
        ref = self._primary_source_ref()
        commits = [
            commit
            for entry in self.history or []
            if isinstance(entry, dict)
            and (commit := commit_of(str(entry.get("revision") or ""), self.tool, self.chart, ref))
        ]
        for before in reversed(commits[:-1]):
            if before != commits[-1]:
                return before, commits[-1]
        return None

    def _primary_source_ref(self) -> str:
        sources = self.sources or []
        return (sources[0].get("ref") or "") if sources and isinstance(sources[0], dict) else ""

    def needs_attention(self, at: datetime | None = None) -> bool:
        """As GitOpsApp.objects.needing_attention, for a row already loaded."""
        return Attention.at(at).holds(self)

    def trouble_since(self, start: datetime) -> tuple[datetime, bool]:
        """When the app left "in sync and healthy", and whether that time is exact.

        `start` is when the portal saw it leave (the StateChange row that began the trouble). The
        tool's own time for a state the app is in now (out of sync, not healthy) can be older —
        an app Degraded for days before the portal's first poll — and then it says when; a time
        the portal only first saw is exact unless it is the app's first sight ("at least since").
        """
        times = []
        if self.sync_status == "OutOfSync" and self.sync_since is not None and self.sync_since_exact:
            times.append(self.sync_since)
        if self.health_status != "Healthy" and self.health_since is not None and self.health_since_exact:
            times.append(self.health_since)
        earliest = min(times, default=None)
        if earliest is not None and earliest < start:
            return earliest, True
        return start, start != self.first_seen


def problem_rank(sync_status: str, health_status: str, suspended: bool) -> int:
    ranks = [PROBLEM_RANK.get(health_status, RANK_OK), PROBLEM_RANK.get(sync_status, RANK_OK)]
    if suspended:
        ranks.append(PROBLEM_RANK["Suspended"])
    return min(ranks)


class AppProject(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="projects")
    namespace = UnsizedCharField(max_length=253)
    name = UnsizedCharField(max_length=253)
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
    kind = UnsizedCharField(max_length=40)
    namespace = UnsizedCharField(max_length=253)
    name = UnsizedCharField(max_length=253)
    uid = UnsizedCharField(max_length=64, blank=True)
    containers = RawJSONField(default=list, blank=True)
    replicas_desired = models.IntegerField(null=True, blank=True)
    replicas_ready = models.IntegerField(null=True, blank=True)
    replicas_updated = models.IntegerField(null=True, blank=True)
    replicas_available = models.IntegerField(null=True, blank=True)
    health_status = models.CharField(max_length=16, default="Unknown")
    health_message = models.TextField(blank=True)
    # What portal.findings judges beyond images (gitops.collectors.workloads.spec_facts):
    # kubectl's last-applied annotation present, a Rollout's automatic guards.
    spec_facts = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # Where the image is pinned in Git when no GitOps tool deploys it (gitops.platforms).
    git_repo = UnsizedCharField(max_length=500, blank=True)
    git_path = UnsizedCharField(max_length=500, blank=True)
    git_branch = UnsizedCharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "namespace", "name"], name="uniq_workload"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.namespace}/{self.kind}/{self.name}"

    @property
    def git_ref(self) -> str:
        """How a pull request preview's URL names this workload (portal.web.views.pr): `w<id>`."""
        return f"w{self.pk}"


class RunningVersion(models.Model):
    """One service's image running in one workload: the unit of "what actually runs".

    Without a workload, the version is as an Argo CD instance reports it (the app's
    `status.summary.images`) for a destination cluster the portal does not read."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="running_versions")
    workload = models.ForeignKey(
        Workload, null=True, blank=True, on_delete=models.CASCADE, related_name="running_versions"
    )
    app = models.ForeignKey(GitOpsApp, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="running_versions")
    container = UnsizedCharField(max_length=253)
    image = UnsizedCharField(max_length=500)
    version = UnsizedCharField(max_length=200)  # tag, or digest when there is no tag

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
    from_version = UnsizedCharField(max_length=200)
    to_version = UnsizedCharField(max_length=200)
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
    object_key = UnsizedCharField(max_length=600)
    field = models.CharField(max_length=32)  # sync | health | presence | suspended | revision | disagreement
    old = UnsizedCharField(max_length=300, blank=True)
    new = UnsizedCharField(max_length=300, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # When the notification pass consumed the row (portal.notifications.statechanges): each
    # row is claimed once, so a minute's pass reads only what is new, never the history.
    processed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["app", "field", "at"]),
            # Only the rows not yet consumed: a handful, whatever the length of the history.
            models.Index(fields=["id"], condition=Q(processed__isnull=True), name="statechange_unprocessed"),
        ]

    def __str__(self) -> str:
        return f"{self.object_key} {self.field}: {self.old} -> {self.new}"


class HealthRule(models.Model):
    """An admin's health rule for one custom group/kind (gitops.health.rules.PortalRule).

    Used after the tool's own rules (argocd-cm, a Kustomization's healthCheckExprs), so it
    judges the kinds their tool has no rule for. Lua is an Argo CD health script (``obj`` in,
    ``{status, message}`` out); CEL is a Flux ``healthCheckExprs`` entry (``current``
    required, ``inProgress`` and ``failed`` optional). Both run sandboxed.
    """

    class Language(models.TextChoices):
        LUA = "lua", "Lua (Argo CD health script)"
        CEL = "cel", "CEL (Flux healthCheckExprs)"

    group = UnsizedCharField(max_length=253, blank=True, help_text="API group, e.g. decisionmodel.io; empty for core")
    kind = UnsizedCharField(max_length=100, help_text="e.g. DecisionModel")
    language = models.CharField(max_length=3, choices=Language.choices, default=Language.LUA)
    lua = models.TextField(blank=True, help_text="Lua: the script, returning {status = …, message = …}")
    use_open_libs = models.BooleanField(default=False, help_text="Lua: open string and math")
    cel_current = models.TextField(blank=True, help_text="CEL: when the object is Current (Healthy)")
    cel_in_progress = models.TextField(blank=True, help_text="CEL: when it is InProgress")
    cel_failed = models.TextField(blank=True, help_text="CEL: when it has Failed (Degraded)")
    enabled = models.BooleanField(default=True)
    note = UnsizedCharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group", "kind"]
        constraints = [models.UniqueConstraint(fields=["group", "kind"], name="uniq_health_rule")]

    def __str__(self) -> str:
        return f"{self.group}/{self.kind}" if self.group else self.kind

    def clean(self) -> None:
        if self.language == self.Language.LUA and not self.lua.strip():
            raise ValidationError({"lua": "a Lua rule needs a script"})
        if self.language == self.Language.CEL and not self.cel_current.strip():
            raise ValidationError({"cel_current": "a CEL rule needs its current expression"})

    def portal_rule(self) -> PortalRule:
        """As gitops.health.rules.PortalRule."""
        if self.language == self.Language.CEL:
            api_version = f"{self.group}/v1" if self.group else "v1"
            exprs = HealthCheckExprs.from_spec({
                "apiVersion": api_version, "kind": self.kind, "current": self.cel_current,
                **({"inProgress": self.cel_in_progress} if self.cel_in_progress.strip() else {}),
                **({"failed": self.cel_failed} if self.cel_failed.strip() else {}),
            })
            return PortalRule(self.group, self.kind, cel=exprs)
        return PortalRule(self.group, self.kind, lua=self.lua, use_open_libs=self.use_open_libs)


class Finding(models.Model):
    """One GitOps discipline finding on one app (portal.findings), re-derived at every poll."""

    app = models.ForeignKey(GitOpsApp, on_delete=models.CASCADE, related_name="findings")
    rule = UnsizedCharField(max_length=40)  # portal.findings.discipline.RULES
    message = models.TextField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["rule", "app_id"]
        indexes = [models.Index(fields=["rule"]), models.Index(fields=["app", "rule"])]

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


class FindingMute(models.Model):
    """A finding muted on one app, with a reason (audited): kept across polls."""

    app = models.ForeignKey(GitOpsApp, on_delete=models.CASCADE, related_name="finding_mutes")
    rule = UnsizedCharField(max_length=40)
    reason = UnsizedCharField(max_length=500)
    muted_by = UnsizedCharField(max_length=150)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "rule"], name="uniq_finding_mute")]

    def __str__(self) -> str:
        return f"{self.rule} muted on {self.app_id}: {self.reason}"
