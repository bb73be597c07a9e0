"""A worker keeps its database connection from task to task, as the web keeps one from request
to request, and closes it on the same grounds (CONN_MAX_AGE, errors): Celery's Django fixup
left alone closes every connection around every task, which at 500 polls a minute opens 8
PostgreSQL sessions a second. The fixup's methods are called as a worker's task signals call
them; installing it here would connect it to this process for good."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from portal.celery import _close_old_connections, app
from portal.kernel.catalog.models import Service

WORKER_TASK = SimpleNamespace(request=SimpleNamespace(is_eager=False))
EAGER_TASK = SimpleNamespace(request=SimpleNamespace(is_eager=True))


def run_task(fixup: DjangoWorkerFixup, task: SimpleNamespace) -> None:
    """What a worker process does around one task: the fixup's and the portal's task signals."""
    fixup.on_task_prerun(task)
    _close_old_connections(task)
    Service.objects.count()
    fixup.on_task_postrun(task)
    _close_old_connections(task)


def fresh_connection(max_age: int, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", max_age)
    connection.close()
    connection.ensure_connection()  # CONN_MAX_AGE is read when a connection opens
    return connection.connection


@pytest.mark.django_db(transaction=True)
def test_a_worker_runs_task_after_task_on_one_connection(monkeypatch):
    opened = fresh_connection(60, monkeypatch)
    fixup = DjangoWorkerFixup(app)
    for _ in range(50):
        run_task(fixup, WORKER_TASK)
    assert connection.connection is opened


@pytest.mark.django_db(transaction=True)
def test_the_fixup_still_recycles_a_connection_after_its_many_tasks(monkeypatch):
    opened = fresh_connection(60, monkeypatch)
    fixup = DjangoWorkerFixup(app)
    for _ in range(app.conf.db_reuse_max + 1):
        run_task(fixup, WORKER_TASK)
    assert connection.connection is not opened


@pytest.mark.django_db(transaction=True)
def test_a_connection_past_its_max_age_is_closed_when_a_task_ends(monkeypatch):
    fresh_connection(0, monkeypatch)
    _close_old_connections(WORKER_TASK)
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_a_connection_left_broken_by_a_task_is_not_handed_to_the_next(monkeypatch):
    fresh_connection(60, monkeypatch)
    connection.errors_occurred = True
    monkeypatch.setattr(connection, "is_usable", lambda: False)
    _close_old_connections(WORKER_TASK)
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_an_eager_task_leaves_its_callers_connection_open(monkeypatch):
    opened = fresh_connection(0, monkeypatch)
    _close_old_connections(EAGER_TASK)
    assert connection.connection is opened
