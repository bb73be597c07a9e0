"""What every REST API v1 view shares: token or session auth, the viewer role, a rate limit,
errors in one shape, refusal of unknown query parameters, time-dependent filters judged at the
request's instant; and the JSON 404 for any other path under /api/. Views stay thin: validate
the query, build a queryset, hand rows to a serializer."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.http import QueryDict
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import DEPRECATED_ALIASES, GitOpsAppFilter
from portal.api.auth import BearerTokenAuthentication, HasViewerRole
from portal.api.errors import api_exception_handler, bad_request, not_found
from portal.api.serializers.error_serializers import ErrorSerializer
from portal.api.throttles import TokenRateThrottle


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


def filtered(filterset_class: type[django_filters.FilterSet], data: QueryDict, queryset: QuerySet,
             at: datetime) -> QuerySet:
    """`queryset` narrowed by a FilterSet that judges time-dependent filters at the instant `at`.
    An invalid value is a 400, like django-filter's DRF backend makes it; so is a blank one: the
    page's form sends one for "all", but a script that names a parameter means a value by it,
    and the schema promises one."""
    declared = filterset_class.base_filters
    blank = {name: ["This field may not be blank."] for name, value in data.items() if name in declared and value == ""}
    if blank:
        raise serializers.ValidationError(blank)
    filterset = filterset_class(data=data, queryset=queryset, at=at)
    if not filterset.is_valid():
        raise translate_validation(filterset.errors)
    return filterset.qs


def checked(query_serializer_class: type[serializers.Serializer], data: dict[str, Any]) -> dict[str, Any]:
    """Query parameters checked against the serializer that declares them (a ValidationError is a 400)."""
    serializer = query_serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class AtRequestTimeFilterBackend(DjangoFilterBackend):
    """django-filter's DRF backend (an invalid value is a 400), judging time-dependent
    filters at the instant the view answers for (`view.now`); see `filtered`."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        return filtered(self.get_filterset_class(view, queryset), request.query_params, queryset, view.now)


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
        return checked(self.query_serializer_class, request.query_params.dict())


class NotFoundView(PortalAPIView):
    """Any other path under /api/: a JSON 404 in the error shape, not the HTML page."""

    schema = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise not_found(f"No API endpoint at {request.path[:200]}; see /api/docs.")

    post = put = patch = delete = get
