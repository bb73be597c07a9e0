"""`manage.py check --deploy` finds nothing under production settings: the chart's own ConfigMap
(defaults and everything on) with a real SECRET_KEY, run in a process of its own as a pod starts.
The embedded run keeps plain HTTP: nothing redirects it or marks its cookies Secure."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

from tests.deploy.test_helm_chart import objects

ROOT = Path(__file__).resolve().parents[2]


def config_map(variant: str) -> dict[str, str]:
    (config,) = [c for c in objects(variant, "ConfigMap") if c["metadata"]["name"].endswith("-config")]
    return config["data"]


def check_deploy(environment: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # Only what a pod has: the ConfigMap, the Secret's values, nothing of this shell's portal settings,
    # nor what a browser test earlier in this process set for Playwright (DJANGO_ALLOW_ASYNC_UNSAFE).
    inherited = {name: value for name, value in os.environ.items()
                 if not name.startswith(("PORTAL_", "SECURE_", "SESSION_", "DEBUG", "ALLOWED_HOSTS", "SECRET_KEY",
                                         "DJANGO_ALLOW_ASYNC_UNSAFE"))}
    env = {**inherited, "PORTAL_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "portal.settings", **environment}
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("variant", ["default", "full"])
def test_check_deploy_is_clean_under_the_charts_production_settings(variant, tmp_path):
    environment = {**config_map(variant), "SECRET_KEY": secrets.token_urlsafe(50)}
    done = check_deploy(environment, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_check_deploy_fails_when_production_is_served_over_plain_http(tmp_path):
    environment = {**config_map("default"), "SECRET_KEY": secrets.token_urlsafe(50),
                   "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0"}
    done = check_deploy(environment, tmp_path)
    assert done.returncode != 0
    assert "security.W008" in done.stderr and "security.W012" in done.stderr


def test_the_chart_logs_json():
    assert config_map("default")["PORTAL_LOG_FORMAT"] == "json"


def test_the_embedded_run_serves_plain_http(settings):
    assert not settings.SECURE_SSL_REDIRECT and not settings.SESSION_COOKIE_SECURE
    assert settings.SECURE_HSTS_SECONDS == 0


@override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["portal.example.com"])
@pytest.mark.django_db
def test_probes_are_answered_over_plain_http_while_pages_redirect():
    client = Client(HTTP_HOST="portal.example.com")
    assert client.get("/healthz").status_code == 200
    page = client.get("/login/")
    assert page.status_code == 301 and page["Location"].startswith("https://portal.example.com/")
