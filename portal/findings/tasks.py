"""Beat runs `findings.sync_git` every minute: the raw-Secret findings follow what delivery's pin
reader found in Git (portal.findings.derivation.sync_git_findings)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="findings.sync_git")
def sync_git() -> int:
    from portal.findings.derivation import sync_git_findings

    return sync_git_findings()
