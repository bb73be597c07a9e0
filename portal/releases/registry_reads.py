"""Reading a service's registry into `Release` rows, then their release notes from the
service's source repository (portal.releases.notes); and the chart repositories the
applications install from into `ChartVersion` rows (portal.releases.charts). Runs in
Celery tasks on the registry queue, never in a request."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from portal.kernel.catalog.models import Service
from portal.kernel.redaction import redact
from portal.releases.charts import ChartReport, poll_chart, used_charts
from portal.releases.models import RegistryPoll, Release
from portal.releases.notes import ForgeFactory, read_release_notes
from portal.releases.oci import RegistryClient, RegistryError
from portal.releases.versions import Version, parse_tag

log = logging.getLogger(__name__)

# Build times cost two requests per tag: a first poll of a repository with hundreds of
# tags reads them only for the newest few, and later polls see only a handful of new tags.
DETAILS_PER_POLL = 20


@dataclass
class PollReport:
    service: str
    ok: bool
    new_tags: list[str] = field(default_factory=list)
    error: str = ""
    notes_error: str = ""  # the release notes could not be read (the tags are not affected)


def poll_service(
    service: Service,
    *,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    details_limit: int = DETAILS_PER_POLL,
    page_size: int | None = None,
    forge_factory: ForgeFactory | None = None,
) -> PollReport:
    """List the service's tags, store the version tags not seen before, record how it went;
    then read the release notes that are due. A failure keeps every release already stored
    and only marks the poll as failing. Notes are read after a failed registry poll too: the
    tags stored before still want them, and a forge failure never touches the tags."""
    now = now or timezone.now()
    report = _poll_tags(service, now=now, environ=environ, details_limit=details_limit, page_size=page_size)
    notes = read_release_notes(service, now=now, environ=environ, forge_factory=forge_factory)
    report.notes_error = notes.error
    return report


def _poll_tags(
    service: Service, *, now: datetime, environ: Mapping[str, str] | None, details_limit: int, page_size: int | None
) -> PollReport:
    status, _ = RegistryPoll.objects.get_or_create(service=service)
    try:
        client, repository = RegistryClient.for_image(service.image_repository, environ)
        tags = client.tags(repository, page_size=page_size)
    except RegistryError as exc:
        # The client redacts what the registry says; this is the last stop before a log
        # line and a page, so it passes the one redaction once more.
        error = redact(str(exc))
        log.warning("registry poll of %s failed: %s", service.name, error)
        RegistryPoll.objects.filter(pk=status.pk).update(last_poll_at=now, last_error=error, last_error_at=now)
        return PollReport(service=service.name, ok=False, error=error)

    known = set(Release.objects.for_service(service).tags())
    new = [v for v in (parse_tag(t) for t in dict.fromkeys(tags) if t not in known) if v is not None]
    new.sort(key=lambda v: v.key, reverse=True)
    rows = [_release(service, version, now) for version in new]
    for row in rows[:details_limit]:
        _add_details(client, repository, row)
    with transaction.atomic():
        # Two workers polling the same service at once store each tag once.
        Release.objects.bulk_create(rows, ignore_conflicts=True)
        RegistryPoll.objects.filter(pk=status.pk).update(
            last_poll_at=now, last_ok_at=now, last_error="", last_error_at=None, tags_seen=len(tags)
        )
    return PollReport(service=service.name, ok=True, new_tags=[r.tag for r in rows])


def _release(service: Service, version: Version, now: datetime) -> Release:
    return Release(
        service=service, tag=version.tag, version=version.text, prerelease=version.is_prerelease, seen_at=now
    )


def _add_details(client: RegistryClient, repository: str, row: Release) -> None:
    try:
        details = client.details(repository, row.tag)
    except RegistryError as exc:
        # A tag whose manifest cannot be read is still a release; it just has no build time.
        log.info("no build time for %s:%s: %s", repository, row.tag, redact(str(exc)))
        return
    row.created_at = details.created_at
    row.digest = details.digest


def poll_charts(*, now: datetime | None = None, environ: Mapping[str, str] | None = None) -> list[ChartReport]:
    """Read the versions of every chart the stored applications install from a Helm or OCI
    repository (`portal.releases.charts`), one chart after the other; a failing repository
    is recorded on its `ChartPoll` and delays nobody else's result."""
    now = now or timezone.now()
    return [poll_chart(ref, now=now, environ=environ) for ref in used_charts()]
