"""Notification benchmark: one minute's pass of the beat task `notifications.send_due` on
10,000 applications (40 clusters), 200 of them out of sync or degraded past the grace
period, with 30 days of StateChange history (deploys: OutOfSync, a new revision, Synced
again; a few short outages), and one webhook rule delivering to a local receiver.

Prints seconds and queries for the first pass (it opens and sends the 200 episodes), a
steady-state pass (nothing new happened) and a pass after a busy minute (10 apps recover,
10 fall into trouble past the grace period).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/notifications.py
    # the same figures for another checkout of the portal (e.g. the code before a change):
    cd /tmp/baseline && DATABASE_URL=... /work/main/.venv/bin/python /work/main/bench/notifications.py --tree .

It uses only what every version of the portal has (the task name, GitOpsApp, StateChange,
Cluster, Environment, Service, Rule, Channel), so the same script measures both.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness import bench_database

APPS = 10_000
CLUSTERS = 40
SERVICES = 300
TROUBLED = 200
DAYS = 30
DEPLOY_EVERY_DAYS = 5  # each app is deployed every five days: OutOfSync -> revision -> Synced
OUTAGE_EVERY = 20  # one app in twenty had a 15-minute degradation in the month


class _Receiver(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).received += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()


def seed(hook_url: str) -> None:
    from django.db import connection
    from django.utils import timezone

    from gitops.models import GitOpsApp, StateChange
    from portal.kernel.catalog.models import Cluster, Environment, Service
    from portal.notifications.models import Channel, Rule

    now = timezone.now()
    envs = [Environment.objects.create(name=name, order=i, production=name == "prod")
            for i, name in enumerate(["dev", "qa", "staging", "prod"])]
    clusters = [Cluster.objects.create(name=f"cluster-{n:02d}", environment=envs[n % 4],
                                       connection=Cluster.Connection.MANIFESTS) for n in range(CLUSTERS)]
    Service.objects.bulk_create(
        Service(name=f"svc{i:03d}", image_repository=f"ghcr.io/acme/svc{i:03d}") for i in range(SERVICES)
    )
    services = list(Service.objects.order_by("id"))
    first_seen = now - timedelta(days=DAYS + 10)
    apps = []
    for i in range(APPS):
        troubled = i % (APPS // TROUBLED) == 0
        degraded = troubled and (i // (APPS // TROUBLED)) % 2 == 0
        since = now - timedelta(minutes=30) if troubled else now - timedelta(days=1)
        apps.append(GitOpsApp(
            cluster=clusters[i % CLUSTERS], tool="argo", kind="Application", namespace="argocd", name=f"app-{i:05d}",
            sync_status="OutOfSync" if troubled and not degraded else "Synced",
            health_status="Degraded" if degraded else "Healthy", sync_since=since, health_since=since,
            repo_url="https://github.com/acme/gitops.git", path=f"apps/app-{i:05d}", target_revision="main",
            synced_revision="b" * 40, first_seen=first_seen,
        ))
    GitOpsApp.objects.bulk_create(apps, batch_size=2000)
    apps = list(GitOpsApp.objects.order_by("id"))
    through = GitOpsApp.services.through
    through.objects.bulk_create(
        [through(gitopsapp_id=app.id, service_id=services[i % SERVICES].id) for i, app in enumerate(apps)],
        batch_size=5000,
    )
    rows = []

    def change(app: GitOpsApp, field: str, old: str, new: str, at: object) -> None:
        rows.append(StateChange(cluster_id=app.cluster_id, app=app, object_key=f"argo/Application/argocd/{app.name}",
                                field=field, old=old, new=new, at=at))

    for i, app in enumerate(apps):
        change(app, "presence", "", "present", first_seen)
        for day in range(DAYS - 1, 0, -DEPLOY_EVERY_DAYS):
            at = now - timedelta(days=day, minutes=i % 600)
            change(app, "sync", "Synced", "OutOfSync", at)
            change(app, "revision", "a" * 40, "b" * 40, at + timedelta(minutes=1))
            change(app, "sync", "OutOfSync", "Synced", at + timedelta(minutes=1))
        if i % OUTAGE_EVERY == 1:
            at = now - timedelta(days=1 + i % (DAYS - 2), hours=3)
            change(app, "health", "Healthy", "Degraded", at)
            change(app, "health", "Degraded", "Healthy", at + timedelta(minutes=15))
        if app.sync_status == "OutOfSync":
            change(app, "sync", "Synced", "OutOfSync", app.sync_since)
        if app.health_status == "Degraded":
            change(app, "health", "Healthy", "Degraded", app.health_since)
    StateChange.objects.bulk_create(rows, batch_size=5000)
    channel = Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=hook_url, secret="bench")
    Rule.objects.create(name="all apps", kinds=["app_attention"], channel=channel)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"seeded {len(apps)} apps, {TROUBLED} in trouble, {len(rows)} state changes over {DAYS} days")


def busy_minute() -> None:
    """10 troubled apps recover; 10 healthy ones fell into trouble 15 minutes ago."""
    from django.utils import timezone

    from gitops.models import GitOpsApp, StateChange

    now = timezone.now()
    troubled = list(GitOpsApp.objects.exclude(health_status="Healthy", sync_status="Synced").order_by("id")[:10])
    healthy = list(GitOpsApp.objects.filter(health_status="Healthy", sync_status="Synced").order_by("id")[:10])
    rows = []
    for app in troubled:
        field, old, new = ("health", app.health_status, "Healthy") if app.health_status != "Healthy" else (
            "sync", app.sync_status, "Synced")
        rows.append((app, field, old, new, now))
    for app in healthy:
        rows.append((app, "health", "Healthy", "Degraded", now - timedelta(minutes=15)))
    for app, field, old, new, at in rows:
        StateChange.objects.create(cluster_id=app.cluster_id, app=app, object_key=f"argo/Application/argocd/{app.name}",
                                   field=field, old=old, new=new, at=at)
        setattr(app, f"{field}_status", new)
        setattr(app, f"{field}_since", at)
        app.save(update_fields=[f"{field}_status", f"{field}_since"])


def timed_pass(label: str, task: object) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    before = _Receiver.received
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        result = task()  # type: ignore[operator]
        seconds = time.perf_counter() - started
    print(f"{label:<34} {seconds:8.3f} s {len(queries.captured_queries):7d} queries"
          f"   sent {_Receiver.received - before:4d}  {result}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the portal checkout to measure (default: the one this script is in)")
    args = parser.parse_args()
    with bench_database(args.tree.resolve()) as vendor, receiver() as hook_url:
        import portal.notifications
        from portal.celery import app as celery_app

        print(f"database: {vendor}; portal code: {Path(portal.notifications.__file__).parent}")
        seed(hook_url)
        celery_app.loader.import_default_modules()
        task = celery_app.tasks["notifications.send_due"]
        timed_pass("first pass", task)
        timed_pass("steady state (nothing new)", task)
        busy_minute()
        timed_pass("after a busy minute (20 changes)", task)


if __name__ == "__main__":
    main()
