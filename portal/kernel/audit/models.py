"""Who did what, when: every write the portal makes on someone's behalf."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from portal.kernel.accounts.roles import teams_of


class AuditLog(models.Model):
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Kept even when the user is deleted; "system" for automatic actions.
    actor_name = models.CharField(max_length=150)
    # The team acted for: the owning team of the service acted on, else the actor's teams.
    team = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=100)
    target = models.CharField(max_length=300)
    details = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.target}"


def record(actor: Any, action: str, target: str, *, team: str | None = None, **details: Any) -> AuditLog:
    """Write one audit row; `actor` is a user or None for the system. `team` is the owning
    team of the service acted on, when the caller knows one; otherwise the row names the teams
    the actor acts for (none for the system)."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    name = user.get_username() if user is not None else "system"
    if not team:
        team = ", ".join(sorted(teams_of(user)))
    return AuditLog.objects.create(
        actor=user, actor_name=name, team=team[:200], action=action, target=target, details=details
    )
