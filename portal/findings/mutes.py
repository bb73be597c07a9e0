"""Muting a finding, and the findings still open: what pages and the API read.

A finding can be muted per app with a reason (`mute`, audited in portal.kernel.audit); the mute
survives polls because it names the app and the rule, not a finding row.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from gitops.models import Finding, FindingMute, GitOpsApp
from portal.findings.derivation import group_silent
from portal.findings.discipline import GROUPED, RULES, SILENT
from portal.kernel.accounts.teams import team_of
from portal.kernel.audit.models import record


def mute(app: GitOpsApp, rule: str, reason: str, actor: Any) -> FindingMute:
    """Mute one rule's finding on one app, with a reason; audited. Survives polls."""
    if rule not in RULES:
        raise ValueError(f"unknown finding rule {rule!r}")
    reason = reason.strip()
    if not reason:
        raise ValueError("a mute needs a reason")
    name = actor.get_username() if getattr(actor, "is_authenticated", False) else "system"
    muted, _ = FindingMute.objects.update_or_create(
        app=app, rule=rule, defaults={"reason": reason[:500], "muted_by": name, "at": timezone.now()}
    )
    _regroup(app, rule)
    record(
        actor,
        "finding.mute",
        f"{app.tool}/{app.kind}/{app.namespace}/{app.name}",
        team=team_of(app.services.all()),
        rule=rule,
        reason=reason[:500],
    )
    return muted


def unmute(app: GitOpsApp, rule: str, actor: Any) -> bool:
    deleted, _ = FindingMute.objects.filter(app=app, rule=rule).delete()
    if deleted:
        _regroup(app, rule)
        record(
            actor,
            "finding.unmute",
            f"{app.tool}/{app.kind}/{app.namespace}/{app.name}",
            team=team_of(app.services.all()),
            rule=rule,
        )
    return bool(deleted)


def _regroup(app: GitOpsApp, rule: str) -> None:
    """A grouped finding sits on a muted member when one is muted (derivation.group_silent): a
    mute or unmute of it moves the finding now, not at the next poll that regroups."""
    if rule == GROUPED:
        group_silent({(app.cluster.environment_id if app.cluster_id else None, app.tool)}, timezone.now())


def open_findings() -> QuerySet[Finding]:
    """Findings not muted, for pages and the API (a queryset)."""
    muted = FindingMute.objects.filter(app_id=OuterRef("app_id"), rule=OuterRef("rule"))
    return Finding.objects.exclude(rule=SILENT).annotate(muted=Exists(muted)).filter(muted=False)
