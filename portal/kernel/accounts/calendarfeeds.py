"""Issue, resolve and revoke the secret part of a calendar feed's address.

A calendar app subscribes to an address and sends no credentials, so the secret travels in
the path: `gcal_<43 url-safe characters>` (256 random bits), its prefix telling it apart from
an API token (`gpat_`), which it never replaces — a feed only reads the calendar. As for API
tokens, only its digest is stored and the plain text exists in `issue`'s answer alone.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.utils import timezone

from portal.kernel.accounts.models import CalendarFeed
from portal.kernel.accounts.roles import Role, has_role
from portal.kernel.accounts.tokens import TOUCH_EVERY, digest

PREFIX = "gcal_"
_SECRET_BYTES = 32
_HINT_CHARS = 6


def issue(user: Any, name: str) -> tuple[CalendarFeed, str]:
    """A new feed secret for `user`; the plain text is returned once and never stored."""
    plain = PREFIX + secrets.token_urlsafe(_SECRET_BYTES)
    feed = CalendarFeed.objects.create(
        user=user, name=name.strip()[:100] or "calendar", hint=plain[: len(PREFIX) + _HINT_CHARS], digest=digest(plain)
    )
    return feed, plain


def resolve(plain: str) -> CalendarFeed | None:
    """The active feed with this secret whose user may still read the portal, or None: unknown,
    revoked, not a feed secret, or a user deactivated or left without a role."""
    if not plain.startswith(PREFIX) or len(plain) > 200:
        return None
    feed = CalendarFeed.objects.active().select_related("user").filter(digest=digest(plain)).first()
    if feed is None or not feed.user.is_active or not has_role(feed.user, Role.VIEWER):
        return None
    return feed


def touch(feed: CalendarFeed, at: datetime | None = None) -> None:
    at = at or timezone.now()
    if feed.last_used_at is None or at - feed.last_used_at >= TOUCH_EVERY:
        CalendarFeed.objects.filter(pk=feed.pk).update(last_used_at=at)
        feed.last_used_at = at


def revoke(user: Any, feed_id: int, at: datetime | None = None) -> bool:
    """Revoke one of `user`'s own feeds; False when there is no such active feed."""
    return bool(CalendarFeed.objects.active().filter(pk=feed_id, user=user).update(revoked_at=at or timezone.now()))
