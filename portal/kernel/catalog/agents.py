"""Agent tokens: issued by an admin for one cluster, shown once, kept only as a hash."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from portal.kernel.catalog.models import AgentToken, Cluster

TOKEN_PREFIX = "gpa_"  # "gitops portal agent": recognisable in a secret scanner's rules


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(cluster: Cluster, created_by: str) -> tuple[AgentToken, str]:
    """A new token for `cluster`'s agent, and its only plain-text copy."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = AgentToken.objects.create(
        cluster=cluster, token_hash=_digest(token), prefix=token[: len(TOKEN_PREFIX) + 6], created_by=created_by
    )
    return row, token


def active(token: str) -> AgentToken | None:
    """The unrevoked token row `token` is the plain text of, or None."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    return (
        AgentToken.objects.select_related("cluster").filter(token_hash=_digest(token), revoked_at__isnull=True).first()
    )


def revoke(row: AgentToken) -> None:
    AgentToken.objects.filter(pk=row.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
