"""Poll one cluster, in the order of its data flow.

1. the source lists every kind, capability by capability (`gitops.listing`);
2. the collectors (pure) turn the objects into rows (`gitops.collectors.collect`) — all of them,
   or, when only some apps' objects changed and nothing they depend on did, those apps alone
   (`gitops.unchanged`, `gitops.collectors.collect_apps`), the other rows kept as stored;
3. derive (pure) compares them with what the store holds (`gitops.stored`, `gitops.derive`);
4. the store writes what changed, in one transaction (`gitops.store`).
Steps 3 and 4 are `store_snapshot` below, so that rows collected elsewhere (tests, the
benchmarks) are stored the same way.

Reading happens outside any transaction (it may take seconds); storing is one
transaction. A capability that answers 403/404 is recorded as unavailable and only
what depends on it is skipped; a cluster that cannot be reached at all keeps its last
good data and is marked stale with the API's own message.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from gitops import kinds
from gitops.argocd_api import ArgoCDSource
from gitops.collectors import CLUSTER_SECRET_KIND, Collected, collect, collect_apps
from gitops.collectors.health import judge_apps
from gitops.collectors.workloads import WORKLOAD_KINDS, workload_row
from gitops.derive import derive
from gitops.derive.disappearance import Hold, held_keys, holds
from gitops.findings import derive_findings
from gitops.listing import (
    Listing,
    argocd_namespaces,
    health_digest_part,
    list_capabilities,
    portal_health_rules,
    read_health_inputs,
)
from gitops.models import ClusterObjectVersions, GitOpsApp, HealthRule
from gitops.platforms import PlatformError
from gitops.platforms.reading import CONNECTIONS as PLATFORM_CONNECTIONS
from gitops.platforms.reading import read_platform
from gitops.rows import AppRow, Snapshot, WorkloadRow, app_key
from gitops.sources import ClusterSource, KubeSource, ManifestSource, SourceError
from gitops.store import StoreResult, write
from gitops.stored import ClusterState, claimed_workloads, read_apps_state, read_state
from gitops.unchanged import (
    APP_KINDS,
    ObjectVersions,
    app_versions,
    catalog_digest,
    changed_apps,
    claims_digest,
    context_digest,
    full_poll_trusted_for,
    meanings,
    objects_digest,
    with_catalog,
)
from portal.kernel.catalog import revision as catalog_revision
from portal.kernel.catalog.models import ArgoCDInstance, Cluster
from portal.kernel.credentials import cluster_token
from portal.kernel.redaction import redact

log = logging.getLogger(__name__)

# Reasons that mean "this cluster could not be read at all", as opposed to one kind.
LOCK_SECONDS = 300
SHOWN_WARNINGS = 20  # warnings kept on the cluster for /clusters; all of them are counted


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
    those apps, when nothing they depend on changed (gitops.unchanged); None when this poll must
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


def _claimed_rows(cluster: Cluster, listing: Listing, state: ClusterState, rows: list[AppRow]) -> list[WorkloadRow]:
    """Rows of the workloads stored as deployed by these apps, each marked as theirs."""
    keys = {state.apps[app_key(*row.key)].id: row.key for row in rows}
    claimed = claimed_workloads(cluster, sorted(keys))
    if not claimed:
        return []
    wanted = {kind for kind, _, _, _ in claimed}
    # Every workload of a claimed kind and what a Rollout's workloadRef may name, by (kind, namespace, name).
    referenced = {
        (kind, str((obj.get("metadata") or {}).get("namespace") or ""), str((obj.get("metadata") or {}).get("name")
                                                                            or "")): obj
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


def _acquire(cluster: Cluster, at: datetime) -> str | None:
    """A per-cluster lock in the database: an atomic compare-and-set, so two workers
    (or a beat tick and a "poll now") never poll one cluster at once."""
    token = uuid.uuid4().hex
    taken = Cluster.objects.filter(
        Q(poll_lock_until__isnull=True) | Q(poll_lock_until__lte=at), pk=cluster.pk
    ).update(poll_lock_until=at + timedelta(seconds=LOCK_SECONDS), poll_lock_token=token)
    return token if taken else None


def _release(cluster: Cluster, token: str) -> None:
    Cluster.objects.filter(pk=cluster.pk, poll_lock_token=token).update(poll_lock_until=None, poll_lock_token="")


def poll(cluster: Cluster, *, source: ClusterSource | None = None, at: datetime | None = None) -> PollReport:
    started = time.monotonic()
    at = at or timezone.now()
    if source is None and cluster.connection == Cluster.Connection.NONE:
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped="not read: an Argo CD instance reports its apps")
    if source is None and cluster.connection == Cluster.Connection.AGENT:
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped="not read from here: its agent pushes it")
    token = _acquire(cluster, at)
    if token is None:
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped="another worker is polling this cluster")
    try:
        if source is None and cluster.connection in PLATFORM_CONNECTIONS:
            return _poll_platform(cluster, at, started)
        try:
            listing = _list(cluster, source)
            if listing.fatal is not None:
                return _mark_stale(cluster, f"{listing.fatal.reason}: {listing.fatal.message}", at, started)
            previous = _previous_poll(cluster)

            health_part = health_digest_part(listing)
            every, kinds_read = listing.objects | health_part, listing.listed | set(health_part)
            objects_part = objects_digest(every, kinds_read, listing.unavailable)
            catalog = _catalog_key(cluster, listing.argocd_clusters)
            digest = with_catalog(objects_part, catalog)
            if previous.unchanged(digest, at):
                return _record_unchanged(cluster, at, started)
            apps_now = app_versions(listing.objects, listing.listed)
            versions = None if apps_now is None else ObjectVersions(
                context_digest(every, kinds_read, listing.unavailable, catalog) or "", apps_now)
            changed = previous.changed(versions, at) if not listing.warnings else None
            if changed is not None and versions is not None:
                changed = versions.changed_in_meaning(previous.versions, listing.objects, changed)
                if not changed:
                    # Only stamps moved (Argo CD's reconciliation): nothing to collect or write.
                    versions.claims = previous.claims
                    return _record_changed(cluster, at, time.monotonic() - started, StoreResult(), digest,
                                           versions, listing.unavailable, 0)
            partial = collect_changed(cluster, listing, changed, previous.claims) if changed is not None else None
            if partial is not None:
                state, snapshot = partial
                changes = derive(state, snapshot, at)
                # Nothing changed that the store or its read models derive from (gitops.signals).
                stored = StoreResult(apps=changes.apps.seen) if changes.write_nothing() else write(changes)
                if stored.created or stored.updated:
                    _derive_findings(cluster, snapshot, at, uids={row.uid for row in snapshot.apps if row.uid})
                held: list[Hold] = []
                claims = previous.claims
            else:
                snapshot = collect_snapshot(listing)
                stored, held = _store_guarded(cluster, snapshot, at, held_before=held_keys(previous.unavailable))
                _derive_findings(cluster, snapshot, at)
                claims = {row.uid: claims_digest(row.resources) for row in snapshot.apps if row.uid}
            # Kept as of after this write: a poll may add to the catalog (an Argo CD instance,
            # a discovered destination), and the next poll compares against the catalog as it is.
            catalog = _catalog_key(cluster, listing.argocd_clusters)
            digest = with_catalog(objects_part, catalog)
            if versions is not None:
                versions.context = context_digest(every, kinds_read, listing.unavailable, catalog) or ""
                versions.claims = claims
                if partial is None:
                    versions.meanings = meanings(listing.objects)
        except Exception as exc:  # noqa: BLE001 - deliberately broad, see below
            # Whatever stopped this poll (a bug, an object no collector foresaw, the
            # database), the cluster must show as stale with a reason, never as "ok".
            # Its text is shown on /clusters: no credential of the cluster may reach it.
            log.exception("poll of %s failed unexpectedly", cluster.name)
            credential = cluster_token(cluster)
            message = redact(f"poll failed: {type(exc).__name__}: {exc}", [credential])
            return _mark_stale(cluster, message, at, started)
        seconds = time.monotonic() - started
        if partial is not None:
            return _record_changed(cluster, at, seconds, stored, digest, versions, listing.unavailable,
                                   len(snapshot.apps))
        unavailable = listing.unavailable | {hold.key: hold.message for hold in held}
        for hold in held:
            log.warning("%s: %s", cluster.name, hold.message)
        with transaction.atomic():
            Cluster.objects.filter(pk=cluster.pk).update(
                last_poll_at=at, last_ok_at=at, last_error="", stale_since=None, unavailable=unavailable,
                last_poll_seconds=seconds,
                # A held kind was not stored: the next poll must look again, whatever it reads.
                listing_digest="" if held or digest is None else digest, listing_full_at=at,
                poll_warning_count=len(snapshot.warnings), poll_warnings=snapshot.warnings[:SHOWN_WARNINGS],
            )
            ClusterObjectVersions.keep(
                cluster.pk, {} if held or versions is None else versions.as_json(),
                at + full_poll_trusted_for(cluster.pk, at, first=previous.versions is None))
        for warning in snapshot.warnings[:50]:
            log.warning("%s: %s", cluster.name, warning)
        return PollReport(cluster.name, ok=True, seconds=seconds, stored=stored, unavailable=unavailable,
                          warnings=snapshot.warnings)
    finally:
        _release(cluster, token)


@dataclass(frozen=True)
class PreviousPoll:
    """What the previous poll of a cluster recorded, read when this one has listed."""

    unavailable: dict[str, str]
    listing_digest: str
    trusted_until: datetime | None
    versions: ObjectVersions | None = None

    def trusted(self, at: datetime) -> bool:
        """The last full poll is recent enough to build on, and kept every kind it read."""
        return self.trusted_until is not None and at < self.trusted_until and not held_keys(self.unavailable)

    def unchanged(self, digest: str | None, at: datetime) -> bool:
        """This poll read what the last one stored, recently enough to trust it."""
        return bool(digest and digest == self.listing_digest and self.trusted(at))

    def changed(self, current: ObjectVersions | None, at: datetime) -> dict[str, set[str]] | None:
        """The apps (kind -> uids) whose objects alone changed since the last poll; None: collect all."""
        if current is None or not self.trusted(at):
            return None
        return changed_apps(self.versions, current)

    @property
    def claims(self) -> dict[str, str]:
        return self.versions.claims if self.versions is not None else {}


def _previous_poll(cluster: Cluster) -> PreviousPoll:
    # Read now, not from the caller's Cluster: that may be older than the previous poll.
    row = Cluster.objects.filter(pk=cluster.pk).values(
        "unavailable", "listing_digest", "object_versions__full_poll_trusted_until", "object_versions__versions"
    ).first()
    if row is None:
        return PreviousPoll({}, "", None)
    return PreviousPoll(row["unavailable"] or {}, row["listing_digest"],
                        row["object_versions__full_poll_trusted_until"],
                        ObjectVersions.from_json(row["object_versions__versions"] or {}))


def _catalog_key(cluster: Cluster, argocd_clusters: list | None) -> str:
    """What decides the meaning of a cluster's objects besides the objects (gitops.unchanged):
    which image is which service and which cluster is which destination (the catalog's revision,
    moved by every change of a service or a cluster: portal.kernel.catalog.revision), this cluster's
    Argo CD instance, its own cluster list when its source answered one, the health rules, and
    the apps another cluster's Argo CD placed here (their workloads are linked by this poll)."""
    # Only this cluster's own instance: a poll reads no other (gitops.stored.instance_of), and
    # every other cluster's first poll records one, which would make every poll of the fleet
    # a full one while it is first swept.
    instances = ArgoCDInstance.objects.filter(cluster_id=cluster.pk).order_by("pk").values_list(
        "pk", "name", "cluster_id", "namespace", "agent_mapping")
    rules = HealthRule.objects.order_by("pk").values_list("pk", "updated_at", "enabled")
    placed_here = GitOpsApp.objects.filter(cluster_id=cluster.pk).exclude(read_from_id=cluster.pk).aggregate(
        count=Count("id"), last=Max("updated_at")
    )
    return catalog_digest([(catalog_revision.current(),), *instances, *rules, (repr(argocd_clusters),),
                           (placed_here["count"], placed_here["last"])])


