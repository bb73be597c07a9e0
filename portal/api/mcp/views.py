"""/mcp: the MCP endpoint as a Django view (why a view: portal.api.mcp.server).

The token is checked here, before the SDK sees the request, by the REST API's own rules
(portal.api.mcp.api_pages.authorized): a missing, malformed, unknown or revoked token is a 401
with `WWW-Authenticate: Bearer`, a user without the viewer role a 403.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions

from portal.api.errors import error_message
from portal.api.mcp.api_pages import Caller, authorized
from portal.api.mcp.server import SERVER, current_caller

MAX_BODY = 1024 * 1024  # an MCP request is a small JSON-RPC message


def _refuse(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}},
                            status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="mcp"'
    return response


def authenticate(request: HttpRequest) -> tuple[str | None, JsonResponse | None]:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None, _refuse(401, "A personal API token is needed: Authorization: Bearer gpat_…")
    try:
        authorized(parts[1])
    except exceptions.APIException as exc:
        return None, _refuse(exc.status_code, error_message(exc))
    return parts[1], None


async def _serve(scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One request through the SDK in stateless JSON mode: a manager per request, so nothing
    outlives it (the SDK's manager runs once; stateless mode keeps no session anyway)."""
    manager = StreamableHTTPSessionManager(app=SERVER._lowlevel_server, json_response=True, stateless=True)
    sent = False
    status, headers, chunks = 500, [], []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    token, refused = authenticate(request)
    if refused is not None:
        return refused
    assert token is not None
    if request.method != "POST":
        # Stateless JSON mode: no server-sent-event stream to open, no session to delete.
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    body = request.body
    if len(body) > MAX_BODY:
        return _refuse(413, "Request too large.")
    headers = [(key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
               for key, value in request.META.items() if key.startswith("HTTP_") and key != "HTTP_AUTHORIZATION"]
    headers.append((b"content-type", request.META.get("CONTENT_TYPE", "").encode("latin-1")))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), 0),
    }
    marker = current_caller.set(Caller(token=token, scheme=request.scheme, host=request.get_host()))
    try:
        status, response_headers, content = async_to_sync(_serve)(scope, body)
    finally:
        current_caller.reset(marker)
    response = HttpResponse(content, status=status)
    for key, value in response_headers:
        name = key.decode("latin-1")
        if name.lower() not in ("content-length",):
            response[name] = value.decode("latin-1")
    return response


def refusal_body(response: HttpResponse) -> dict[str, Any]:
    return json.loads(response.content)
