"""Celery tasks: beat fans out one poll per cluster, so a slow cluster delays nobody."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from gitops.models import AppProject, GitOpsApp
from gitops.polling import poll
from gitops.windowstate import app_target, verdict
from portal.catalog.models import Cluster


@shared_task(name="gitops.poll_cluster", ignore_result=False)
def poll_cluster(cluster_id: int) -> dict:
    cluster = Cluster.objects.filter(pk=cluster_id, enabled=True).select_related("environment").first()
    if cluster is None:
        return {"skipped": "no such enabled cluster"}
    report = poll(cluster)
    return {
        "cluster": report.cluster,
        "ok": report.ok,
        "seconds": round(report.seconds, 3),
        "apps": report.stored.apps if report.stored else None,
        "error": report.error,
        "skipped": report.skipped,
    }


@shared_task(name="gitops.poll_all")
def poll_all() -> int:
    ids = list(Cluster.objects.filter(enabled=True).values_list("id", flat=True))
    for cluster_id in ids:
        poll_cluster.delay(cluster_id)
    return len(ids)


@shared_task(name="gitops.refresh_sync_windows")
def refresh_sync_windows() -> int:
    """Re-judge apps whose window edge has passed, without waiting for the next poll:
    a page must never show a window that has already closed (or miss one that opened)."""
    now = timezone.now()
    due = list(
        GitOpsApp.objects.filter(tool="argo", window_next_edge__lte=now).only(
            "id", "cluster_id", "project", "name", "destination_namespace", "destination_server",
            "destination_name", "manual_sync",
        )
    )
    if not due:
        return 0
    windows = {
        (p.cluster_id, p.name): p.sync_windows
        for p in AppProject.objects.filter(cluster_id__in={a.cluster_id for a in due})
    }
    fields = ["sync_blocked", "sync_blocked_until", "sync_window", "window_next_edge"]
    for app in due:
        state = verdict(windows.get((app.cluster_id, app.project or "default"), []), app_target(app),
                        app.manual_sync, now)
        for name in fields:
            setattr(app, name, state[name])
    GitOpsApp.objects.bulk_update(due, fields)
    return len(due)
