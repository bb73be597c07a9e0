"""Needs attention: out of sync, degraded or missing, or a health disagreement (a custom
resource's rule says otherwise than the tool: gitops.health.rules), for longer than the grace
period; stuck progressing; or the last sync operation failed.

The one definition of the rule. Its readers need it in different shapes — a `Q` for
querysets (the /gitops filter, the API, the overview's counts and tiles, notifications),
SQL for the matrix's raw read (see `gitops.queries.app_condition_sql`, which compiles these
same `Q`s) and a check in Python for rows already loaded — and every shape here is built
from the same constants and the same cutoff, so they cannot disagree.

A state that has just begun is not news yet: a sync in progress or a rollout that is
briefly degraded settles by itself within minutes (PORTAL_ATTENTION_GRACE_MINUTES). A
rollout or a sync that has not settled after much longer (PORTAL_STUCK_PROGRESSING_MINUTES,
default 30) will not settle by itself: health Progressing, or an Argo CD sync operation still
Running (status.operationState.phase), past that limit is "stuck progressing". A last sync
operation that ended Failed or Error (Argo CD retries it, or nobody does) needs attention once
it is older than the grace period: it is the one state a healthy-looking app can hide a broken
deploy behind.
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
PROGRESSING = "Progressing"
# Argo CD's operationState.phase (pkg/apis/application/v1alpha1 OperationPhase).
OPERATION_RUNNING = "Running"
OPERATION_FAILED = ("Failed", "Error")


def grace_cutoff(at: datetime | None = None) -> datetime:
    """States that began at or before this instant have lasted past the grace period."""
    at = at or timezone.now()
    return at - timedelta(minutes=settings.PORTAL_ATTENTION_GRACE_MINUTES)


def stuck_cutoff(at: datetime | None = None) -> datetime:
    """Progressing (or a sync operation Running) since at or before this instant is stuck."""
    at = at or timezone.now()
    return at - timedelta(minutes=settings.PORTAL_STUCK_PROGRESSING_MINUTES)


@dataclass(frozen=True, slots=True)
class Attention:
    """The rule as judged at one instant; build it with `Attention.at(now)`.

    Parts, because pages say which one holds ("Argo: degraded", "Argo: out of sync", "stuck
    progressing"): *unhealthy* (degraded or missing past the grace period), *out of sync*
    (past it too), *stuck* (Progressing or a sync operation Running past the stuck limit) and
    *sync failed* (the last sync operation Failed or Error, past the grace period). An app
    needs attention when any holds. Without `stuck_at` (a rule built by hand) nothing is stuck.
    """

    cutoff: datetime
    stuck_at: datetime | None = None

    @classmethod
    def at(cls, at: datetime | None = None) -> Attention:
        at = at or timezone.now()
        return cls(grace_cutoff(at), stuck_cutoff(at))

    # --- on rows already loaded -----------------------------------------------------

    def unhealthy(self, health_status: str, health_since: datetime | None) -> bool:
        return health_status in ATTENTION_HEALTH and health_since is not None and health_since <= self.cutoff

    def out_of_sync(self, sync_status: str, sync_since: datetime | None) -> bool:
        return sync_status == OUT_OF_SYNC and sync_since is not None and sync_since <= self.cutoff

    def stuck(self, health_status: str, health_since: datetime | None, operation_phase: str = "",
              operation_started_at: datetime | None = None) -> bool:
        if self.stuck_at is None:
            return False
        progressing = health_status == PROGRESSING and health_since is not None and health_since <= self.stuck_at
        running = (operation_phase == OPERATION_RUNNING and operation_started_at is not None
                   and operation_started_at <= self.stuck_at)
        return progressing or running

    def sync_failed(self, operation_phase: str, operation_finished_at: datetime | None) -> bool:
        # Argo CD always stamps finishedAt on a finished operation; one without is judged failed now.
        return operation_phase in OPERATION_FAILED and (operation_finished_at is None
                                                         or operation_finished_at <= self.cutoff)

    def disagreeing(self, health_disagreement: str, since: datetime | None) -> bool:
        """The tool and a health rule disagree (its own rule: it counts like Degraded)."""
        return bool(health_disagreement) and since is not None and since <= self.cutoff

    def holds(self, app: object) -> bool:
        """The whole rule for a row already loaded (a GitOpsApp, or anything with its fields)."""
        get = app.__dict__.get  # deferred fields read as unset, never loaded one by one
        return (
            self.out_of_sync(get("sync_status", ""), get("sync_since"))
            or self.unhealthy(get("health_status", ""), get("health_since"))
            or self.stuck(get("health_status", ""), get("health_since"), get("operation_phase", ""),
                          get("operation_started_at"))
            or self.sync_failed(get("operation_phase", ""), get("operation_finished_at"))
            or self.disagreeing(get("health_disagreement", ""), get("health_disagreement_since"))
        )

    # --- in queries -----------------------------------------------------------------

    @staticmethod
    def candidates_q() -> Q:
        """The half of the rule that does not depend on the clock: an app can need attention
        only in one of these states, so every part below implies it. A partial index over it
        (`GitOpsApp.Meta`) holds the few apps worth asking about, and a query for problems
        that adds it reads those rows instead of every application's (a fleet's table is
        mostly raw objects)."""
        return (Q(health_status__in=(*ATTENTION_HEALTH, PROGRESSING)) | Q(sync_status=OUT_OF_SYNC)
                | Q(operation_phase__in=(OPERATION_RUNNING, *OPERATION_FAILED)) | Q(health_disagreement__gt=""))

    def unhealthy_q(self, prefix: str = "") -> Q:
        """`prefix` reaches the app through a relation, e.g. "gitopsapp__" from its service links."""
        return Q(**{f"{prefix}health_status__in": ATTENTION_HEALTH, f"{prefix}health_since__lte": self.cutoff})

    def out_of_sync_q(self, prefix: str = "") -> Q:
        return Q(**{f"{prefix}sync_status": OUT_OF_SYNC, f"{prefix}sync_since__lte": self.cutoff})

    def stuck_q(self, prefix: str = "") -> Q:
        if self.stuck_at is None:
            return Q(pk__in=[])
        return Q(**{f"{prefix}health_status": PROGRESSING, f"{prefix}health_since__lte": self.stuck_at}) | Q(
            **{f"{prefix}operation_phase": OPERATION_RUNNING, f"{prefix}operation_started_at__lte": self.stuck_at}
        )

    def sync_failed_q(self, prefix: str = "") -> Q:
        finished = Q(**{f"{prefix}operation_finished_at__isnull": True}) | Q(
            **{f"{prefix}operation_finished_at__lte": self.cutoff})
        return Q(**{f"{prefix}operation_phase__in": OPERATION_FAILED}) & finished

    def disagreement_q(self, prefix: str = "") -> Q:
        return Q(**{f"{prefix}health_disagreement__gt": "", f"{prefix}health_disagreement_since__lte": self.cutoff})

    def q(self, prefix: str = "") -> Q:
        return (self.unhealthy_q(prefix) | self.out_of_sync_q(prefix) | self.stuck_q(prefix)
                | self.sync_failed_q(prefix) | self.disagreement_q(prefix))
