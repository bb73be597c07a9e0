"""Load the demo's registry snapshot (examples/releases.yaml) as releases, and its chart
repositories' index.yaml snapshots (examples/chart-repositories.yaml) as chart versions, for
`make run`.

The demo cannot reach the registries and chart repositories it names; this stands in for the
hourly registry poll and the chart poll so the delivery pages have something to offer. Chart
versions are read and stored by `portal.releases.charts` exactly as a poll of the repository's
index.yaml stores them. It adds what is not stored yet and changes nothing else; it refuses to
run outside the demo (PORTAL_DEMO=1).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from portal.kernel.catalog.models import Service
from portal.releases.charts import ChartReadError, ChartRef, record_versions, versions_in_index
from portal.releases.models import Release
from portal.releases.versions import parse_tag


class Command(BaseCommand):
    help = "Load examples/releases.yaml as the demo services' releases (demo only)."

    def add_arguments(self, parser):
        parser.add_argument("--file", default=str(Path(settings.BASE_DIR) / "examples" / "releases.yaml"))
        parser.add_argument(
            "--charts", default=str(Path(settings.BASE_DIR) / "examples" / "chart-repositories.yaml"),
            help="repository URL -> its index.yaml, as one YAML mapping")

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
        self._load_charts(Path(options["charts"]))

    def _load_charts(self, path: Path) -> None:
        try:
            indexes = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        if not isinstance(indexes, dict):
            raise CommandError(f"{path}: expected repository URL: index.yaml")
        now = timezone.now()
        stored = charts = 0
        for repository, index in indexes.items():
            entries = index.get("entries") if isinstance(index, dict) else None
            for chart in sorted(entries) if isinstance(entries, dict) else []:
                ref = ChartRef(str(repository).strip().rstrip("/"), str(chart))
                try:
                    listed = versions_in_index(index, ref.chart, ref.repository)
                except ChartReadError as exc:
                    raise CommandError(f"{path}: {exc}") from None
                stored += len(record_versions(ref, listed, now=now).new_versions)
                charts += 1
        self.stdout.write(f"Demo chart versions: {stored} versions of {charts} charts")
