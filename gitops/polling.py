"""Poll one cluster, in the order of its data flow.

1. the source lists every kind, capability by capability (`gitops.listing`);
2. the plan: unchanged, partial or full (`gitops.pollplan`), from what was listed and what the
   previous poll kept;
3. the collectors (pure) turn the objects into rows (`gitops.collectors.collect`) — all of them,
   or, in a partial poll, the changed apps alone (`gitops.collectors.collect_apps`), the other
   rows kept as stored;
4. derive (pure) compares them with what the store holds (`gitops.store.read`, `gitops.derive`);
5. the store writes what changed, in one transaction (`gitops.store`);
6. the outcome is written, in one place (`gitops.clusterpoll.record`).
Steps 4 and 5 are `store_snapshot` below, so that rows collected elsewhere (tests, the
benchmarks) are stored the same way.

Reading happens outside any transaction (it may take seconds); storing is one
transaction. A capability that answers 403/404 is recorded as unavailable and only
what depends on it is skipped; a cluster that cannot be reached at all keeps its last
good data and is marked stale with the API's own message.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from gitops import kinds
from gitops.clusterpoll import ClusterPoll, Outcome, record
from gitops.collectors import CLUSTER_SECRET_KIND, Collected, collect, collect_apps
from gitops.collectors.custom_health import judge_apps
from gitops.collectors.workloads import WORKLOAD_KINDS, workload_row
from gitops.derive.cluster_changes import derive
from gitops.derive.disappearance import Hold, held_keys, holds
from gitops.derive.unchanged import APP_KINDS, claims_digest, full_poll_trusted_for
from gitops.listing import (
    Listing,
    argocd_namespaces,
    list_capabilities,
    portal_health_rules,
    read_health_inputs,
    registered_instances,
)
from gitops.platforms import PlatformError
from gitops.platforms.reading import CONNECTIONS as PLATFORM_CONNECTIONS
from gitops.platforms.reading import read_platform
from gitops.pollease import Lease
from gitops.pollplan import PARTIAL, UNCHANGED, Plan, plan
from gitops.rawobjects import as_dict, as_str
from gitops.rows import AppRow, Snapshot, WorkloadRow, app_key
from gitops.sources import ClusterSource, KubeSource, ManifestSource, SourceError
from gitops.sources.argocd_api import ArgoCDSource
from gitops.sources.base import REASONS
from gitops.sources.decoding import collector_paused
from gitops.store import statistics
from gitops.store.read import ClusterState, claimed_workloads, read_apps_state, read_state
from gitops.store.write import StoreResult, write
from portal.kernel.catalog.models import Cluster
from portal.kernel.credentials import cluster_token
from portal.kernel.metrics import (
    POLL_FAILURES,
    POLL_INTERRUPTED,
    POLL_SECONDS,
    POLL_SKIPPED,
    SKIPPED_LOCKED,
    SKIPPED_NOT_READ_HERE,
    reason_of,
)
from portal.kernel.redaction import redact

log = logging.getLogger(__name__)

# Connections whose clusters this portal never reads itself.
NOT_READ_HERE = {
    Cluster.Connection.NONE: "not read: an Argo CD instance reports its apps",
    Cluster.Connection.AGENT: "not read from here: its agent pushes it",
}


@dataclass
class PollReport:
    cluster: str
    ok: bool
    seconds: float
    stored: StoreResult | None = None
    error: str = ""
    unavailable: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: str = ""
    unchanged: bool = False  # every object as the last full poll read it: nothing collected or written
    collected: int | None = None  # app objects collected again when only they changed; None: a full poll


def source_for(cluster: Cluster) -> ClusterSource:
    """The source a Cluster row describes; secrets only from the environment."""
    timeout = (min(5.0, settings.PORTAL_KUBE_TIMEOUT), settings.PORTAL_KUBE_TIMEOUT)
    kind = cluster.connection
    if kind == Cluster.Connection.MANIFESTS:
        folder = Path(cluster.manifests_path)
        if not folder.is_absolute():
            folder = Path(settings.BASE_DIR) / folder
        if not folder.is_dir():
            raise SourceError("not_found", f"manifest folder {cluster.manifests_path!r} does not exist")
        return ManifestSource(folder, name=cluster.name)
    if kind == Cluster.Connection.IN_CLUSTER:
        return KubeSource.in_cluster(name=cluster.name, timeout=timeout)
    if kind in (Cluster.Connection.API, Cluster.Connection.ARGOCD_API):
        token = cluster_token(cluster)
        if not token:
            raise SourceError(
                "unauthorized", f"no token: environment variable {cluster.token_env or '(none named)'} is empty"
            )
        if kind == Cluster.Connection.ARGOCD_API:
            return ArgoCDSource(
                cluster.api_url, token, ca_data=cluster.ca_data or None, ca_file=cluster.ca_file or None,
                verify=cluster.verify_tls, name=cluster.name, timeout=timeout,
            )
        return KubeSource.from_url(
            cluster.api_url, token, ca_data=cluster.ca_data or None, ca_file=cluster.ca_file or None,
            verify=cluster.verify_tls, name=cluster.name, timeout=timeout,
        )
    return KubeSource.from_kubeconfig(
        cluster.kubeconfig_path or None, cluster.kubeconfig_context or None, name=cluster.name, timeout=timeout
    )


@dataclass(frozen=True)
class _Run:
    """One poll under way: of which cluster, as of when, and since when it runs (for its seconds)."""

    cluster: Cluster
    at: datetime
    started: float

    def seconds(self) -> float:
        return time.monotonic() - self.started


def poll(cluster: Cluster, *, source: ClusterSource | None = None, at: datetime | None = None,
         lease: Lease | None = None) -> PollReport:
    """Read one cluster and store what changed, holding its lock (one worker at a time): through
    `source` when given (a pushed snapshot, a test's), else the cluster's own. Whatever happens, the
    outcome is written: ok, or stale with a reason. With a `lease` (the poll task's) the lock is
    short and renewed while the poll runs (gitops.pollease); without, it is held for the longest a
    poll may run."""
    run = _Run(cluster, at or timezone.now(), time.monotonic())
    if source is None and cluster.connection in NOT_READ_HERE:
        POLL_SKIPPED.labels(reason=SKIPPED_NOT_READ_HERE).inc()
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped=NOT_READ_HERE[cluster.connection])
    lock = ClusterPoll.acquire(cluster.pk, run.at, lease.seconds if lease else lock_seconds())
    if lock is None:
        POLL_SKIPPED.labels(reason=SKIPPED_LOCKED).inc()
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped="another worker is polling this cluster")
    if lock.recovered is not None:
        POLL_INTERRUPTED.labels(cluster=cluster.name).inc()
        log.warning("the poll of %s begun at %s never ended (its worker stopped): polling it again",
                    cluster.name, lock.recovered.isoformat(timespec="seconds"))
    try:
        with lease.kept(cluster.pk, lock.token, run.at) if lease else nullcontext(), collector_paused():
            return _poll_held(run, source)
    finally:
        try:
            ClusterPoll.release(cluster.pk, lock.token)
        except DatabaseError:
            # The outcome may be written already; the lock lapses by itself (its lease, or the cap).
            log.warning("could not release the poll lock of %s; it lapses by itself", cluster.name, exc_info=True)


def lock_seconds() -> float:
    """The longest a poll's lock lives: a little past the poll task's hard time limit, after which
    no poll is running any more (Celery kills it)."""
    return settings.PORTAL_POLL_TIME_LIMIT + settings.PORTAL_POLL_LEASE_SECONDS


def _poll_held(run: _Run, source: ClusterSource | None) -> PollReport:
    """The poll proper, its lock held."""
    cluster = run.cluster
    try:
        if source is None and cluster.connection in PLATFORM_CONNECTIONS:
            return _poll_platform(run)
        return _poll_objects(run, source)
    except SoftTimeLimitExceeded:
        # Celery's soft limit: stop here, say so, and give the lock back before the hard limit.
        log.warning("poll of %s stopped at its time limit", cluster.name)
        limit = settings.PORTAL_POLL_SOFT_TIME_LIMIT
        return _finish(run, Outcome(run.at, run.seconds(),
                                    error=f"timeout: the poll ran past its time limit of {limit:g} s and was stopped"))
    except Exception as exc:  # noqa: BLE001 - deliberately broad, see below
        # Whatever stopped this poll (a bug, an object no collector foresaw, the
        # database), the cluster must show as stale with a reason, never as "ok".
        # Its text is shown on /clusters: no credential of the cluster may reach it.
        log.exception("poll of %s failed unexpectedly", cluster.name)
        credential = cluster_token(cluster)
        return _finish(run, Outcome(run.at, run.seconds(),
                                    error=redact(f"poll failed: {type(exc).__name__}: {exc}", [credential])))


def _poll_objects(run: _Run, source: ClusterSource | None) -> PollReport:
    """A Kubernetes or Argo CD cluster: list, plan, then collect and store as planned."""
    listing = _list(run.cluster, source)
    if listing.fatal is not None:
        return _finish(run, Outcome(run.at, run.seconds(), error=f"{listing.fatal.reason}: {listing.fatal.message}"))
    planned = plan(run.cluster, listing, run.at)
    if planned.mode == UNCHANGED:
        # Only what the store already holds was read: the cluster was read, nothing else.
        return _finish(run, Outcome(run.at, run.seconds()), unchanged=True)
    if planned.mode == PARTIAL:
        if not planned.changed:
            # Only stamps moved (Argo CD's reconciliation): nothing to collect or write.
            return _finish(run, _partial_outcome(run, listing, planned, planned.digest), stored=StoreResult(),
                           collected=0)
        report = _poll_partial(run, listing, planned)
        if report is not None:
            return report
    return _poll_full(run, listing, planned)


def _poll_partial(run: _Run, listing: Listing, planned: Plan) -> PollReport | None:
    """Only the apps whose objects changed collected and stored; None when the store shows that
    this poll must collect everything after all (`collect_changed`)."""
    partial = collect_changed(run.cluster, listing, planned.changed, planned.previous.claims)
    if partial is None:
        return None
    state, snapshot = partial
    changes = derive(state, snapshot, run.at)
    # Nothing changed that the store or its read models derive from (gitops.signals).
    stored = StoreResult(apps=changes.apps.seen) if changes.write_nothing() else write(changes)
    digest = planned.settled(run.cluster, listing, planned.previous.claims, full=False)
    return _finish(run, _partial_outcome(run, listing, planned, digest), stored=stored,
                   collected=len(snapshot.apps))


def _partial_outcome(run: _Run, listing: Listing, planned: Plan, digest: str | None) -> Outcome:
    """A partial poll's outcome: the cluster was read, and what it stores now is known object by
    object. The last full poll's time and warnings stay: this one did not look at the other
    objects again."""
    versions = planned.versions.as_json() if planned.versions is not None else {}
    return Outcome(run.at, run.seconds(), unavailable=listing.unavailable, listing_digest=digest or "",
                   versions=versions)


def _poll_full(run: _Run, listing: Listing, planned: Plan) -> PollReport:
    """Every kind collected and stored behind the mass-disappearance guard (the store's
    `cluster_stored` lets the layers above, findings among them, derive from it)."""
    cluster, at = run.cluster, run.at
    snapshot = collect_snapshot(listing)
    stored, held = _store_guarded(cluster, snapshot, at, held_before=held_keys(planned.previous.unavailable))
    claims = {row.uid: claims_digest(row.resources) for row in snapshot.apps if row.uid}
    digest = planned.settled(cluster, listing, claims, full=True)
    for hold in held:
        log.warning("%s: %s", cluster.name, hold.message)
    # A held kind was not stored: the next poll must look again, whatever it reads.
    versions = planned.versions.as_json() if planned.versions is not None and not held else {}
    trusted_for = full_poll_trusted_for(cluster.pk, at, first=planned.previous.versions is None)
    report = _finish(run, Outcome(
        at, run.seconds(), unavailable=listing.unavailable | {hold.key: hold.message for hold in held},
        listing_digest="" if held or digest is None else digest, full=True, warnings=snapshot.warnings,
        versions=versions, trusted_until=at + trusted_for,
    ), stored=stored)
    for warning in snapshot.warnings[:50]:
        log.warning("%s: %s", cluster.name, warning)
    return report


def _finish(run: _Run, outcome: Outcome, *, stored: StoreResult | None = None, collected: int | None = None,
            unchanged: bool = False) -> PollReport:
    """Write the outcome (gitops.clusterpoll.record, the one writer of a cluster's poll status)
    and report it."""
    record(run.cluster.pk, outcome)
    POLL_SECONDS.labels(cluster=run.cluster.name).observe(outcome.seconds)
    if outcome.error:
        POLL_FAILURES.labels(cluster=run.cluster.name, reason=reason_of(outcome.error, REASONS)).inc()
        log.warning("poll of %s failed, keeping its last good data: %s", run.cluster.name, outcome.error)
        return PollReport(run.cluster.name, ok=False, seconds=outcome.seconds, error=outcome.error)
    if stored is not None:
        statistics.note_created(stored.created)  # a first sweep's tables get planner statistics
    return PollReport(run.cluster.name, ok=True, seconds=outcome.seconds, stored=stored,
                      unavailable=outcome.unavailable or {}, warnings=outcome.warnings or [], unchanged=unchanged,
                      collected=collected)


def collect_snapshot(listing: Listing) -> Snapshot:
    """The collectors' rows for everything listed (pure), custom resources judged by their rules."""
    collected = collect(_with_alerts(listing))
    judge_apps(collected.apps, listing.health)
    return Snapshot(
        apps=collected.apps,
        projects=collected.projects,
        workloads=collected.workloads,
        listed_kinds=listing.listed,
        warnings=listing.warnings + collected.warnings,
        argocd_clusters=_argocd_clusters(listing, collected),
    )


def _with_alerts(listing: Listing) -> dict[str, list[dict]]:
    if "Alert" not in listing.objects and kinds.FLUX_NOTIFICATIONS not in listing.unavailable:
        return {**listing.objects, "Alert": []}  # notification-controller not installed: no Alert notifies
    return listing.objects


def _argocd_clusters(listing: Listing, collected: Collected) -> list | None:
    if listing.argocd_clusters is not None:
        return listing.argocd_clusters
    return collected.argocd_clusters if CLUSTER_SECRET_KIND in listing.listed else None


def collect_changed(cluster: Cluster, listing: Listing, changed: dict[str, set[str]], claims: dict[str, str]
                    ) -> tuple[ClusterState, Snapshot] | None:
    """The rows of only the apps whose objects changed (kind -> uids), and what the store holds of
    those apps, when nothing they depend on changed (gitops.derive.unchanged); None when this poll must
    collect everything after all: an app the store does not know by its uid, one the collectors
    skip, or one whose claims on workloads changed (which may move a workload to another app).

    A changed app's running versions come from the workloads it deployed at the last poll: no
    workload changed and no claim did, so those are the ones it deploys now. They alone are
    collected again (the app's `running` is derived from them, as in a full poll)."""
    uids = set().union(*changed.values())
    state = read_apps_state(cluster, listing.listed & set(APP_KINDS), uids)
    if len(state.apps) != len(uids):
        return None
    collected = collect_apps(_with_alerts(listing), changed)
    if len(collected.apps) != len(uids) or any(app_key(*row.key) not in state.apps for row in collected.apps):
        return None
    if any(claims_digest(row.resources) != claims.get(row.uid) for row in collected.apps):
        return None
    judge_apps(collected.apps, listing.health)
    snapshot = Snapshot(apps=collected.apps, workloads=_claimed_rows(cluster, listing, state, collected.apps),
                        listed_kinds=state.listed_kinds, argocd_clusters=_argocd_clusters(listing, collected))
    return state, snapshot


def _namespace_name(obj: dict) -> tuple[str, str]:
    """An object's namespace and name, read before the collectors' guards: "" for both when its
    metadata is not a mapping (the collectors name such an object in a warning)."""
    metadata = as_dict(obj.get("metadata"))
    return as_str(metadata.get("namespace")), as_str(metadata.get("name"))


def _claimed_rows(cluster: Cluster, listing: Listing, state: ClusterState, rows: list[AppRow]) -> list[WorkloadRow]:
    """Rows of the workloads stored as deployed by these apps, each marked as theirs."""
    keys = {state.apps[app_key(*row.key)].id: row.key for row in rows}
    claimed = claimed_workloads(cluster, sorted(keys))
    if not claimed:
        return []
    wanted = {kind for kind, _, _, _ in claimed}
    # Every workload of a claimed kind and what a Rollout's workloadRef may name, by (kind, namespace, name).
    referenced = {
        (kind, *_namespace_name(obj)): obj
        for kind in WORKLOAD_KINDS if kind in wanted or ("Rollout" in wanted and kind != "Rollout")
        for obj in listing.objects.get(kind, []) if isinstance(obj, dict)
    }
    out = []
    for kind, namespace, name, app_id in claimed:
        obj = referenced.get((kind, namespace, name))
        row = workload_row(obj, kind, referenced) if obj is not None else None
        if row is not None:
            row.app_key = keys[app_id]
            out.append(row)
    return out


def _list(cluster: Cluster, source: ClusterSource | None) -> Listing:
    """Step 1 through the given source, or the cluster's own, which is then closed."""
    owned = source is None
    try:
        source = source or source_for(cluster)
        instances = registered_instances(cluster)
        listing = list_capabilities(source, argocd_namespace=instances[0].namespace if instances else "argocd")
        listing.instances = instances
        if listing.fatal is None:
            read_health_inputs(source, listing, argocd_namespaces(listing), portal_health_rules())
        return listing
    except SourceError as exc:
        return Listing(fatal=exc)
    finally:
        # A KubeSource holds a connection pool; one we built is ours to close.
        if owned and source is not None and hasattr(source, "close"):
            source.close()


def _poll_platform(run: _Run) -> PollReport:
    """A Nomad, Docker or ECS cluster: its workloads only (gitops.platforms), stored as a
    Kubernetes cluster's workloads are; a read that fails keeps the last good data."""
    try:
        read = read_platform(run.cluster)
    except PlatformError as exc:
        return _finish(run, Outcome(run.at, run.seconds(), error=str(exc)))
    snapshot = Snapshot(workloads=read.workloads, listed_kinds=read.listed,
                        warnings=read.warnings + [w for row in read.workloads for w in row.warnings])
    stored = store_snapshot(run.cluster, snapshot, run.at)
    return _finish(run, Outcome(run.at, run.seconds(), unavailable=read.unavailable, warnings=snapshot.warnings),
                   stored=stored)


def store_snapshot(cluster: Cluster, snapshot: Snapshot, at: datetime) -> StoreResult:
    """Steps 4 and 5 of a poll, in turn: read what the store holds of the cluster (one query
    per table, outside the write), derive the changes (pure), write them (one transaction).
    Rows are taken as given: the mass-disappearance guard belongs to polls (`poll`)."""
    state = read_state(cluster, snapshot.listed_kinds)
    return write(derive(state, snapshot, at))


def _store_guarded(cluster: Cluster, snapshot: Snapshot, at: datetime, held_before: set[str]
                   ) -> tuple[StoreResult, list[Hold]]:
    """`store_snapshot` behind the mass-disappearance guard: an app kind whose list came back
    (nearly) empty is left as stored, unless the previous poll already held it (confirmed)."""
    state = read_state(cluster, snapshot.listed_kinds)
    held = holds(state, snapshot, held_before=held_before)
    state.listed_kinds = state.listed_kinds - {hold.kind for hold in held}
    return write(derive(state, snapshot, at)), held
