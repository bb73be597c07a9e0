"""Recognising a poll that can change nothing, right after the lists are parsed (pure).

Most polls of a steady fleet read exactly what the previous one read: the API server stamps
every write with a new `resourceVersion`, so equal (uid, resourceVersion) pairs for every
object of every listed kind mean equal objects. Such a poll need not run a collector, read
the store or write a row; it only records that the cluster was read.

What a poll stores depends on more than the cluster's objects: the catalog (which image is
which service, which cluster is which destination) and what could not be listed. The digest
covers those too, so adding a service or registering a cluster is seen by the next poll.
Whatever else a poll derives from the clock (sync-window verdicts) is refreshed by its own
task. As a backstop against anything the digest misses, a full poll runs at least every
`FULL_POLL_EVERY` whatever the digest says — at a point drawn after each full poll between half
of that and all of it (a quarter for a cluster's first; `full_poll_trusted_for`, kept as
`ClusterObjectVersions.full_poll_trusted_until`), because a fleet's clusters are first polled
within minutes of each other: with one fixed period every one of them would poll in full in
the same minutes of every period, and its polls would queue behind that burst.

Objects without a resourceVersion (manifest folders, hand-written snapshots) cannot be
recognised this way: a listing holding one has no digest and is always polled in full.

Most polls are not wholly unchanged, though: Argo CD rewrites `status.reconciledAt` (a new
resourceVersion) on every app about every 3 minutes, so a 60-second poll finds a third of the
apps changed. `ObjectVersions` recognises them one by one: the previous poll's
(uid, resourceVersion) per app object, what each app claims (the resources workloads are
mapped by), and one `context` digest of everything an app's row depends on besides its own
object — every other listed kind (AppProjects' sync windows, workloads, Flux sources, Alerts,
cluster Secrets), the health-rule inputs, what could not be listed, and the catalog. With the
same context and the same set of apps, only the apps whose resourceVersion moved are collected
again (`changed_apps`); anything else — an app added or deleted, any other kind changed, an app
whose claims changed — is a full poll. Conservative on purpose: a full poll is always right.

Most of those changed apps did not change at all, though, only their stamps: the new
resourceVersion and reconciledAt of a reconciliation that found nothing to do. Each app's
*meaning* — a digest of its object without those stamps, and without the fields no collector
reads (managedFields, kubectl's last-applied copy) — is kept beside its resourceVersion, and an
app whose meaning is as stored is not collected again: its row would be the one stored (the
collectors are pure, and the context is unchanged), down to the fingerprint the store compares
(`gitops.derive.app_changes.fingerprint` digests the same stamp-free object). Only its new
resourceVersion is kept.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from gitops.rawobjects import trimmed

# The backstop's period. A controller built on controller-runtime resyncs its whole cache every
# 10 hours by default (SyncPeriod), trusting watch events in between as this trusts resource
# versions; an hour keeps the backstop's cost small at 1,000 clusters (a full poll costs 15-30
# times an unchanged one: 130 full polls a minute at 10 minutes, 22 at an hour) while still
# mending within the hour anything the digest would miss.
FULL_POLL_EVERY = timedelta(hours=1)


def full_poll_trusted_for(cluster_id: int, full_at: datetime, *, first: bool = False) -> timedelta:
    """How long the full poll of a cluster made at `full_at` is built on: between half of
    `FULL_POLL_EVERY` and all of it, drawn from the cluster and the poll's time (reproducible,
    not random) and so spread over that range across clusters. A `first` full poll (nothing
    was kept before it: a new cluster, a fleet's first sweep, an upgrade) is trusted for a
    quarter of it to all of it: a first sweep is dense, and its echo is what must be spread."""
    seed = hashlib.blake2b(f"{cluster_id}@{full_at.isoformat()}".encode(), digest_size=8).digest()
    share = int.from_bytes(seed, "big") / 2**64
    shortest = 0.25 if first else 0.5
    return FULL_POLL_EVERY * (shortest + (1 - shortest) * share)


def listing_digest(objects: Mapping[str, list[dict]], listed: Iterable[str], unavailable: Mapping[str, str],
                   catalog_key: str) -> str | None:
    """One digest of what a poll would store, or None when an object carries no resourceVersion."""
    return with_catalog(objects_digest(objects, listed, unavailable), catalog_key)


def objects_digest(objects: Mapping[str, list[dict]], listed: Iterable[str],
                   unavailable: Mapping[str, str]) -> str | None:
    """The cluster's part of the digest (every listed object's uid and resourceVersion, and what
    could not be listed), hashed once per poll; None when an object carries no resourceVersion."""
    hasher = hashlib.blake2b(digest_size=16)
    for capability, why in sorted(unavailable.items()):
        hasher.update(f"\0u{capability}\0{why}".encode())
    for kind in sorted(listed):
        hasher.update(f"\0k{kind}".encode())
        pairs = []
        for item in objects.get(kind, ()):
            metadata = item.get("metadata")
            if not isinstance(metadata, dict):
                return None
            version = metadata.get("resourceVersion")
            if not isinstance(version, str) or not version:
                return None
            uid = metadata.get("uid")
            pairs.append(f"{uid if isinstance(uid, str) else ''}\0{version}")
        pairs.sort()
        hasher.update("\0".join(pairs).encode())
    return hasher.hexdigest()


def with_catalog(objects_part: str | None, catalog_key: str) -> str | None:
    """The whole digest: the cluster's part combined with the catalog's, which a poll may change."""
    if objects_part is None:
        return None
    return hashlib.blake2b(f"{objects_part}\0{catalog_key}".encode(), digest_size=16).hexdigest()


def catalog_digest(rows: Iterable[tuple[Any, ...]]) -> str:
    """A digest of catalog rows (services, clusters) that decide what a poll's rows mean."""
    hasher = hashlib.blake2b(digest_size=16)
    for row in rows:
        hasher.update(repr(row).encode())
        hasher.update(b"\0")
    return hasher.hexdigest()


