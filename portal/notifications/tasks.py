"""Beat runs `notifications.send_due` every minute: emit due gitops episodes and delivery's
recorded events, send pending deliveries."""

from __future__ import annotations

from celery import shared_task

from portal.notifications.senders import scan_and_send


@shared_task(name="notifications.send_due")
def send_due() -> dict[str, int]:
    report = scan_and_send()
    return {"sent": report.sent, "retrying": report.retrying, "failed": report.failed}
