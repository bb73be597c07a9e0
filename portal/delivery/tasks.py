"""Delivery's periodic work: Git pins (one task per repository and revision), automatic PRs,
the matrix's read model, the portal's pull requests on their forges, and following merged PRs
to "running in production". Each task reads the store or one repository; no page ever waits
for them. Forge work is routed to the `forge` queue (portal.settings.CELERY_TASK_ROUTES)."""

from __future__ import annotations

import logging
from dataclasses import asdict

from celery import shared_task
from django.utils import timezone

from portal.kernel.claims import claims

log = logging.getLogger(__name__)

# A queued pin read stays claimed (and its message valid) for one read interval: under a
# backlog the next due look replaces it instead of adding a second. Once it runs, the claim
# covers the read itself for up to PINS_RUN_SECONDS (a big repository on a rate-limited forge).
PINS_RUN_SECONDS = 1800.0


def pins_claim_key(batch_key: str) -> str:
    return f"pins:{batch_key}"


@shared_task(name="delivery.read_repository_pins")
def read_repository_pins(repository: str, revision: str, app_ids: list[int], claim: str = "") -> dict:
    """Read the pins of the given applications of one repository at one revision (one tree read)."""
    from portal.delivery.current_pins import batch_apps, batch_key, read_pins
    from portal.delivery.deployments import read_failing_histories

    wanted = batch_key(repository, revision)
    key = pins_claim_key(wanted)
    try:
        if claim:
            claims().extend(key, claim, PINS_RUN_SECONDS)
        # Only the applications whose pins are still in this repository at this revision.
        apps = batch_apps(repository, revision, app_ids)
        if not apps:
            return {"skipped": "no such application in this repository"}
        reports = read_pins(apps)
        # A failing app of this repository is offered its rollback as soon as its history's pins
        # are known, not at the next deployment pass (minutes later).
        read_failing_histories(timezone.now(), [app.pk for app in apps])
        failed = sorted({r.error for r in reports.values() if not r.ok})
        return {"repository": wanted, "apps": len(apps), "ok": not failed, "errors": failed}
    finally:
        if claim:
            claims().release(key, claim)


@shared_task(name="delivery.read_git_pins")
def read_git_pins(app_id: int) -> dict:
    """What older versions queued per application. Its application is read with its
    repository's batch now; a message still queued from before an upgrade is dropped here
    rather than failing as an unregistered task."""
    return {"skipped": "superseded by delivery.read_repository_pins", "app": app_id}


@shared_task(name="delivery.read_due_git_pins")
def read_due_git_pins() -> int:
    """One task per repository and revision with applications not read in the last 10 minutes,
    none for a repository no forge token can read (its applications say why instead).
    Returns how many tasks were queued."""
    from portal.delivery.current_pins import READ_INTERVAL, due_batches, record_unreadable, unreadable_reason

    store = claims()
    queued = 0
    now = timezone.now()
    reasons: dict[str, str] = {}
    for batch in due_batches(now):
        if batch.repository not in reasons:
            reasons[batch.repository] = batch.unknown or unreadable_reason(batch.repository)
        reason = batch.unknown or reasons[batch.repository]
        if reason:
            if record_unreadable(batch.app_ids, reason, now):
                log.info("git pins of %s are not read: %s", batch.repository, reason)  # once, when it starts
            continue
        expires = timezone.now() + READ_INTERVAL
        token = store.take(pins_claim_key(batch.key), READ_INTERVAL.total_seconds())
        if token is None:
            continue
        read_repository_pins.apply_async(
            (batch.repository, batch.revision, list(batch.app_ids)), {"claim": token}, expires=expires
        )
        queued += 1
    return queued


@shared_task(name="delivery.open_automatic_prs")
def open_automatic_prs() -> dict:
    from portal.delivery.automatic import run

    report = run()
    return {"opened": len(report.opened), "held": len(report.held), "failed": len(report.failed)}


@shared_task(name="delivery.open_pull_request", acks_late=True, reject_on_worker_lost=True)
def open_pull_request(pk: int, run: int) -> str:
    """One run of the job opening a pull request (portal.delivery.forge_jobs). Acknowledged only
    once done and put back when its worker process dies, so a killed run is run again; its
    forge steps are re-entrant, so running again adopts or continues what it made."""
    from portal.delivery.forge_jobs import run as run_job
    from portal.delivery.pull_requests import OPENED

    result = run_job(pk, run)
    if result is not None and result.status == OPENED:
        # Its first tracking now rather than at the next half-hourly run: the reviewer opening the
        # new pull request finds its rendered diff there and on the portal's page.
        track_pull_request.apply_async((pk,), countdown=FIRST_TRACKING_SECONDS)
    return result.status if result is not None else "stale"


# Long enough for the forge to have the branch's head everywhere (GitHub's API answers from
# replicas), short enough to be there when a reviewer first opens the pull request.
FIRST_TRACKING_SECONDS = 20


@shared_task(name="delivery.track_pull_request")
def track_pull_request(pk: int) -> dict[str, int]:
    """One open pull request's state, checks and rendered diff, as the half-hourly run reads them."""
    from portal.delivery.tracking import refresh_open

    return asdict(refresh_open(only=[pk]))


@shared_task(name="delivery.reconcile_pull_requests")
def reconcile_pull_requests() -> dict[str, int]:
    """Every pull request still `opening` past its lease: resumed, or resolved on its forge."""
    from portal.delivery.forge_jobs import reconcile

    return reconcile()


@shared_task(name="delivery.summarise_release_notes")
def summarise_release_notes() -> int:
    """Release-note summaries of every upgrade on offer (the Updates page's lines), each asked
    at most once a day (portal.releases.summaries); nothing at all unless an endpoint is set."""
    from portal.delivery.upgrades import BehindLines
    from portal.releases import summaries

    if summaries.endpoint() is None:
        return 0
    lines = BehindLines(today=timezone.now().date()).lines
    return summaries.summarise_all((line.service, line.running, line.target) for line in lines)


@shared_task(name="delivery.refresh_placements")
def refresh_placements() -> int:
    """The matrix's read model checked against its sources (portal.delivery.version_matrix);
    returns how many placements it had to mend, which should be 0."""
    from portal.delivery.version_matrix import refresh_all

    mended = refresh_all()
    if mended:
        log.warning("the matrix's read model was mended on %d placements", mended)
    return mended


@shared_task(name="delivery.track_pull_requests")
def track_pull_requests() -> dict[str, int]:
    """Every open portal PR's state, merge time and checks, read from its forge (every 30 minutes)."""
    from portal.delivery.tracking import refresh_open

    return asdict(refresh_open())


@shared_task(name="delivery.scan_outside_prs")
def scan_outside_prs() -> dict[str, object]:
    """Renovate's, Dependabot's and people's open PRs matched to the changes the portal would
    offer (every 30 minutes): one list call per repository, not one per application."""
    from portal.delivery.outside_prs import scan

    return asdict(scan())


@shared_task(name="delivery.track_deployments")
def track_deployments() -> dict[str, int]:
    """Merged PRs whose version now runs get running_at; those still waiting an hour after their
    merge raise "merged, not deployed" once; new rollback offers are announced once. Reads only
    the store: a cluster or a forge being slow delays nothing here."""
    from portal.delivery.deployments import track

    return asdict(track())


@shared_task(name="delivery.preview_pull_requests")
def preview_pull_requests(spec: str) -> str:
    """The previews of one change request, stored for the page (portal.delivery.preview_jobs):
    the forge reads the preview page used to make while a person waited."""
    from portal.delivery.preview_jobs import compute

    compute(spec)
    return "stored"
