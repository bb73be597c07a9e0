"""Personal API tokens (what a script or an assistant sends as `Authorization: Bearer`), and
who a user is at the identity provider they sign in through (OidcIdentity).

Only a SHA-256 digest of each token is stored; the token itself is shown once, when it
is created. A high-entropy random secret needs no salt or slow hash: nobody can guess
one from its digest, and a digest lookup is a single indexed query per request.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. 'release script'")
    # The prefix and the first characters of the secret, so a person can tell tokens apart.
    hint = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


class OidcIdentity(models.Model):
    """Who a user is at an identity provider: the (issuer, sub) pair, which OpenID Connect promises
    is never reassigned. A user is found by it and never by e-mail alone: an address can be
    reissued to someone else, or set to anything at a provider that does not verify it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_issuer_subject")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class CalendarFeedQuerySet(models.QuerySet):
    def active(self) -> CalendarFeedQuerySet:
        return self.filter(revoked_at__isnull=True)


class CalendarFeed(models.Model):
    """A secret address a calendar app subscribes to (calendar apps send no bearer token), one
    per subscription a user makes; revoking it makes every address built on it answer 404.
    Only the SHA-256 digest of its secret is kept, as for ApiToken."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar_feeds")
    name = models.CharField(max_length=100, help_text="where it is subscribed, e.g. 'work calendar'")
    hint = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = CalendarFeedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
