"""Load the demo fleet (examples/fleet.yaml) and collect every demo cluster once.

A destination an Argo CD hub deploys to is read after the hub (its workloads are linked to
the hub's apps by their `status.resources`), whatever order the catalog lists them in.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db.models import F

from gitops.derive.destinations import reads_workloads
from gitops.models import GitOpsApp
from portal.kernel.catalog.fleetfile import FleetFileError, load_fleet
from portal.kernel.catalog.models import Cluster


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
        clusters = list(Cluster.objects.filter(enabled=True).select_related("environment"))
        for cluster in clusters:
            self._poll(poll, cluster)
        # A destination's workloads join the apps an Argo CD hub reports for it when the
        # destination is read after the hub: read again each one that was read before.
        order = {cluster.pk: i for i, cluster in enumerate(clusters)}
        early = {
            cluster_id
            for cluster_id, read_from_id in GitOpsApp.objects.exclude(cluster=F("read_from")).values_list(
                "cluster_id", "read_from_id")
            if order.get(cluster_id, len(order)) < order.get(read_from_id, -1)
        }
        for cluster in clusters:
            if cluster.pk in early and reads_workloads(cluster):
                self._poll(poll, cluster)

    def _poll(self, poll, cluster: Cluster) -> None:
        report = poll(cluster)
        if report.ok and report.stored:
            self.stdout.write(
                f"  {cluster.name}: {report.stored.apps} apps, {report.stored.workloads} workloads"
                f" ({report.seconds:.2f} s)"
            )
        else:
            self.stdout.write(f"  {cluster.name}: {report.error or report.skipped}")
