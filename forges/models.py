"""Pull requests the portal opened (or found already open) for a version change."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PullRequest(models.Model):
    class Kind(models.TextChoices):
        UPGRADE = "upgrade"
        PROMOTION = "promotion"
        ROLLBACK = "rollback"

    class State(models.TextChoices):
        # `opening` is the claim a worker holds between "decided to open" and "the forge
        # answered"; the unique (repository, branch) row is what stops a second worker.
        OPENING = "opening"
        OPEN = "open"
        MERGED = "merged"
        CLOSED = "closed"

    class Checks(models.TextChoices):
        PASS = "pass"
        RUNNING = "running"
        FAIL = "fail"
        NONE = "none"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    services = models.JSONField(default=list, help_text="service names")
    environment = models.CharField(max_length=63, blank=True)
    clusters = models.JSONField(default=list, blank=True, help_text="cluster names")
    repository = models.CharField(max_length=500, help_text="the repository's web URL")
    forge_kind = models.CharField(max_length=16)
    number = models.PositiveIntegerField(null=True, blank=True)
    url = models.URLField(max_length=500, blank=True)
    title = models.CharField(max_length=300)
    branch = models.CharField(max_length=255)
    base_branch = models.CharField(max_length=255)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPENING, db_index=True)
    checks = models.CharField(max_length=16, choices=Checks.choices, default=Checks.NONE)
    # Set once, the first time checks are seen failing; the notification side reads it.
    checks_failed_notified_at = models.DateTimeField(null=True, blank=True)
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    automatic = models.BooleanField(default=False)
    opened_at = models.DateTimeField(null=True, blank=True)
    merged_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # When the new version was first seen running (written by the delivery side).
    running_at = models.DateTimeField(null=True, blank=True)
    opened_outside = models.BooleanField(default=False, help_text="opened by Renovate, Dependabot or a person")
    from_version = models.CharField(max_length=128, blank=True)
    to_version = models.CharField(max_length=128, blank=True)
    image = models.CharField(max_length=300, blank=True)
    last_error = models.TextField(blank=True)
    tracked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "branch"], name="forges_pullrequest_unique_branch"),
        ]

    def __str__(self) -> str:
        where = f"#{self.number}" if self.number else self.branch
        return f"{self.repository} {where}: {self.title}"
