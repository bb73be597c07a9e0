from __future__ import annotations

from celery import shared_task


@shared_task(name="portal.ping", ignore_result=False)
def ping(value: str) -> str:
    """Round-trip check for the broker and result backend (used by tests and ops)."""
    return f"pong:{value}"
