"""What a notification says: the `Event` every channel renders, and `emit`, the one entry point.

Producers build an `Event` (kind, a key naming the episode, what to say, links) and call
`emit(event)`. The gitops episodes are driven from the store (`gitops_events.py`); the
forge and delivery work call `emit` with the other kinds. Emitting the same key again is
harmless: the episode row and its deliveries are unique in the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from portal.kernel.links import safe_http_url

if TYPE_CHECKING:
    from portal.notifications.models import Episode, Rule


class EventKind:
    # Plain strings (not TextChoices) so that type checkers see `str` without a Django plugin.
    APP_ATTENTION = "app_attention"
    PR_CHECKS_FAILED = "pr_checks_failed"
    MERGED_NOT_DEPLOYED = "merged_not_deployed"
    ROLLBACK_OFFERED = "rollback_offered"
    TEST = "test"
    choices = [
        (APP_ATTENTION, "Application out of sync, degraded, missing or in health disagreement past the grace period"),
        (PR_CHECKS_FAILED, "Checks failing on a portal pull request"),
        (MERGED_NOT_DEPLOYED, "Merged but not deployed"),
        (ROLLBACK_OFFERED, "Rollback offered"),
        (TEST, "Test notification"),
    ]


# Kinds a rule can subscribe to (a test notification goes to one channel, not through rules).
RULE_KINDS = [(value, label) for value, label in EventKind.choices if value != EventKind.TEST]


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Step:
    """What happened to an episode after its first message, as a channel that edits shows it."""

    text: str  # "Rollback PR #12 merged: checkout 1.7.0 → 1.6.2"
    at: datetime
    url: str = ""
    ended: bool = False  # the episode is over (recovered, or its application gone)


@dataclass(frozen=True)
class Event:
    kind: str
    key: str  # names the episode: one event, one set of deliveries, however often it is emitted
    title: str  # "checkout-prod is Degraded on prod-eu-1"
    summary: str  # the likeliest cause first
    started_at: datetime
    environment: str = ""
    cluster: str = ""
    services: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) shown as a short table
    causes: tuple[str, ...] = ()  # likeliest first
    links: tuple[Link, ...] = ()  # the portal's action link first
    details: dict[str, Any] = field(default_factory=dict)  # kind-specific, machine readable (webhook)

    @property
    def action_url(self) -> str:
        return self.links[0].url if self.links else base_url()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "summary": self.summary,
            "started_at": self.started_at.isoformat(),
            "environment": self.environment,
            "cluster": self.cluster,
            "services": list(self.services),
            "facts": [{"label": label, "value": value} for label, value in self.facts],
            "causes": list(self.causes),
            "links": [{"label": link.label, "url": link.url} for link in self.links],
            "action_url": self.action_url,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        return cls(
            kind=data["kind"],
            key=data["key"],
            title=data["title"],
            summary=data.get("summary", ""),
            started_at=datetime.fromisoformat(data["started_at"]),
            environment=data.get("environment", ""),
            cluster=data.get("cluster", ""),
            services=tuple(data.get("services", ())),
            facts=tuple((f["label"], f["value"]) for f in data.get("facts", ())),
            causes=tuple(data.get("causes", ())),
            links=tuple(Link(link["label"], link["url"]) for link in data.get("links", ())),
            details=data.get("details", {}),
        )


def base_url() -> str:
    """The portal's public address for links in messages: the PORTAL_BASE_URL setting."""
    return (safe_http_url(settings.PORTAL_BASE_URL) or "http://127.0.0.1:8000").rstrip("/")


def portal_url(path: str) -> str:
    return base_url() + path


def links(*pairs: tuple[str, str | None]) -> tuple[Link, ...]:
    """Links with an http(s) URL only; a missing or unsafe one is dropped, never shown raw."""
    out = []
    for label, url in pairs:
        safe = safe_http_url(url)
        if safe:
            out.append(Link(label, safe))
    return tuple(out)


def enabled_rules() -> list[Rule]:
    from portal.notifications.models import Rule

    return list(Rule.objects.filter(enabled=True).select_related("environment", "cluster", "service"))


def emit(event: Event, *, at: datetime | None = None, app_id: int | None = None,
         rules: Iterable[Rule] | None = None) -> Episode:
    """Record an episode (once per key) and a pending delivery for every rule it matches.

    Safe to call again for the same key, from several workers at once: both rows are
    unique in the database and made with get_or_create, so a second call only adds
    deliveries for rules created since. `rules`: the enabled rules, when the caller has them.
    """
    from portal.notifications.models import Episode

    at = at or timezone.now()
    episode, created = Episode.objects.get_or_create(
        key=event.key,
        defaults={
            "kind": event.kind,
            "started_at": event.started_at,
            "emitted_at": at,
            "app_id": app_id,
            "payload": event.to_dict(),
        },
    )
    have = set() if created else set(episode.deliveries.values_list("rule_id", flat=True))
    candidates = enabled_rules() if rules is None else rules
    add_deliveries(episode, [rule for rule in candidates if rule.id not in have], at)
    return episode


def add_deliveries(episode: Episode, rules: Iterable[Rule], at: datetime) -> None:
    """A pending delivery of `episode` for each of `rules` it matches (unique per episode and rule)."""
    from portal.notifications.models import Delivery

    stored = episode.event  # the first emission's words are what every delivery sends
    for rule in rules:
        if rule.matches(stored):
            Delivery.objects.get_or_create(
                episode=episode,
                rule=rule,
                step=None,
                defaults={"channel_id": rule.channel_id, "created_at": at, "next_attempt_at": at},
            )
