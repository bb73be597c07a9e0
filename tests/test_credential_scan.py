"""No credential of any kind reaches a page, an API answer, a log line or a database row,
even when every system the portal talks to echoes the request back in its errors (issue 19).

The portal is configured as in production: a forge token (PORTAL_GITOPS_TOKEN), registry
credentials (PORTAL_REGISTRY_AUTH), a cluster token (token_env) and an SMTP login. Then
every client is driven into failure against a server that echoes the request's headers or
credentials in its error: the GitHub fake (reads, opening a pull request, tracking one),
the header-echoing registry of tests/releases/test_oci_redaction.py, a Kubernetes API
answering 401 and 500 with the request's headers in its Status message, and an SMTP server
whose AUTH failure quotes the AUTH PLAIN line back. Afterwards every page and partial (as
viewer and admin), every API answer, every log record (caplog at DEBUG) and every text and
JSON column of every model are scanned for every form of every credential.
"""

from __future__ import annotations

import base64
import json
import logging
import socketserver
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from django.apps import apps
from django.db import models
from django.test import Client, override_settings
from django.utils import timezone

from forges.forge import ForgeError
from gitops.polling import poll
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.models import PullRequest
from portal.delivery.tracking import refresh_open
from portal.kernel.catalog.models import Cluster, Service
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.senders import scan_and_send
from portal.releases.models import RegistryPoll
from portal.releases.registry_reads import poll_service
from tests.fakes.forges.base import Fault
from tests.fakes.forges.echo import echo_headers
from tests.fakes.forges.harness import PR_CREATE, PROD, serving
from tests.fakes.forges.harness import TOKEN as FORGE_TOKEN
from tests.fixtures.seed import seed_app
from tests.notifications.store_rows import seeded
from tests.releases import test_oci_redaction
from tests.releases.test_oci_redaction import PASSWORD as REGISTRY_PASSWORD
from tests.releases.test_oci_redaction import REPOSITORY, EchoRegistry
from tests.releases.test_oci_redaction import TOKEN as REGISTRY_TOKEN
from tests.releases.test_oci_redaction import USER as REGISTRY_USER
from tests.web.test_hostile_pages import other_routes, timed_routes

pytestmark = pytest.mark.django_db
# The header-echoing registry, in each of its auth flows and error shapes.
echo_registry = test_oci_redaction.echo_registry

CLUSTER_TOKEN_ENV = "PORTAL_SCAN_CLUSTER_TOKEN"
CLUSTER_TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2Nhbi1jbHVzdGVyLXRva2Vu.c2lnbmF0dXJlLXNjYW4"
SMTP_USER, SMTP_PASSWORD = "portal-mailer", "smtp-S3cret-pa55"


