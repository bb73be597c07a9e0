"""Which apps a portal notification rule would tell someone about when they fail.

gitops.findings flags a sync-failure path nobody hears of; a portal rule sending app
attention events (a failed sync makes one) for the app's environment, cluster or service
covers it. Answered through gitops.signals.finding_context: gitops imports nothing above it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from gitops.models import GitOpsApp
from portal.notifications.events import EventKind
from portal.notifications.models import Rule


def covered_app_ids(apps: Sequence[GitOpsApp]) -> set[int]:
    rules = [r for r in Rule.objects.filter(enabled=True) if EventKind.APP_ATTENTION in (r.kinds or [])]
    if not rules or not apps:
        return set()
    services: dict[int, set[int]] = defaultdict(set)
    links = GitOpsApp.services.through.objects.filter(gitopsapp_id__in=[a.pk for a in apps])
    for app_id, service_id in links.values_list("gitopsapp_id", "service_id"):
        services[app_id].add(service_id)
    covered = set()
    for app in apps:
        environment_id = app.cluster.environment_id if app.cluster_id else None
        for rule in rules:
            if rule.environment_id and rule.environment_id != environment_id:
                continue
            if rule.cluster_id and rule.cluster_id != app.cluster_id:
                continue
            if rule.service_id and rule.service_id not in services[app.pk]:
                continue
            covered.add(app.pk)
            break
    return covered


def on_finding_context(sender: Any, apps: Sequence[GitOpsApp], **kwargs: Any) -> dict[str, Any]:
    return {"notified_by_portal": covered_app_ids(apps)}
