"""Trees and file texts of commits already read, kept in this process and bounded in bytes.

A preview reads the whole tree at the followed branch and the few files the application builds,
while a person waits; reading them again for every click cost the forge's round trips each time
(1-3.7 s on the demo, more on a large repository). A commit's tree never changes, nor does a
blob's text, so after one cheap call for the branch's head (`Forge.branch_head`) a commit read
before costs nothing: trees are kept by (repository, commit SHA) and texts by (repository, blob
SHA), so a new commit on the branch re-reads its tree and only the files it changed.

Why in-process rather than Django's cache: what is kept is immutable, so no process ever needs
another's invalidation, and a hit costs a dictionary look-up, not a Redis round trip and the
unpickling of a whole tree (thousands of entries) on every preview. Each process holds at most
PORTAL_FORGE_TREE_CACHE_MB (the least recently used commit or text goes first; 0 keeps nothing),
counted from the texts' and paths' lengths plus a fixed allowance per object, an estimate of the
memory they hold rather than a measurement.

What is kept is what the forge answered for a token the portal holds: the same reads every
person with the viewer role sees through the preview, never a credential.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forges.forge import TreeEntry

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Per kept object beyond its text: a TreeEntry with its strings, or a str and its key.
_ENTRY_BYTES = 300
_TEXT_BYTES = 120

Key = tuple[str, ...]


class TreeCache:
    """Least recently used trees and texts within `max_bytes` (None: the setting's, asked each time)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self._max = max_bytes
        self._items: OrderedDict[Key, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def max_bytes(self) -> int:
        if self._max is not None:
            return self._max
        from django.conf import settings

        return int(getattr(settings, "PORTAL_FORGE_TREE_CACHE_BYTES", DEFAULT_MAX_BYTES))

    @property
    def size(self) -> int:
        """Bytes kept now (the estimate the bound is checked against)."""
        return self._bytes

    def tree(self, repository: Key, commit: str, read: Callable[[], Sequence[TreeEntry]]) -> tuple[TreeEntry, ...]:
        """The tree of `commit`: kept, or `read()` and kept."""
        if self.max_bytes <= 0:
            return tuple(read())  # off: nothing kept is used either (a before/after in one process)
        entries = self._get(("tree", *repository, commit))
        if entries is None:
            entries = tuple(read())
            self._put(("tree", *repository, commit), entries,
                      sum(_ENTRY_BYTES + len(e.path) for e in entries))  # type: ignore[attr-defined]
        return entries  # type: ignore[return-value]

    def text(self, repository: Key, blob: str, read: Callable[[], str]) -> str:
        """The text of the blob `blob`: kept, or `read()` and kept. An empty `blob` (a forge that
        names none) is never kept."""
        if not blob or self.max_bytes <= 0:
            return read()
        text = self._get(("blob", *repository, blob))
        if text is None:
            text = read()
            self._put(("blob", *repository, blob), text, _TEXT_BYTES + len(text))
        return text  # type: ignore[return-value]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def _get(self, key: Key) -> object | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def _put(self, key: Key, value: object, size: int) -> None:
        limit = self.max_bytes
        if limit <= 0 or size > limit:
            return  # larger than the whole bound (or the cache is off): read every time
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > limit:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped


# The process's one cache: every forge client of every repository reads through it.
commits = TreeCache()
