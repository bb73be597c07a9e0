"""The bookkeeping of a cluster's polls, in gitops beside the catalog's Cluster rather than on it.

`ClusterPoll` is how the polls of one cluster went (what /clusters, the API and the stale
badges show), the lock that keeps two workers off one cluster, and what the last full poll
read (gitops.derive.unchanged); `ClusterObjectVersions` is what the last poll stored object by object.
Only the poll writes them (`record`, `acquire`, `renew`, `release`), and the silent-agent check.

A poll can end without an outcome: its worker SIGKILLed, OOM-killed or cut off from the database
mid-poll. The lock is a lease for that reason (`gitops.pollease`): it lapses a few seconds after
the worker stops renewing it, and `poll_started_at` stays behind with no outcome of that time
(`last_poll_at` is the outcome's time, which is its poll's start). That is what shows the
cluster as "poll interrupted at …" (`ClusterPoll.state`) instead of fresh, and the next poll to
take the lock copies it into `interrupted_at`, kept until a poll succeeds. `last_ok_at`, the
time freshness derives from, is written only by a good outcome, so an interrupted poll never
renews it.

A cluster that was never polled has no ClusterPoll row, and every reader takes a missing row
as "never polled" (`select_related("poll")`, then `getattr(cluster, "poll", None)`): the row is
made in one place, by the first poll's lock (`ClusterPoll.acquire`). Not eagerly with the
cluster: clusters are made in many places (the admin, the fleet file, Argo CD destinations
found by a poll, benchmarks in bulk), and a destination that no poll reads needs none.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, models, transaction

from gitops.store import columns
from portal.kernel.catalog.models import Cluster
from portal.kernel.changelog.marks import mark_changed

SHOWN_WARNINGS = 20  # warnings kept for /clusters; all of them are counted
ERROR_CHARS = 4000


class ClusterPoll(models.Model):
    """How the polls of one cluster went: one row per cluster, from its first poll on."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, primary_key=True, related_name="poll")
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    stale_since = models.DateTimeField(null=True, blank=True)
    last_poll_seconds = models.FloatField(null=True, blank=True)
    # capability -> why it is unavailable ("no permission to list appprojects").
    unavailable = models.JSONField(default=dict, blank=True)
    poll_lock_until = models.DateTimeField(null=True, blank=True)
    poll_lock_token = models.CharField(max_length=64, blank=True)
    # When the poll that took the lock last began; no outcome of that time means it never ended.
    poll_started_at = models.DateTimeField(null=True, blank=True)
    # A poll that began then and ended without an outcome, until a poll succeeds (see above).
    interrupted_at = models.DateTimeField(null=True, blank=True)
    # What the last full poll read (gitops.derive.unchanged), so an identical read can skip the rest.
    listing_digest = models.CharField(max_length=32, blank=True)
    listing_full_at = models.DateTimeField(null=True, blank=True)
    # What the last full poll skipped or could only partly read, each naming its object (the
    # first few of `poll_warning_count`): a bad object never drops its cluster, and says so.
    poll_warning_count = models.PositiveIntegerField(default=0)
    poll_warnings = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"polls of cluster {self.cluster_id}"

    @classmethod
    def acquire(cls, cluster_id: int, at: datetime, seconds: float) -> Lock | None:
        """The cluster's poll lock until `at + seconds`, or None while another worker holds it:
        an atomic compare-and-set, so two workers (or a beat tick and a "poll now") never poll one
        cluster at once. A cluster's first poll makes its row here, holding the lock.

        Taking a lapsed lock whose poll left no outcome records that poll as interrupted, in the
        same statement (idempotent: a second taker finds `last_poll_at` unchanged and the same
        start, and writes the same time). That statement also says whether this take recovered
        one (`_recovered`, for the metric and the log)."""
        token = uuid.uuid4().hex
        until = at + timedelta(seconds=seconds)
        taken = columns.fetch(_TAKE, [columns.param(cls, "poll_lock_until", until), token,
                                      columns.param(cls, "poll_started_at", at), cluster_id,
                                      columns.param(cls, "poll_lock_until", at)])
        if taken:
            interrupted_at, last_poll_at = (columns.read(cls, name, value) for name, value in
                                            zip(("interrupted_at", "last_poll_at"), taken[0], strict=True))
            return Lock(token, recovered=_recovered(interrupted_at, last_poll_at))
        if cls.objects.filter(pk=cluster_id).exists():
            return None
        try:
            with transaction.atomic():  # a savepoint: a worker that made the row first holds the lock
                cls.objects.create(cluster_id=cluster_id, poll_lock_until=until, poll_lock_token=token,
                                   poll_started_at=at)
        except IntegrityError:
            return None
        return Lock(token)

    @classmethod
    def renew(cls, cluster_id: int, token: str, until: datetime) -> bool:
        """Hold our lock until `until`; False when it is no longer ours (it lapsed and was taken)."""
        return bool(cls.objects.filter(pk=cluster_id, poll_lock_token=token).update(poll_lock_until=until))

    @classmethod
    def release(cls, cluster_id: int, token: str) -> None:
        columns.execute(_RELEASE, [cluster_id, token])

    def state(self, now: datetime) -> PollState:
        """What /clusters and the API say of the cluster's polls, most pressing first: a poll that
        was interrupted (recorded, or its lease lapsed without an outcome), stale with an error,
        a poll under way (not "ok": the data is as old as the last good poll), ok, never polled."""
        unfinished = _unfinished(self.poll_started_at, self.last_poll_at)
        lapsed = self.poll_lock_until is None or self.poll_lock_until <= now
        if self.interrupted_at is not None:
            return PollState(INTERRUPTED, self.interrupted_at)
        if unfinished is not None and lapsed:
            return PollState(INTERRUPTED, unfinished)
        if self.stale_since is not None:
            return PollState(STALE, self.stale_since)
        if unfinished is not None:
            return PollState(POLLING, unfinished)
        if self.last_ok_at is not None:
            return PollState(OK, self.last_ok_at)
        return PollState(NEVER, None)


