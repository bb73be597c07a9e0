"""Rate limiting per API token (per user for browser sessions)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from portal.kernel.accounts.models import ApiToken

DEFAULT_RATE = "600/minute"


class TokenRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_rate(self) -> str:
        # Read per request so that an operator (or a test) can change it without a restart of the class.
        return getattr(settings, "PORTAL_API_RATE", DEFAULT_RATE) or DEFAULT_RATE

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}
