"""The one authentication backend: Django's users and passwords, unless PORTAL_LOCAL_LOGIN is off.

Switching local login off must close every password form, not only the portal's own login page:
Django's admin has a login form of its own. Refusing here, in the backend every form asks, closes
them all at once. A session already signed in (through the identity provider, or before the
switch) is still read through this backend's get_user.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

BACKEND = "portal.kernel.accounts.localpasswords.LocalPasswordBackend"


class LocalPasswordBackend(ModelBackend):
    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if not settings.PORTAL_LOCAL_LOGIN:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
