"""Every API error's shape, {"error": {"code", "message", "details"}}, as the schema declares it
(portal.api.errors builds it)."""

from __future__ import annotations

from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, snake_case: branch on this.")
    message = serializers.CharField(help_text="For people: what went wrong and what to do.")
    details = serializers.DictField(help_text="Specifics, e.g. the invalid parameters; may be empty.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