def _derive_findings(cluster: Cluster, snapshot: Snapshot, at: datetime, uids: set[str] | None = None) -> None:
    """Findings said again from what this poll stored (gitops.findings): of every app, or of the
    apps with `uids` only. A failure there is logged and named among the poll's warnings: the
    apps are stored all the same."""
    try:
        derive_findings(cluster.pk, at, uids)
    except Exception as exc:  # noqa: BLE001 - findings never cost a poll its data
        log.exception("findings of %s not derived", cluster.name)
        snapshot.warnings.append(f"findings not derived: {type(exc).__name__}: {str(exc)[:200]}")


def _record_unchanged(cluster: Cluster, at: datetime, started: float) -> PollReport:
    """A poll that read only what the store already holds: the cluster was read, nothing else."""
    seconds = time.monotonic() - started
    Cluster.objects.filter(pk=cluster.pk).update(
        last_poll_at=at, last_ok_at=at, last_error="", stale_since=None, last_poll_seconds=seconds
    )
    return PollReport(cluster.name, ok=True, seconds=seconds, unchanged=True)


def _record_changed(cluster: Cluster, at: datetime, seconds: float, stored: StoreResult, digest: str | None,
                    versions: ObjectVersions | None, unavailable: dict[str, str], collected: int) -> PollReport:
    """A poll that collected only the apps whose objects changed: the cluster was read, and what it
    stores now is known object by object. The last full poll's time and warnings stay: this one
    did not look at the other objects again."""
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(
            last_poll_at=at, last_ok_at=at, last_error="", stale_since=None, unavailable=unavailable,
            last_poll_seconds=seconds, listing_digest=digest or "",
        )
        ClusterObjectVersions.keep(cluster.pk, versions.as_json() if versions is not None else {})
    return PollReport(cluster.name, ok=True, seconds=seconds, stored=stored, unavailable=unavailable,
                      collected=collected)


