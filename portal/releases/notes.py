"""Release notes from a service's source repository, stored on its `Release` rows.

Runs in the registry poll task, right after the tags are stored, never in a request.
It stays cheap: the forge is asked only when a tag seen since the last read has no notes
yet, or once a day (a release published after its image, notes edited later); a service
without `source_repository` never reaches a forge, nor does one whose forge no configured
token can read (the reason is stored once, without a log line per poll). One read serves
every service whose source is the same repository (a monorepo): they are filled from the
same answer and not asked again. A read lists only the newest releases
(`forges.forge.MAX_RELEASES`, one to four pages depending on the forge).

A release belongs to the image tag of the same version: the same tag wins, then the
same version read by `parse_tag` (`v1.7.0` on the forge is image tag `1.7.0`; a
pre-release only matches the same pre-release), preferring the same compatibility
suffix, then none. A forge that cannot be read leaves every tag and every note already
stored as they are and only records why, on the service's `RegistryPoll`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from forges.forge import MAX_RELEASES, Forge, ForgeError, NotConfigured, ReleaseInfo
from forges.hosts import forge_for, parse
from forges.retry import RetryPolicy
from forges.weblinks import repository_url
from portal.kernel.catalog.models import Service
from portal.kernel.links import safe_http_url
from portal.releases.models import RegistryPoll, Release
from portal.releases.versions import parse_tag

log = logging.getLogger(__name__)

REREAD_AFTER = timedelta(days=1)
NOTES_MAX_CHARS = 20_000  # a changelog longer than this is cut; the link has the rest
URL_MAX_CHARS = 500  # Release.notes_url's length
# Notes are not worth holding a worker for: a short wait on a rate limit, then next hour.
NOTES_POLICY = RetryPolicy(max_attempts=3, max_wait=60.0)

ForgeFactory = Callable[[str], Forge]


@dataclass
class NotesReport:
    service: str
    asked: bool = False  # whether the forge was asked at all
    ok: bool = True
    filled: list[str] = field(default_factory=list)  # tags whose notes were stored or changed
    error: str = ""


def read_release_notes(
    service: Service,
    *,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    forge_factory: ForgeFactory | None = None,
) -> NotesReport:
    """Fill the notes of the service's releases from its source repository, when due."""
    now = now or timezone.now()
    report = NotesReport(service=service.name)
    status, _ = RegistryPoll.objects.get_or_create(service=service)
    source = (service.source_repository or "").strip()
    if not source:
        if status.notes_error:  # the repository was removed: its old error no longer applies
            RegistryPoll.objects.filter(pk=status.pk).update(notes_error="", notes_error_at=None)
        return report
    full = status.notes_read_at is None or now - status.notes_read_at >= REREAD_AFTER
    if not _due(service, status, full):
        return report
    report.asked = True
    failed = f"release notes of {service.name} not read from {_shown(source)}"
    try:
        forge = forge_factory(source) if forge_factory else forge_for(source, environ, policy=NOTES_POLICY)
        releases = forge.releases(MAX_RELEASES)
    except NotConfigured as exc:
        return _unreadable(report, status, now, f"{failed}: {exc}")
    except ForgeError as exc:
        # ForgeError messages never hold a token (forges.forge.redact), so they may be shown.
        return _failed(report, status, now, f"{failed}: {exc}")
    except Exception as exc:  # a forge's odd answer must not fail the registry poll it follows
        log.exception("reading the releases of %s failed", service.name)
        return _failed(report, status, now, f"{failed}: unexpected {type(exc).__name__}")
    changed = _store(service, releases, only_unknown=not full)
    # One read serves every service built from this repository (a monorepo): each gets a full
    # pass over the same answer, so their own polls find nothing due and ask nothing.
    siblings = {sibling: _store(sibling, releases, only_unknown=False) for sibling in _sharing(service, environ)}
    with transaction.atomic():
        Release.objects.bulk_update(changed, ["notes_url", "notes"])
        RegistryPoll.objects.filter(pk=status.pk).update(notes_read_at=now, notes_error="", notes_error_at=None)
        for sibling, rows in siblings.items():
            Release.objects.bulk_update(rows, ["notes_url", "notes"])
            RegistryPoll.objects.get_or_create(service=sibling)
            RegistryPoll.objects.filter(service=sibling).update(notes_read_at=now, notes_error="", notes_error_at=None)
    report.filled = sorted(row.tag for row in changed)
    return report


def _sharing(service: Service, environ: Mapping[str, str] | None) -> list[Service]:
    """The other services whose source repository is the same repository as `service`'s."""
    key = _repository_key(service.source_repository, environ)
    others = Service.objects.exclude(pk=service.pk).exclude(source_repository="")
    others = others.only("id", "name", "source_repository")
    return [other for other in others.order_by("name") if _repository_key(other.source_repository, environ) == key]


