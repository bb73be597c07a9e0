"""Notification rules, channels, episodes and deliveries.

An `Episode` is one occurrence of something worth telling people about (an application
out of sync or degraded past the grace period, a failing pull request...), unique by its
key: a worker that sees the same episode again finds the row instead of making a second
one. A `Delivery` is one (episode, rule) pair, created before anything is sent and unique
in the database, so several workers, retries and restarts send each message once.

An episode moves on after its first message (portal.notifications.episode_steps): an
`EpisodeStep` (a rollback PR opened, merged, the application recovered) gets one delivery per
channel that can edit what it posted (a Slack app, a Discord webhook), and that channel's
`ChatMessage` of the episode is updated in place, with a thread reply where the chat has threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.db import models

from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.notifications.events import Event, EventKind, Step

if TYPE_CHECKING:
    from portal.notifications.channels import Transport


class Channel(models.Model):
    class Kind:
        SLACK = "slack"
        SLACK_APP = "slack_app"
        TEAMS = "teams"
        EMAIL = "email"
        WEBHOOK = "webhook"
        DISCORD = "discord"
        NTFY = "ntfy"
        choices = [
            (SLACK, "Slack (incoming webhook)"),
            (SLACK_APP, "Slack app (bot token; one message per episode, updated)"),
            (TEAMS, "Microsoft Teams (incoming webhook / workflow)"),
            (EMAIL, "E-mail"),
            (WEBHOOK, "Webhook (signed JSON)"),
            (DISCORD, "Discord (webhook)"),
            (NTFY, "ntfy push (topic URL)"),
        ]

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Secrets: a webhook URL is a bearer credential and the HMAC secret signs our requests.
    # Both are stored as given but only ever shown masked (see `masked_target`).
    url = models.TextField(blank=True)
    secret = models.CharField(max_length=200, blank=True)
    recipients = models.TextField(blank=True, help_text="e-mail addresses, comma separated")
    # A Slack app's bot token is never stored: the channel names the environment variable that
    # holds it (portal.kernel.credentials), and the conversation it posts in.
    token_env = models.CharField(max_length=100, blank=True, help_text="variable holding the bot token")
    chat_channel = models.CharField(max_length=100, blank=True, help_text="Slack conversation id, e.g. C0123ABCD")
    created_at = models.DateTimeField(auto_now_add=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_url(self) -> bool:
        return self.kind not in (self.Kind.EMAIL, self.Kind.SLACK_APP)

    @property
    def edits_messages(self) -> bool:
        """Whether an episode's later steps update the message its first one posted."""
        return self.kind in (self.Kind.SLACK_APP, self.Kind.DISCORD)

    def bot_token(self) -> str:
        from portal.kernel.credentials import named_secret

        return named_secret(self.token_env) if self.kind == self.Kind.SLACK_APP else ""

    def recipient_list(self) -> list[str]:
        return [r.strip() for r in self.recipients.replace(";", ",").split(",") if r.strip()]

    def masked_target(self) -> str:
        """Where messages go, safe to show: scheme and host only, never path or query."""
        if self.kind == self.Kind.SLACK_APP:
            return f"Slack conversation {self.chat_channel}, token from ${self.token_env}"
        if not self.uses_url:
            return ", ".join(self.recipient_list())
        try:
            parts = urlsplit(self.url)
            host = parts.hostname or ""
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            return "•••• (invalid URL)"
        if not parts.scheme or not host:
            return "••••"
        return f"{parts.scheme}://{host}{port}/••••"

    def secrets(self) -> list[str]:
        """Values that must never reach a page, a log line or an error message."""
        values = [v for v in (self.url, self.secret, self.bot_token()) if v]
        try:
            parts = urlsplit(self.url)
            values += [p for p in (parts.path, parts.query) if len(p) > 1]
        except ValueError:
            pass
        return values

    def transport(self) -> Transport:
        from portal.notifications.channels import transport_for

        return transport_for(self)


