"""An option for any fake forge: every error it answers echoes the request's headers, as a
misconfigured proxy or a forge's debug mode does, so tests can prove no credential the
portal sent comes back out of it (tests/test_credential_scan.py)."""

from __future__ import annotations

from tests.fakes.forges.base import FakeServer, Request, Response


def echo_headers(server: FakeServer) -> FakeServer:
    """Make `server`'s error answers (4xx/5xx, faults included) carry the request headers in
    their `message`, Authorization first; returns the server."""
    answer = server._dispatch

    def echoing(request: Request) -> Response:
        response = answer(request)
        if response.status < 400:
            return response
        headers = {"authorization": request.headers.get("authorization", "")} | request.headers
        echoed = "; ".join(f"{name}: {value}" for name, value in headers.items())
        body = response.body if isinstance(response.body, dict) else {}
        message = f"{body.get('message') or 'error'} (request headers: {echoed})"
        return Response(response.status, {**body, "message": message, "error": echoed}, response.headers)

    server._dispatch = echoing  # type: ignore[method-assign]
    return server
