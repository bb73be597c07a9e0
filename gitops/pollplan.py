"""What a poll does with what it listed, decided before anything is collected: its plan.

- unchanged: every object as the last full poll read it, with the same catalog, recently
  enough to trust (gitops.derive.unchanged): nothing is collected or written;
- partial: the same apps, context and catalog, only some apps' objects moved since the last
  poll: those apps alone are collected again (none when only their stamps moved);
- full: anything else — every kind collected and compared with the store.

A partial plan may still turn into a full poll once the store is read (gitops.polling).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.db.models import Count, Max

from gitops.derive.disappearance import held_keys
from gitops.derive.unchanged import (
    ObjectVersions,
    app_versions,
    catalog_digest,
    changed_apps,
    context_digest,
    meanings,
    objects_digest,
    with_catalog,
)
from gitops.listing import Listing, health_digest_part
from gitops.models import GitOpsApp, HealthRule
from portal.kernel.catalog import revision as catalog_revision
from portal.kernel.catalog.models import ArgoCDInstance, Cluster

Mode = Literal["unchanged", "partial", "full"]
UNCHANGED: Mode = "unchanged"
PARTIAL: Mode = "partial"
FULL: Mode = "full"


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


def previous_poll(cluster: Cluster) -> PreviousPoll:
    # Read now, not from the caller's Cluster: that may be older than the previous poll.
    row = Cluster.objects.filter(pk=cluster.pk).values(
        "poll__unavailable", "poll__listing_digest", "object_versions__full_poll_trusted_until",
        "object_versions__versions",
    ).first()
    if row is None:
        return PreviousPoll({}, "", None)
    return PreviousPoll(row["poll__unavailable"] or {}, row["poll__listing_digest"] or "",
                        row["object_versions__full_poll_trusted_until"],
                        ObjectVersions.from_json(row["object_versions__versions"] or {}))


@dataclass(frozen=True)
class Plan:
    """What this poll does (see the module), and what it decided that from."""

    mode: Mode
    previous: PreviousPoll
    objects_part: str | None  # the listing's own digest, without the catalog (gitops.derive.unchanged)
    digest: str | None  # with the catalog as this poll found it
    # This listing's apps object by object; None when an object carries no resourceVersion.
    versions: ObjectVersions | None = None
    # PARTIAL: the apps (kind -> uids) to collect again; none when only their stamps moved.
    changed: dict[str, set[str]] = field(default_factory=dict)

    def settled(self, cluster: Cluster, listing: Listing, claims: dict[str, str], *, full: bool) -> str | None:
        """The digest, and `versions` completed, as of after this poll's write: a poll may add to
        the catalog (an Argo CD instance, a discovered destination), and the next poll compares
        against the catalog as it is."""
        catalog = catalog_key(cluster, listing.argocd_clusters)
        if self.versions is not None:
            every, kinds_read = _digested(listing)
            self.versions.context = context_digest(every, kinds_read, listing.unavailable, catalog) or ""
            self.versions.claims = claims
            if full:
                self.versions.meanings = meanings(listing.objects)
        return with_catalog(self.objects_part, catalog)


def plan(cluster: Cluster, listing: Listing, at: datetime) -> Plan:
    """Unchanged, partial or full (see the module), from the listing and the previous poll."""
    previous = previous_poll(cluster)
    every, kinds_read = _digested(listing)
    objects_part = objects_digest(every, kinds_read, listing.unavailable)
    catalog = catalog_key(cluster, listing.argocd_clusters)
    digest = with_catalog(objects_part, catalog)
    if previous.unchanged(digest, at):
        return Plan(UNCHANGED, previous, objects_part, digest)
    apps_now = app_versions(listing.objects, listing.listed)
    versions = None if apps_now is None else ObjectVersions(
        context_digest(every, kinds_read, listing.unavailable, catalog) or "", apps_now)
    # A listing with warnings skipped or cut objects: only a full poll says which.
    changed = previous.changed(versions, at) if not listing.warnings else None
    if changed is None or versions is None:
        return Plan(FULL, previous, objects_part, digest, versions)
    changed = versions.changed_in_meaning(previous.versions, listing.objects, changed)
    if not changed:
        versions.claims = previous.claims  # nothing collected: every claim is as it was
    return Plan(PARTIAL, previous, objects_part, digest, versions, changed)


def _digested(listing: Listing) -> tuple[dict[str, list[dict]], set[str]]:
    """Every listed object and the health inputs, and the kinds read: what the digests cover (a
    custom object's change must make the poll collect again)."""
    health_part = health_digest_part(listing)
    return listing.objects | health_part, listing.listed | set(health_part)


def catalog_key(cluster: Cluster, argocd_clusters: list | None) -> str:
    """What decides the meaning of a cluster's objects besides the objects (gitops.derive.unchanged):
    which image is which service and which cluster is which destination (the catalog's revision,
    moved by every change of a service or a cluster: portal.kernel.catalog.revision), this cluster's
    Argo CD instance, its own cluster list when its source answered one, the health rules, and
    the apps another cluster's Argo CD placed here (their workloads are linked by this poll)."""
    # Only this cluster's own instance: a poll reads no other (gitops.store.read.instance_of), and
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
