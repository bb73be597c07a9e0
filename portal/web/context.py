"""Values every page's base template needs."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from portal.kernel.accounts.roles import role_of

NAVIGATION = [
    ("overview", "Overview"),
    ("matrix", "Matrix"),
    ("gitops", "GitOps"),
    ("updates", "Updates"),
    ("delivery", "Delivery"),
    ("calendar", "Calendar"),
    ("findings", "Findings"),
    ("security", "Security"),
]


def portal_context(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    return {
        "navigation": NAVIGATION,
        "demo_mode": settings.DEMO_MODE,
        "viewer_role": role_of(user) if user is not None else None,
    }
