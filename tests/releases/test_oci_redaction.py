"""A registry (or a proxy in front of one) that echoes every request header in its error
body: with PORTAL_REGISTRY_AUTH set, no form of the credential may reach RegistryPoll,
the log or the /updates page (issue 19, defect 5)."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.urls import reverse

from portal.kernel.catalog.models import Service
from portal.releases.models import RegistryPoll
from portal.releases.registry_reads import poll_service

USER = "ci-reader"
PASSWORD = "pw-registry-7f3e9c1d"
TOKEN = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjaS1yZWFkZXIifQ.c2lnbmF0dXJl"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
REPOSITORY = "acme/checkout"


@dataclass
class EchoRegistry:
    """Distribution's auth flow (a 401 challenge first), then a 500 whose body echoes the request
    headers, Authorization first, as text lines (a proxy's debug page) or inside `errors`."""

    # "basic": a Basic challenge; "bearer": the token flow, whose realm fails and echoes the Basic
    # header; "token": the realm hands out TOKEN and the registry echoes the Bearer header.
    auth: str = "basic"
    body: str = "lines"  # "lines" or "errors" (distribution's JSON error shape)
    port: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def echo(self, headers: dict[str, str]) -> tuple[str, bytes]:
        ordered = {"Authorization": headers.get("Authorization", "")} | headers
        text = "\n".join(f"{k}: {v}" for k, v in ordered.items())
        if self.body == "errors":
            doc = {"errors": [{"code": "UNKNOWN", "message": f"upstream failed, request was {ordered}"}]}
            return "application/json", json.dumps(doc).encode()
        return "text/plain", text.encode()


@pytest.fixture(params=[(auth, body) for auth in ("basic", "bearer", "token") for body in ("lines", "errors")],
                ids=lambda p: "-".join(p))
def echo_registry(request: pytest.FixtureRequest) -> Iterator[EchoRegistry]:
    fake = EchoRegistry(auth=request.param[0], body=request.param[1])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self, status: int, content_type: str, body: bytes, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            headers = dict(self.headers.items())
            fake.requests.append(headers | {"path": self.path})
            authorization = headers.get("Authorization", "")
            if self.path.startswith("/token"):
                if fake.auth == "bearer" and authorization == f"Basic {BASIC}":
                    # The token service fails and echoes the Basic header it was sent.
                    self.answer(500, *fake.echo(headers))
                    return
                if fake.auth == "token" and authorization == f"Basic {BASIC}":
                    self.answer(200, "application/json", json.dumps({"token": TOKEN}).encode())
                    return
                self.answer(401, "text/plain", b"")
                return
            if not authorization:
                challenge = (
                    'Basic realm="Registry Realm"' if fake.auth == "basic"
                    else f'Bearer realm="http://{fake.host}/token",service="echo",scope="repository:{REPOSITORY}:pull"'
                )
                body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]})
                self.answer(401, "application/json", body.encode(), {"WWW-Authenticate": challenge})
                return
            self.answer(500, *fake.echo(headers))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()
    thread.join()


def assert_no_credential(text: str) -> None:
    for form in (PASSWORD, BASIC, BASIC.rstrip("="), f"{USER}:{PASSWORD}", TOKEN, f"Basic {BASIC[:8]}"):
        assert form not in text, f"{form!r} leaked into {text!r}"


def test_a_registry_echoing_the_authorization_header_leaks_no_credential(
    db, echo_registry: EchoRegistry, users: dict[str, Any], client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {
        "PORTAL_REGISTRY_AUTH": f"{echo_registry.host}=REG_USER:REG_PASS",
        "PORTAL_REGISTRY_PLAIN_HTTP": echo_registry.host,
        "REG_USER": USER,
        "REG_PASS": PASSWORD,
    }
    service = Service.objects.create(name="checkout", image_repository=f"{echo_registry.host}/{REPOSITORY}")
    caplog.set_level(logging.DEBUG)

    report = poll_service(service, environ=environ)

    # The fake really was sent the credential and really echoed it back.
    sent = {r.get("Authorization") for r in echo_registry.requests}
    assert f"Basic {BASIC}" in sent and (echo_registry.auth != "token" or f"Bearer {TOKEN}" in sent)
    assert not report.ok and "500" in report.error
    status = RegistryPoll.objects.get(service=service)
    assert status.failing and status.last_error == report.error
    assert "Authorization: ***" in status.last_error or "Authorization': '***" in status.last_error
    assert_no_credential(status.last_error)
    assert_no_credential(caplog.text)
    assert "registry poll of checkout failed" in caplog.text

    client.force_login(users["viewer"])
    html = client.get(reverse("updates")).content.decode()
    assert "checkout" in html and ("HTTP 500" in html or "answered 500" in html)
    assert_no_credential(html)
