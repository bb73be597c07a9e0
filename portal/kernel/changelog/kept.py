"""What is worth computing once for everybody until the data changes: kept under the data revision
(portal.kernel.changelog.marks) and the clock's bucket, in the `pages` cache.

The pages (portal/web/sharedpages.py) keep bodies, the API (portal/api/gitops_views.py) a list's
answer. The key holds the revision, so a change anybody commits is seen by the next request in
any process; and the bucket of `bucket_seconds`, because what is kept is also judged against the
clock (durations worded, grace periods passed, stale marks) and because polls' own bookkeeping
moves no revision. Two requests missing together both compute, which costs what they cost before.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.core.cache import caches

from portal.kernel.changelog.marks import data_revision

CACHE = "pages"
T = TypeVar("T")


def kept(scope: str, parts: Sequence[str], compute: Callable[[], T], *, bucket_seconds: int = 60) -> T:
    """`compute()`'s value for `scope` and `parts` (everything else that makes it differ), computed
    at most once per data revision and clock bucket while the cache keeps it."""
    bucket = str(int(time.time() // bucket_seconds))
    material = "\x1f".join([scope, data_revision(), str(bucket_seconds), bucket, *parts])
    key = f"kept:{scope}:" + hashlib.sha256(material.encode()).hexdigest()
    cache = caches[CACHE]
    value = cache.get(key)
    if value is None:
        value = compute()
        # Outlives its bucket by one: by then the key has moved on, and the entry is only room.
        cache.set(key, value, 2 * bucket_seconds)
    return value
