"""Beat runs `delivery.track_deployments` every few minutes (PORTAL_DELIVERY_TRACK_INTERVAL,
default 300 s): merged PRs whose version now runs get running_at; those still waiting an
hour after their merge raise "merged, not deployed" once; new rollback offers are announced
once. Reads only the store: a cluster or a forge being slow delays nothing here."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task


@shared_task(name="delivery.track_deployments", ignore_result=True)
def track_deployments() -> dict[str, int]:
    from portal.delivery.tracking import track

    return asdict(track())
