"""List running images that no service claims (gitops.discovery), with suggested services.

`--format fleet` prints them as the `services:` of a fleet file, suggestions filled in: edit
what needs editing and load it with `manage.py load_demo --fleet <file>` (or keep it in Git
with the rest of the catalog).
"""

from __future__ import annotations

import json

import yaml
from django.core.management.base import BaseCommand

from gitops.discovery import unclaimed_images


class Command(BaseCommand):
    help = "List running images that no service claims, grouped by repository, with a suggested service each."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["table", "json", "fleet"], default="table")
        parser.add_argument("--include-ignored", action="store_true", help="list ignored images too")

    def handle(self, *args, **options):
        found = unclaimed_images(include_ignored=options["include_ignored"])
        if options["format"] == "json":
            self.stdout.write(json.dumps([
                {"repository": u.repository, "apps": [str(a) for a in u.apps], "clusters": u.clusters,
                 "versions": u.versions, "suggested_name": u.suggested_name, "suggested_team": u.suggested_team,
                 "ignored": u.ignored}
                for u in found
            ], indent=2))
            return
        if options["format"] == "fleet":
            services = []
            for u in found:
                entry = {"name": u.suggested_name, "image": u.repository}
                if u.suggested_team:
                    entry["team"] = u.suggested_team
                services.append(entry)
            self.stdout.write(yaml.safe_dump({"services": services}, sort_keys=False))
            return
        if not found:
            self.stdout.write("Every running image is claimed by a service (or ignored).")
            return
        header = ("IMAGE", "APPS", "CLUSTERS", "SUGGESTED NAME", "TEAM", "VERSIONS")
        rows = [(u.repository, str(u.app_count), str(u.cluster_count), u.suggested_name, u.suggested_team or "-",
                 ",".join(u.versions) or "-") for u in found]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row, image in zip([header, *rows], [None, *found], strict=True):
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
            if image is not None and image.apps:
                self.stdout.write("    would claim: " + ", ".join(str(a) for a in image.apps))
        self.stdout.write(f"\n{len(found)} unclaimed images. Add them as services on /discovery (admin) "
                          "or with --format fleet and load_demo --fleet.")
