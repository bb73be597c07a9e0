"""The probes an orchestrator asks: `/healthz` (the process answers) and `/readyz` (it can serve:
the database answers, every migration this code knows is applied, the Celery broker answers).

Both answer without a session or login and say no more than "ok" or the name of the check that
failed: a probe's answer is public, so no host, URL, driver message or exception text goes in it
(the reason goes to the log). `/healthz` touches nothing outside the process, so a database or
broker outage never makes Kubernetes restart healthy web pods; it only takes them out of the
Service through `/readyz` until the outage ends.

The Celery workers' and beat's liveness is not here: they serve no HTTP. A worker touches a file on
every event heartbeat (portal/celery.py) and the chart's exec probe checks its age.
"""

from __future__ import annotations

import logging

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from portal.celery import app as celery_app

log = logging.getLogger(__name__)

# How long /readyz waits for the broker: under the chart's probe timeout, so a broker that drops
# packets answers "broker" rather than letting the kubelet time the probe out.
BROKER_CONNECT_TIMEOUT = 2.0

# Set once this process has seen no migration pending: a migration is never unapplied under a
# running process, and planning them loads every migration module (tens of milliseconds).
_migrated: set[str] = set()


def database_ready(alias: str = DEFAULT_DB_ALIAS) -> bool:
    connection = connections[alias]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True
    except DatabaseError as error:
        log.warning("readyz: database %s unreachable: %s", alias, type(error).__name__)
        # A broken connection stays broken; closing it makes the next probe connect afresh.
        connection.close()
        return False


def migrations_applied(alias: str = DEFAULT_DB_ALIAS) -> bool:
    if alias in _migrated:
        return True
    connection = connections[alias]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        log.warning("readyz: migrations of %s unreadable: %s", alias, type(error).__name__)
        connection.close()
        return False
    if pending:
        log.warning("readyz: %d migration(s) not applied on %s", len(pending), alias)
        return False
    _migrated.add(alias)
    return True


def broker_ready() -> bool:
    try:
        with celery_app.connection_for_write(connect_timeout=BROKER_CONNECT_TIMEOUT) as connection:
            connection.ensure_connection(max_retries=0)
        return True
    except Exception as error:  # kombu raises the transport's own errors too, of many kinds
        log.warning("readyz: broker unreachable: %s", type(error).__name__)
        return False


def _answer(failed: list[str]) -> HttpResponse:
    body = "ok\n" if not failed else "".join(f"{name}: failed\n" for name in failed)
    return HttpResponse(body, status=503 if failed else 200, content_type="text/plain; charset=utf-8")


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    return _answer([])


@never_cache
@require_safe
def readyz(request: HttpRequest) -> HttpResponse:
    failed = []
    if not database_ready():
        failed.append("database")
    elif not migrations_applied():
        failed.append("migrations")
    if not broker_ready():
        failed.append("broker")
    return _answer(failed)
