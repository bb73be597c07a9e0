"""A GitOps application as GET /api/v1/gitops serves it (Argo CD Application, Flux
Kustomization or HelmRelease), with the parts it nests: sync window, rollback offer, the change
its trouble follows, Git pins, destination, sources, conditions, history, Flux source."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from forges.weblinks import commit_url
from gitops.appfilter import HEALTH_STATUSES, SLUG, SYNC_STATUSES
from gitops.clusterpoll import INTERRUPTED
from gitops.models import ATTENTION_HEALTH, GitOpsApp, sync_held
from portal.api import app_address
from portal.api.serializers.api_fields import DNS_NAME, OffsetDateTimeField, inline_enum
from portal.delivery.rollbacks import CHART_KEY, preview_url
from portal.kernel.links import app_page_path

WINDOW_KINDS = ["allow", "deny", "suspend", "error"]


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


class RollbackSerializer(serializers.Serializer):
    """The rollback the portal offers for the change (the same offer as the service page's button)."""

    to = serializers.CharField(help_text="the version the rollback returns to")
    preview_url = serializers.URLField(help_text="the rollback pull request's preview page")


class AfterChangeSerializer(serializers.Serializer):
    """The version change the app's trouble follows: the one its rollback offer blames (read from the
    tool's own history, or as the portal saw it), else the newest version change on the same
    cluster in the day before the app turned degraded or missing."""

    service = serializers.CharField()
    at = OffsetDateTimeField()
    rollback = RollbackSerializer(allow_null=True, help_text="null when no rollback is offered")

    def get_fields(self) -> dict[str, serializers.Field]:
        # `from` is a Python keyword, so it cannot be a class attribute; `to` keeps it company.
        fields = super().get_fields()
        return {
            "service": fields["service"],
            "from": serializers.CharField(help_text="version(s) running before"),
            "to": serializers.CharField(help_text="version(s) running after"),
            "at": fields["at"],
            "rollback": fields["rollback"],
        }


class GitPinSerializer(serializers.Serializer):
    service = serializers.CharField()
    version = serializers.CharField()
    path = serializers.CharField(help_text="file in the repository")
    line = serializers.IntegerField()


class DestinationSerializer(serializers.Serializer):
    """Where the application deploys, as its object names it."""

    server = serializers.CharField(
        allow_blank=True, help_text="Argo CD spec.destination.server: \"Server specifies the URL of the target "
        "cluster's Kubernetes control plane API. This must be set if Name is not set.\" Empty for Flux.")
    name = serializers.CharField(
        allow_blank=True, help_text="Argo CD spec.destination.name: \"Name is an alternate way of specifying the "
        "target cluster by its symbolic name. This must be set if Server is not set.\" Flux: the secret of "
        "spec.kubeConfig.secretRef, when the Kustomization deploys to a remote cluster.")
    namespace = serializers.CharField(
        allow_blank=True, help_text="Argo CD spec.destination.namespace: \"Namespace specifies the target namespace "
        "for the application's resources.\" Flux Kustomization spec.targetNamespace: \"TargetNamespace sets or "
        "overrides the namespace in the kustomization.yaml file.\"")


class AppSourceSerializer(serializers.Serializer):
    """One source of the application (Argo CD spec.source or each of spec.sources; a Flux object's sourceRef)."""

    repo_url = serializers.CharField(
        allow_blank=True, help_text="Argo CD repoURL: \"RepoURL is the URL to the repository (Git or Helm) that "
        "contains the application manifests.\" Flux: the source object's spec.url.")
    path = serializers.CharField(
        allow_blank=True, help_text="Argo CD path: \"Path is a directory path within the Git repository, and is "
        "only valid for applications sourced from Git.\" Flux Kustomization spec.path: \"Path to the directory "
        "containing the kustomization.yaml file.\"")
    chart = serializers.CharField(
        allow_blank=True, help_text="Argo CD chart: \"Chart is a Helm chart name, and must be specified for "
        "applications sourced from a Helm repo.\" Flux HelmRelease spec.chart.spec.chart.")
    target_revision = serializers.CharField(
        allow_blank=True, help_text="Argo CD targetRevision: \"TargetRevision defines the revision of the source "
        "to sync the application to. In case of Git, this can be commit, tag, or branch. If omitted, will equal "
        "to HEAD. In case of Helm, this is a semver tag for the Chart's version.\" Flux: the ref the source "
        "follows (commit > name > semver > tag > branch for a GitRepository; digest > semver > tag for an "
        "OCIRepository; a HelmChart's version).")
    ref = serializers.CharField(
        allow_blank=True, help_text="Argo CD ref: \"Ref is reference to another source within sources field. "
        "This field will not be used if used with a `source` tag.\" Flux: the sourceRef as `Kind/name` "
        "(`Kind/namespace/name` across namespaces).")


class ReadyConditionSerializer(serializers.Serializer):
    """Flux's Ready condition: \"Ready indicates the resource is ready and fully reconciled.\""""

    status = serializers.CharField(help_text="True, False or Unknown")
    reason = serializers.CharField(allow_blank=True, help_text="\"reason contains a programmatic identifier "
                                   "indicating the reason for the condition's last transition.\"")
    message = serializers.CharField(allow_blank=True, help_text="\"message is a human readable message indicating "
                                    "details about the transition.\"")
    last_transition_time = serializers.CharField(allow_blank=True, help_text="RFC 3339; empty when not written")


class HistoryEntrySerializer(serializers.Serializer):
    """One deployment, as the tool recorded it in status.history (oldest first)."""

    revision = serializers.CharField(allow_blank=True, help_text="Argo CD: the (first source's) revision deployed; "
                                     "Kustomization: metadata.revision; HelmRelease: chartVersion")
    revisions = serializers.ListField(child=serializers.CharField(), required=False,
                                      help_text="Argo CD multi-source: one revision per source")
    deployed_at = serializers.CharField(allow_blank=True, help_text="Argo CD deployedAt; Flux lastReconciled / "
                                        "lastDeployed (RFC 3339)")
    id = serializers.IntegerField(allow_null=True, required=False, help_text="Argo CD history id")
    started_at = serializers.CharField(allow_blank=True, required=False, help_text="Argo CD deployStartedAt")
    initiated_by = serializers.CharField(allow_blank=True, required=False,
                                         help_text="Argo CD: `automated` or the user who started the sync")
    status = serializers.CharField(allow_blank=True, required=False,
                                   help_text="Flux: lastReconciledStatus, or the Helm release status")
    digest = serializers.CharField(allow_blank=True, required=False, help_text="Flux: digest of the applied content "
                                   "(Kustomization) or of the release object (HelmRelease)")
    chart = serializers.CharField(allow_blank=True, required=False, help_text="HelmRelease chartName")
    app_version = serializers.CharField(allow_blank=True, required=False, help_text="HelmRelease appVersion")
    release_version = serializers.IntegerField(allow_null=True, required=False,
                                               help_text="HelmRelease: the Helm release version number")


class HelmReleaseStateSerializer(serializers.Serializer):
    """A Flux HelmRelease's last Helm release (status.history, the highest release version)."""

    chart = serializers.CharField(allow_blank=True, help_text="chartName of the last release")
    chart_version = serializers.CharField(allow_blank=True, help_text="chartVersion of the last release (with the "
                                          "`+<digest12>` suffix for an OCI chart)")
    app_version = serializers.CharField(allow_blank=True)
    status = serializers.CharField(allow_blank=True, help_text="Helm's status of the release: deployed, failed, "
                                   "superseded, …")
    digest = serializers.CharField(allow_blank=True, help_text="\"Digest is the checksum of the release object in "
                                   "storage.\"")
    config_digest = serializers.CharField(allow_blank=True, help_text="\"ConfigDigest is the checksum of the config "
                                          "(better known as \'values\') of the HelmRelease object.\"")
    oci_digest = serializers.CharField(allow_blank=True, help_text="\"OCIDigest is the digest of the OCI artifact "
                                       "associated with the release.\"")
    release_version = serializers.IntegerField(allow_null=True)
    deployed_at = serializers.CharField(allow_blank=True, help_text="lastDeployed (RFC 3339)")


class FluxSourceSerializer(serializers.Serializer):
    """The Flux source object the Kustomization or HelmRelease reads."""

    ref = serializers.CharField(allow_blank=True, help_text="sourceRef as `Kind/name` (GitRepository/podinfo)")
    url = serializers.CharField(allow_blank=True, help_text="the source's spec.url; empty when the source was not "
                                "read")
    follows = serializers.CharField(allow_blank=True, help_text="the ref it follows (branch, tag, semver, digest)")
    revision = serializers.CharField(allow_blank=True, help_text="the source's status.artifact.revision: what it "
                                     "offers now")


class SuggestedHealthRuleSerializer(serializers.Serializer):
    """A rule that would make the tool see what a custom resource reports (gitops.health.suggested_rules)."""

    tool = serializers.CharField(help_text="the tool to teach: \"Argo CD\" or \"Flux\"")
    group = serializers.CharField(help_text="the custom kind's API group")
    kind = serializers.CharField()
    where = serializers.CharField(help_text="where the rule goes: an argocd-cm data key, or the Flux object whose "
                                  "spec.healthCheckExprs takes it")
    rule = serializers.CharField(help_text="the rule: Lua for Argo CD, a healthCheckExprs entry (YAML) for Flux")


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
    sync_since = OffsetDateTimeField(
        allow_null=True, help_text="since when the sync status has held: the tool's own time where it records one "
        "(Argo CD's last sync, Flux's first apply of the revision or its source's new artifact), else the "
        "portal's first sight of the status (see sync_since_exact)")
    sync_since_exact = serializers.BooleanField(
        help_text="true: sync_since is the tool's time or a change the portal watched; false: it is only when "
        "the portal first saw the app in this status (\"at least since\"), the status may be older")
    health_status = serializers.ChoiceField(choices=HEALTH_STATUSES)
    health_since = OffsetDateTimeField(
        allow_null=True, help_text="since when the health has held: Argo CD's health.lastTransitionTime or the "
        "Flux condition's lastTransitionTime where written, else the portal's first sight (see health_since_exact)")
    health_since_exact = serializers.BooleanField(
        help_text="true: health_since is the tool's time or a change the portal watched; false: it is only when "
        "the portal first saw the app in this health (\"at least since\")")
    needs_attention = serializers.SerializerMethodField(
        help_text="out of sync, degraded or missing for longer than the grace period (as on the portal's pages)"
    )
    health_disagreement = serializers.CharField(
        allow_blank=True, help_text="where the tool's health and a custom-resource health rule differ, or the tool "
        "calls a custom resource healthy that reports failure itself, in words (needs attention like Degraded); "
        "empty when they agree")
    rule_health = serializers.CharField(
        allow_blank=True, help_text="the custom-resource health rules' worst verdict on this app's objects, in Argo "
        "CD's words (argocd-cm Lua, healthCheckExprs or a portal rule); empty when no rule judged one")
    rule_message = serializers.SerializerMethodField(
        help_text="the rules' verdict in words, on the objects with the worst one (\"DecisionModel support-router: "
        "Degraded — candidate r42 failed gate; rolled back\"); empty when no rule judged one")
    health_unchecked = serializers.CharField(
        allow_blank=True, help_text="the custom kinds it deploys that neither the tool's built-in checks nor any "
        "rule cover (\"No health check for DecisionModel\"): their health may be overstated")
    health_not_read = serializers.SerializerMethodField(
        help_text="custom kinds whose objects this portal could not read, and why (\"RBAC hides DecisionModel: …\")")
    suggested_health_rules = serializers.SerializerMethodField(
        help_text="where the tool calls a custom resource healthy that reports failure itself: the rule to add to "
        "the tool so that it agrees")
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
        source="cluster.poll.stale_since", allow_null=True,
        help_text="set when the cluster's last polls failed: the data is the last good one",
    )
    cluster_poll_interrupted_at = serializers.SerializerMethodField(
        help_text="set when a poll of the cluster began then and never ended (its worker stopped): the data is "
        "not fresh, and the portal polls the cluster again; null once a poll succeeds",
    )
    portal_url = serializers.SerializerMethodField(help_text="the service's page, or the filtered /gitops view")
    api_url = serializers.SerializerMethodField(help_text="this application in the API, with workloads and changes")
    uid = serializers.CharField(allow_blank=True, help_text="metadata.uid of the object")
    destination = serializers.SerializerMethodField(help_text="where it deploys, as the object names it")
    sources = serializers.SerializerMethodField(
        help_text="every source, the primary first (Argo CD spec.sources of a multi-source app, or spec.source; "
        "Flux: its sourceRef)")
    multi_source = serializers.SerializerMethodField(
        help_text="Argo CD: the app uses spec.sources (\"Sources is a reference to the location of the application's "
        "manifests or chart\") rather than spec.source")
    synced_revisions = serializers.ListField(
        child=serializers.CharField(),
        help_text="Argo CD status.sync.revisions (multi-source: \"Revisions contains information about the "
        "revisions of multiple sources the comparison has been performed to\"), else the one synced revision")
    source_revision = serializers.CharField(allow_blank=True, help_text="Flux: the source artifact's revision, "
                                            "what Git (or the registry) offers now")
    previous_synced_revision = serializers.CharField(allow_blank=True, help_text="the revision applied before the "
                                                     "current one, as the portal saw it change")
    revision_changed_at = OffsetDateTimeField(allow_null=True, help_text="when the portal saw the applied revision "
                                              "change")
    read_from = serializers.CharField(source="read_from.name", help_text="the cluster whose poll reported the object "
                                      "(an Argo CD hub's own cluster for an app it deploys elsewhere)")
    first_seen = OffsetDateTimeField(help_text="when the portal first saw the object")
    last_attempted_revision = serializers.SerializerMethodField(
        help_text="Flux status.lastAttemptedRevision: \"LastAttemptedRevision is the revision of the last "
        "reconciliation attempt.\" null for Argo CD")
    generation = serializers.SerializerMethodField(help_text="metadata.generation: the spec's version")
    observed_generation = serializers.SerializerMethodField(
        help_text="status.observedGeneration: \"ObservedGeneration is the last reconciled generation.\" "
        "(-1 until a Flux object is first reconciled; behind `generation` while a spec change is not reconciled)")
    images = serializers.ListField(child=serializers.CharField(),
                                   help_text="Argo CD status.summary.images: \"Images holds all images of "
                                   "application child resources.\"")
    ready = serializers.SerializerMethodField(help_text="Flux's Ready condition; null for Argo CD or before one "
                                              "is written")
    interval = serializers.CharField(allow_blank=True, help_text="Flux spec.interval: \"The interval at which to "
                                     "reconcile\"")
    automated = serializers.BooleanField(help_text="Argo CD spec.syncPolicy.automated is set (and not disabled)")
    history = serializers.SerializerMethodField(
        help_text="deploy history, oldest first (Argo CD status.history: \"History contains information about the "
        "application's sync history\"; Flux status.history)")
    helm_release = serializers.SerializerMethodField(help_text="HelmRelease: its last Helm release; null otherwise")
    flux_source = serializers.SerializerMethodField(help_text="Flux: the source it reads; null for Argo CD")
    operation_phase = serializers.CharField(allow_blank=True, help_text="Argo CD status.operationState.phase of "
                                            "the last sync operation")
    operation_message = serializers.CharField(allow_blank=True)
    operation_started_at = OffsetDateTimeField(allow_null=True)
    operation_finished_at = OffsetDateTimeField(allow_null=True)
    reconciled_at = OffsetDateTimeField(allow_null=True, help_text="Argo CD status.reconciledAt, as of the last poll "
                                        "that found the app otherwise changed (a poll skips an app whose only "
                                        "change is a new reconciledAt); Flux: the last reconciliation in its history")
    health_message = serializers.CharField(allow_blank=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="what the portal could not read of "
                                     "the object, and why")

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

    # What the health rules say is read out of the health_rules document by the database
    # (GitOpsAppQuerySet.with_rule_words); a row read without it gives nothing.
    def get_rule_message(self, app: GitOpsApp) -> str:
        return getattr(app, "rule_message", None) or ""

    def get_health_not_read(self, app: GitOpsApp) -> str:
        return getattr(app, "health_not_read", None) or ""

    @extend_schema_field(SuggestedHealthRuleSerializer(many=True))
    def get_suggested_health_rules(self, app: GitOpsApp) -> list[dict[str, str]]:
        found = getattr(app, "health_suggested", None)
        return SuggestedHealthRuleSerializer(found if isinstance(found, list) else [], many=True).data

    def get_sync_blocked(self, app: GitOpsApp) -> bool:
        return self._blocked_until(app)[0]

    @extend_schema_field(OffsetDateTimeField(allow_null=True))
    def get_sync_blocked_until(self, app: GitOpsApp) -> str | None:
        return OffsetDateTimeField().to_representation(self._blocked_until(app)[1])

    @extend_schema_field(OffsetDateTimeField(allow_null=True))
    def get_cluster_poll_interrupted_at(self, app: GitOpsApp) -> str | None:
        poll = getattr(app.cluster, "poll", None)  # gitops.ClusterPoll, selected with the cluster
        state = poll.state(self._now()) if poll is not None else None
        return OffsetDateTimeField().to_representation(state.at if state and state.kind == INTERRUPTED else None)

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
        if app.health_status not in ATTENTION_HEALTH:
            return None
        offers = (self.context.get("rollbacks") or {}).get(app.id)
        if offers:
            offer = offers[0]
            return AfterChangeSerializer({
                # A chart's rollback names it as its preview does: "chart=<name>".
                "service": f"{CHART_KEY}{offer.chart}" if offer.chart else offer.service, "from": offer.previous,
                "to": offer.current, "at": offer.replaced_at,
                "rollback": {"to": offer.previous,
                             "preview_url": self.context["request"].build_absolute_uri(preview_url(offer))},
            }).data
        if getattr(app, "after_change_at", None) is None:
            return None
        return AfterChangeSerializer({
            "service": app.after_change_service, "from": app.after_change_from, "to": app.after_change_to,
            "at": app.after_change_at, "rollback": None,
        }).data

    @extend_schema_field(serializers.URLField())
    def get_portal_url(self, app: GitOpsApp) -> str:
        path = app_page_path(self.get_services(app), app.cluster.name, app.name)
        return self.context["request"].build_absolute_uri(path)

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_api_url(self, app: GitOpsApp) -> str | None:
        # Names come from the cluster (a hand-written manifest may lack metadata.namespace): only
        # those the detail route documents can form its URL; any other app has no detail link.
        if not (re.fullmatch(SLUG, app.cluster.name) and re.fullmatch(DNS_NAME, app.namespace)
                and re.fullmatch(DNS_NAME, app.name)):
            return None
        # Its own address: qualified only where a twin shares the path (portal.api.app_address).
        return self.context["request"].build_absolute_uri(app_address.path(app))


    @extend_schema_field(DestinationSerializer)
    def get_destination(self, app: GitOpsApp) -> dict[str, Any]:
        return {"server": app.destination_server, "name": app.destination_name,
                "namespace": app.destination_namespace}

    @extend_schema_field(AppSourceSerializer(many=True))
    def get_sources(self, app: GitOpsApp) -> list[dict[str, Any]]:
        keys = ("repo_url", "path", "chart", "target_revision", "ref")
        return [{key: str(source.get(key) or "") for key in keys}
                for source in app.sources or [] if isinstance(source, dict)]

    def get_multi_source(self, app: GitOpsApp) -> bool:
        return app.tool == "argo" and getattr(app, "spec_sources", None) is not None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_last_attempted_revision(self, app: GitOpsApp) -> str | None:
        value = getattr(app, "attempted_revision", None)
        return str(value) if value not in (None, "") else None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_generation(self, app: GitOpsApp) -> int | None:
        return _as_int(getattr(app, "object_generation", None))

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_observed_generation(self, app: GitOpsApp) -> int | None:
        return _as_int(getattr(app, "object_observed_generation", None))

    @extend_schema_field(ReadyConditionSerializer(allow_null=True))
    def get_ready(self, app: GitOpsApp) -> dict[str, Any] | None:
        if app.tool != "flux":
            return None
        for condition in app.conditions or []:
            if isinstance(condition, dict) and condition.get("type") == "Ready":
                return {key: str(condition.get(key) or "")
                        for key in ("status", "reason", "message", "last_transition_time")}
        return None

    @extend_schema_field(HistoryEntrySerializer(many=True))
    def get_history(self, app: GitOpsApp) -> list[dict[str, Any]]:
        fields = HistoryEntrySerializer().fields
        return [{key: value for key, value in entry.items() if key in fields}
                for entry in app.history or [] if isinstance(entry, dict)]

    @extend_schema_field(HelmReleaseStateSerializer(allow_null=True))
    def get_helm_release(self, app: GitOpsApp) -> dict[str, Any] | None:
        if app.kind != "HelmRelease":
            return None
        history = [entry for entry in app.history or [] if isinstance(entry, dict)]
        if not history:
            return None
        last = history[-1]  # the store keeps the latest release last
        return {
            "chart": str(last.get("chart") or ""), "chart_version": str(last.get("revision") or ""),
            "app_version": str(last.get("app_version") or ""), "status": str(last.get("status") or ""),
            "digest": str(last.get("digest") or ""), "config_digest": str(last.get("config_digest") or ""),
            "oci_digest": str(last.get("oci_digest") or ""), "release_version": last.get("release_version"),
            "deployed_at": str(last.get("deployed_at") or ""),
        }

    @extend_schema_field(FluxSourceSerializer(allow_null=True))
    def get_flux_source(self, app: GitOpsApp) -> dict[str, Any] | None:
        if app.tool != "flux":
            return None
        primary = next((s for s in app.sources or [] if isinstance(s, dict)), {})
        return {"ref": str(primary.get("ref") or ""), "url": str(primary.get("repo_url") or ""),
                "follows": str(primary.get("target_revision") or ""), "revision": app.source_revision}


def _as_int(value: Any) -> int | None:
    """A generation as the object wrote it: a number, or (some controllers) a numeric string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None

