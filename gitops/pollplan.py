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

from gitops.clusterpoll import ClusterObjectVersions, ClusterPoll
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
from gitops.listing import Listing, health_digest_part, registered_instances
from gitops.models import GitOpsApp
from gitops.store import columns
from portal.kernel.catalog import revision as catalog_revision
from portal.kernel.catalog.models import Cluster

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
    # Read now, not from the caller's Cluster: that may be older than the previous poll. As SQL
    # text: a poll's bookkeeping statements (gitops.store.columns).
    rows = columns.fetch(_PREVIOUS, [cluster.pk])
    if not rows:
        return PreviousPoll({}, "", None)
    unavailable, digest, trusted_until, versions = rows[0]
    return PreviousPoll(columns.read(ClusterPoll, "unavailable", unavailable) or {}, digest or "",
                        columns.read(ClusterObjectVersions, "full_poll_trusted_until", trusted_until),
                        ObjectVersions.from_json(columns.read(ClusterObjectVersions, "versions", versions) or {}))


_PREVIOUS = """
    SELECT p."unavailable", p."listing_digest", v."full_poll_trusted_until", v."versions"
    FROM "catalog_cluster"
    LEFT JOIN "gitops_clusterpoll" p ON p."cluster_id" = "catalog_cluster"."id"
    LEFT JOIN "gitops_clusterobjectversions" v ON v."cluster_id" = "catalog_cluster"."id"
    WHERE "catalog_cluster"."id" = %s
"""


@dataclass(frozen=True)
class CatalogKey:
    """What decides the meaning of a cluster's objects besides the objects (gitops.derive.unchanged).

    `fixed` is what this poll cannot move: the catalog's revision (moved by every change of a
    service or a cluster: portal.kernel.catalog.revision), the health rules as the listing read
    them, and the cluster list its source answered. `instances` (this cluster's Argo CD
    instances) and `placed` (the apps another cluster's Argo CD placed here, whose workloads
    this poll links) its own write may move: a first poll records its instance."""

    fixed: tuple
    instances: tuple
    placed: tuple

    @classmethod
    def read(cls, cluster: Cluster, listing: Listing) -> CatalogKey:
        fixed = ((catalog_revision.current(),), *listing.rules_version, (repr(listing.argocd_clusters),))
        return cls(fixed, listing.instances, placed_here(cluster))

    def after_write(self, cluster: Cluster) -> CatalogKey:
        """The key once this poll has written: what its write may move read again."""
        return CatalogKey(self.fixed, registered_instances(cluster), placed_here(cluster))

    @property
    def digest(self) -> str:
        # Only this cluster's own instances (gitops.listing.registered_instances): a poll reads no
        # other (gitops.store.read.instance_of), and every other cluster's first poll records one,
        # which would make every poll of the fleet a full one while it is first swept.
        return catalog_digest([*self.fixed, *self.instances, self.placed])


def placed_here(cluster: Cluster) -> tuple:
    """How many apps another cluster's Argo CD placed here, and when the last of them changed."""
    ((count, last),) = columns.fetch(_PLACED, [cluster.pk, cluster.pk])
    return count, columns.read(GitOpsApp, "updated_at", last)


_PLACED = """
    SELECT COUNT("id"), MAX("updated_at") FROM "gitops_gitopsapp" WHERE "cluster_id" = %s AND "read_from_id" <> %s
"""


@dataclass(frozen=True)
class Plan:
    """What this poll does (see the module), and what it decided that from."""

    mode: Mode
    previous: PreviousPoll
    catalog: CatalogKey  # as this poll found it
    objects_part: str | None  # the listing's own digest, without the catalog (gitops.derive.unchanged)
    digest: str | None  # with the catalog
    # This listing's apps object by object; None when an object carries no resourceVersion.
    versions: ObjectVersions | None = None
    # PARTIAL: the apps (kind -> uids) to collect again; none when only their stamps moved.
    changed: dict[str, set[str]] = field(default_factory=dict)

    def settled(self, cluster: Cluster, listing: Listing, claims: dict[str, str], *, full: bool) -> str | None:
        """The digest to record, and `versions` completed, once this poll has written.

        The catalog's revision and the health rules are taken as this poll planned with them:
        what was collected was judged with those, and a change an admin made while the poll ran
        must make the next poll collect again, not be taken as already applied. What this poll's
        own write may move (an instance recorded, the placed apps' workloads linked) is read
        again: counted as a change, it would make every cluster's next poll a full one."""
        catalog = self.catalog.after_write(cluster)
        if self.versions is not None:
            if catalog != self.catalog:
                every, kinds_read = _digested(listing)
                self.versions.context = context_digest(every, kinds_read, listing.unavailable, catalog.digest) or ""
            self.versions.claims = claims
            if full:
                self.versions.meanings = meanings(listing.objects)
        return with_catalog(self.objects_part, catalog.digest)


def plan(cluster: Cluster, listing: Listing, at: datetime) -> Plan:
    """Unchanged, partial or full (see the module), from the listing and the previous poll."""
    previous = previous_poll(cluster)
    every, kinds_read = _digested(listing)
    objects_part = objects_digest(every, kinds_read, listing.unavailable)
    catalog = CatalogKey.read(cluster, listing)
    digest = with_catalog(objects_part, catalog.digest)
    if previous.unchanged(digest, at):
        return Plan(UNCHANGED, previous, catalog, objects_part, digest)
    apps_now = app_versions(listing.objects, listing.listed)
    versions = None if apps_now is None else ObjectVersions(
        context_digest(every, kinds_read, listing.unavailable, catalog.digest) or "", apps_now)
    # A listing with warnings skipped or cut objects: only a full poll says which.
    changed = previous.changed(versions, at) if not listing.warnings else None
    if changed is None or versions is None:
        return Plan(FULL, previous, catalog, objects_part, digest, versions)
    changed = versions.changed_in_meaning(previous.versions, listing.objects, changed)
    if not changed:
        versions.claims = previous.claims  # nothing collected: every claim is as it was
    return Plan(PARTIAL, previous, catalog, objects_part, digest, versions, changed)


def _digested(listing: Listing) -> tuple[dict[str, list[dict]], set[str]]:
    """Every listed object and the health inputs, and the kinds read: what the digests cover (a
    custom object's change must make the poll collect again)."""
    health_part = health_digest_part(listing)
    return listing.objects | health_part, listing.listed | set(health_part)