def forms(secret: str) -> set[str]:
    """Every spelling of a secret that could leave the portal: plain, base64 (padded or not,
    standard or URL-safe), URL-encoded, and as the value of a Bearer or Basic header."""
    spelled = {secret, quote(secret, safe=""), quote_plus(secret)}
    for text in list(spelled):
        raw = text.encode()
        spelled |= {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    spelled |= {s.rstrip("=") for s in spelled}
    spelled |= {f"Bearer {s}" for s in list(spelled)} | {f"Basic {s}" for s in list(spelled)}
    return spelled


def credential_forms() -> dict[str, str]:
    """Each form -> which credential it is, for every credential this test configures."""
    secrets = {
        "forge token": FORGE_TOKEN,
        "registry password": REGISTRY_PASSWORD,
        "registry user:password": f"{REGISTRY_USER}:{REGISTRY_PASSWORD}",
        "registry token": REGISTRY_TOKEN,
        "cluster token": CLUSTER_TOKEN,
        "SMTP password": SMTP_PASSWORD,
        "SMTP AUTH PLAIN": f"\0{SMTP_USER}\0{SMTP_PASSWORD}",
        "SMTP AUTH PLAIN with authzid": f"{SMTP_USER}\0{SMTP_USER}\0{SMTP_PASSWORD}",
        "SMTP user:password": f"{SMTP_USER}:{SMTP_PASSWORD}",
    }
    found = {}
    for what, secret in secrets.items():
        for form in forms(secret):
            if len(form) >= 8 and "\0" not in form:  # a raw NUL line is a base64 form's source only
                found[form] = what
    return found


def leaks(text: str) -> list[str]:
    return sorted({f"{what}: {form[:16]}…" for form, what in credential_forms().items() if form in text})


# ------------------------------------------------------------------ echoing servers


class EchoKubeAPI:
    """A Kubernetes API server that answers 401 to one poll and 500 to the next, each with a
    Status whose message quotes every request header (as a debugging proxy in front of it)."""

    def __init__(self) -> None:
        self.status = 401
        self.authorizations: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                api.authorizations.append(self.headers.get("Authorization", ""))
                headers = "\n".join(f"{name}: {value}" for name, value in self.headers.items())
                body = json.dumps({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f"request rejected; request was GET {self.path}\n{headers}",
                    "reason": "Unauthorized" if api.status == 401 else "InternalError", "code": api.status,
                }).encode()
                self.send_response(api.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> EchoKubeAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class EchoSMTP:
    """An SMTP server offering AUTH PLAIN that refuses every login, quoting the client's AUTH
    command (its base64 credential) in the 535 reply."""

    def __init__(self) -> None:
        self.auth_lines: list[str] = []
        smtp = self

        class Handler(socketserver.StreamRequestHandler):
            def reply(self, line: str) -> None:
                self.wfile.write(f"{line}\r\n".encode())

            def handle(self) -> None:
                self.reply("220 mail.example ESMTP")
                while line := self.rfile.readline().decode("utf-8", "replace").rstrip("\r\n"):
                    verb = line.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        self.reply("250-mail.example")
                        self.reply("250 AUTH PLAIN")
                    elif verb == "AUTH":
                        smtp.auth_lines.append(line)
                        self.reply(f"535 5.7.8 Authentication failed for {line}")
                    elif verb == "QUIT":
                        self.reply("221 bye")
                        return
                    else:
                        self.reply("250 ok")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def __enter__(self) -> EchoSMTP:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------ the scan


def database_text() -> Iterator[tuple[str, str]]:
    """(model.field, text) for every text and JSON value of every row of every model."""
    for model in apps.get_models():
        columns = [f.name for f in model._meta.concrete_fields
                   if isinstance(f, models.CharField | models.TextField | models.JSONField | models.BinaryField)]
        if not columns:
            continue
        for row in model.objects.values_list(*columns):
            for column, value in zip(columns, row, strict=True):
                if value in (None, "", [], {}):
                    continue
                if isinstance(value, bytes | memoryview):
                    value = bytes(value).decode("utf-8", "replace")
                yield f"{model._meta.label}.{column}", value if isinstance(value, str) else json.dumps(value)


@pytest.fixture
def configured(settings, monkeypatch, catalog, echo_registry: EchoRegistry):
    """Every credential the portal can hold, set as an operator sets them."""
    settings.PORTAL_REGISTRY_AUTH = f"{echo_registry.host}=SCAN_REG_USER:SCAN_REG_PASS"
    settings.PORTAL_REGISTRY_PLAIN_HTTP = [echo_registry.host]
    monkeypatch.setenv("SCAN_REG_USER", REGISTRY_USER)
    monkeypatch.setenv("SCAN_REG_PASS", REGISTRY_PASSWORD)
    monkeypatch.setenv(CLUSTER_TOKEN_ENV, CLUSTER_TOKEN)
    settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = SMTP_USER, SMTP_PASSWORD
    return catalog


def test_no_credential_leaves_the_portal_when_every_server_echoes_it(
    configured, users, monkeypatch, echo_registry: EchoRegistry, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    catalog = configured

    # --- forge: reads, opening a pull request, tracking it -----------------------------
    with serving("github", monkeypatch) as github:
        echo_headers(github.server)
        app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                       repo_url=github.repository, path=PROD)
        opened = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), users["member"], forge=github.forge)
        assert opened.ok, opened.message
        # Every read now fails (a 502 and a 401, each echoing the request headers).
        github.server.faults += [Fault("GET", r"/pulls/\d+$", 502, body={"message": "Bad gateway"}, times=50),
                                 Fault("GET", r"/contents/", 401, body={"message": "Bad credentials"}, times=50)]
        report = refresh_open(lambda repository: github.new_forge(), now=timezone.now() + timedelta(minutes=5))
        assert report.errors == 1
        with pytest.raises(ForgeError) as read_error:
            github.new_forge().read_file("apps/checkout/overlays/prod/kustomization.yaml", "main")
        logging.getLogger("tests.credential_scan").error("forge read failed: %s", read_error.value)
        github.server.faults.append(Fault("POST", PR_CREATE["github"], 500, body={"message": "boom"}, times=50))
        refused = open_change(change_for_upgrade(app, catalog.checkout, "1.8.0"), users["member"], forge=github.forge)
        assert not refused.ok
    row = PullRequest.objects.get(state=PullRequest.State.OPEN)
    assert row.last_error, "tracking stored the forge's error"
    # A failed open keeps its row, with the reason the follow page shows (forge_jobs).
    failed_open = PullRequest.objects.get(state=PullRequest.State.FAILED)
    assert failed_open.progress or failed_open.last_error
    forge_texts = {"refresh error": row.last_error, "read error": str(read_error.value),
                   "open refused": refused.message,
                   "failed open": f"{failed_open.progress} {failed_open.last_error}"}

    # --- registry --------------------------------------------------------------------
    service = Service.objects.create(name="scanned", image_repository=f"{echo_registry.host}/{REPOSITORY}")
    registry_report = poll_service(service)
    assert not registry_report.ok and RegistryPoll.objects.get(service=service).failing
    assert any(REGISTRY_PASSWORD not in (r.get("Authorization") or "") and r.get("Authorization")
               for r in echo_registry.requests), "the registry fake was sent the credential"

    # --- cluster: 401, then 500, each echoing the Authorization header -------------------
    with EchoKubeAPI() as kube:
        Cluster.objects.filter(pk=catalog.prod_us.pk).update(
            connection=Cluster.Connection.API, api_url=kube.url, token_env=CLUSTER_TOKEN_ENV)
        cluster = Cluster.objects.get(pk=catalog.prod_us.pk)
        unauthorized = poll(cluster)
        kube.status = 500
        failed = poll(cluster, at=timezone.now() + timedelta(minutes=1))
    assert f"Bearer {CLUSTER_TOKEN}" in kube.authorizations  # it really was sent and echoed
    assert not unauthorized.ok and not failed.ok

    # --- SMTP: AUTH PLAIN refused, the credential quoted back ---------------------
    channel = Channel.objects.create(name="oncall", kind=Channel.Kind.EMAIL, recipients="oncall@example.com")
    Rule.objects.create(name="prod", kinds=[EventKind.APP_ATTENTION], channel=channel, environment=catalog.prod)
    now = timezone.now()
    seeded(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
           now=now, since=timedelta(0), first_seen=now - timedelta(days=2))
    with EchoSMTP() as smtp, override_settings(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1", EMAIL_PORT=smtp.port,
        EMAIL_USE_TLS=False, EMAIL_USE_SSL=False,
    ):
        scan_and_send(now + timedelta(minutes=10))
    plain = base64.b64encode(f"\0{SMTP_USER}\0{SMTP_PASSWORD}".encode()).decode()
    assert f"AUTH PLAIN {plain}" in smtp.auth_lines, smtp.auth_lines
    delivery = Delivery.objects.get()
    assert delivery.last_error == "SMTP 535: 5.7.8 Authentication failed for AUTH PLAIN ***", delivery.last_error

    # --- the scan ----------------------------------------------------------------------
    found: dict[str, list[str]] = {}
    for what, text in forge_texts.items():
        found[f"forge {what}"] = leaks(text)
    for report_ in (registry_report, unauthorized, failed):
        found[f"report of {report_!r:.60}"] = leaks(report_.error)
    for where, text in database_text():
        if leak := leaks(text):
            found[f"row {where}"] = leak
    found["log"] = leaks(caplog.text)
    services = list(Service.objects.values_list("name", flat=True))
    clusters = list(Cluster.objects.values_list("name", flat=True))
    for role in ("viewer", "admin"):
        client = Client()
        client.force_login(users[role])
        for url, headers in timed_routes(services) + other_routes(clusters, []):
            response = client.get(url, **headers)
            assert response.status_code < 500, url
            found[f"{role} {url} {sorted(headers)}"] = leaks(response.content.decode("utf-8", "replace"))
    assert {where: leak for where, leak in found.items() if leak} == {}
    # The errors scanned say what failed, and that a header was there: the echo happened.
    assert "502" in row.last_error and "***" in row.last_error, row.last_error
    assert Cluster.objects.get(pk=catalog.prod_us.pk).poll.last_error == failed.error
