"""GET /api/v1/projects: Argo CD AppProjects with their sync windows, and for each window
whether it blocks now and until when.

A window's state is Argo CD's (gitops.syncwindows: `active`, the edges of its active runs),
judged at the instant of the request. A project-wide "blocks now" is per window and
independent of any one app: a deny window blocks the apps it matches while it is active; an
allow window blocks the apps it matches while it is inactive (unless another allow window
that matches them is active, which only an app's own verdict, on /api/v1/gitops, can say);
a window that does not parse blocks every app it matches (Argo CD refuses their syncs).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import F, QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import SLUG
from gitops.models import AppProject
from gitops.syncwindows import window_label
from gitops.syncwindows.timeline import TooDense, active_runs, is_active, search_spans, to_datetime, to_ns
from gitops.syncwindows.windows import compile_window
from portal.api.base_views import AtRequestTimeFilterBackend, PortalAPIView, errors, filter_parameters
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.api_fields import OffsetDateTimeField

HORIZON_NS = 400 * 86400 * 10**9  # as gitops.syncwindows.DEFAULT_HORIZON: longer than a yearly schedule's gap


class ProjectFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", max_length=63, validators=[RegexValidator(SLUG)],
                                        help_text="cluster name (where the AppProject was read)", strip=False)
    name = django_filters.CharFilter(max_length=253, help_text="AppProject name", strip=False)

    class Meta:
        model = AppProject
        fields: list[str] = []

    def __init__(self, data: Any = None, queryset: Any = None, *, at: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(data, queryset, **kwargs)
        self.at = at


def window_state(raw: Mapping[str, Any], at: datetime) -> dict[str, Any]:
    """One window of a project at `at`: is it active, does it block, until when, when next."""
    window = compile_window(0, raw)
    state: dict[str, Any] = {
        "kind": str(raw.get("kind") or ""), "description": str(raw.get("description") or ""),
        "schedule": str(raw.get("schedule") or ""), "duration": str(raw.get("duration") or ""),
        "time_zone": str(raw.get("timeZone") or ""), "manual_sync": bool(raw.get("manualSync")),
        "sync_overrun": bool(raw.get("syncOverrun")), "and_operator": bool(raw.get("andOperator")),
        "applications": _strings(raw.get("applications")), "namespaces": _strings(raw.get("namespaces")),
        "clusters": _strings(raw.get("clusters")), "label": window_label(raw),
        "error": window.error or "", "warnings": list(window.warnings),
        "active": None, "blocks_now": window.error is not None, "active_until": None, "next_active_at": None,
    }
    if window.error is not None:
        return state
    now = to_ns(at)
    active = is_active(window, now)
    state["active"] = active
    state["blocks_now"] = (window.kind == "deny" and active) or (window.kind == "allow" and not active)
    try:
        for end in search_spans(now, HORIZON_NS):
            runs = active_runs(window, now, end)
            current = next((r for r in runs if r[0] <= now < r[1]), None) if active else None
            upcoming = next((r for r in runs if r[0] > now), None)
            if active and current is not None and current[1] < end:
                state["active_until"] = to_datetime(current[1])
            if upcoming is not None:
                state["next_active_at"] = to_datetime(upcoming[0])
            if (not active or state["active_until"] is not None) and upcoming is not None:
                break
    except TooDense:
        state["warnings"].append("opens and closes too often to say when")
    return state


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


class WindowSerializer(serializers.Serializer):
    """One entry of the AppProject's spec.syncWindows, in Argo CD's words, and its state now."""

    kind = serializers.CharField(allow_blank=True, help_text="\"Kind defines if the window allows or blocks syncs\" "
                                 "(allow or deny)")
    description = serializers.CharField(allow_blank=True)
    schedule = serializers.CharField(allow_blank=True, help_text="\"Schedule is the time the window will begin, "
                                     "specified in cron format\"")
    duration = serializers.CharField(allow_blank=True, help_text="\"Duration is the amount of time the sync window "
                                     "will be open\"")
    time_zone = serializers.CharField(allow_blank=True, help_text="\"TimeZone of the sync that will be applied to "
                                      "the schedule\" (empty: UTC)")
    manual_sync = serializers.BooleanField(help_text="\"ManualSync enables manual syncs when they would otherwise "
                                           "be blocked\"")
    sync_overrun = serializers.BooleanField(help_text="\"SyncOverrun allows ongoing syncs to continue in two "
                                            "cases\" (a running sync only; it opens nothing)")
    and_operator = serializers.BooleanField(help_text="\"UseAndOperator use AND operator for matching applications, "
                                            "namespaces and clusters instead of the default OR operator\"")
    applications = serializers.ListField(child=serializers.CharField(), help_text="globs of app names")
    namespaces = serializers.ListField(child=serializers.CharField(), help_text="globs of destination namespaces")
    clusters = serializers.ListField(child=serializers.CharField(), help_text="globs of destination names/servers")
    label = serializers.CharField(help_text="how the portal names the window")
    active = serializers.BooleanField(allow_null=True, help_text="Argo CD's `active` now; null when it does not "
                                      "parse")
    blocks_now = serializers.BooleanField(
        help_text="deny: active now; allow: inactive now (the apps it matches sync only while an allow window is "
        "active); invalid: always (Argo CD refuses the syncs of the apps it matches)")
    active_until = OffsetDateTimeField(allow_null=True, help_text="when the current active run ends; null when "
                                       "inactive or beyond the horizon")
    next_active_at = OffsetDateTimeField(allow_null=True, help_text="when it next becomes active")
    error = serializers.CharField(allow_blank=True, help_text="why Argo CD cannot read the window")
    warnings = serializers.ListField(child=serializers.CharField())


class ProjectSerializer(serializers.Serializer):
    """An Argo CD AppProject as its cluster's last poll read it."""

    cluster = serializers.CharField(source="cluster.name", help_text="the cluster it was read from")
    namespace = serializers.CharField()
    name = serializers.CharField()
    destinations = serializers.SerializerMethodField(
        help_text="\"Destinations contains list of destinations available for deployment\" ({server, name, "
        "namespace})")
    source_repos = serializers.ListField(child=serializers.CharField(),
                                         help_text="\"SourceRepos contains list of repository URLs which can be "
                                         "used for deployment\"")
    sync_windows = serializers.SerializerMethodField(help_text="\"SyncWindows controls when syncs can be run for "
                                                     "apps in this project\", each with its state now")
    blocks_now = serializers.SerializerMethodField(help_text="some window blocks the apps it matches now")

    def _windows(self, project: AppProject) -> list[dict[str, Any]]:
        cache = self.context.setdefault("_windows", {})
        if project.pk not in cache:
            cache[project.pk] = [window_state(w, self.context["now"])
                                 for w in project.sync_windows or [] if isinstance(w, Mapping)]
        return cache[project.pk]

    @extend_schema_field({"type": "array", "items": {"type": "object", "properties": {
        "server": {"type": "string"}, "name": {"type": "string"}, "namespace": {"type": "string"}}}})
    def get_destinations(self, project: AppProject) -> list[dict[str, str]]:
        return [{key: str(d.get(key) or "") for key in ("server", "name", "namespace")}
                for d in project.destinations or [] if isinstance(d, Mapping)]

    @extend_schema_field(WindowSerializer(many=True))
    def get_sync_windows(self, project: AppProject) -> list[dict[str, Any]]:
        return WindowSerializer(self._windows(project), many=True).data

    def get_blocks_now(self, project: AppProject) -> bool:
        return any(w["blocks_now"] for w in self._windows(project))


