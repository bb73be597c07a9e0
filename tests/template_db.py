"""Loaded with `-p tests.template_db` (pyproject addopts): under pytest-xdist on PostgreSQL, the
schema is migrated once, into a template database, and each worker's test database is copied
from it (`CREATE DATABASE … TEMPLATE`, Django's TEST["TEMPLATE"]), instead of every worker
running all the migrations itself: eight workers spent 7 s of CPU each on the same migrations
while the suite, CPU-bound on two cores, waited. A worker still runs `migrate` over its copy,
which finds nothing to do.

The controller makes the template before it starts the workers (they inherit
PORTAL_TEST_TEMPLATE_DB from its environment) and drops it when the run ends; the workers
name it in their database settings (`django_db_modify_db_settings` in tests/conftest.py).
Nothing happens on SQLite or without xdist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = "PORTAL_TEST_TEMPLATE_DB"
ROOT = Path(__file__).resolve().parent.parent


def _admin_connection(url: str):  # type: ignore[no-untyped-def]
    import dj_database_url
    import psycopg

    db = dj_database_url.parse(url)
    return psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
                           password=db["PASSWORD"] or None, dbname=db["NAME"], autocommit=True)


def _template_url(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + name


def pytest_configure(config: pytest.Config) -> None:
    url = os.environ.get("DATABASE_URL", "")
    workers = getattr(config.option, "numprocesses", None)
    if (os.environ.get("PYTEST_XDIST_WORKER") or not workers or not url.startswith(("postgres://", "postgresql://"))
            or os.environ.get(ENV)):
        return
    name = f"test_portal_template_{os.getpid()}"
    with _admin_connection(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "DATABASE_URL": _template_url(url, name), "DJANGO_SETTINGS_MODULE": "portal.settings"},
        check=False)
    if migrated.returncode != 0:
        raise pytest.UsageError(f"migrating the template test database failed:\n{migrated.stderr[-3000:]}")
    os.environ[ENV] = name
    config.add_cleanup(lambda: _drop(url, name))


def _drop(url: str, name: str) -> None:
    os.environ.pop(ENV, None)
    with _admin_connection(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
