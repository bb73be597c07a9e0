"""One service's supply chain, read on the registry queue: the SBOMs of the versions it runs
and of its newest releases (each digest once, ever), then their packages against OSV.

Which versions: every version a cluster runs (the Security page's rows) and the newest
NEWEST_RELEASES releases (what an upgrade would move to). A digest whose SBOM row exists is
never read again; a registry that cannot be reached leaves no row and is tried on the next
pass. OSV is asked only about package versions whose answer is missing or expired
(portal.releases.osv). The cluster's platform is not recorded by the portal, so an index
is read for linux/amd64 and the row says it was assumed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError
from django.utils import timezone

from gitops.models import RunningVersion
from portal.kernel.catalog.models import Service
from portal.kernel.redaction import redact
from portal.releases.models import ImageSbom, Release
from portal.releases.oci import RegistryClient, RegistryError
from portal.releases.osv import OsvClient, check_purls
from portal.releases.sbom_registry import read_sbom
from portal.releases.versions import sort_tags

log = logging.getLogger(__name__)

NEWEST_RELEASES = 5


@dataclass
class SupplyChainReport:
    service: str
    sboms_read: int = 0
    registry_requests: int = 0
    osv_requests: int = 0
    packages_asked: int = 0
    errors: list[str] = field(default_factory=list)


def versions_to_read(service: Service) -> list[str]:
    running = set(RunningVersion.objects.filter(service=service).values_list("version", flat=True).distinct())
    released = sort_tags(list(Release.objects.filter(service=service, prerelease=False).values_list("tag", flat=True)))
    newest = released[-NEWEST_RELEASES:] if released else []
    return [v for v in dict.fromkeys([*sorted(running), *newest]) if v and not v.startswith("sha256:")]


def read_supply_chain(
    service: Service,
    *,
    versions: list[str] | None = None,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    osv: OsvClient | None = None,
    client: RegistryClient | None = None,
    repository: str | None = None,
) -> SupplyChainReport:
    now = now or timezone.now()
    report = SupplyChainReport(service=service.name)
    digests = []
    try:
        if client is None:
            client, found = RegistryClient.for_image(service.image_repository, environ)
            repository = repository or found
        repository = repository or RegistryClient.for_image(service.image_repository, environ)[1]
        for version in versions if versions is not None else versions_to_read(service):
            digest = _digest_of(client, repository, service, version, report)
            if digest:
                digests.append(digest)
                if not ImageSbom.objects.filter(digest=digest).exists():
                    _read_one(client, repository, digest, now, report)
    except RegistryError as exc:
        error = redact(str(exc))
        log.warning("SBOM read of %s failed: %s", service.name, error)
        report.errors.append(error)
    purls = {
        row[0]
        for sbom in ImageSbom.objects.filter(digest__in=digests, status=ImageSbom.FOUND)
        for row in sbom.packages
        if row and row[0]
    }
    if purls:
        checked = check_purls(purls, now=now, client=osv)
        report.osv_requests, report.packages_asked = checked.requests, checked.asked
        if checked.error:
            report.errors.append(checked.error)
    return report


def _digest_of(
    client: RegistryClient, repository: str, service: Service, version: str, report: SupplyChainReport
) -> str:
    release = Release.objects.filter(service=service, tag=version).first()
    if release is not None and release.digest:
        return release.digest
    report.registry_requests += 1
    manifest = client.manifest(repository, version)
    if manifest is None or not manifest.digest:
        return ""
    if release is not None:
        Release.objects.filter(pk=release.pk).update(digest=manifest.digest)
    # A running tag that is not a polled release keeps no row (Release holds version tags only):
    # its SBOM is stored by digest all the same, and the manifest is asked again next pass.
    return manifest.digest


def _read_one(client: RegistryClient, repository: str, digest: str, now: datetime, report: SupplyChainReport) -> None:
    result = read_sbom(client, repository, digest)
    report.registry_requests += result.requests
    report.sboms_read += 1
    try:
        ImageSbom.objects.create(
            digest=digest,
            platform=result.platform,
            platform_assumed=result.platform_assumed,
            image_digest=result.image_digest[:100],
            status=result.status,
            source=result.source,
            format=result.format[:30],
            reason=result.reason,
            packages=[p.row() for p in result.packages],
            package_count=len(result.packages),
            read_at=now,
        )
    except IntegrityError:
        pass  # another worker stored the same digest first: the same answer