NEVER, OK, POLLING, STALE, INTERRUPTED = "never", "ok", "polling", "stale", "interrupted"

# The lock's compare-and-set (`ClusterPoll.acquire`). A poll began after the last outcome was
# written (an outcome's time is its poll's start) is unfinished, and its start becomes
# `interrupted_at`; SET reads the row as it was. RETURNING gives the row as it is now.
_TAKE = """
    UPDATE "gitops_clusterpoll"
    SET "poll_lock_until" = %s, "poll_lock_token" = %s, "poll_started_at" = %s,
        "interrupted_at" = CASE
            WHEN "poll_started_at" IS NOT NULL AND ("last_poll_at" IS NULL OR "last_poll_at" < "poll_started_at")
            THEN "poll_started_at" ELSE "interrupted_at" END
    WHERE "cluster_id" = %s AND ("poll_lock_until" IS NULL OR "poll_lock_until" <= %s)
    RETURNING "interrupted_at", "last_poll_at"
"""
_RELEASE = """
    UPDATE "gitops_clusterpoll" SET "poll_lock_until" = NULL, "poll_lock_token" = ''
    WHERE "cluster_id" = %s AND "poll_lock_token" = %s
"""


def _unfinished(started_at: datetime | None, last_poll_at: datetime | None) -> datetime | None:
    """The start of a poll that has written no outcome (the Python twin of `_TAKE`'s CASE)."""
    if started_at is not None and (last_poll_at is None or last_poll_at < started_at):
        return started_at
    return None


def _recovered(interrupted_at: datetime | None, last_poll_at: datetime | None) -> datetime | None:
    """Whether the take that left these values recovered an unfinished poll, and which: one it
    recorded now is later than the last outcome. One recorded by an earlier take is not: the poll
    that took over then either wrote an outcome since (of a later time) or never ended, and then
    this take recorded that one instead."""
    if interrupted_at is not None and (last_poll_at is None or interrupted_at > last_poll_at):
        return interrupted_at
    return None


@dataclass(frozen=True)
class Lock:
    """A poll's hold on its cluster: the token that renews and releases it, and the start of the
    interrupted poll this one takes over from, if any."""

    token: str
    recovered: datetime | None = None


@dataclass(frozen=True)
class PollState:
    """One of NEVER, OK, POLLING, STALE, INTERRUPTED, and since when (None for NEVER)."""

    kind: str
    at: datetime | None

    @property
    def fresh(self) -> bool:
        return self.kind == OK


