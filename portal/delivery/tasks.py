"""Beat runs `delivery.poll_all_registries` (hourly by default): one task per service, so a
slow registry delays nobody else, and no page ever waits for a registry."""

from __future__ import annotations

import logging

from celery import shared_task

from portal.catalog.models import Service
from portal.delivery.releases import poll_service

log = logging.getLogger(__name__)


@shared_task(name="delivery.poll_registry")
def poll_registry(service_id: int) -> dict:
    service = Service.objects.filter(pk=service_id).first()
    if service is None:
        return {"skipped": "no such service"}
    report = poll_service(service)
    return {"service": report.service, "ok": report.ok, "new_tags": len(report.new_tags), "error": report.error}


@shared_task(name="delivery.poll_all_registries")
def poll_all_registries() -> int:
    ids = list(Service.objects.exclude(image_repository="").values_list("id", flat=True))
    for service_id in ids:
        poll_registry.delay(service_id)
    return len(ids)


@shared_task(name="delivery.read_git_pins")
def read_git_pins(app_id: int) -> dict:
    from gitops.models import GitOpsApp
    from portal.delivery.pins import read_app_pins

    app = GitOpsApp.objects.select_related("cluster").filter(pk=app_id).first()
    if app is None:
        return {"skipped": "no such application"}
    report = read_app_pins(app)
    return {"app": report.app, "ok": report.ok, "pins": len(report.pins), "error": report.error}


@shared_task(name="delivery.read_due_git_pins")
def read_due_git_pins() -> int:
    """One task per application not read in the last 10 minutes: a slow repository delays nobody else."""
    from portal.delivery.pins import due_app_ids

    ids = due_app_ids()
    for app_id in ids:
        read_git_pins.delay(app_id)
    return len(ids)


@shared_task(name="delivery.open_automatic_prs")
def open_automatic_prs() -> dict:
    from portal.delivery.automatic import run

    report = run()
    return {"opened": len(report.opened), "held": len(report.held), "failed": len(report.failed)}


@shared_task(name="delivery.refresh_placements")
def refresh_placements() -> int:
    """The matrix's read model checked against its sources (portal.delivery.placements);
    returns how many placements it had to mend, which should be 0."""
    from portal.delivery.placements import refresh_all

    mended = refresh_all()
    if mended:
        log.warning("the matrix's read model was mended on %d placements", mended)
    return mended
