"""GET /api/v1/pull-requests: the pull requests the portal opened or linked, newest first; one by id,
with what it reaches and its rendered diff (as the list has them), at /api/v1/pull-requests/<id>.
POST: open one, as the preview page's button does (members; team-scoped when that is on).

POST takes the page's change in JSON (portal.delivery.change_requests parses both) and opens
it through the same delivery function the page uses (previewed afresh, claimed once, audited),
so a script and a person get the same pull request and the same refusals."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from portal.api import filters
from portal.api.base_views import PortalAPIView, errors
from portal.api.errors import ApiError, bad_request, conflict, not_found
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.error_serializers import ErrorSerializer
from portal.api.serializers.pull_request_serializers import (
    PullRequestJobSerializer,
    PullRequestOpenSerializer,
    PullRequestQuerySerializer,
    PullRequestSerializer,
)
from portal.delivery.change_builders import ChangeError
from portal.delivery.change_requests import (
    RequestError,
    build_changes,
    params_of,
    parse_items,
    pull_requests_for,
    services_of,
)
from portal.delivery.forge_jobs import queue_opens
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, has_role
from portal.kernel.accounts.teams import refused

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

    @extend_schema(
        operation_id="pull_requests_open",
        summary="Open the pull requests for a change, as the preview page's button does",
        description="Members only, with a personal API token or the session and its CSRF token. The change is "
        "named as on the preview page; with team scope on, a member may change only services their teams own "
        "(403, code `team_scope`, the owning team in `details.team`). Opening is a job on the portal's forge "
        "queue, as on the page: 202 with one row per pull request, `state` `opening` while its job runs (then "
        "`open`, or `failed` with the reason in `step_message`), or already `open` when one was open for the "
        "change. 409 when none could be queued (the reasons in `details.messages`).",
        request=PullRequestOpenSerializer,
        responses={
            202: PullRequestJobSerializer(many=True),
            403: OpenApiResponse(
                ErrorSerializer,
                description="Without the member role, or (code `team_scope`) a service outside the caller's teams.",
            ),
            409: OpenApiResponse(ErrorSerializer, description="Nothing opened: the reasons, one per pull request."),
            **errors(400, 401, 429),
        },
    )
    def post(self, request: Request) -> Response:
        if not has_role(request.user, Role.MEMBER):
            raise PermissionDenied("Opening a pull request needs the member role.")
        self.query(request)  # no query parameters: an unknown one is refused as on GET
        body = PullRequestOpenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        asked: dict[str, Any] = body.validated_data
        try:
            kind, items, mode = parse_items(params_of(asked["kind"], asked["items"], asked["mode"], asked["confirm"]))
            built = build_changes(kind, items)
        except (RequestError, ChangeError) as error:
            raise bad_request("invalid_change", str(error)) from error
        outside = refused(request.user, services_of(built.changes))
        if outside is not None:
            raise ApiError(
                status.HTTP_403_FORBIDDEN,
                "team_scope",
                outside.message,
                {"team": outside.team, "service": outside.service},
            )
        # No request waits on a forge: each pull request is a job on the forge queue (forge_jobs).
        results = queue_opens(pull_requests_for(built.changes, mode), request.user,
                              confirm_default_branch=asked["confirm"])
        messages = [result.message for result in results]
        opened = [result.pull_request.pk for result in results if result.ok and result.pull_request is not None]
        if not opened:
            raise conflict(
                "not_opened",
                "; ".join(dict.fromkeys(messages)) or "Nothing opened.",
                {"messages": messages, "left_out": built.left_out},
            )
        rows = PullRequest.objects.filter(pk__in=opened).select_related("opened_by").order_by("id")
        data = PullRequestJobSerializer(rows, many=True, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


class PullRequestDetailView(PortalAPIView):
    serializer_class = PullRequestSerializer
    pagination_class = None

    @extend_schema(
        operation_id="pull_requests_retrieve",
        summary="One pull request the portal opened or linked, with its reach and rendered diff",
        description="As an item of the list (its `id`): `reach` names every application whose build includes a "
        "file it edits, by environment and cluster, with the version each runs after the merge, and warns where "
        "that goes beyond the change's environment or services; `rendered_diff` says what the change does to its "
        "applications' rendered manifests at the branch's head (null until an open pull request was rendered).",
        responses={200: PullRequestSerializer, **errors(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, pk: int) -> Response:
        self.query(request)  # no query parameters: an unknown one is refused as on the list
        pull = filters.pull_requests({}).filter(pk=pk).first()
        if pull is None:
            raise not_found(f"No pull request {pk}.")
        return Response(PullRequestSerializer(pull, context=self.get_serializer_context()).data)
