"""OSV without api.osv.dev: its published exports imported into the database and matched there.

OSV publishes every ecosystem's records as one zip of OSV JSON files
(`https://osv-vulnerabilities.storage.googleapis.com/<ECOSYSTEM>/all.zip`). An air-gapped
install copies those zips in (or mirrors them on an internal web server), imports them with
`manage.py import_osv <zip-or-dir> [--ecosystem X]`, and names them in PORTAL_OSV_OFFLINE so
that beat refreshes them (`releases.refresh_osv_offline`, every PORTAL_OSV_OFFLINE_REFRESH_HOURS)
and every OSV lookup uses them: `OfflineOsvClient` answers `check_purls` (portal.releases.osv)
exactly where `OsvClient` would, with the same answers (the matching is portal.releases.osv_ranges),
so the caches, "since when" and "unknown" work as with the API.

An import replaces each record it brings (by id) and keeps the others, so importing one
ecosystem never forgets another; a withdrawn record stays, marked, and matches nothing.
How the last refresh went is `FeedStatus("osv-export")`.
"""

from __future__ import annotations

import json
import logging
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.kernel.redaction import redact
from portal.releases.models import FeedStatus, OfflineAdvisory, OfflinePackage
from portal.releases.osv import OsvError
from portal.releases.osv_ranges import affects, names_package, normal_name, package_of

log = logging.getLogger(__name__)

FEED = "osv-export"
BATCH = 500  # records per transaction: an ecosystem's export is tens of thousands
MAX_RECORD_BYTES = 5 * 1024 * 1024  # one OSV record; larger is no record
QUERY_CHUNK = 1000  # purls per database query, as the API's querybatch takes them
MAX_DOWNLOAD_BYTES = 2 * 1024 * 1024 * 1024  # the largest export (npm's) is a few hundred MB


class ExportUnreadable(Exception):
    """An export could not be read: no record was imported from it."""


@dataclass
class ImportReport:
    source: str
    records: int = 0
    skipped: list[str] = field(default_factory=list)  # entries that are no OSV record, and why


def _records_of(source: Path) -> Iterator[tuple[str, bytes]]:
    """(entry name, bytes) of every .json file in a zip or under a directory."""
    if source.is_dir():
        for path in sorted(source.rglob("*.json")):
            yield str(path.relative_to(source)), path.read_bytes()[: MAX_RECORD_BYTES + 1]
        return
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                if info.filename.endswith(".json") and not info.is_dir():
                    with archive.open(info) as handle:
                        yield info.filename, handle.read(MAX_RECORD_BYTES + 1)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ExportUnreadable(f"{source.name}: not a zip of OSV records ({exc})") from exc


def import_export(source: Path, *, ecosystem: str = "", now: datetime | None = None) -> ImportReport:
    """Import the OSV records of a zip or a directory; with `ecosystem`, only the records
    naming a package of it (OSV's name: "Go", "PyPI", "Debian")."""
    now = now or timezone.now()
    report = ImportReport(source=source.name)
    batch: list[dict[str, Any]] = []
    for name, data in _records_of(source):
        record = _record(name, data, report)
        if record is None or (ecosystem and ecosystem not in _ecosystems(record)):
            continue
        batch.append(record)
        if len(batch) >= BATCH:
            report.records += _store(batch, now)
            batch = []
    if batch:
        report.records += _store(batch, now)
    return report


def _record(name: str, data: bytes, report: ImportReport) -> dict[str, Any] | None:
    if len(data) > MAX_RECORD_BYTES:
        report.skipped.append(f"{name}: larger than {MAX_RECORD_BYTES} bytes")
        return None
    try:
        record = json.loads(data)
    except ValueError:
        report.skipped.append(f"{name}: not JSON")
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not record["id"]:
        report.skipped.append(f"{name}: not an OSV record (no id)")
        return None
    return record


def _ecosystems(record: dict[str, Any]) -> set[str]:
    return {str(a["package"].get("ecosystem", "")).split(":", 1)[0] for a in record.get("affected") or []
            if isinstance(a, dict) and isinstance(a.get("package"), dict)}


def _store(records: list[dict[str, Any]], now: datetime) -> int:
    with transaction.atomic():
        OfflineAdvisory.objects.bulk_create(
            [OfflineAdvisory(osv_id=r["id"][:100], modified=str(r.get("modified", ""))[:40],
                             withdrawn=bool(r.get("withdrawn")), record=r, imported_at=now) for r in records],
            update_conflicts=True, unique_fields=["osv_id"],
            update_fields=["modified", "withdrawn", "record", "imported_at"],
        )
        ids = dict(OfflineAdvisory.objects.filter(osv_id__in=[r["id"][:100] for r in records])
                   .values_list("osv_id", "pk"))
        OfflinePackage.objects.filter(advisory_id__in=ids.values()).delete()
        OfflinePackage.objects.bulk_create([
            OfflinePackage(ecosystem=ecosystem[:40], name=name[:300], advisory_id=ids[r["id"][:100]])
            for r in records for ecosystem, name in _packages(r)
        ])
    return len(records)


