"""Which apps a portal notification rule would tell someone about when they fail, handed down
to portal.findings for its "a sync failure nobody hears of" finding.

That finding needs the portal's rules, which only notifications reads (findings is below it):
so on each poll's `gitops.signals.cluster_stored` this module works out which of the apps read
a rule covers (one sending app attention events — a failed sync makes one — for the app's
environment, cluster or service) and stores the finding through
`portal.findings.derivation.derive_silence`, in the poll's transaction as the other findings.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction

from gitops.models import GitOpsApp
from portal.findings.derivation import announced_apps, derive_silence, judged_apps
from portal.notifications.events import EventKind
from portal.notifications.models import Rule

log = logging.getLogger(__name__)


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


def judge_silence(cluster_id: int, at: datetime | None = None, app_ids: Collection[int] | None = None) -> int:
    """Store which apps read from this cluster (or those of `app_ids`) fail silently; returns how
    many grouped findings were written."""
    apps = judged_apps(cluster_id, app_ids)
    return derive_silence(cluster_id, apps, covered_app_ids(apps), at)


def on_cluster_stored(sender: Any, cluster: Any, read: Collection[int] = (), at: datetime | None = None,
                      every_app: bool = True, **kwargs: Any) -> None:
    """A poll stored the apps `read` from `cluster` (`every_app`: all of them, gitops.signals):
    judge whether their failures reach anyone."""
    if not read:
        return
    try:
        with transaction.atomic():  # a savepoint: findings never cost a poll its data
            apps = announced_apps(cluster.pk, read)
            derive_silence(cluster.pk, apps, covered_app_ids(apps), at, every_app=every_app)
    except Exception:  # noqa: BLE001 - logged; the apps are stored all the same
        log.exception("silent sync failures of %s not derived", cluster.name)
