"""GET /api/v1/pull-requests: the pull requests the portal opened or linked, newest first."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from portal.api import filters
from portal.api.base_views import PortalAPIView, errors
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.pull_request_serializers import PullRequestQuerySerializer, PullRequestSerializer

ORDERING = Ordering("-opened_at", (("sort_opened_at", "datetime"), ("id", "int")), descending=True)


class PullRequestListView(PortalAPIView):
    serializer_class = PullRequestSerializer
    query_serializer_class = PullRequestQuerySerializer
    pagination_class = KeysetPagination

    def get_ordering(self) -> Ordering:
        return ORDERING

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