def projects() -> QuerySet[AppProject]:
    """Every AppProject with its cluster, carrying its sort keys."""
    return AppProject.objects.select_related("cluster").defer("raw").annotate(sort_cluster=F("cluster__name"))


ORDERING = Ordering("cluster", (("sort_cluster", "str"), ("namespace", "str"), ("name", "str"), ("id", "int")))


class ProjectListView(PortalAPIView):
    queryset = AppProject.objects.none()  # tells drf-spectacular the model; rows come from the query function
    serializer_class = ProjectSerializer
    filter_backends = [AtRequestTimeFilterBackend]
    filterset_class = ProjectFilter
    pagination_class = KeysetPagination

    def get_ordering(self) -> Ordering:
        return ORDERING

    @extend_schema(
        operation_id="projects_list",
        summary="Argo CD AppProjects with their sync windows and whether each blocks now",
        description="Every AppProject on every cluster the portal reads, by cluster, namespace and name. Each sync "
        "window carries its state at the instant of the request: active, blocks_now, active_until and "
        "next_active_at (Argo CD's rules, gitops.syncwindows). Cursor-paginated.",
        parameters=filter_parameters(ProjectFilter),
        responses={200: ProjectSerializer(many=True), **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        self.query(request)
        self.now = timezone.now()
        page = self.paginate_queryset(self.filter_queryset(projects()))
        context = {**self.get_serializer_context(), "now": self.now}
        return self.get_paginated_response(ProjectSerializer(page, many=True, context=context).data)
