"""`manage.py import_osv <zip-or-dir> [--ecosystem X]`: import OSV's exported records (an
ecosystem's all.zip, or a directory of OSV JSON files) into the offline OSV database that
PORTAL_OSV_OFFLINE makes every lookup use (portal.releases.osv_offline). For air-gapped
installs: copy the zips in, import them, and name them in PORTAL_OSV_OFFLINE for the refresh.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.releases.osv_offline import ExportUnreadable, import_export


class Command(BaseCommand):
    help = "Import OSV's exported records (a zip such as Go/all.zip, or a directory of OSV JSON files)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("source", help="an OSV export: a zip of OSV JSON records or a directory of them")
        parser.add_argument("--ecosystem", default="", help="only records naming a package of this OSV ecosystem")

    def handle(self, *args, source: str, ecosystem: str, **options) -> None:  # type: ignore[no-untyped-def]
        path = Path(source)
        if not path.exists():
            raise CommandError(f"{source}: no such file or directory")
        try:
            report = import_export(path, ecosystem=ecosystem)
        except ExportUnreadable as exc:
            raise CommandError(str(exc)) from exc
        for skipped in report.skipped[:20]:
            self.stderr.write(f"skipped {skipped}")
        self.stdout.write(f"{report.records} OSV records imported from {report.source}"
                          + (f" ({len(report.skipped)} entries skipped)" if report.skipped else ""))
