"""Delivery's periodic work: Git pins (one task per application), automatic PRs, the matrix's
read model, the portal's pull requests on their forges, and following merged PRs to "running
in production". Each task reads the store or
one repository; no page ever waits for them."""

from __future__ import annotations

import logging
from dataclasses import asdict

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="delivery.read_git_pins")
def read_git_pins(app_id: int) -> dict:
    from gitops.models import GitOpsApp
    from portal.delivery.gitpins import read_app_pins

    app = GitOpsApp.objects.select_related("cluster").filter(pk=app_id).first()
    if app is None:
        return {"skipped": "no such application"}
    report = read_app_pins(app)
    return {"app": report.app, "ok": report.ok, "pins": len(report.pins), "error": report.error}


@shared_task(name="delivery.read_due_git_pins")
def read_due_git_pins() -> int:
    """One task per application not read in the last 10 minutes: a slow repository delays nobody else."""
    from portal.delivery.gitpins import due_app_ids

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


@shared_task(name="delivery.track_pull_requests", ignore_result=True)
def track_pull_requests() -> dict[str, int]:
    """Every open portal PR's state, merge time and checks, read from its forge (every 30 minutes)."""
    from portal.delivery.tracking import refresh_open

    return asdict(refresh_open())


@shared_task(name="delivery.track_deployments", ignore_result=True)
def track_deployments() -> dict[str, int]:
    """Merged PRs whose version now runs get running_at; those still waiting an hour after their
    merge raise "merged, not deployed" once; new rollback offers are announced once. Reads only
    the store: a cluster or a forge being slow delays nothing here."""
    from portal.delivery.deployments import track

    return asdict(track())