def _repository_key(url: str, environ: Mapping[str, str] | None) -> tuple[str, ...]:
    ref = parse(url, environ)
    return ref.key if ref is not None else (url.strip().lower().removesuffix(".git").rstrip("/"),)


def _due(service: Service, status: RegistryPoll, full: bool) -> bool:
    releases = Release.objects.for_service(service)
    if full:
        return releases.exists()
    # Between daily reads, only tags seen since the last read that have no notes yet.
    return releases.filter(notes_url__isnull=True, seen_at__gt=status.notes_read_at).exists()


def _failed(report: NotesReport, status: RegistryPoll, now: datetime, message: str) -> NotesReport:
    log.warning("%s", message)
    RegistryPoll.objects.filter(pk=status.pk).update(notes_error=message, notes_error_at=now)
    report.ok, report.error = False, message
    return report


def _unreadable(report: NotesReport, status: RegistryPoll, now: datetime, message: str) -> NotesReport:
    """No configured forge token can read the source repository: nothing was asked. The reason
    is stored once (shown on /updates), not logged on every registry poll."""
    if status.notes_error != message:
        RegistryPoll.objects.filter(pk=status.pk).update(notes_error=message, notes_error_at=now)
    report.asked, report.ok, report.error = False, False, message
    return report


def _store(service: Service, releases: list[ReleaseInfo], only_unknown: bool) -> list[Release]:
    """The service's Release rows whose notes the forge's releases fill or change (unsaved)."""
    if not releases:
        return []
    versions = {v.text for v in (parse_tag(r.tag) for r in releases) if v is not None}
    rows = Release.objects.for_service(service).filter(
        Q(tag__in=[r.tag for r in releases]) | Q(version__in=versions)
    )
    if only_unknown:
        rows = rows.filter(notes_url__isnull=True)
    changed = []
    for row in rows.only("id", "tag", "notes_url", "notes"):
        found = match(row.tag, releases)
        url = _stored_url(found.url) if found is not None else None
        if found is None or url is None:
            continue  # no release of that version, or one without a web page to link
        notes = clean_notes(found.body)
        if (row.notes_url, row.notes) != (url, notes):
            row.notes_url, row.notes = url, notes
            changed.append(row)
    return changed


def match(tag: str, releases: Iterable[ReleaseInfo]) -> ReleaseInfo | None:
    """The forge release that carries the notes of image tag `tag`, if any. Pure.

    The same tag wins; then the same version (numbers and pre-release, `v` or not), with the
    tag's own compatibility suffix first, then no suffix, then any; ties go to the newest."""
    listed = list(releases)
    exact = next((r for r in listed if r.tag == tag), None)
    if exact is not None:
        return exact
    wanted = parse_tag(tag)
    if wanted is None:
        return None
    same: list[tuple[int, ReleaseInfo]] = []
    for release in listed:
        version = parse_tag(release.tag)
        if version is None or version.text != wanted.text:
            continue
        rank = 0 if version.suffix == wanted.suffix else 1 if not version.suffix else 2
        same.append((rank, release))
    # min() keeps the first of equal ranks, and the list is newest first.
    return min(same, key=lambda pair: pair[0])[1] if same else None


def clean_notes(body: str) -> str:
    """Notes as stored: no NUL (PostgreSQL text refuses it), cut at NOTES_MAX_CHARS."""
    text = (body or "").replace("\x00", "").strip()
    if len(text) <= NOTES_MAX_CHARS:
        return text
    return text[:NOTES_MAX_CHARS].rstrip() + "\n…"


def _stored_url(url: str) -> str | None:
    safe = safe_http_url(url)
    return safe if safe and len(safe) <= URL_MAX_CHARS else None


def _shown(source: str) -> str:
    # What an error names: the repository's web address, never what else the text held.
    return repository_url(source) or "the configured source repository"


def notes_between(service: Service, from_version: str, to_version: str) -> list[tuple[str, str]]:
    """The stored notes of the releases after `from_version` up to and including `to_version`
    (image tags), oldest first, as (tag, notes): what an upgrade from one to the other brings,
    and nothing from before or after it. Pre-releases count only when `to_version` is one;
    releases without notes are left out."""
    start, end = parse_tag(from_version), parse_tag(to_version)
    if start is None or end is None:
        return []
    found = []
    for tag, notes in Release.objects.filter(service=service).exclude(notes="").values_list("tag", "notes"):
        version = parse_tag(tag)
        if version is None or version.family != end.family or not start.key < version.key <= end.key:
            continue
        if version.is_prerelease and version.tag != end.tag:
            continue
        found.append((version.key, tag, notes))
    return [(tag, notes) for _, tag, notes in sorted(found)]