# The kinds whose objects are recognised one by one; every other kind is part of the context.
APP_KINDS = ("Application", "Kustomization", "HelmRelease")

AppVersions = dict[str, dict[str, str]]  # app kind -> uid -> resourceVersion


def app_versions(objects: Mapping[str, list[dict]], listed: Iterable[str]) -> AppVersions | None:
    """(uid -> resourceVersion) of every listed app object, by kind; None when one has no uid or
    resourceVersion, or two share a uid (hand-written objects): those are always collected."""
    out: AppVersions = {}
    for kind in APP_KINDS:
        if kind not in listed:
            continue
        versions: dict[str, str] = {}
        for item in objects.get(kind, ()):
            metadata = item.get("metadata") if isinstance(item, dict) else None
            if not isinstance(metadata, dict):
                return None
            uid, version = metadata.get("uid"), metadata.get("resourceVersion")
            if not isinstance(uid, str) or not uid or not isinstance(version, str) or not version or uid in versions:
                return None
            versions[uid] = version
        out[kind] = versions
    return out


def context_digest(objects: Mapping[str, list[dict]], listed: Iterable[str], unavailable: Mapping[str, str],
                   catalog_key: str) -> str | None:
    """Everything an app's row depends on besides its own object: the other kinds' objects (uid and
    resourceVersion), which kinds were listed, what could not be, and the catalog."""
    others = {kind: items for kind, items in objects.items() if kind not in APP_KINDS}
    return with_catalog(objects_digest(others, listed, unavailable), catalog_key)


