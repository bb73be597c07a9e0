"""Needs attention: out of sync, degraded or missing, or a health disagreement (a custom
resource's rule says otherwise than the tool: gitops.health.rules), for longer than the
grace period.

The one definition of the rule. Its readers need it in different shapes — a `Q` for
querysets (the /gitops filter, the API, the overview's counts and tiles, notifications),
SQL for the matrix's raw read (see `gitops.models.app_condition_sql`, which compiles these
same `Q`s) and a check in Python for rows already loaded — and every shape here is built
from the same constants and the same cutoff, so they cannot disagree.

A state that has just begun is not news yet: a sync in progress or a rollout that is
briefly degraded settles by itself within minutes (PORTAL_ATTENTION_GRACE_MINUTES).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

OUT_OF_SYNC = "OutOfSync"
# Argo CD's words (gitops.rows), used for Flux objects too.
ATTENTION_HEALTH = ("Degraded", "Missing")


def grace_cutoff(at: datetime | None = None) -> datetime:
    """States that began at or before this instant have lasted past the grace period."""
    at = at or timezone.now()
    return at - timedelta(minutes=settings.PORTAL_ATTENTION_GRACE_MINUTES)


@dataclass(frozen=True, slots=True)
class Attention:
    """The rule as judged at one instant; build it with `Attention.at(now)`.

    Two halves, because pages say which one holds ("Argo: degraded", "Argo: out of sync"):
    *unhealthy* (degraded or missing past the grace period) and *out of sync* (past it too).
    An app needs attention when either holds.
    """

    cutoff: datetime

    @classmethod
    def at(cls, at: datetime | None = None) -> Attention:
        return cls(grace_cutoff(at))

    # --- on rows already loaded -----------------------------------------------------

    def unhealthy(self, health_status: str, health_since: datetime | None) -> bool:
        return health_status in ATTENTION_HEALTH and health_since is not None and health_since <= self.cutoff

    def out_of_sync(self, sync_status: str, sync_since: datetime | None) -> bool:
        return sync_status == OUT_OF_SYNC and sync_since is not None and sync_since <= self.cutoff

    def disagreeing(self, health_disagreement: str, since: datetime | None) -> bool:
        """The tool and a health rule disagree (its own rule: it counts like Degraded)."""
        return bool(health_disagreement) and since is not None and since <= self.cutoff

    # --- in queries -----------------------------------------------------------------

    def unhealthy_q(self, prefix: str = "") -> Q:
        """`prefix` reaches the app through a relation, e.g. "gitopsapp__" from its service links."""
        return Q(**{f"{prefix}health_status__in": ATTENTION_HEALTH, f"{prefix}health_since__lte": self.cutoff})

    def out_of_sync_q(self, prefix: str = "") -> Q:
        return Q(**{f"{prefix}sync_status": OUT_OF_SYNC, f"{prefix}sync_since__lte": self.cutoff})

    def disagreement_q(self, prefix: str = "") -> Q:
        return Q(**{f"{prefix}health_disagreement__gt": "", f"{prefix}health_disagreement_since__lte": self.cutoff})

    def q(self, prefix: str = "") -> Q:
        return self.unhealthy_q(prefix) | self.out_of_sync_q(prefix) | self.disagreement_q(prefix)
