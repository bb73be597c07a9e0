"""`/metrics` (portal/scrape.py, portal/kernel/metrics.py) scraped after what it counts: a poll of
the Kubernetes API emulator, a failed one, a pull request opened on each forge's fake, a
notification sent to a receiver and one refused, and pages answered; the series carry the right
values and bounded labels, and no secret set in the environment ever appears in the answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from gitops import kinds
from gitops.polling import poll
from portal.delivery import planner
from portal.delivery.pull_requests import OPENED, open_planned
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Rule
from portal.notifications.senders import scan_and_send
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import KINDS, Harness, running
from tests.fakes.receivers import HttpReceiver
from tests.gitops.test_poll import demo_objects
from tests.notifications.store_rows import seeded

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_METRICS_KUBE_TOKEN"
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client | None = None, **headers: str) -> tuple[str, Series]:
    response = (client or Client()).get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    text = response.content.decode()
    series: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return text, series


def value(series: Series, name: str, **labels: str) -> float:
    return series.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def api_cluster(db, kube_emulator, monkeypatch):
    """prod-eu-1 of the demo fleet, served by the Kubernetes API emulator (URL + token)."""
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return Cluster.objects.get(name="prod-eu-1")


def test_a_poll_shows_its_duration_and_the_age_of_the_last_good_poll(api_cluster, kube_emulator):
    _, before = scrape()
    assert value(before, "portal_cluster_never_ok", cluster="prod-eu-1") == 1.0
    assert ("portal_cluster_last_ok_age_seconds", frozenset({("cluster", "prod-eu-1")})) not in before

    assert poll(api_cluster).ok

    text, after = scrape()
    assert value(after, "portal_cluster_never_ok", cluster="prod-eu-1") == 0.0
    assert 0 <= value(after, "portal_cluster_last_ok_age_seconds", cluster="prod-eu-1") < 60
    counted = "portal_poll_duration_seconds_count"
    assert value(after, counted, cluster="prod-eu-1") == value(before, counted, cluster="prod-eu-1") + 1
    assert value(after, "portal_poll_duration_seconds_sum", cluster="prod-eu-1") > 0
    assert kube_emulator.token not in text


def test_a_failed_poll_is_counted_by_its_reason_and_never_names_the_token(api_cluster, monkeypatch):
    failures = "portal_poll_failures_total"
    _, before = scrape()
    monkeypatch.setenv(TOKEN_ENV, "wrong-token-value-metrics-123")
    report = poll(api_cluster)
    assert not report.ok and report.error.startswith("unauthorized")

    text, after = scrape()
    assert value(after, failures, cluster="prod-eu-1", reason="unauthorized") == (
        value(before, failures, cluster="prod-eu-1", reason="unauthorized") + 1
    )
    assert value(after, "portal_cluster_never_ok", cluster="prod-eu-1") == 1.0
    assert "wrong-token-value-metrics-123" not in text and "://" not in text  # no token, no URL


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        yield harness


def test_a_pull_request_opened_counts_it_and_every_forge_request(forge: Harness, db: None) -> None:
    # One rate-limited answer first: waited out (the harness's sleeper), with its remaining count kept.
    forge.server.faults.append(Fault("GET", ".", 429, headers={"Retry-After": "1", "X-RateLimit-Remaining": "0",
                                                                  "RateLimit-Remaining": "0"}))
    _, before = scrape()
    change = forge.change()
    plan = planner.plan(change, *forge.forge.pin_files(change.path, change.base_branch), prefix="portal/")
    result = open_planned(forge.forge, plan)
    assert result.status == OPENED, result.message

    text, after = scrape()
    opened = "portal_pull_requests_total"
    assert value(after, opened, kind=change.kind, outcome="opened") == (
        value(before, opened, kind=change.kind, outcome="opened") + 1
    )
    requests = "portal_forge_requests_total"
    assert value(after, requests, host="127.0.0.1", status="2xx") > value(before, requests, host="127.0.0.1",
                                                                           status="2xx")
    assert value(after, requests, host="127.0.0.1", status="4xx") == (
        value(before, requests, host="127.0.0.1", status="4xx") + 1
    )
    assert ("portal_forge_rate_limit_remaining", frozenset({("host", "127.0.0.1")})) in after
    # Neither the token nor the repository (its URL or its owner/name path) is a label; other
    # tests in this process may have left hosts such as charts.acme-shop.io, which are labels.
    owner_and_name = forge.repository.rstrip("/").removesuffix(".git").split("/")[-2:]
    assert forge.server.token not in text and forge.repository not in text
    assert "/".join(owner_and_name) not in text and f'"{owner_and_name[0]}"' not in text


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    with HttpReceiver() as server:
        yield server


def test_notifications_sent_and_failed_are_counted_per_channel_kind(receiver, catalog):
    secret = "whsec-metrics-0f1e2d3c4b5a69788796a5b4"
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url("/hook"), secret=secret)
    Rule.objects.create(name="all", kinds=[EventKind.APP_ATTENTION], channel=channel)
    seeded(catalog.prod_us, "payments-prod", service=catalog.payments, health="Degraded", now=T0,
           since=timedelta(0), first_seen=T0 - timedelta(days=1))
    seeded(catalog.prod_us, "orders-prod", service=catalog.payments, health="Degraded", now=T0,
           since=timedelta(0), first_seen=T0 - timedelta(days=1))
    receiver.respond(200, 410)  # the first delivered, the second refused for good
    _, before = scrape()
    report = scan_and_send(T0 + timedelta(minutes=10))
    assert (report.sent, report.failed) == (1, 1), report

    text, after = scrape()
    counted = "portal_notifications_total"
    for outcome in ("sent", "failed"):
        assert value(after, counted, channel="webhook", outcome=outcome) == (
            value(before, counted, channel="webhook", outcome=outcome) + 1
        )
    assert secret not in text and receiver.url("/hook") not in text and "payments" not in text


def test_pages_are_timed_by_view_name_and_queues_have_a_depth(db):
    client = Client()
    assert client.get("/accounts/login/").status_code == 200
    client.get("/no-such-page/of-anyone")
    _, series = scrape(client)
    counts = {dict(labels)["view"]: v for (name, labels), v in series.items()
              if name == "portal_page_duration_seconds_count"}
    assert counts.get("login", 0) >= 1
    assert "metrics" not in counts and not any("/" in view for view in counts)
    depths = {dict(labels)["queue"] for (name, labels), _ in series.items() if name == "portal_queue_depth"}
    assert depths == {"poll", "notify", "registry", "forge"}


def test_a_scraper_by_pod_address_is_answered_though_no_allowed_host_names_it(db, settings):
    settings.ALLOWED_HOSTS = ["portal.example.com"]
    client = Client()
    assert client.get("/accounts/login/", HTTP_HOST="10.1.2.3:8000").status_code == 400
    response = client.get("/metrics", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200 and b"portal_queue_depth" in response.content


def test_the_endpoint_can_ask_for_a_token_or_be_off(db, settings):
    settings.PORTAL_METRICS_TOKEN = "metrics-scrape-token-0123456789"
    client = Client()
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", headers={"Authorization": "Bearer not-it"}).status_code == 401
    text, _ = scrape(client, Authorization="Bearer metrics-scrape-token-0123456789")
    assert "metrics-scrape-token" not in text
    settings.PORTAL_METRICS_ENABLED = False
    bearer = {"Authorization": "Bearer metrics-scrape-token-0123456789"}
    assert client.get("/metrics", headers=bearer).status_code == 404


def test_an_agent_push_is_counted_by_status_class_never_with_its_token(db):
    _, before = scrape()
    presented = "agent-token-never-shown-0123456789"
    response = Client().post("/api/v1/agents/prod-eu-1/snapshots", data=b"{}", content_type="application/json",
                             headers={"Authorization": f"Bearer {presented}"})
    assert response.status_code == 401
    text, after = scrape()
    assert value(after, "portal_agent_pushes_total", status="4xx") == value(before, "portal_agent_pushes_total",
                                                                              status="4xx") + 1
    assert presented not in text


def test_what_another_process_counted_is_added_up(db):
    """The multiprocess folder: a second process (as a Celery prefork child would) counts into the
    same folder, and the web's /metrics answers with the sum."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    _, before = scrape()
    code = ("import django; django.setup(); from portal.kernel.metrics import NOTIFICATIONS; "
            "NOTIFICATIONS.labels(channel='slack', outcome='sent').inc(3)")
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings",
                   "PROMETHEUS_MULTIPROC_DIR": str(settings.PROMETHEUS_MULTIPROC_DIR)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=environment, timeout=120)
    _, after = scrape()
    counted = "portal_notifications_total"
    assert value(after, counted, channel="slack", outcome="sent") == (
        value(before, counted, channel="slack", outcome="sent") + 3
    )


def test_a_worker_serves_its_processes_series_on_its_own_port(db, settings):
    """A worker pod's port (portal.celery, on worker_init): what the folder holds, no login."""
    import socket
    import urllib.request

    from portal.celery import _serve_metrics
    from portal.kernel.metrics import PULL_REQUESTS

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.PORTAL_METRICS_WORKER_PORT = port
    PULL_REQUESTS.labels(kind="promotion", outcome="opened").inc()
    _serve_metrics()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    assert 'portal_pull_requests_total{kind="promotion",outcome="opened"}' in text
    assert "portal_queue_depth" not in text  # the scrape-time series are the web's alone
