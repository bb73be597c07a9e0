"""Beat runs `releases.poll_all_registries` (hourly by default): one task per service, so a
slow registry delays nobody else, and no page ever waits for a registry."""

from __future__ import annotations

from celery import shared_task

from portal.catalog.models import Service
from portal.releases.polling import poll_service


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
    return len(ids)
