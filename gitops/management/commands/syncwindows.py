"""Answer "why won't it deploy?" for one stored Argo CD application."""

from __future__ import annotations

import zoneinfo
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from gitops import syncwindows
from gitops.models import AppProject, GitOpsApp
from gitops.windowstate import app_target


class Command(BaseCommand):
    help = (
        "Print every sync window of an application's AppProject: whether it matches the app and why, "
        "whether it is active, and the verdict (can it sync, and if not, until when)."
    )

    def add_arguments(self, parser):
        parser.add_argument("app", help="Argo CD Application name")
        parser.add_argument("--cluster", help="cluster name, when the name exists on several clusters")
        parser.add_argument("--namespace", help="the Application's namespace")
        parser.add_argument("--at", help="judge at this ISO 8601 time instead of now")
        parser.add_argument("--manual", action="store_true", help="judge a manual sync instead of an automated one")
        parser.add_argument("--tz", default="UTC", help="show times in this IANA zone (default UTC)")

    def handle(self, *args, **options):
        apps = GitOpsApp.objects.filter(tool="argo", name=options["app"]).select_related("cluster")
        if options["cluster"]:
            apps = apps.filter(cluster__name=options["cluster"])
        if options["namespace"]:
            apps = apps.filter(namespace=options["namespace"])
        found = list(apps)
        if not found:
            raise CommandError(f"no stored Argo CD application named {options['app']!r} (has its cluster been polled?)")
        if len(found) > 1:
            where = ", ".join(f"{a.cluster.name}/{a.namespace}" for a in found)
            raise CommandError(f"{options['app']!r} exists on several clusters ({where}): add --cluster/--namespace")
        app = found[0]
        try:
            tz = zoneinfo.ZoneInfo(options["tz"])
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise CommandError(f"unknown time zone {options['tz']!r}")
        at = timezone.now()
        if options["at"]:
            try:
                at = datetime.fromisoformat(options["at"])
            except ValueError:
                raise CommandError(f"--at {options['at']!r} is not an ISO 8601 time")
            if at.tzinfo is None:
                raise CommandError("--at needs an offset, e.g. 2026-11-29T18:00:00+01:00")
        project_name = app.project or "default"
        project = AppProject.objects.filter(cluster=app.read_from, name=project_name).first()
        # The AppProject lives where the app was read (a hub's Argo CD), not where it deploys.
        polled = getattr(app.read_from, "poll", None)  # gitops.ClusterPoll; none before its first poll
        unavailable = polled.unavailable.get("argocd-projects") if polled is not None else None
        if project is None:
            why = unavailable or f"AppProject {project_name!r} was not found on {app.read_from.name}"
            raise CommandError(f"cannot judge sync windows: {why}")
        manual = options["manual"] or app.manual_sync
        explanation = syncwindows.explain(project.sync_windows, app_target(app), at, manual=manual)
        self.stdout.write(f"{app.cluster.name}: Application {app.namespace}/{app.name}, project {project_name}")
        if app.manual_sync:
            self.stdout.write("This app has no automated sync: it deploys only when someone syncs it.")
        self.stdout.write(syncwindows.format_explanation(explanation, tz))
