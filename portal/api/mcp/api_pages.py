"""The REST API's answers, read directly for an MCP caller: what each tool starts from.

One definition: a tool reads what GET /api/v1/... serves, through the same FilterSets,
querysets, keyset cursors and serializers the API's views use (portal.api.*_views), only
called as functions, with no HTTP request and no URL resolved. Every read checks the
caller's token again as the API does (portal.api.auth: an unknown, revoked or inactive
token, then the viewer role) and counts against the token's rate limit (portal.api.throttles),
so a token revoked mid-conversation stops working at once. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from django.http import HttpRequest, QueryDict
from django.utils import timezone
from rest_framework import exceptions

from gitops.appfilter import GitOpsAppFilter
from portal.api import filters, finding_views, gitops_views, pull_request_views, security_views, service_views
from portal.api.auth import BearerTokenAuthentication, HasViewerRole
from portal.api.base_views import checked, filtered
from portal.api.errors import error_message
from portal.api.pagination import DEFAULT_PAGE_SIZE, Cursor, keyset_page
from portal.api.serializers.pull_request_serializers import PullRequestQuerySerializer, PullRequestSerializer
from portal.api.throttles import TokenRateThrottle
from portal.kernel.accounts.models import ApiToken


class ReadError(Exception):
    """The API refused the read: its status and its error's message, to be shown to the assistant."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message or f"the portal answered {status}")
        self.status = status


@dataclass(frozen=True)
class Caller:
    """Who asks, and where the portal is, so the links in answers are the portal's own."""

    token: str
    scheme: str = "http"
    host: str = "localhost"


@dataclass(frozen=True)
class Items:
    """One page of an API list: its items, and the cursor of the next page (None on the last)."""

    results: list[dict[str, Any]]
    next_cursor: str | None


def gitops(caller: Caller, params: dict[str, Any], cursor: str | None, page_size: int) -> Items:
    """GET /api/v1/gitops with these filters (GitOpsAppFilter's names), one page."""
    with _as(caller) as context:
        now = timezone.now()
        query = _query(params)
        apps = filtered(GitOpsAppFilter, query, gitops_views.apps(), now)
        page = keyset_page(apps, gitops_views.ordering(query.get("sort")), cursor, page_size)
        return Items(gitops_views.app_items(page.rows, now, context), _text_of(page.next))


def pull_requests(caller: Caller, params: dict[str, Any], cursor: str | None, page_size: int) -> Items:
    """GET /api/v1/pull-requests with these filters (PullRequestQuerySerializer's), one page."""
    with _as(caller) as context:
        query = checked(PullRequestQuerySerializer, _query(params).dict())
        page = keyset_page(filters.pull_requests(query), pull_request_views.ORDERING, cursor, page_size)
        return Items(PullRequestSerializer(page.rows, many=True, context=context).data, _text_of(page.next))


def services(caller: Caller, params: dict[str, Any]) -> Items:
    """GET /api/v1/services with these filters (ServiceFilter's), the first page."""
    with _as(caller) as context:
        found = filtered(service_views.ServiceFilter, _query(params), service_views.services(), timezone.now())
        page = keyset_page(found, service_views.ORDERING, None, DEFAULT_PAGE_SIZE)
        return Items(service_views.service_items(page.rows, context), _text_of(page.next))


def security(caller: Caller, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """GET /api/v1/security with these filters (SecurityQuerySerializer's); none: unfiltered."""
    with _as(caller):
        query = _query(params or {})
        return security_views.report(checked(security_views.SecurityQuerySerializer, query.dict()))


def findings(caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    """GET /api/v1/findings with these filters and limit/offset (FindingQuerySerializer's)."""
    with _as(caller) as context:
        query = checked(finding_views.FindingQuerySerializer, _query(params).dict())
        return finding_views.answer(query, context)


def user_of(caller: Caller) -> Any:
    """The user the caller's token acts as, checked and counted like every read (a ReadError
    when the API would refuse it): whose teams an answer about acting is judged for."""
    try:
        return _authorize(caller.token).user
    except exceptions.APIException as exc:
        raise ReadError(exc.status_code, error_message(exc)) from exc


@contextmanager
def _as(caller: Caller) -> Iterator[dict[str, Any]]:
    """A read as `caller`, checked as the API checks a request: the serializer context for its
    answers; whatever the API would refuse (401, 403, 429, 400) is a ReadError with its message."""
    try:
        _authorize(caller.token)
        yield {"request": _links(caller)}
    except exceptions.APIException as exc:
        raise ReadError(exc.status_code, error_message(exc)) from exc


def authorized(plain: str) -> ApiToken:
    """The API's own check of a bearer token (portal.api.auth): known, not revoked, its owner
    active (else AuthenticationFailed, a 401) and a viewer (else PermissionDenied, a 403)."""
    found = BearerTokenAuthentication().authenticate(SimpleNamespace(headers={"authorization": f"Bearer {plain}"}))
    assert found is not None  # a Bearer header is always the token authentication's to judge
    user, token = found
    if not HasViewerRole().has_permission(SimpleNamespace(user=user), None):
        raise exceptions.PermissionDenied(HasViewerRole.message)
    return token


def _authorize(plain: str) -> ApiToken:
    token = authorized(plain)
    throttle = TokenRateThrottle()
    if not throttle.allow_request(SimpleNamespace(auth=token, user=token.user), None):
        raise exceptions.Throttled(throttle.wait())
    return token


def _links(caller: Caller) -> HttpRequest:
    """A request only for `build_absolute_uri`: where the portal is, as the caller reached it."""
    request = HttpRequest()
    request.path = request.path_info = "/mcp"
    host, _, port = caller.host.partition(":")
    request.META = {
        "HTTP_HOST": caller.host, "SERVER_NAME": host,
        "SERVER_PORT": port or ("443" if caller.scheme == "https" else "80"),
        "wsgi.url_scheme": caller.scheme,
    }
    if caller.scheme == "https":
        request.META["HTTPS"] = "on"
    return request


def _query(params: dict[str, Any]) -> QueryDict:
    """Parameters as a query string carries them: text, booleans as true/false."""
    query = QueryDict(mutable=True)
    for key, value in params.items():
        if value is not None:
            query[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return query


def _text_of(cursor: Cursor | None) -> str | None:
    return cursor.encode() if cursor is not None else None