def _list(cluster: Cluster, source: ClusterSource | None) -> Listing:
    """Step 1 through the given source, or the cluster's own, which is then closed."""
    owned = source is None
    try:
        source = source or source_for(cluster)
        namespace = ArgoCDInstance.objects.filter(cluster=cluster).order_by("id").values_list(
            "namespace", flat=True).first()
        listing = list_capabilities(source, argocd_namespace=namespace or "argocd")
        if listing.fatal is None:
            read_health_inputs(source, listing, argocd_namespaces(cluster, listing), portal_health_rules())
        return listing
    except SourceError as exc:
        return Listing(fatal=exc)
    finally:
        # A KubeSource holds a connection pool; one we built is ours to close.
        if owned and source is not None and hasattr(source, "close"):
            source.close()


def _mark_stale(cluster: Cluster, message: str, at: datetime, started: float) -> PollReport:
    """The cluster could not be read: keep its last good data, say why and since when."""
    Cluster.objects.filter(pk=cluster.pk).update(
        last_poll_at=at, last_error=message[:4000], stale_since=cluster.stale_since or at,
        last_poll_seconds=time.monotonic() - started,
    )
    log.warning("poll of %s failed, keeping its last good data: %s", cluster.name, message)
    return PollReport(cluster.name, ok=False, seconds=time.monotonic() - started, error=message)


