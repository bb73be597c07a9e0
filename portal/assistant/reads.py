"""The assistant reads what the REST API serves, by running the API's own views in-process.

One definition: a tool's answer is the API view's answer (the same FilterSet, querysets,
serializers, cursor paging, token check, viewer role and rate limit), only shortened for an
assistant's small context. No HTTP request is made to the portal itself: the view is called
as a function on a request built here, carrying the caller's own token, so every tool call
is authenticated again (a token revoked mid-conversation stops working at once).
Only GET is ever built: nothing here can change anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.http import HttpRequest, QueryDict
from django.urls import resolve, reverse


class ReadError(Exception):
    """The API refused the read: its status and its error, to be shown to the assistant."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        message = (error or {}).get("message") if isinstance(error, dict) else None
        super().__init__(message or f"the portal answered {status}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Caller:
    """Who asks, and where the portal is, so the links in answers are the portal's own."""

    token: str
    scheme: str = "http"
    host: str = "localhost"


def get(caller: Caller, route: str, params: dict[str, Any] | None = None, **kwargs: str) -> dict[str, Any]:
    """GET one API route as `caller`; the JSON answer, or ReadError."""
    path = reverse(route, kwargs=kwargs or None)
    query = urlencode({key: _text(value) for key, value in (params or {}).items() if value is not None})
    request = HttpRequest()
    request.method = "GET"
    request.path = request.path_info = path
    request.GET = QueryDict(query)
    host, _, port = caller.host.partition(":")
    request.META = {
        "REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query, "HTTP_HOST": caller.host,
        "SERVER_NAME": host, "SERVER_PORT": port or ("443" if caller.scheme == "https" else "80"),
        "HTTP_AUTHORIZATION": f"Bearer {caller.token}", "wsgi.url_scheme": caller.scheme,
        "REMOTE_ADDR": "127.0.0.1",
    }
    if caller.scheme == "https":
        request.META["HTTPS"] = "on"
    match = resolve(path)
    response = match.func(request, *match.args, **match.kwargs)
    if hasattr(response, "render"):
        response.render()
    body = json.loads(response.content or b"{}")
    if response.status_code != 200:
        raise ReadError(response.status_code, body)
    return body


def next_cursor(page: dict[str, Any]) -> str | None:
    """The opaque cursor of a page's `next` link, for the assistant to pass back."""
    link = page.get("next")
    if not link:
        return None
    values = parse_qs(urlsplit(link).query).get("cursor")
    return values[0] if values else None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
