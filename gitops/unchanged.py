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
`FULL_POLL_EVERY` whatever the digest says.

Objects without a resourceVersion (manifest folders, hand-written snapshots) cannot be
recognised this way: a listing holding one has no digest and is always polled in full.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

FULL_POLL_EVERY = timedelta(minutes=10)


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
