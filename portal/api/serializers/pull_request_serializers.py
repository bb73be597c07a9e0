"""A pull request as GET /api/v1/pull-requests serves it, that route's query, and what POST opens."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gitops.appfilter import SLUG
from portal.api.serializers.api_fields import OffsetDateTimeField, inline_enum
from portal.api.serializers.rendered_diff_serializers import RenderedDiffSerializer
from portal.delivery.change_builders import MAX_CHANGES_PER_PR
from portal.delivery.holds import held_versions, rolled_back_on
from portal.delivery.models import PullRequest, RenderedDiff

PULL_REQUEST_KINDS = ["upgrade", "promotion", "rollback"]
# `opening` rows are a worker's claim before the forge answered: not a pull request yet, never listed.
PULL_REQUEST_STATES = ["open", "merged", "closed"]
CHECKS = ["pass", "running", "fail", "none"]


class ReachVersionSerializer(serializers.Serializer):
    subject = serializers.CharField(help_text="a service, or `the <name> chart`")
    before = serializers.CharField(help_text="what Git pins now")
    after = serializers.CharField(help_text="what it runs after the merge (the same when the change leaves it)")


class ReachAppSerializer(serializers.Serializer):
    name = serializers.CharField()
    files = serializers.ListField(child=serializers.CharField(), help_text="the edited files its build includes")
    versions = ReachVersionSerializer(many=True)
    beyond_target = serializers.CharField(
        allow_blank=True, help_text="why it is beyond the change's target (another environment or service), or empty"
    )


class ReachClusterSerializer(serializers.Serializer):
    name = serializers.CharField()
    applications = ReachAppSerializer(many=True)


class ReachEnvironmentSerializer(serializers.Serializer):
    name = serializers.CharField(allow_blank=True)
    clusters = ReachClusterSerializer(many=True)


class SharedLineSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    subject = serializers.CharField()


class SharedFileSerializer(serializers.Serializer):
    path = serializers.CharField()
    lines = SharedLineSerializer(many=True)


class ReachSerializer(serializers.Serializer):
    """Every application whose build includes a file the pull request edits (portal.delivery.reach),
    by environment and cluster, as the portal last read what each builds when it opened it."""

    environments = ReachEnvironmentSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="reaching beyond the change's target")
    shared_files = SharedFileSerializer(many=True, help_text="files carrying lines of several of its changes")
    not_read = serializers.ListField(child=serializers.CharField(),
                                     help_text="its own applications whose builds were not read yet")


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
    rendered_diff = serializers.SerializerMethodField(
        help_text="what the change does to its applications' rendered manifests at the branch's head; null "
                  "before it was rendered (an open pull request, at the next tracking)"
    )
    reach = serializers.SerializerMethodField(help_text="what it reaches; null when opened before this was kept, "
                                              "or linked from outside")
    rolled_back_on = serializers.SerializerMethodField(
        help_text="opened outside the portal: the day the version it proposes was rolled back where it would "
                  "deploy (held since); null otherwise")

    class Meta:
        model = PullRequest
        fields = ["id", "kind", "services", "environment", "clusters", "repository", "number", "url", "title", "state",
                  "checks", "from_version", "to_version", "automatic", "opened_by", "opened_at", "merged_at",
                  "closed_at", "running_at", "opened_outside", "reach", "rendered_diff", "rolled_back_on"]

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_url(self, pull: PullRequest) -> str | None:
        return pull.url or None

    @extend_schema_field(RenderedDiffSerializer(allow_null=True))
    def get_rendered_diff(self, pull: PullRequest) -> dict[str, Any] | None:
        try:
            stored = pull.rendered
        except RenderedDiff.DoesNotExist:
            return None
        return RenderedDiffSerializer(stored).data  # type: ignore[return-value]

    @extend_schema_field(ReachSerializer(allow_null=True))
    def get_reach(self, pull: PullRequest) -> dict | None:
        return pull.reach or None

    @extend_schema_field(serializers.DateField(allow_null=True))
    def get_rolled_back_on(self, pull: PullRequest) -> str | None:
        if not pull.opened_outside:
            return None
        # Read once per response: the root serializer's context is shared by every row.
        held = self.context.get("held_versions")
        if held is None:
            held = held_versions()
            if isinstance(self.context, dict):
                self.context["held_versions"] = held
        day = rolled_back_on(held, pull)
        return day.isoformat() if day is not None else None


JOB_STATES = ["opening", *PULL_REQUEST_STATES, "failed"]


class PullRequestJobSerializer(PullRequestSerializer):
    """A pull request as asking to open it answers: its job on the forge queue may still run
    (`opening`), or have failed, saying why in `progress`."""

    state = inline_enum(JOB_STATES)(choices=JOB_STATES)
    progress = serializers.CharField(help_text="what its job does now (\"waiting for GitHub's rate limit until "
                                               "…\"), or why it failed")
    waiting_until = OffsetDateTimeField(allow_null=True, help_text="until when its job waits on a rate limit")

    class Meta(PullRequestSerializer.Meta):
        fields = [*PullRequestSerializer.Meta.fields, "progress", "waiting_until"]


class PullRequestQuerySerializer(serializers.Serializer):
    state = inline_enum(PULL_REQUEST_STATES)(choices=PULL_REQUEST_STATES, required=False)
    kind = inline_enum(PULL_REQUEST_KINDS)(choices=PULL_REQUEST_KINDS, required=False)
    environment = serializers.RegexField(SLUG, max_length=63, required=False)


ITEM_PATTERN = r"^w?[0-9]+:[^:\s]+:[^:\s]+(:[^:\s]+)?$"


class PullRequestOpenSerializer(serializers.Serializer):
    """What POST /api/v1/pull-requests opens: the preview page's change, named the same way."""

    kind = inline_enum(PULL_REQUEST_KINDS)(choices=PULL_REQUEST_KINDS, default="upgrade")
    items = serializers.ListField(
        child=serializers.RegexField(ITEM_PATTERN, max_length=400),
        min_length=1,
        max_length=MAX_CHANGES_PER_PR,
        help_text="`app:service:version[:from]` as the preview page's `item`: an application id (or `w` and a "
        "workload id), the service (or `chart=<name>` for a chart version change), the target version",
    )
    mode = inline_enum(["grouped", "each"])(
        choices=["grouped", "each"],
        default="grouped",
        help_text="grouped: one pull request per repository, branch and environment; each: one per item",
    )
    confirm = serializers.BooleanField(
        default=False,
        help_text="propose the change on the default branch for an application that follows a tag, a range or "
        "a commit (the preview asks for this first)",
    )
