"""What happens to an episode after its first message, for the channels that edit it.

An episode here is a gitops episode (statechanges.py): one application, keyed by the app and
the start of its trouble — out of sync, degraded or missing — until it is back in sync and
healthy (or gone). Its steps, each an `EpisodeStep` made once (unique key):

- a rollback pull request opened, then merged, for a service the application runs on its
  cluster (delivery records each as a `DeliveryEvent`; `rollback_pr_step` adds it to the
  application's open episode, or to the one it ended in since the PR was opened);
- the episode over (`episode_ended`, from the pass that closes it): recovered, gone, or
  replaced by a newer episode.

A step gets one delivery per rule whose channel edits messages and got the episode's first
message (portal.notifications.chat_messages sends it); channels that only post (webhooks,
e-mail, Teams, ntfy) hear of the episode once, as before.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from gitops.models import GitOpsApp
from portal.delivery.models import DeliveryEvent, PullRequest
from portal.kernel.links import safe_http_url
from portal.notifications.events import EventKind
from portal.notifications.models import Channel, Delivery, Episode, EpisodeStep, Trouble

EDITING_KINDS = (Channel.Kind.SLACK_APP, Channel.Kind.DISCORD)


def add_step(episode: Episode, kind: str, key: str, at: datetime, text: str, url: str = "") -> EpisodeStep:
    """The step `key` of `episode` (made once) and its deliveries."""
    step, created = EpisodeStep.objects.get_or_create(
        key=key, defaults={"episode": episode, "kind": kind, "at": at, "text": text[:500], "url": url[:500]}
    )
    if created:
        firsts = Delivery.objects.filter(episode=episode, step__isnull=True, channel__kind__in=EDITING_KINDS)
        for rule_id, channel_id in firsts.values_list("rule_id", "channel_id"):
            Delivery.objects.get_or_create(
                step=step, rule_id=rule_id,
                defaults={"episode": episode, "channel_id": channel_id, "created_at": at, "next_attempt_at": at},
            )
    return step


def episode_of_rollback(pr: PullRequest) -> Episode | None:
    """The gitops episode a rollback PR belongs to: of an application on one of its clusters
    running one of its services, open, or ended since the PR was opened; the latest first."""
    if not pr.clusters or not pr.services:
        return None
    since = pr.opened_at or pr.merged_at
    live = Q(ended_at__isnull=True) | (Q(ended_at__gte=since) if since else Q(pk__in=[]))
    return (
        Episode.objects.filter(kind=EventKind.APP_ATTENTION, app__cluster__name__in=pr.clusters,
                               app__services__name__in=pr.services)
        .filter(live)
        .order_by("-started_at", "-id")
        .first()
    )


def rollback_pr_step(row: DeliveryEvent) -> EpisodeStep | None:
    """The step a recorded rollback PR event adds to its application's episode (None: no episode)."""
    pr = row.pull_request
    if pr is None:
        return None
    episode = episode_of_rollback(pr)
    if episode is None:
        return None
    services = ", ".join(pr.services)
    change = f"{services} {pr.from_version} → {pr.to_version}"
    if row.kind == DeliveryEvent.ROLLBACK_PR_OPENED:
        kind, text = EpisodeStep.Kind.ROLLBACK_PR_OPENED, f"Rollback PR #{pr.number} opened: {change}"
    else:
        kind, text = EpisodeStep.Kind.ROLLBACK_PR_MERGED, f"Rollback PR #{pr.number} merged: {change}"
    return add_step(episode, kind, row.key, row.seen_at, text, safe_http_url(pr.url) or "")


def episode_ended(episodes: list[Episode], at: datetime) -> None:
    """The last step of episodes just closed that a channel which edits has a message of."""
    told = set(
        Delivery.objects.filter(episode__in=episodes, step__isnull=True, channel__kind__in=EDITING_KINDS)
        .values_list("episode_id", flat=True)
    )
    ended = [episode for episode in episodes if episode.id in told]
    if not ended:
        return
    app_ids = [e.app_id for e in ended if e.app_id is not None]
    apps = GitOpsApp.objects.select_related("cluster").in_bulk(app_ids)
    troubled = set(Trouble.objects.filter(app_id__in=app_ids).values_list("app_id", flat=True))
    for episode in ended:
        app = apps.get(episode.app_id) if episode.app_id is not None else None
        if app is None:
            text = "Over: the application is gone"
        elif app.id in troubled:
            text = f"Over: {app.name} is in trouble again, a new alert follows"
        else:
            text = f"Recovered: {app.name} is in sync and healthy on {app.cluster.name}"
        add_step(episode, EpisodeStep.Kind.ENDED, f"ended:{episode.key}", at, text)

