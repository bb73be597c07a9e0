"""Celery tasks of the forges app (beat entry: `forges.track_pull_requests` every 30 minutes)."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

TRACK_EVERY_SECONDS = 30 * 60


@shared_task(name="forges.track_pull_requests", ignore_result=True)
def track_pull_requests() -> dict[str, int]:
    from forges.pr_state import refresh_open

    return asdict(refresh_open())
