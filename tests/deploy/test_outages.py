"""A database or broker outage under a running portal, as production runs it (gunicorn, PostgreSQL,
Redis): pages answer 503 saying what is down, the API 503 `unavailable` with Retry-After, /readyz
fails, /healthz does not; when the service comes back the same processes answer again with no
restart. The outage is a TCP proxy the test cuts (tests/fakes/tcp_proxy.py), so the suite's own
PostgreSQL and Redis never go away."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from portal.kernel.accounts import tokens
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import Cluster, Environment
from tests.dburl import database_url
from tests.deploy.test_gunicorn_logs import free_port
from tests.fakes.tcp_proxy import CuttableProxy

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
PASSWORD = "outage-walker-9"

pytestmark = pytest.mark.django_db(transaction=True)  # the server process reads what the test wrote


def _through(url: str, proxy: CuttableProxy) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


@pytest.fixture
def portal_behind_proxies(tmp_path) -> Iterator[tuple[str, CuttableProxy, CuttableProxy]]:
    database = database_url()
    if database.startswith("sqlite"):
        # conftest refuses a CI run (PORTAL_REQUIRE_SERVICES=1) on SQLite before any test starts.
        pytest.skip("an outage needs a database server to cut: runs on PostgreSQL (CI's `bash .ci/run`)")
    redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    db_parts, redis_parts = urlsplit(database), urlsplit(redis_url)
    db_proxy = CuttableProxy(db_parts.hostname or "127.0.0.1", db_parts.port or 5432)
    broker_proxy = CuttableProxy(redis_parts.hostname or "127.0.0.1", redis_parts.port or 6379)
    port = free_port()
    stripped = {key: value for key, value in os.environ.items()
                if key not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_BROKER_URL"}}
    env = {**stripped, "DATABASE_URL": _through(database, db_proxy), "REDIS_URL": _through(redis_url, broker_proxy),
           "PORTAL_VAR_DIR": str(tmp_path), "HOME": str(tmp_path), "ALLOWED_HOSTS": "127.0.0.1",
           "DB_CONN_MAX_AGE": "60"}
    with (tmp_path / "out").open("w") as out:
        server = subprocess.Popen([str(GUNICORN), "portal.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
                                   "--timeout", "30"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base}/healthz", timeout=5)
                break
            except (requests.ConnectionError, requests.Timeout):
                # Until it answers: a worker still starting on a busy machine (a CI run's other
                # processes) is not what is tested.
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError((tmp_path / "out").read_text()[-3000:]) from None
                time.sleep(0.2)
        yield base, db_proxy, broker_proxy
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        db_proxy.close()
        broker_proxy.close()


def _user(username: str, role: Role):
    # The server process hashes as production does; the suite's settings use a fast test hasher.
    user = get_user_model().objects.create(username=username,
                                           password=PBKDF2PasswordHasher().encode(PASSWORD, "outage-salt"))
    grant(user, role)
    return user


def _signed_in(base: str, username: str) -> requests.Session:
    session = requests.Session()
    form = session.get(f"{base}/accounts/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    answer = session.post(f"{base}/accounts/login/", timeout=10, headers={"Referer": f"{base}/accounts/login/"},
                          data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token})
    assert answer.url == f"{base}/", answer.url
    return session


def test_a_database_outage_is_said_plainly_and_the_portal_recovers_alone(portal_behind_proxies):
    base, db_proxy, _ = portal_behind_proxies
    user = _user("outage-admin", Role.ADMIN)
    _token, plain = tokens.issue(user, "outage test")
    bearer = {"Authorization": f"Bearer {plain}"}
    session = _signed_in(base, "outage-admin")
    assert session.get(f"{base}/gitops", timeout=10).status_code == 200

    db_proxy.cut()
    started = time.monotonic()
    page = session.get(f"{base}/gitops", timeout=20)
    assert page.status_code == 503
    assert "The portal&#x27;s database is unreachable; retrying." in page.text
    assert page.headers["Retry-After"] == "15" and 'http-equiv="refresh"' in page.text
    assert "127.0.0.1" not in page.text and "psycopg" not in page.text.lower()  # no driver message
    api = requests.get(f"{base}/api/v1/gitops", headers=bearer, timeout=20)
    assert api.status_code == 503 and api.headers["Retry-After"] == "15"
    assert api.json()["error"]["code"] == "unavailable"
    assert requests.get(f"{base}/readyz", timeout=20).status_code == 503
    assert requests.get(f"{base}/healthz", timeout=5).status_code == 200  # not restarted for it
    assert time.monotonic() - started < 20  # answered, not hung until the proxy came back

    db_proxy.restore()
    assert session.get(f"{base}/gitops", timeout=20).status_code == 200  # same process, same session
    assert requests.get(f"{base}/api/v1/gitops", headers=bearer, timeout=20).status_code == 200
    assert requests.get(f"{base}/readyz", timeout=20).status_code == 200


def test_a_broker_outage_refuses_what_needs_it_and_nothing_else(portal_behind_proxies):
    base, _, broker_proxy = portal_behind_proxies
    _user("outage-member", Role.MEMBER)
    Cluster.objects.create(name="prod-eu", environment=Environment.objects.create(name="production"))
    session = _signed_in(base, "outage-member")
    csrf = session.cookies["csrftoken"]

    broker_proxy.cut()
    assert session.get(f"{base}/clusters", timeout=20).status_code == 200  # reading needs no broker
    poll = session.post(f"{base}/clusters/prod-eu/poll", headers={"X-CSRFToken": csrf, "Referer": f"{base}/clusters"},
                        timeout=30, allow_redirects=False)
    assert poll.status_code == 503, poll.text[:500]
    assert "task queue (its message broker) is unreachable" in poll.text

    broker_proxy.restore()
    poll = session.post(f"{base}/clusters/prod-eu/poll", headers={"X-CSRFToken": csrf, "Referer": f"{base}/clusters"},
                        timeout=30, allow_redirects=False)
    assert poll.status_code == 302
