"""Issue, resolve and revoke personal API tokens.

A token reads `gpat_<43 url-safe characters>` (256 random bits): the recognisable prefix
lets secret scanners and people spot a leaked one. The plain token exists only in the
return value of `issue`; everything else works from its digest.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from portal.kernel.accounts.models import ApiToken

PREFIX = "gpat_"
_SECRET_BYTES = 32
_HINT_CHARS = 6
# last_used_at is for people ("used today?"), not an audit trail: one write a minute is enough.
TOUCH_EVERY = timedelta(minutes=1)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(user: Any, name: str) -> tuple[ApiToken, str]:
    """A new token for `user`; the plain text is returned once and never stored."""
    plain = PREFIX + secrets.token_urlsafe(_SECRET_BYTES)
    token = ApiToken.objects.create(
        user=user, name=name.strip()[:100] or "token", hint=plain[: len(PREFIX) + _HINT_CHARS], digest=digest(plain)
    )
    return token, plain


def resolve(plain: str) -> ApiToken | None:
    """The active token with this text, or None (unknown, revoked, or not a token at all)."""
    if not plain.startswith(PREFIX) or len(plain) > 200:
        return None
    return ApiToken.objects.active().select_related("user").filter(digest=digest(plain)).first()


def touch(token: ApiToken, at: datetime | None = None) -> None:
    at = at or timezone.now()
    if token.last_used_at is None or at - token.last_used_at >= TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=at)
        token.last_used_at = at


def revoke(user: Any, token_id: int, at: datetime | None = None) -> bool:
    """Revoke one of `user`'s own tokens; False when there is no such active token."""
    return bool(
        ApiToken.objects.active().filter(pk=token_id, user=user).update(revoked_at=at or timezone.now())
    )
