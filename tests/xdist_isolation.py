"""Loaded with `-p tests.xdist_isolation` (pyproject addopts), before Django reads its settings.
Prometheus: a fresh multiprocess folder per test process (below). Redis:
under pytest-xdist each worker process gets a Redis database of its own — REDIS_URL's number
plus one plus the worker's — so one worker's broker queues and poll claims (portal.celery
claims live in the broker) never meet another's tests. PostgreSQL needs nothing here:
pytest-django gives each worker its own test database (test_<name>_gw<N>).

It has to be a plugin: conftest.py is imported after pytest-django has loaded the settings."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")

if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    for _name in ("REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL"):
        _url = os.environ.get(_name, "")
        if _url.startswith(("redis://", "rediss://")):
            _parts = urlsplit(_url)
            _base = int(_parts.path.strip("/") or 0)
            os.environ[_name] = urlunsplit(_parts._replace(path=f"/{_base + 1 + int(_WORKER[2:])}"))

# Each test process writes its Prometheus series into a folder of its own, made afresh
# (portal.kernel.metrics): /metrics in one process's tests never adds another's, or a past run's.
# The xdist controller loads this plugin first and its workers inherit its environment, so a
# folder made by another test process (its pid in PORTAL_TEST_METRICS_OWNER) is not ours.
_OWNER = os.environ.get("PORTAL_TEST_METRICS_OWNER", "")
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ or (_OWNER and _OWNER != str(os.getpid())):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="portal-metrics-")
    os.environ["PORTAL_TEST_METRICS_OWNER"] = str(os.getpid())
