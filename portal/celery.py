"""The Celery app: configured from Django settings (CELERY_*, beat schedule and queues included),
tasks autodiscovered from every installed app's `tasks` module.

The claims on queued work live in the kernel (`portal.kernel.claims`), where the tasks below
the shell reach them; they are re-exported here for their older import path.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

from celery import Celery, Task
from celery.signals import heartbeat_sent, task_postrun, task_prerun, worker_init, worker_process_init, worker_ready
from django.conf import settings
from django.db import close_old_connections

from portal import requestids
from portal.kernel.claims import Claims, FileClaims, RedisClaims, claims

__all__ = ["Claims", "FileClaims", "RedisClaims", "app", "claims"]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _freeze_startup_objects(**_: object) -> None:
    """What a worker process has loaded before its first task (Django, every app's modules, the
    task registry) lives as long as the process: out of the cycle collector's sight, so a poll
    that allocates a cluster's objects does not make every full collection walk it again (as
    portal.wsgi does for the web's processes)."""
    gc.collect()
    gc.freeze()


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(sender: Task | None = None, **_: object) -> None:
    """A task is to a worker what a request is to the web: before and after it, database
    connections that are past CONN_MAX_AGE, broken, or left in a failed state are closed (Django's
    own request signals do the same), and the next use opens a fresh one. Celery's fixup no longer
    closes them all every task (settings.CELERY_DB_REUSE_MAX). An eager task runs inside its
    caller, whose connection (and transaction) is not the task's to close."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    close_old_connections()


@task_prerun.connect
def _log_task_ids(task_id: str = "", task: Task | None = None, **_: object) -> None:
    """Every log line the task writes carries its id and name (portal/requestids.py)."""
    requestids.task_started(task_id, getattr(task, "name", "") or "")


@task_postrun.connect
def _forget_task_ids(task_id: str = "", **_: object) -> None:
    requestids.task_ended(task_id)


@app.on_after_configure.connect
def _ensure_broker_folders(sender: Celery, **_: object) -> None:
    # kombu's filesystem transport does not create its folders itself.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
    backend = sender.conf.result_backend or ""
    if backend.startswith("file://"):
        os.makedirs(backend[len("file://") :], exist_ok=True)


@worker_ready.connect
@heartbeat_sent.connect
def _touch_heartbeat_file(**_: object) -> None:
    """Liveness for a worker (the chart's exec probe checks this file's age). The heartbeat is sent
    from the consumer's own event loop, so the file goes stale when the worker stops consuming
    (loop blocked, broker lost and not regained) even though its process is alive. Cheaper than
    `celery inspect ping` per probe: no Django start-up, no broker round trip."""
    if settings.PORTAL_WORKER_HEARTBEAT_FILE:
        Path(settings.PORTAL_WORKER_HEARTBEAT_FILE).touch()


@worker_init.connect
def _serve_metrics(**_: object) -> None:
    """A worker pod's own scrape port (settings.PORTAL_METRICS_WORKER_PORT): its main process
    serves what its prefork children wrote into the multiprocess folder, which the web's /metrics
    cannot see from another pod. The embedded run shares one folder with the web and needs none."""
    if not settings.PORTAL_METRICS_WORKER_PORT:
        return
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(settings.PROMETHEUS_MULTIPROC_DIR))
    start_http_server(settings.PORTAL_METRICS_WORKER_PORT, registry=registry)


# --- claims on queued work ------------------------------------------------------------------
