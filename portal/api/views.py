"""REST API v1: read-only views over the store. Thin: validate the query, build a
queryset, hand rows to a serializer."""

from __future__ import annotations

from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.utils import timezone
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import DEPRECATED_ALIASES, GitOpsAppFilter
from gitops.models import APP_SORTS, PROBLEMS_FIRST, GitOpsApp, StateChange
from portal.api import filters
from portal.api.auth import BearerTokenAuthentication, HasViewerRole
from portal.api.errors import api_exception_handler, bad_request, conflict, not_found
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers import (
    DNS_NAME,
    SLUG,
    AppDetailSerializer,
    AppSerializer,
    ErrorSerializer,
    GitOpsDetailQuerySerializer,
    PullRequestQuerySerializer,
    PullRequestSerializer,
)
from portal.api.throttles import TokenRateThrottle
from portal.delivery import rollbacks
from portal.delivery.current_pins import git_pins_by_app

RECENT_STATE_CHANGES = 50


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    meaning = {
        400: "Invalid or unknown query parameter, or a bad cursor.",
        401: "No credentials, or an invalid or revoked token.",
        403: "Signed in without the viewer role.",
        404: "No such object.",
        409: "The name is ambiguous; see details.",
        429: "Too many requests for this token; retry after the Retry-After header.",
    }
    return {code: OpenApiResponse(ErrorSerializer, description=meaning[code]) for code in codes}


def filter_parameters(filterset: type[GitOpsAppFilter]) -> list[OpenApiParameter]:
    """What drf-spectacular's django-filter extension cannot read off a FilterSet: that a
    text filter takes a value (a blank one is refused), its length and pattern (its
    validators), so generated clients and schemathesis send what is accepted; and which
    names are deprecated aliases. These override the extension's parameters of the same names."""
    parameters = []
    for name, declared in filterset.base_filters.items():
        if name in DEPRECATED_ALIASES:
            parameters.append(OpenApiParameter(
                name, bool, deprecated=True,
                description=f"Deprecated alias of `{DEPRECATED_ALIASES[name]}`, with the same meaning and values.",
            ))
        elif isinstance(declared, django_filters.CharFilter):
            schema: dict[str, Any] = {"type": "string", "minLength": 1}
            if declared.extra.get("max_length"):
                schema["maxLength"] = declared.extra["max_length"]
            patterns = [v.regex.pattern for v in declared.extra.get("validators", []) if isinstance(v, RegexValidator)]
            parameters.append(OpenApiParameter(name, schema, pattern=patterns[0] if patterns else None,
                                               description=declared.extra.get("help_text", "")))
    return parameters


class AtRequestTimeFilterBackend(DjangoFilterBackend):
    """django-filter's DRF backend (an invalid value is a 400), judging time-dependent
    filters at the instant the view answers for (`view.now`).

    A blank value is refused too: the page's form sends one for "all", but a script that
    names a parameter means a value by it, and the schema promises one."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        declared = view.filterset_class.base_filters
        blank = {name: ["This field may not be blank."] for name, value in request.query_params.items()
                 if name in declared and value == ""}
        if blank:
            raise serializers.ValidationError(blank)
        return super().filter_queryset(request, queryset, view)

    def get_filterset_kwargs(self, request: Request, queryset: QuerySet, view: Any) -> dict[str, Any]:
        return {**super().get_filterset_kwargs(request, queryset, view), "at": view.now}


class PortalAPIView(GenericAPIView):
    """Token or session auth, the viewer role, a rate limit per token, errors in one shape,
    and query parameters checked against a declared serializer or FilterSet: unknown ones
    are refused."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [HasViewerRole]
    throttle_classes = [TokenRateThrottle]
    renderer_classes = [JSONRenderer]
    query_serializer_class: type[serializers.Serializer] | None = None

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    def allowed_query_params(self) -> set[str]:
        names = set(self.query_serializer_class().fields) if self.query_serializer_class else set()
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is not None:
            names.update(filterset_class.base_filters)
        if self.pagination_class is not None:
            names.update(self.pagination_class.query_params)
        return names

    def query(self, request: Request) -> dict[str, Any]:
        allowed = self.allowed_query_params()
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise bad_request(
                "unknown_parameters", f"Unknown query parameter(s): {', '.join(p[:40] for p in unknown[:10])}.",
                {"unknown": [p[:40] for p in unknown[:10]], "allowed": sorted(allowed)},
            )
        repeated = sorted(key for key, values in request.query_params.lists() if len(values) > 1)
        if repeated:
            raise bad_request(
                "repeated_parameters", f"Give each query parameter once: {', '.join(repeated)}.",
                {"repeated": repeated},
            )
        if self.query_serializer_class is None:
            return {}
        # A plain dict, not the QueryDict: DRF would read a missing boolean as an unticked checkbox.
        serializer = self.query_serializer_class(data=request.query_params.dict())
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


