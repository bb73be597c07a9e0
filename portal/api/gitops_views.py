"""GET /api/v1/gitops and /api/v1/gitops/<cluster>/<namespace>/<name>: every GitOps app, and one
with its workloads and recent state changes."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import SLUG, GitOpsAppFilter
from gitops.models import APP_SORTS, PROBLEMS_FIRST, GitOpsApp, StateChange
from portal.api import app_address, filters
from portal.api.base_views import AtRequestTimeFilterBackend, PortalAPIView, errors, filter_parameters
from portal.api.errors import ApiError, conflict, not_found
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.api_fields import DNS_NAME
from portal.api.serializers.app_detail_serializers import AppDetailSerializer, GitOpsDetailQuerySerializer
from portal.api.serializers.app_serializers import AppSerializer
from portal.delivery import rollbacks
from portal.delivery.current_pins import git_pins_by_app
from portal.kernel.changelog.kept import kept

RECENT_STATE_CHANGES = 50


def apps() -> QuerySet[GitOpsApp]:
    """Every GitOps app, with what the serializer reads."""
    return filters.with_after_change(filters.base_queryset())


def ordering(sort: str | None) -> Ordering:
    """The order `?sort=` names (the FilterSet has accepted it), problems first without one."""
    sort = sort or PROBLEMS_FIRST
    return Ordering(sort, APP_SORTS[sort.removeprefix("-")], descending=sort.startswith("-"))


def app_items(page: list[GitOpsApp], now: datetime, context: dict[str, Any]) -> list[dict[str, Any]]:
    """A page of apps as the list serves them, judged at `now`; `context` carries the `request`
    that makes links absolute."""
    context = {**context, "now": now, "git_pins": git_pins_by_app([app.id for app in page]),
               "rollbacks": rollbacks.offers_for_apps(page, now)}
    return AppSerializer(page, many=True, context=context).data


class GitOpsListView(PortalAPIView):
    serializer_class = AppSerializer
    filter_backends = [AtRequestTimeFilterBackend]
    filterset_class = GitOpsAppFilter  # the /gitops page's: same names, same meanings
    pagination_class = KeysetPagination

    def get_queryset(self) -> QuerySet[GitOpsApp]:
        return apps()

    def get_ordering(self) -> Ordering:
        # Called once the FilterSet has accepted the parameters, so `sort` is a known one.
        return ordering(self.request.query_params.get("sort"))

    @extend_schema(
        operation_id="gitops_list",
        summary="Every GitOps application on every cluster",
        description="Argo CD Applications, Flux Kustomizations and HelmReleases as the last poll of each cluster saw "
        "them. Cursor-paginated (follow `next`); filters combine with AND. Unknown parameters are refused, and so are "
        "blank values (which the page's form sends for \"all\"). The filters and sorts are the /gitops page's, with "
        "the same names and values.",
        parameters=filter_parameters(GitOpsAppFilter),
        responses={200: AppSerializer(many=True), **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        self.query(request)

        def answer() -> dict[str, Any]:
            self.now = timezone.now()
            page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
            return self.get_paginated_response(app_items(page, self.now, self.get_serializer_context())).data

        # The same for every caller of one query between two changes of the data, so computed once
        # for them all (portal.kernel.changelog.kept); fields judged against the clock (attention,
        # grace periods) make it kept ten seconds at most. The URL is absolute: links in it are.
        return Response(kept("api:gitops", (request.build_absolute_uri(),), answer, bucket_seconds=10))


def ambiguous(request: Request, found: list[GitOpsApp], candidates: list[GitOpsApp], where: str) -> ApiError:
    """The 409 for a path that names several apps: each candidate with every address (absolute)
    that resolves it, so a caller can follow one instead of guessing a parameter."""
    listed = [{
        "kind": app.kind, "read_from": app.read_from.name,
        "instance": app.argocd_instance.name if app.argocd_instance is not None else None,
        "addresses": [request.build_absolute_uri(app_address.path(app, query))
                      for query in app_address.addresses(app, candidates)],
    } for app in found]
    kinds = sorted({app.kind for app in found})
    return conflict(
        "ambiguous_name", f"Several applications are at {where} ({len(found)}: "
        + ", ".join(f"{c['kind']} read from {c['read_from']}" for c in listed)
        + "): add ?kind=, ?read_from= or ?instance= to choose one; details.candidates lists each one's addresses.",
        {"kinds": kinds, "candidates": listed},
    )


class GitOpsDetailView(PortalAPIView):
    serializer_class = AppDetailSerializer
    query_serializer_class = GitOpsDetailQuerySerializer

    @extend_schema(
        operation_id="gitops_retrieve",
        summary="One GitOps application, with its workloads and recent state changes",
        description="The list's fields plus workloads and the most recent state changes (newest first). Several "
        "apps may share the path (a Flux Kustomization and HelmRelease, or Applications of two Argo CD instances "
        "deploying to one cluster): then pass `kind`, `read_from` or `instance` as the app's `api_url` does, or "
        "the answer is 409 listing every candidate's addresses.",
        parameters=[
            GitOpsDetailQuerySerializer,
            OpenApiParameter("cluster", str, OpenApiParameter.PATH, pattern=SLUG, description="cluster name"),
            OpenApiParameter("namespace", str, OpenApiParameter.PATH, pattern=DNS_NAME,
                             description="namespace of the Application/Kustomization/HelmRelease object"),
            OpenApiParameter("name", str, OpenApiParameter.PATH, pattern=DNS_NAME),
        ],
        responses={200: AppDetailSerializer, **errors(400, 401, 403, 404, 409, 429)},
    )
    def get(self, request: Request, cluster: str, namespace: str, name: str) -> Response:
        params = self.query(request)
        # Every app at the path (a few at most: kinds and Argo CD instances sharing a name), then
        # those the qualifiers choose (portal.api.app_address).
        candidates = list(apps().prefetch_related("workloads").filter(cluster__name=cluster, namespace=namespace,
                                                                      name=name).order_by("kind", "read_from__name"))
        chosen = {key: params[key] for key in app_address.QUALIFIERS if params.get(key)}
        found = app_address.matching(candidates, chosen)
        if not found:
            raise not_found(f"No GitOps application {name} in namespace {namespace} on cluster {cluster}"
                            + (f" with {urlencode(chosen)}." if chosen else "."))
        if len(found) > 1:
            raise ambiguous(request, found, candidates, f"{namespace}/{name} on {cluster}")
        app = found[0]
        changes = StateChange.objects.filter(app=app).order_by("-at", "-id")[:RECENT_STATE_CHANGES]
        context = {
            **self.get_serializer_context(), "now": timezone.now(), "state_changes": list(changes),
            "git_pins": git_pins_by_app([app.id]), "rollbacks": rollbacks.offers_for_apps([app]),
        }
        return Response(AppDetailSerializer(app, context=context).data)
