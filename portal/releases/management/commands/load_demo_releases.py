"""Load the demo's registry snapshot (examples/releases.yaml) as releases, for `make run`.

The demo cannot reach the registries its images name; this stands in for the hourly
registry poll so the delivery pages have something to offer. It adds tags not stored yet
and changes nothing else; it refuses to run outside the demo (PORTAL_DEMO=1).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from portal.catalog.models import Service
from portal.releases.models import Release
from portal.releases.versions import parse_tag


class Command(BaseCommand):
    help = "Load examples/releases.yaml as the demo services' releases (demo only)."

    def add_arguments(self, parser):
        parser.add_argument("--file", default=str(Path(settings.BASE_DIR) / "examples" / "releases.yaml"))

    def handle(self, *args, **options):
        if not settings.DEMO_MODE:
            raise CommandError("load_demo_releases is for the demo (PORTAL_DEMO=1): real releases come from registries")
        path = Path(options["file"])
        try:
            snapshot = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        if not isinstance(snapshot, dict):
            raise CommandError(f"{path}: expected service: [tags]")
        now = timezone.now()
        services = {s.name: s for s in Service.objects.filter(name__in=[str(k) for k in snapshot])}
        rows = []
        for name, tags in snapshot.items():
            service = services.get(str(name))
            if service is None:
                self.stderr.write(f"{path}: no service named {name!r}, skipped")
                continue
            for tag in tags or []:
                version = parse_tag(str(tag))
                if version is None:
                    self.stderr.write(f"{path}: {name}: {tag!r} is not a version, skipped")
                    continue
                rows.append(Release(service=service, tag=version.tag, version=version.text,
                                    prerelease=version.is_prerelease, seen_at=now))
        Release.objects.bulk_create(rows, ignore_conflicts=True)  # tags already stored stay as they are
        self.stdout.write(f"Demo releases: {len(rows)} tags of {len(services)} services")