class GitOpsListView(PortalAPIView):
    serializer_class = AppSerializer
    filter_backends = [AtRequestTimeFilterBackend]
    filterset_class = GitOpsAppFilter  # the /gitops page's: same names, same meanings
    pagination_class = KeysetPagination

    def get_queryset(self) -> QuerySet[GitOpsApp]:
        return filters.with_after_change(filters.base_queryset())

    def get_ordering(self) -> Ordering:
        # Called once the FilterSet has accepted the parameters, so `sort` is a known one.
        sort = self.request.query_params.get("sort") or PROBLEMS_FIRST
        return Ordering(sort, APP_SORTS[sort.removeprefix("-")], descending=sort.startswith("-"))

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
        self.now = timezone.now()
        apps = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(apps)
        pins = git_pins_by_app([app.id for app in page])
        context = {**self.get_serializer_context(), "now": self.now, "git_pins": pins,
                   "rollbacks": rollbacks.offers_for_apps(page, self.now)}
        return self.get_paginated_response(AppSerializer(page, many=True, context=context).data)


class GitOpsDetailView(PortalAPIView):
    serializer_class = AppDetailSerializer
    query_serializer_class = GitOpsDetailQuerySerializer

    @extend_schema(
        operation_id="gitops_retrieve",
        summary="One GitOps application, with its workloads and recent state changes",
        description="The list's fields plus workloads and the most recent state changes (newest first). A Flux "
        "Kustomization and HelmRelease may share a name: then pass `kind`, or the answer is 409.",
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
        apps = filters.with_after_change(filters.base_queryset()).prefetch_related("workloads").filter(
            cluster__name=cluster, namespace=namespace, name=name
        )
        if params.get("kind"):
            apps = apps.filter(kind=params["kind"])
        found = list(apps.order_by("kind")[:3])
        if not found:
            raise not_found(f"No GitOps application {name} in namespace {namespace} on cluster {cluster}.")
        if len(found) > 1:
            kinds = [app.kind for app in found]
            raise conflict(
                "ambiguous_name", f"Several applications are named {namespace}/{name} on {cluster} "
                f"({', '.join(kinds)}): add ?kind= to choose one.", {"kinds": kinds},
            )
        app = found[0]
        changes = StateChange.objects.filter(app=app).order_by("-at", "-id")[:RECENT_STATE_CHANGES]
        context = {
            **self.get_serializer_context(), "now": timezone.now(), "state_changes": list(changes),
            "git_pins": git_pins_by_app([app.id]), "rollbacks": rollbacks.offers_for_apps([app]),
        }
        return Response(AppDetailSerializer(app, context=context).data)


class PullRequestListView(PortalAPIView):
    serializer_class = PullRequestSerializer
    query_serializer_class = PullRequestQuerySerializer
    pagination_class = KeysetPagination
    ordering = Ordering("-opened_at", (("sort_opened_at", "datetime"), ("id", "int")), descending=True)

    def get_ordering(self) -> Ordering:
        return self.ordering

    @extend_schema(
        operation_id="pull_requests_list",
        summary="Pull requests the portal opened or linked, newest first",
        description="Upgrades, promotions and rollbacks the portal opened, and pull requests opened elsewhere that "
        "it linked. Cursor-paginated; an empty list until the first one exists.",
        parameters=[PullRequestQuerySerializer],
        responses={200: PullRequestSerializer(many=True), **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        params = self.query(request)
        pulls = filters.pull_requests(params)
        page = self.paginate_queryset(pulls)
        return self.get_paginated_response(
            PullRequestSerializer(page, many=True, context=self.get_serializer_context()).data
        )


class SchemaView(SpectacularAPIView):
    """The OpenAPI document, for the same callers as the API itself."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [HasViewerRole]
    throttle_classes = [TokenRateThrottle]

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    def handle_exception(self, exc: Exception) -> Response:
        # Errors are JSON like everywhere else in the API, not a YAML "schema".
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class NotFoundView(PortalAPIView):
    """Any other path under /api/: a JSON 404 in the error shape, not the HTML page."""

    schema = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise not_found(f"No API endpoint at {request.path[:200]}; see /api/docs.")

    post = put = patch = delete = get
