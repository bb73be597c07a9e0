"""Poll one cluster, in the order of its data flow.

1. the source lists every kind, capability by capability (`list_capabilities`);
2. the collectors (pure) turn the objects into rows (`gitops.collectors.collect`);
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
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from gitops import kinds
from gitops.collectors import collect
from gitops.derive import derive
from gitops.derive.disappearance import Hold, held_keys, holds
from gitops.rows import Snapshot
from gitops.sources import ClusterSource, KubeSource, ManifestSource, SourceError
from gitops.store import StoreResult, write
from gitops.stored import read_state
from portal.catalog.models import Cluster
from portal.redaction import redact

log = logging.getLogger(__name__)

# Reasons that mean "this cluster could not be read at all", as opposed to one kind.
_CLUSTER_WIDE = {"unreachable", "timeout", "unauthorized"}
_CAPABILITY_WORDS = {
    kinds.ARGOCD: "Argo CD applications",
    kinds.ARGOCD_PROJECTS: "sync windows",
    kinds.FLUX_KUSTOMIZE: "Flux Kustomizations",
    kinds.FLUX_HELM: "Flux HelmReleases",
    kinds.FLUX_SOURCES: "Flux sources",
    kinds.WORKLOADS: "workloads",
    kinds.ROLLOUTS: "Argo Rollouts",
}
LOCK_SECONDS = 300


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
    if kind == Cluster.Connection.API:
        token = os.environ.get(cluster.token_env, "") if cluster.token_env else ""
        if not token:
            raise SourceError(
                "unauthorized", f"no token: environment variable {cluster.token_env or '(none named)'} is empty"
            )
        return KubeSource.from_url(
            cluster.api_url, token, ca_data=cluster.ca_data or None, ca_file=cluster.ca_file or None,
            verify=cluster.verify_tls, name=cluster.name, timeout=timeout,
        )
    return KubeSource.from_kubeconfig(
        cluster.kubeconfig_path or None, cluster.kubeconfig_context or None, name=cluster.name, timeout=timeout
    )


@dataclass
class Listing:
    """What a source answered: objects by kind, the kinds listed completely, and what failed."""

    objects: dict[str, list[dict]] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    unavailable: dict[str, str] = field(default_factory=dict)  # capability -> why, in words
    warnings: list[str] = field(default_factory=list)
    fatal: SourceError | None = None  # what stopped the whole read (None when part was read)


def list_capabilities(source: ClusterSource) -> Listing:
    """Every kind, capability by capability; a cluster-wide failure stops the read."""
    listing = Listing()
    failures: list[SourceError] = []
    for capability in kinds.CAPABILITIES:
        for spec in kinds.kinds_for(capability):
            try:
                result = source.list_objects(spec)
            except SourceError as exc:
                failures.append(exc)
                if exc.reason in _CLUSTER_WIDE:
                    return Listing(fatal=exc)
                _record_unavailable(listing, capability, spec.resource, exc)
                continue
            listing.objects.setdefault(spec.kind, []).extend(result.items)
            listing.listed.add(spec.kind)
            listing.warnings.extend(result.warnings)
    if not listing.listed and failures:
        listing.fatal = failures[0]
    return listing


def _record_unavailable(listing: Listing, capability: str, resource: str, exc: SourceError) -> None:
    what = _CAPABILITY_WORDS.get(capability, capability)
    if exc.reason == "forbidden":
        listing.unavailable[capability] = f"{what} unavailable: no permission to list {resource}"
    elif exc.reason == "not_found":
        # Flux sources are many kinds; a missing Bucket CRD is not news.
        if capability != kinds.FLUX_SOURCES:
            listing.unavailable[capability] = f"{what} unavailable: {resource} is not installed"
    else:
        listing.unavailable[capability] = f"{what} not updated: {exc.message}"


def collect_snapshot(listing: Listing) -> Snapshot:
    """The collectors' rows for everything listed (pure)."""
    collected = collect(listing.objects)
    return Snapshot(
        apps=collected.apps,
        projects=collected.projects,
        workloads=collected.workloads,
        listed_kinds=listing.listed,
        warnings=listing.warnings + collected.warnings,
    )


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
    token = _acquire(cluster, at)
    if token is None:
        return PollReport(cluster.name, ok=False, seconds=0.0, skipped="another worker is polling this cluster")
    try:
        try:
            listing = _list(cluster, source)
            if listing.fatal is not None:
                return _mark_stale(cluster, f"{listing.fatal.reason}: {listing.fatal.message}", at, started)
            snapshot = collect_snapshot(listing)
            stored, held = _store_guarded(cluster, snapshot, at)
        except Exception as exc:  # noqa: BLE001 - deliberately broad, see below
            # Whatever stopped this poll (a bug, an object no collector foresaw, the
            # database), the cluster must show as stale with a reason, never as "ok".
            # Its text is shown on /clusters: no credential of the cluster may reach it.
            log.exception("poll of %s failed unexpectedly", cluster.name)
            credential = os.environ.get(cluster.token_env, "") if cluster.token_env else ""
            message = redact(f"poll failed: {type(exc).__name__}: {exc}", [credential])
            return _mark_stale(cluster, message, at, started)
        seconds = time.monotonic() - started
        unavailable = listing.unavailable | {hold.key: hold.message for hold in held}
        for hold in held:
            log.warning("%s: %s", cluster.name, hold.message)
        Cluster.objects.filter(pk=cluster.pk).update(
            last_poll_at=at, last_ok_at=at, last_error="", stale_since=None, unavailable=unavailable,
            last_poll_seconds=seconds,
        )
        for warning in snapshot.warnings[:50]:
            log.warning("%s: %s", cluster.name, warning)
        return PollReport(cluster.name, ok=True, seconds=seconds, stored=stored, unavailable=unavailable,
                          warnings=snapshot.warnings)
    finally:
        _release(cluster, token)


def _list(cluster: Cluster, source: ClusterSource | None) -> Listing:
    """Step 1 through the given source, or the cluster's own, which is then closed."""
    owned = source is None
    try:
        source = source or source_for(cluster)
        return list_capabilities(source)
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


def store_snapshot(cluster: Cluster, snapshot: Snapshot, at: datetime) -> StoreResult:
    """Steps 3 and 4 of a poll, in turn: read what the store holds of the cluster (one query
    per table, outside the write), derive the changes (pure), write them (one transaction).
    Rows are taken as given: the mass-disappearance guard belongs to polls (`poll`)."""
    state = read_state(cluster, snapshot.listed_kinds)
    return write(derive(state, snapshot, at))


def _store_guarded(cluster: Cluster, snapshot: Snapshot, at: datetime) -> tuple[StoreResult, list[Hold]]:
    """`store_snapshot` behind the mass-disappearance guard: an app kind whose list came back
    (nearly) empty is left as stored, unless the previous poll already held it (confirmed)."""
    state = read_state(cluster, snapshot.listed_kinds)
    # What the previous poll wrote, read now: the caller's Cluster may be older than that poll.
    previous = Cluster.objects.filter(pk=cluster.pk).values_list("unavailable", flat=True).first()
    held = holds(state, snapshot, held_before=held_keys(previous))
    state.listed_kinds = state.listed_kinds - {hold.kind for hold in held}
    return write(derive(state, snapshot, at)), held