class ClusterObjectVersions(models.Model):
    """What the last poll of a cluster stored, object by object (gitops.derive.unchanged.ObjectVersions),
    so the next collects again only the apps whose objects changed. Its own table, not a column
    of the cluster: about 175 bytes an app, it would be read with every row that selects its
    cluster (17 KB per row at 100 apps), and only the next poll of that cluster reads it."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, primary_key=True,
                                   related_name="object_versions")
    versions = models.JSONField(default=dict, blank=True)
    # Until when the last full poll is built on (gitops.derive.unchanged.full_poll_trusted_for).
    full_poll_trusted_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"object versions of cluster {self.cluster_id}"

    @classmethod
    def keep(cls, cluster_id: int, versions: dict, full_poll_trusted_until: datetime | None = None) -> None:
        """Replace what is kept for the cluster (one statement); a full poll also says until when
        it is trusted, a partial one leaves that as it was."""
        columns.execute(_KEEP_FULL if full_poll_trusted_until is not None else _KEEP, [
            cluster_id, columns.param(cls, "versions", versions),
            columns.param(cls, "full_poll_trusted_until", full_poll_trusted_until)])


_KEEP = """
    INSERT INTO "gitops_clusterobjectversions" ("cluster_id", "versions", "full_poll_trusted_until")
    VALUES (%s, %s, %s)
    ON CONFLICT ("cluster_id") DO UPDATE SET "versions" = EXCLUDED."versions"
"""
_KEEP_FULL = _KEEP + ', "full_poll_trusted_until" = EXCLUDED."full_poll_trusted_until"'


@dataclass(frozen=True)
class Outcome:
    """What one poll of a cluster found, as its ClusterPoll keeps it. A field left None is left
    as stored: an unchanged poll read nothing new, a partial one did not look at every object."""

    at: datetime
    seconds: float
    error: str = ""  # the cluster could not be read: its last good data stays, and it goes stale
    unavailable: dict[str, str] | None = None
    listing_digest: str | None = None
    full: bool = False  # every object was looked at: `listing_full_at` moves
    warnings: list[str] | None = None
    # Object by object (ClusterObjectVersions), with until when a full poll is trusted.
    versions: dict | None = None
    trusted_until: datetime | None = None


def record(cluster_id: int, outcome: Outcome) -> None:
    """Write a poll's outcome: the one writer of a cluster's poll status."""
    if outcome.error:
        # Stale since the first failure in a row, as stored (the caller's row may be older).
        assignments = ['"last_error" = %s', '"stale_since" = COALESCE("stale_since", %s)']
        params: list[object] = [outcome.error[:ERROR_CHARS], _param("stale_since", outcome.at)]
    else:
        assignments = ['"last_ok_at" = %s', "\"last_error\" = ''", '"stale_since" = NULL', '"interrupted_at" = NULL']
        params = [_param("last_ok_at", outcome.at)]
    fields: dict[str, object] = {"last_poll_at": outcome.at, "last_poll_seconds": outcome.seconds}
    if outcome.unavailable is not None:
        fields["unavailable"] = outcome.unavailable
    if outcome.listing_digest is not None:
        fields["listing_digest"] = outcome.listing_digest
    if outcome.full:
        fields["listing_full_at"] = outcome.at
    if outcome.warnings is not None:
        fields.update(poll_warning_count=len(outcome.warnings), poll_warnings=outcome.warnings[:SHOWN_WARNINGS])
    for name, value in fields.items():
        assignments.append(f'"{name}" = %s')  # the fields' names are their columns' (none sets db_column)
        params.append(_param(name, value))
    with transaction.atomic():
        # Pages kept until the data changes (portal.kernel.changelog) do not see this table, which
        # every poll writes; a poll that makes a cluster stale, or ends its being stale or
        # interrupted, changes what they show and says so.
        if outcome.error or columns.fetch(_FLAGGED, [cluster_id]):
            mark_changed()
        # The row exists: the poll holds its lock (`ClusterPoll.acquire`). Never moved back in time:
        # a poll presumed dead whose lease was taken over may still finish after its successor.
        written = columns.execute(
            f'UPDATE "gitops_clusterpoll" SET {", ".join(assignments)} '  # noqa: S608 - column names are constants
            'WHERE "cluster_id" = %s AND ("last_poll_at" IS NULL OR "last_poll_at" <= %s)',
            [*params, cluster_id, _param("last_poll_at", outcome.at)])
        if written and outcome.versions is not None:
            ClusterObjectVersions.keep(cluster_id, outcome.versions, outcome.trusted_until)


_FLAGGED = """
    SELECT 1 FROM "gitops_clusterpoll"
    WHERE "cluster_id" = %s AND ("stale_since" IS NOT NULL OR "interrupted_at" IS NOT NULL)
"""


def _param(name: str, value: object) -> object:
    return columns.param(ClusterPoll, name, value)
