"""Load the demo fleet (examples/fleet.yaml) and collect every demo cluster once."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.catalog.fleetfile import FleetFileError, load_fleet
from portal.catalog.models import Cluster


class Command(BaseCommand):
    help = "Load the demo fleet into the catalog and collect it once through its manifest folders."

    def add_arguments(self, parser):
        parser.add_argument("--fleet", default=str(Path(settings.BASE_DIR) / "examples" / "fleet.yaml"))
        parser.add_argument("--no-collect", action="store_true", help="load the catalog only")

    def handle(self, *args, **options):
        from gitops.polling import poll

        try:
            loaded = load_fleet(Path(options["fleet"]))
        except FleetFileError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Demo fleet: {loaded.environments} environments, {loaded.clusters} clusters, {loaded.services} services"
        )
        if options["no_collect"]:
            return
        for cluster in Cluster.objects.filter(enabled=True).select_related("environment"):
            report = poll(cluster)
            if report.ok and report.stored:
                self.stdout.write(
                    f"  {cluster.name}: {report.stored.apps} apps, {report.stored.workloads} workloads"
                    f" ({report.seconds:.2f} s)"
                )
            else:
                self.stdout.write(f"  {cluster.name}: {report.error or report.skipped}")