def _packages(record: dict[str, Any]) -> set[tuple[str, str]]:
    named = set()
    for affected in record.get("affected") or []:
        package = affected.get("package") if isinstance(affected, dict) else None
        if isinstance(package, dict) and package.get("name"):
            ecosystem = str(package.get("ecosystem", "")).split(":", 1)[0]
            named.add((ecosystem, normal_name(ecosystem, str(package["name"]))))
    return named


class OfflineOsvClient:
    """`OsvClient`'s two calls, answered from the imported records: no network."""

    def __init__(self) -> None:
        self.requests = 0  # nothing is ever sent

    def query_batch(self, purls: list[str]) -> dict[str, dict[str, str]]:
        """purl -> {vulnerability id: modified}, as OSV's querybatch answers."""
        if not OfflineAdvisory.objects.exists():
            raise OsvError("the offline OSV database is empty: import OSV's exports (manage.py import_osv)")
        found: dict[str, dict[str, str]] = {}
        for start in range(0, len(purls), QUERY_CHUNK):
            found.update(self._query(purls[start : start + QUERY_CHUNK]))
        return found

    def _query(self, purls: list[str]) -> dict[str, dict[str, str]]:
        packages = {purl: package_of(purl) for purl in purls}
        wanted = {(p.ecosystem, p.name) for p in packages.values() if p is not None}
        candidates: dict[tuple[str, str], list[OfflineAdvisory]] = {}
        rows = OfflinePackage.objects.filter(name__in={name for _, name in wanted}, advisory__withdrawn=False)
        for row in rows.select_related("advisory"):
            if (row.ecosystem, row.name) in wanted:
                candidates.setdefault((row.ecosystem, row.name), []).append(row.advisory)
        found: dict[str, dict[str, str]] = {}
        for purl, package in packages.items():
            found[purl] = {}
            if package is None:
                continue
            for advisory in candidates.get((package.ecosystem, package.name), []):
                entries = [a for a in advisory.record.get("affected") or []
                           if isinstance(a, dict) and names_package(a, package)]
                if any(affects(entry, package) for entry in entries):
                    found[purl][advisory.osv_id] = advisory.modified
        return found

    def vuln(self, osv_id: str) -> dict:
        advisory = OfflineAdvisory.objects.filter(osv_id=osv_id).first()
        if advisory is None:
            raise OsvError(f"OSV {osv_id}: not in the offline database")
        return dict(advisory.record)


def refresh(sources: Iterable[str] | None = None, *, now: datetime | None = None) -> list[ImportReport]:
    """Import each configured export again (PORTAL_OSV_OFFLINE): a path to a zip or a directory,
    or an http(s) URL of a zip, downloaded to a temporary file first. A failure is recorded in
    FeedStatus("osv-export") and keeps every record already imported."""
    now = now or timezone.now()
    reports: list[ImportReport] = []
    errors: list[str] = []
    for source in sources if sources is not None else settings.PORTAL_OSV_OFFLINE:
        try:
            if source.startswith(("https://", "http://")):
                with tempfile.TemporaryDirectory() as folder:
                    reports.append(import_export(_download(source, Path(folder) / "all.zip"), now=now))
            else:
                reports.append(import_export(Path(source), now=now))
        except (ExportUnreadable, OSError, requests.RequestException) as exc:
            errors.append(redact(f"{source}: {exc}")[:300])
            log.warning("offline OSV refresh failed: %s", errors[-1])
    if errors:
        FeedStatus.objects.update_or_create(name=FEED, defaults={"last_error": "; ".join(errors)[:1000],
                                                                 "last_error_at": now})
    else:
        FeedStatus.objects.update_or_create(name=FEED, defaults={"last_ok_at": now, "last_error": "",
                                                                 "last_error_at": None})
    return reports


def _download(url: str, target: Path) -> Path:
    with requests.get(url, stream=True, timeout=settings.PORTAL_FEED_TIMEOUT) as response:
        if response.status_code >= 400:
            raise ExportUnreadable(f"answered {response.status_code}")
        written = 0
        with target.open("wb") as out:
            for chunk in response.iter_content(1024 * 1024):
                written += len(chunk)
                if written > MAX_DOWNLOAD_BYTES:
                    raise ExportUnreadable(f"larger than {MAX_DOWNLOAD_BYTES // 2**20} MB")
                out.write(chunk)
    return target
