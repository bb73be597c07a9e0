"""Poll one cluster, or all, now, and print what was collected."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from gitops.polling import poll
from portal.kernel.catalog.models import Cluster


class Command(BaseCommand):
    help = "Poll clusters now (all enabled ones, or those named) and print apps, workloads, errors and seconds."

    def add_arguments(self, parser):
        parser.add_argument("clusters", nargs="*", help="cluster names (default: every enabled cluster)")

    def handle(self, *args, **options):
        names = options["clusters"]
        clusters = Cluster.objects.select_related("environment")
        clusters = clusters.filter(name__in=names) if names else clusters.filter(enabled=True)
        found = list(clusters)
        missing = set(names) - {c.name for c in found}
        if missing:
            raise CommandError(f"no such cluster: {', '.join(sorted(missing))}")
        failed = 0
        for cluster in found:
            report = poll(cluster)
            if report.skipped:
                self.stdout.write(f"{cluster.name}: skipped ({report.skipped})")
            elif report.ok and report.stored:
                s = report.stored
                self.stdout.write(
                    f"{cluster.name}: {s.apps} apps (+{s.created} ~{s.updated} -{s.removed}), {s.workloads} workloads,"
                    f" {s.state_changes} state changes, {s.version_changes} version changes, {report.seconds:.2f} s"
                )
                for why in report.unavailable.values():
                    self.stdout.write(f"  {why}")
                for warning in report.warnings[:20]:
                    self.stdout.write(f"  warning: {warning}")
            else:
                failed += 1
                self.stdout.write(
                    f"{cluster.name}: FAILED {report.error} ({report.seconds:.2f} s); last good data kept"
                )
        if failed:
            raise CommandError(f"{failed} of {len(found)} cluster polls failed")
