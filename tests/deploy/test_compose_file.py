"""docker-compose.yml, the production shape on one machine: the image carries the portal's
version (never `latest`), and every long-running portal service has a health check: web asks
/healthz, workers and beat run the chart's own liveness scripts (tests/deploy/test_liveness_probes.py
runs those against a real worker and files of known ages)."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.deploy.test_helm_chart import objects
from tests.deploy.test_liveness_probes import probe_command

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
PORTAL_SERVICES = [name for name, service in SERVICES.items() if service.get("image", "").startswith("gitops-portal:")]
LONG_RUNNING = [name for name in PORTAL_SERVICES if SERVICES[name].get("restart") != "no"]
# The chart's Deployment for the same queues.
CHART_WORKER = {"worker": "gitops-portal-worker-poll", "worker-background": "gitops-portal-worker-background"}
WORKERS = [name for name in PORTAL_SERVICES if SERVICES[name]["command"][3:4] == ["worker"]]


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def healthcheck_script(service: str) -> str:
    """What the container's shell runs: compose's `$$` is a literal `$`."""
    test = SERVICES[service]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL"
    return test[1].replace("$$", "$")


def test_the_portal_services_are_the_ones_expected():
    assert sorted(PORTAL_SERVICES) == ["beat", "migrate", "web", "worker", "worker-background"]
    assert sorted(WORKERS) == ["worker", "worker-background"]


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_no_image_floats(name):
    image = SERVICES[name]["image"]
    repository, _, tag = image.rpartition(":")
    assert repository and tag and tag != "latest", image


def test_the_portal_image_is_the_portals_version_and_the_charts_app_version():
    chart = yaml.safe_load((ROOT / "deploy/helm/gitops-portal/Chart.yaml").read_text())
    assert chart["appVersion"] == version()
    assert {SERVICES[name]["image"] for name in PORTAL_SERVICES} == {f"gitops-portal:{version()}"}


@pytest.mark.parametrize("name", [*sorted(LONG_RUNNING), "postgres", "redis"])
def test_every_long_running_service_has_a_health_check(name):
    assert SERVICES[name]["healthcheck"]["test"]


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_workers_run_the_charts_heartbeat_probe(name):
    service = SERVICES[name]
    assert service["environment"]["PORTAL_WORKER_HEARTBEAT_FILE"] == "/tmp/worker-heartbeat"
    # The shared settings are kept, not replaced, by the worker's own variable.
    assert service["environment"]["DATABASE_URL"] == SERVICES["web"]["environment"]["DATABASE_URL"]
    assert healthcheck_script(name) == probe_command(CHART_WORKER[name])


def test_the_heartbeat_threshold_is_the_charts_default():
    chart_values = yaml.safe_load((ROOT / "deploy/helm/gitops-portal/values.yaml").read_text())
    assert healthcheck_script("worker").endswith(f"-lt {chart_values['workerLivenessSeconds']}")


def test_beat_runs_the_charts_schedule_file_probe():
    assert healthcheck_script("beat") == probe_command("gitops-portal-beat")
    (beat,) = [d for d in objects("default", "Deployment") if d["metadata"]["name"] == "gitops-portal-beat"]
    assert beat["spec"]["template"]["spec"]["containers"][0]["command"] == SERVICES["beat"]["command"]


class _Healthz(http.server.BaseHTTPRequestHandler):
    hosts: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self.hosts.append((self.path, self.headers["Host"]))
        self.send_response(200 if self.path == "/healthz" and self.headers["Host"] == "portal.example.com" else 400)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("allowed_hosts, healthy", [
    (".portal.example.com,other.example.com", True), ("portal.example.com", True), ("elsewhere.example.com", False),
])
def test_the_web_check_asks_healthz_with_an_allowed_host(allowed_hosts, healthy):
    test = SERVICES["web"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = test[3].replace("127.0.0.1:8000", f"127.0.0.1:{server.server_port}")
        assert code != test[3], "the check no longer asks port 8000"
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "ALLOWED_HOSTS": allowed_hosts},
                              capture_output=True, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert (done.returncode == 0) is healthy
    assert _Healthz.hosts[-1][0] == "/healthz"