def _poll_platform(cluster: Cluster, at: datetime, started: float) -> PollReport:
    """A Nomad, Docker or ECS cluster: its workloads only (gitops.platforms), stored as a
    Kubernetes cluster's workloads are; a read that fails keeps the last good data."""
    try:
        read = read_platform(cluster)
        snapshot = Snapshot(workloads=read.workloads, listed_kinds=read.listed,
                            warnings=read.warnings + [w for row in read.workloads for w in row.warnings])
        stored = store_snapshot(cluster, snapshot, at)
    except PlatformError as exc:
        return _mark_stale(cluster, str(exc), at, started)
    except Exception as exc:  # noqa: BLE001 - as for any poll: stale with a reason, never "ok"
        log.exception("poll of %s failed unexpectedly", cluster.name)
        credential = cluster_token(cluster)
        return _mark_stale(cluster, redact(f"poll failed: {type(exc).__name__}: {exc}", [credential]), at, started)
    seconds = time.monotonic() - started
    Cluster.objects.filter(pk=cluster.pk).update(
        last_poll_at=at, last_ok_at=at, last_error="", stale_since=None, unavailable=read.unavailable,
        last_poll_seconds=seconds, poll_warning_count=len(snapshot.warnings),
        poll_warnings=snapshot.warnings[:SHOWN_WARNINGS],
    )
    return PollReport(cluster.name, ok=True, seconds=seconds, stored=stored, unavailable=read.unavailable,
                      warnings=snapshot.warnings)


def store_snapshot(cluster: Cluster, snapshot: Snapshot, at: datetime) -> StoreResult:
    """Steps 3 and 4 of a poll, in turn: read what the store holds of the cluster (one query
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
