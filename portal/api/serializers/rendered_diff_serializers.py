"""An open pull request's rendered diff as the API and MCP serve it (portal.delivery.rendered_diff):
per application, the objects and fields that change, at the branch head it was rendered at."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.serializers.api_fields import OffsetDateTimeField, inline_enum
from portal.delivery.models import RenderedDiff
from portal.delivery.rendered_diff import ADDED, CHANGED, REMOVED, AppDiff, stored_diffs
from portal.kernel.links import absolute, rendered_output_path

OBJECT_CHANGES = [CHANGED, ADDED, REMOVED]


class RenderedFieldSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="the field, dotted; named list items in brackets: `containers[web].image`")
    before = serializers.CharField(allow_null=True, help_text="null: not there before")
    after = serializers.CharField(allow_null=True, help_text="null: gone after")


class RenderedObjectSerializer(serializers.Serializer):
    kind = serializers.CharField()
    namespace = serializers.CharField(allow_blank=True)
    name = serializers.CharField()
    change = inline_enum(OBJECT_CHANGES)(choices=OBJECT_CHANGES)
    fields = RenderedFieldSerializer(many=True)
    more_fields = serializers.IntegerField(help_text="changed fields left out past the bound")


class RenderedAppSerializer(serializers.Serializer):
    app = serializers.CharField(help_text="<Argo CD namespace>/<name>")
    cluster = serializers.CharField()
    renderer = serializers.CharField(allow_blank=True, help_text="what rendered it; empty: no renderer in reach")
    before_revision = serializers.CharField(allow_blank=True, help_text="the app's own target")
    after_revision = serializers.CharField(allow_blank=True, help_text="the pull request's head")
    error = serializers.CharField(allow_blank=True, help_text="why there is no diff")
    changed = serializers.IntegerField(source="comparison.changed")
    unchanged = serializers.IntegerField(source="comparison.unchanged")
    objects = RenderedObjectSerializer(source="comparison.objects", many=True)
    more_objects = serializers.IntegerField(source="comparison.more_objects")


class RenderedDiffSerializer(serializers.Serializer):
    head = serializers.CharField(help_text="the branch's commit it was rendered at")
    computed_at = OffsetDateTimeField()
    output_url = serializers.SerializerMethodField(help_text="the portal's page with every object both sides rendered")
    apps = serializers.SerializerMethodField()

    def get_output_url(self, stored: RenderedDiff) -> str:
        return absolute(rendered_output_path(stored.pull_request_id))

    @extend_schema_field(RenderedAppSerializer(many=True))
    def get_apps(self, stored: RenderedDiff) -> list[dict[str, Any]]:
        diffs: list[AppDiff] = stored_diffs(stored.apps)
        return RenderedAppSerializer(diffs, many=True).data  # type: ignore[return-value]
