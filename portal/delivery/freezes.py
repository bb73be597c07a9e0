"""Change freezes: periods in which upgrades and promotions wait. Rollbacks never do.

Automatic pull requests are not opened during a freeze of their environment; a person
may still open one by hand, and then the preview warns first and the description says so.
"""

from __future__ import annotations

from datetime import datetime

from portal.delivery.models import ChangeFreeze


def freezes_in_effect(environment: str, at: datetime) -> list[ChangeFreeze]:
    """Freezes active at `at` that cover `environment` (a freeze naming no environment covers all)."""
    return list(ChangeFreeze.objects.in_effect(at, environment).order_by("ends_at"))


def frozen(environment: str, at: datetime, kind: str = "upgrade") -> bool:
    """Whether a change of `kind` to `environment` is held at `at`; a rollback never is."""
    if kind == "rollback":
        return False
    return ChangeFreeze.objects.in_effect(at, environment).exists()


def current_and_coming(at: datetime) -> list[ChangeFreeze]:
    """Freezes not over yet, soonest first, with their environments (two queries)."""
    return list(ChangeFreeze.objects.filter(ends_at__gt=at).order_by("starts_at").prefetch_related("environments"))
