"""What a gitops episode says: an application out of sync, degraded, missing or in health
disagreement past the grace period.

An episode begins when the application leaves "in sync, healthy and agreed" and ends when it is
back (statechanges.py follows that from the StateChange rows). This module words it: the
title, the likeliest cause first, the facts and the links, the action first. The episode's
start is part of its key, so the key is the same on every pass and on every worker.

The alert carries the fix where the portal has one:
- degraded or missing, with a rollback on offer (portal.delivery.rollbacks): "Rollback PR →
  <version>" opening the rollback's preview, and the version change it blames first;
- out of sync: "Git pins X, runs Y" (portal.delivery.current_pins) and, for an Argo CD app synced
  by hand, "Argo CD waits for someone to sync it" with the Argo CD link;
- a suspended Flux object: "suspended, deploys once resumed";
- a health disagreement (the tool calls the app healthy while a custom resource reports
  failure, or a health rule says otherwise): the disagreement's own sentence, leading when the
  tool's state is otherwise fine, and "Suggested health rule" linking the app's page, which
  shows the rule that would make the tool agree (gitops.health.suggested_rules).

`build_event` reads what it needs from the store, then `word_event` (no queries) says it;
the channels' "Send test" words sample rows through the same `word_event`, so a test is
exactly what a real alert of that kind looks like.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Q

from forges import weblinks
from gitops.models import ATTENTION_HEALTH, GitOpsApp, VersionChange, sync_held
from gitops.revisions import short_revision
from gitops.rows import app_key
from gitops.windowstate import held_until, window_name
from portal.delivery import rollbacks
from portal.delivery.current_pins import pin_summary, pinned_versions
from portal.delivery.planner import SUSPENDED_WORDS
from portal.kernel.links import app_page_path, argocd_app_url
from portal.kernel.timestamps import duration_words, utc_stamp
from portal.notifications.events import Event, EventKind, Link, links, portal_url

# Causes are looked for among changes of the day before the episode began.
CAUSE_WINDOW = timedelta(days=1)
MANUAL_SYNC_WORDS = "Argo CD waits for someone to sync it"
DISAGREEMENT_WORDS = "in health disagreement"


def is_resolved(sync: str, health: str, disagreement: str) -> bool:
    """Back in sync, healthy and agreed on: the end of an episode."""
    return sync != "OutOfSync" and health == "Healthy" and not disagreement


def episode_key(app: GitOpsApp, start: datetime) -> str:
    object_key = app_key(app.tool, app.kind, app.namespace, app.name)
    return f"gitops:{app.cluster.name}/{object_key}@{start.astimezone(UTC).isoformat()}"


def state_words(app: GitOpsApp) -> str:
    """ "degraded", "missing", "out of sync", "degraded and out of sync", "in health disagreement"."""
    words = []
    if app.health_status in ATTENTION_HEALTH:
        words.append(app.health_status.lower())
    if app.sync_status == "OutOfSync":
        words.append("out of sync")
    if app.health_disagreement:
        words.append(DISAGREEMENT_WORDS)
    return " and ".join(words) or app.health_status.lower()


def state_title(app: GitOpsApp) -> str:
    words = []
    if app.health_status in ATTENTION_HEALTH:
        words.append(app.health_status)
    if app.sync_status == "OutOfSync":
        words.append("OutOfSync")
    if app.health_disagreement:
        words.append(DISAGREEMENT_WORDS)
    return " and ".join(words) or app.health_status


def suggested_rules(app: GitOpsApp) -> list[dict[str, str]]:
    """The health rules that would make the tool agree (tool, kind, where, rule), as the API gives
    them: read by `GitOpsApp.objects.with_rule_words()`, none on a row read without it."""
    found = getattr(app, "health_suggested", None)
    return found if isinstance(found, list) else []


def tool_state_is_fine(app: GitOpsApp) -> bool:
    """The tool itself reports nothing wrong: only a disagreement can make the app news."""
    return app.health_status not in ATTENTION_HEALTH and app.sync_status != "OutOfSync"


def _causes(app: GitOpsApp, start: datetime, versions: list[VersionChange]) -> list[str]:
    """Changes of the day before, nearest to the start first: the likeliest cause leads."""
    where = f"{state_words(app)} on {app.cluster.name}"
    several = len({v.service_id for v in versions}) > 1
    candidates: list[tuple[timedelta, str]] = []
    for change in versions:
        if change.at > start:
            continue  # seen by the portal after the tool dates the trouble: no cause of it
        what = f"{change.to_version} replaced {change.from_version}"
        if several:
            what = f"{change.service.name} {what}"
        since = start - change.at
        candidates.append((since, f"{where}, {duration_words(since, spelled=True)} after {what}"))
    if app.previous_synced_revision and app.revision_changed_at and start - CAUSE_WINDOW <= app.revision_changed_at:
        if app.revision_changed_at <= start:
            new, old = short_revision(app.synced_revision), short_revision(app.previous_synced_revision)
            delta = start - app.revision_changed_at
            words = duration_words(delta, spelled=True)
            candidates.append((delta, f"{where}, {words} after commit {new} replaced {old}"))
    candidates.sort(key=lambda c: c[0])
    return [text for _, text in candidates]


def held_by_window(app: GitOpsApp, at: datetime) -> str:
    """ "a sync window 'weekend freeze' holds payments-prod on prod-eu-1 until <time>" (or "with no
    end in sight", gitops.windowstate.held_until: the badge's words) while the app's stored window
    verdict holds at `at`, else "". A suspension is said as such, not as a window."""
    window = app.sync_window or {}
    if not sync_held(app.sync_blocked, app.sync_blocked_until, at) or window.get("kind") == "suspend":
        return ""
    where = f"{app.name} on {app.cluster.name}"
    if window.get("kind") == "error":
        return f"an invalid sync window holds {where}: Argo CD refuses every sync ({str(window.get('error'))[:200]})"
    name = f" '{window_name(window)}'" if window_name(window) else ""
    held = held_until(app.sync_blocked_until, utc_stamp)
    if window.get("kind") == "allow":
        return f"no allow window{name} is open for {where}: syncs wait {held}"
    return f"a sync window{name} holds {where} {held}"


def _action_link(app: GitOpsApp, services: list[str]) -> str:
    """The service page when the app deploys one service, else /gitops filtered to the app."""
    return portal_url(app_page_path(services, app.cluster.name, app.name))


def build_event(
    app: GitOpsApp, start: datetime, at: datetime, *, pinned: dict[tuple[int, str], list[str]] | None = None
) -> Event:
    """The alert of `app`'s episode begun at `start`, from what the store holds at `at`;
    `pinned` is `pinned_versions` of many apps read at once (else this app's is read)."""
    services = sorted(s.name for s in app.services.all())
    began, _exact = app.trouble_since(start)
    versions = list(
        VersionChange.objects.filter(Q(app=app) | Q(cluster=app.cluster, service__name__in=services))
        .filter(at__gte=began - CAUSE_WINDOW, at__lte=start)
        .select_related("service")
        .distinct()
        .order_by("-at", "-id")
    )
    pins = ""
    if app.sync_status == "OutOfSync":
        pinned = pinned if pinned is not None else pinned_versions([app.pk])
        notes = [pin_summary(pinned.get((app.pk, name), []), (app.running or {}).get(name, [])) for name in services]
        pins = "; ".join(note for note in notes if note)
    offer = None
    if app.health_status in ATTENTION_HEALTH and app.cluster.environment is not None:
        offers = rollbacks.offers_for_apps([app], now=at).get(app.pk, [])
        offer = offers[0] if offers else None
    return word_event(app, start, at, services=services, versions=versions, pins=pins, rollback=offer)


def word_event(
    app: GitOpsApp,
    start: datetime,
    at: datetime,
    *,
    services: list[str],
    versions: list[VersionChange],
    pins: str = "",
    rollback: rollbacks.RollbackOffer | None = None,
) -> Event:
    """The alert, worded from rows already read (no queries): `pins` is "Git pins X, runs Y"
    when Git and the cluster disagree, `rollback` the rollback on offer, if any.

    The alert is dated by the tools' time where they give one (`GitOpsApp.trouble_since`): an app
    Degraded for days before the portal's first poll is "degraded since" then, not since that
    poll; `start`, the portal's sight, stays the episode's key."""
    began, exact = app.trouble_since(start)
    cluster = app.cluster.name
    argocd_url = (
        argocd_app_url(app.namespace, app.name, app.argocd_instance and app.argocd_instance.ui_url)
        if app.tool == "argo"
        else None
    )
    window = held_by_window(app, at)
    causes = _ordered_causes(app, _causes(app, began, versions), pins, rollback, window)
    # A discovered cluster (an unregistered Argo CD destination) is in no environment yet.
    environment = app.cluster.environment.name if app.cluster.environment is not None else ""
    since = utc_stamp(began) if exact else f"at least {utc_stamp(began)}"
    summary = causes[0] if causes else f"{state_words(app)} on {cluster} since {since}"
    summary = summary[:1].upper() + summary[1:]
    commit_url = weblinks.commit_url(app.repo_url, app.synced_commit())
    changes_url = None
    if app.revision_changed_at and start - CAUSE_WINDOW <= app.revision_changed_at <= at:
        change = app.last_change()  # the same "changes" link as the service page's panel
        changes_url = weblinks.compare_url(app.repo_url, *change) if change else None
    return Event(
        kind=EventKind.APP_ATTENTION,
        key=episode_key(app, start),
        title=f"{app.name} is {state_title(app)} on {cluster}",
        summary=summary,
        started_at=began,
        environment=environment,
        cluster=cluster,
        services=tuple(services),
        facts=_facts(app, environment, since, services, pins, window),
        causes=tuple(causes),
        links=_links(
            app,
            services,
            rollback,
            changes_url,
            commit_url,
            argocd_url,
            suggested=bool(suggested_rules(app)),
        ),
        details=_details(app, versions, pins, rollback, commit_url, changes_url),
    )


def _ordered_causes(
    app: GitOpsApp, causes: list[str], pins: str, rollback: rollbacks.RollbackOffer | None, window: str
) -> list[str]:
    """The causes, likeliest first: what holds Git's change back (a rollback's change, a sync
    window, a suspension, a manual sync, a pin that differs) leads the changes found."""
    cluster = app.cluster.name
    where = f"{state_words(app)} on {cluster}"
    first: list[str] = []
    if rollback is not None:
        # The change the rollback undoes is the likeliest cause: it leads.
        blamed = f"{rollback.current} replaced {rollback.previous}"
        causes.sort(key=lambda text: blamed not in text)
        if not any(blamed in text for text in causes):
            first.append(f"{where}, after {blamed}")
    if window and app.sync_status == "OutOfSync":
        first.append(window)  # why Git's change is not applied: it leads
    if app.tool == "flux" and app.suspended:
        first.append(f"Flux: {app.name} on {cluster} is {SUSPENDED_WORDS}")
    if app.sync_status == "OutOfSync":
        if app.tool == "argo" and app.manual_sync:
            first.append(
                f"{MANUAL_SYNC_WORDS}: {app.name} on {cluster} has no automated sync" + (f" ({pins})" if pins else "")
            )
        elif pins:
            first.append(f"Out of sync on {cluster}: {pins}")
    if app.health_disagreement:
        # The disagreement is the news when the tool reports nothing wrong; else it follows the fix.
        sentence = app.health_disagreement[:300]
        if tool_state_is_fine(app):
            first.insert(0, sentence)
        else:
            first.append(sentence)
    causes = first + causes
    if window and app.sync_status != "OutOfSync":
        causes.append(window)  # no cause of the trouble, but holds its fix (a rollback) too
    return causes


def _facts(
    app: GitOpsApp, environment: str, since: str, services: list[str], pins: str, window: str
) -> tuple[tuple[str, str], ...]:
    """The alert's short table: where, what state since when, and what the portal knows of why."""
    facts = [
        ("Environment", environment or "unregistered destination"),
        ("Cluster", app.cluster.name),
        ("Application", f"{app.namespace}/{app.name}"),
        ("Sync", app.sync_status),
        ("Health", app.health_status),
        ("Since", since),
    ]
    if services:
        facts.append(("Services", ", ".join(services)))
    if pins:
        facts.append(("Git", pins))
    if app.tool == "argo" and app.manual_sync:
        facts.append(("Sync policy", "manual: " + MANUAL_SYNC_WORDS))
    if window:
        facts.append(("Sync window", window))
    if app.tool == "flux" and app.suspended:
        facts.append(("Flux", SUSPENDED_WORDS))
    if app.synced_revision:
        facts.append(("Synced commit", short_revision(app.synced_revision)))
    if app.health_message:
        facts.append(("Message", app.health_message[:300]))
    if app.health_disagreement:
        facts.append(("Health disagreement", app.health_disagreement[:300]))
    return tuple(facts)


def _details(
    app: GitOpsApp,
    versions: list[VersionChange],
    pins: str,
    rollback: rollbacks.RollbackOffer | None,
    commit_url: str | None,
    changes_url: str | None,
) -> dict[str, Any]:
    """The machine-readable part of the alert (a webhook's body carries it)."""
    return {
        "app": {
            "tool": app.tool,
            "kind": app.kind,
            "namespace": app.namespace,
            "name": app.name,
            "sync_status": app.sync_status,
            "health_status": app.health_status,
            "health_message": app.health_message,
            "health_disagreement": app.health_disagreement,
        },
        "suggested_health_rules": suggested_rules(app),
        "revision": {
            "synced": app.synced_revision,
            "commit_url": commit_url,
            "previous": app.previous_synced_revision,
            "changes_url": changes_url,
        },
        "git_pins": pins,
        "manual_sync": bool(app.manual_sync),
        "suspended": bool(app.suspended),
        "rollback": None
        if rollback is None
        else {
            "service": rollback.service,
            "from": rollback.current,
            "to": rollback.previous,
            "preview_url": portal_url(rollbacks.preview_url(rollback)),
        },
        "version_changes": [
            {"service": v.service.name, "from": v.from_version, "to": v.to_version, "at": v.at.isoformat()}
            for v in versions
        ],
    }


def _links(
    app: GitOpsApp,
    services: list[str],
    rollback: rollbacks.RollbackOffer | None,
    changes_url: str | None,
    commit_url: str | None,
    argocd_url: str | None,
    *,
    suggested: bool = False,
) -> tuple[Link, ...]:
    """The action first: the rollback's preview when one is on offer, Argo CD when it waits for
    someone to sync, else the portal's page of the app — named for the health rule it suggests
    when `suggested` (the tool's blind spot: the page shows the rule that makes it agree)."""
    page = "Suggested health rule" if suggested and app.health_disagreement else "Open in portal"
    action: list[tuple[str, str | None]] = [(page, _action_link(app, services))]
    argocd: list[tuple[str, str | None]] = [("Argo CD", argocd_url)]
    if rollback is not None:
        action.insert(0, (f"Rollback PR → {rollback.previous}", portal_url(rollbacks.preview_url(rollback))))
    if app.tool == "argo" and app.manual_sync and app.sync_status == "OutOfSync":
        action, argocd = [("Sync in Argo CD", argocd_url), *action], []
    return links(*action, ("Changes", changes_url), ("Synced commit", commit_url), *argocd)