class Rule(models.Model):
    """Which events go to which channel; an empty filter matches everything."""

    name = models.CharField(max_length=100)
    kinds = models.JSONField(default=list, help_text="event kinds this rule sends")
    environment = models.ForeignKey(Environment, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    service = models.ForeignKey(Service, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="rules")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def matches(self, event: Event) -> bool:
        if not self.enabled or event.kind not in self.kinds:
            return False
        # Filters compare names: the event carries names so that it reads the same after a
        # cluster or service row is gone.
        if self.environment_id and self.environment.name != event.environment:
            return False
        if self.cluster_id and self.cluster.name != event.cluster:
            return False
        return not (self.service_id and self.service.name not in event.services)

    def kind_labels(self) -> list[str]:
        labels = dict(EventKind.choices)
        return [labels.get(k, k) for k in self.kinds]


class Episode(models.Model):
    kind = models.CharField(max_length=40, choices=EventKind.choices)
    key = models.CharField(max_length=700, unique=True)
    started_at = models.DateTimeField(db_index=True)
    emitted_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    # Set for gitops episodes; kept null when the app row is removed.
    app = models.ForeignKey(
        "gitops.GitOpsApp", null=True, blank=True, on_delete=models.SET_NULL, related_name="notification_episodes"
    )
    payload = models.JSONField(default=dict)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["kind", "ended_at"])]

    def __str__(self) -> str:
        return self.key

    @property
    def event(self) -> Event:
        return Event.from_dict(self.payload)


class EpisodeStep(models.Model):
    """Something that happened to an episode after its first message: a rollback PR opened or
    merged, the application back in sync and healthy. Unique by `key`, so a step found again
    is the same row."""

    class Kind:
        ROLLBACK_PR_OPENED = "rollback_pr_opened"
        ROLLBACK_PR_MERGED = "rollback_pr_merged"
        ENDED = "ended"
        choices = [
            (ROLLBACK_PR_OPENED, "Rollback PR opened"),
            (ROLLBACK_PR_MERGED, "Rollback PR merged"),
            (ENDED, "Episode over"),
        ]

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="steps")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    key = models.CharField(max_length=700, unique=True)
    at = models.DateTimeField()
    text = models.CharField(max_length=500)  # "Rollback PR #12 merged: checkout 1.7.0 → 1.6.2"
    url = models.URLField(max_length=500, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return self.key

    def as_step(self) -> Step:
        return Step(self.text, self.at, self.url, ended=self.kind == self.Kind.ENDED)


class ChatMessage(models.Model):
    """The message a channel that edits posted for an episode: Slack's `ts` in the channel's
    conversation, or the Discord webhook message's id. One per episode and channel; replaced
    (`replaced_at`, said once) when the chat refuses to update it."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="chat_messages")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="chat_messages")
    message_id = models.CharField(max_length=100)
    posted_at = models.DateTimeField()
    updated_at = models.DateTimeField(null=True, blank=True)
    replaced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["episode", "channel"], name="uniq_chat_message_per_channel")]

    def __str__(self) -> str:
        return f"{self.episode_id}/{self.channel_id}: {self.message_id}"


class Trouble(models.Model):
    """An application the notification pass knows is not in sync and healthy, or whose health
    the tool and its custom resources disagree on (a health disagreement: gitops.health.blindspot
    and the health rules).

    Made from the StateChange row that took the app out of "in sync, healthy and agreed" (`since`,
    the episode's start) and kept, with the state the rows since then describe, until a row
    brings it back. Its episode is opened once the trouble has lasted past the grace period
    in an attention state; an open gitops episode no trouble points at is over.
    """

    app = models.OneToOneField("gitops.GitOpsApp", on_delete=models.CASCADE, related_name="notification_trouble")
    since = models.DateTimeField()
    sync_status = models.CharField(max_length=16)
    health_status = models.CharField(max_length=16)
    # The disagreement as the rows tell it (StateChange keeps 300 characters); empty: none.
    disagreement = models.CharField(max_length=300, blank=True, default="")
    episode = models.ForeignKey(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        # The pass looks for troubles without an episode that began before the grace cutoff.
        indexes = [models.Index(fields=["since"], condition=models.Q(episode__isnull=True), name="trouble_unopened")]

    def __str__(self) -> str:
        disputed = "/disputed" if self.disagreement else ""
        return f"{self.app_id}: {self.sync_status}/{self.health_status}{disputed} since {self.since:%Y-%m-%d %H:%M}"


class Delivery(models.Model):
    class Status:
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"
        choices = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="deliveries")
    # A later step of the episode (null: its first message).
    step = models.ForeignKey(EpisodeStep, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries")
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="deliveries")
    # The rule's channel when the delivery was made: editing a rule later does not re-route it.
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()
    # A worker that claims the delivery holds it until then; after a crash it becomes claimable again.
    lease_until = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_permanent = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["episode", "rule"], condition=models.Q(step__isnull=True),
                                    name="uniq_delivery_per_episode_rule"),
            models.UniqueConstraint(fields=["step", "rule"], condition=models.Q(step__isnull=False),
                                    name="uniq_delivery_per_step_rule"),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.episode_id}/{self.rule_id}: {self.status}"

    @property
    def error_kind(self) -> str:
        if not self.last_error:
            return ""
        return "permanent" if self.last_error_permanent else "transient"

