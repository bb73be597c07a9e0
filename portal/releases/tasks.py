"""Beat runs `releases.poll_all_registries` (hourly by default): one task per service, so a
slow registry delays nobody else, and no page ever waits for a registry; and one task that
reads the chart repositories the applications install from (`releases.poll_chart_versions`)."""

from __future__ import annotations

from celery import shared_task

from portal.kernel.catalog.models import Service
from portal.releases.kev import refresh_kev as refresh_kev_catalogue
from portal.releases.registry_reads import poll_charts, poll_service
from portal.releases.sbom_reading import read_supply_chain as read_service_supply_chain


@shared_task(name="releases.poll_registry")
def poll_registry(service_id: int) -> dict:
    service = Service.objects.filter(pk=service_id).first()
    if service is None:
        return {"skipped": "no such service"}
    report = poll_service(service)
    return {"service": report.service, "ok": report.ok, "new_tags": len(report.new_tags), "error": report.error}


@shared_task(name="releases.poll_all_registries")
def poll_all_registries() -> int:
    ids = list(Service.objects.exclude(image_repository="").values_list("id", flat=True))
    for service_id in ids:
        poll_registry.delay(service_id)
    poll_chart_versions.delay()
    return len(ids)


@shared_task(name="releases.poll_chart_versions")
def poll_chart_versions() -> dict:
    reports = poll_charts()
    failed = [f"{r.chart.chart}: {r.error}" for r in reports if not r.ok]
    return {"charts": len(reports), "new_versions": sum(len(r.new_versions) for r in reports), "errors": failed}


@shared_task(name="releases.read_supply_chain")
def read_supply_chain(service_id: int) -> dict:
    """SBOMs of the versions a service runs and its newest releases, then OSV (registry queue)."""
    service = Service.objects.filter(pk=service_id).first()
    if service is None:
        return {"skipped": "no such service"}
    report = read_service_supply_chain(service)
    return {"service": report.service, "sboms_read": report.sboms_read, "errors": report.errors[:3]}


@shared_task(name="releases.read_all_supply_chain")
def read_all_supply_chain() -> int:
    ids = list(Service.objects.exclude(image_repository="").values_list("id", flat=True))
    for service_id in ids:
        read_supply_chain.delay(service_id)
    return len(ids)


@shared_task(name="releases.refresh_kev")
def refresh_kev() -> str:
    """CISA's KEV catalogue, daily; "" or the recorded error."""
    return refresh_kev_catalogue()


@shared_task(name="releases.refresh_osv_offline")
def refresh_osv_offline() -> dict:
    """OSV's exports named by PORTAL_OSV_OFFLINE imported again (beat, only when it is set)."""
    from portal.releases.osv_offline import refresh

    reports = refresh()
    return {"records": sum(r.records for r in reports), "sources": len(reports)}
