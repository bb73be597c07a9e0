"""Field types the API's serializers share: times with an explicit offset, enums written inline
in the schema, a service's version policy; the pattern of a DNS name."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.delivery.models import ServicePolicy

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
        "put_off": {"type": "array", "items": {"type": "object", "required": ["version"], "properties": {
            "version": {"type": "string"}, "until": {"type": "string", "format": "date"},
            "environment": {"type": "string", "description": "held in this environment only, after a rollback"},
            "by": {"type": "string"}, "at": {"type": "string", "format": "date-time"},
            "why": {"type": "string"}, "source": {"type": "string", "description": 'e.g. "rollback PR #12"'}}}},
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