def claims_digest(resources: Iterable[Any]) -> str:
    """What an app claims (its resources or inventory, gitops.collectors.mapping), as one short digest."""
    text = "\0".join(sorted(repr(resource) for resource in resources))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def without_stamps(raw: Any) -> Any:
    """The object without the stamps of a reconciliation that changed nothing: its
    metadata.resourceVersion and status.reconciledAt (shallow copies only)."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    metadata, status = raw.get("metadata"), raw.get("status")
    if isinstance(metadata, dict) and "resourceVersion" in metadata:
        out["metadata"] = {k: v for k, v in metadata.items() if k != "resourceVersion"}
    if isinstance(status, dict) and "reconciledAt" in status:
        out["status"] = {k: v for k, v in status.items() if k != "reconciledAt"}
    return out


def meaning(obj: Mapping[str, Any]) -> str:
    """A digest of what the collectors can read of an app object: the object as stored
    (`gitops.rawobjects.trimmed`) without its stamps. Keys are not sorted: the API server writes
    them in the same order every time, and a digest that differs by order alone only costs a
    collector run.

    Serialised by marshal, a third of json.dumps' cost on an Argo CD Application: decoded JSON
    is all marshal's types. Its format 2 writes every value in full, never a reference to one
    written before, so the bytes depend on the object alone and not on which of its strings
    the decoder happened to share with other objects (format 3 and later would). What marshal
    refuses (a type a YAML loader made) is digested as JSON text instead."""
    stamp_free = without_stamps(trimmed(obj))
    try:
        data = marshal.dumps(stamp_free, _MARSHAL_WITHOUT_REFERENCES)
    except ValueError:
        data = json.dumps(stamp_free, separators=(",", ":"), default=str).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


_MARSHAL_WITHOUT_REFERENCES = 2


def meanings(objects: Mapping[str, list[dict]], only: Mapping[str, set[str]] | None = None) -> dict[str, str]:
    """uid -> `meaning` of every app object, or of those `only` names (kind -> uids)."""
    out: dict[str, str] = {}
    for kind in APP_KINDS:
        wanted = None if only is None else only.get(kind)
        if only is not None and not wanted:
            continue
        for item in objects.get(kind, ()):
            metadata = item.get("metadata") if isinstance(item, dict) else None
            uid = metadata.get("uid") if isinstance(metadata, dict) else None
            if isinstance(uid, str) and (wanted is None or uid in wanted):
                out[uid] = meaning(item)
    return out


@dataclass
class ObjectVersions:
    """What a poll stored, object by object: kept beside the cluster (`gitops.models.ClusterObjectVersions`)."""

    context: str
    apps: AppVersions
    claims: dict[str, str] = field(default_factory=dict)  # app uid -> claims_digest
    meanings: dict[str, str] = field(default_factory=dict)  # app uid -> meaning

    def as_json(self) -> dict[str, Any]:
        return {"context": self.context, "apps": self.apps, "claims": self.claims, "meanings": self.meanings}

    @classmethod
    def from_json(cls, value: Any) -> ObjectVersions | None:
        if not isinstance(value, dict) or not isinstance(value.get("context"), str):
            return None
        apps, claims, kept = value.get("apps"), value.get("claims"), value.get("meanings", {})
        if not isinstance(apps, dict) or not isinstance(claims, dict) or not isinstance(kept, dict):
            return None
        return cls(value["context"], apps, claims, kept)

    def changed_in_meaning(self, previous: ObjectVersions | None, objects: Mapping[str, list[dict]],
                           changed: dict[str, set[str]]) -> dict[str, set[str]]:
        """Of the `changed` apps (kind -> uids, from `changed_apps`), those whose objects changed
        in more than their stamps; every app's meaning is kept as of now. An app whose meaning
        the previous poll did not keep counts as changed."""
        before = previous.meanings if previous is not None else {}
        now = meanings(objects, changed)
        self.meanings = {**before, **now}
        out = {kind: {uid for uid in uids if uid not in before or before[uid] != now.get(uid)}
               for kind, uids in changed.items()}
        return {kind: uids for kind, uids in out.items() if uids}


def changed_apps(previous: ObjectVersions | None, current: ObjectVersions) -> dict[str, set[str]] | None:
    """The uids, by kind, of the apps whose objects changed since `previous`; None when the poll
    must collect everything (the context differs, an app came or went, or nothing is known)."""
    if previous is None or not previous.context or previous.context != current.context:
        return None
    if set(previous.apps) != set(current.apps):
        return None
    changed: dict[str, set[str]] = {}
    for kind, versions in current.apps.items():
        before = previous.apps[kind]
        if not isinstance(before, dict) or before.keys() != versions.keys():
            return None
        moved = {uid for uid, version in versions.items() if before[uid] != version}
        if any(uid not in previous.claims for uid in moved):
            return None
        if moved:
            changed[kind] = moved
    return changed
