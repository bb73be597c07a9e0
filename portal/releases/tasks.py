"""Beat runs `releases.poll_all_registries` (hourly by default): one task per service, so a
slow registry delays nobody else, and no page ever waits for a registry; and one task that
reads the chart repositories the applications install from (`releases.poll_chart_versions`)."""

from __future__ import annotations

from celery import shared_task

from portal.catalog.models import Service
from portal.releases.polling import poll_charts, poll_service


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
