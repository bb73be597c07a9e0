"""Parses of one file's text shared by every reader of a batch.

A repository's pin read (portal.delivery.current_pins) asks, for each of its hundreds of
applications, what that application builds and which pins it holds; a hundred applications
deploying one service read the same few files, and each asked PyYAML (its pure-Python
composer, which is what gives character offsets for splicing) to parse them again: 15,000
parses of 10 files for one repository of 1,250 applications. Inside `shared_parses()` each
parser runs once per distinct text; outside it nothing is kept, so a single read or an edit
behaves exactly as before. Inside `kept_parses()` (the preview's) the parses are also kept for
the next block, bounded, since a person previews the same commit's few files again and again.

What is shared is what the parsers return, read-only by contract: the positioned trees and
their sites are never changed after they are built (only their builders append), and each
caller gets its own list; plain documents (dicts a caller could change) are copied.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
Key = tuple[str, str, str]

_shared: ContextVar[MutableMapping[Key, object] | None] = ContextVar("shared_parses", default=None)


@contextmanager
def shared_parses() -> Iterator[None]:
    """Within the block, each parser below runs once per distinct text (a failure is not kept)."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)


class KeptParses(MutableMapping[Key, object]):
    """Parses kept from block to block, least recently used first out, within `max_chars` of the
    texts they were parsed from (what they hold in memory grows with that, several times over)."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._items: OrderedDict[Key, object] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __getitem__(self, key: Key) -> object:
        with self._lock:
            value = self._items[key]
            self._items.move_to_end(key)
            return value

    def __setitem__(self, key: Key, value: object) -> None:
        if len(key[2]) > self.max_chars:
            return  # larger than the whole bound: parsed every time
        with self._lock:
            if key in self._items:
                self._chars -= len(key[2])
            self._items[key] = value
            self._chars += len(key[2])
            while self._chars > self.max_chars:
                dropped, _ = self._items.popitem(last=False)
                self._chars -= len(dropped[2])

    def __delitem__(self, key: Key) -> None:
        with self._lock:
            del self._items[key]
            self._chars -= len(key[2])

    def __iter__(self) -> Iterator[Key]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


# A person's previews read the same few files of a commit again and again (forges.treecache keeps
# their texts); their parses are kept too. On the demo 0.1 MB of text held 0.8 MB of parses, so
# 2 MiB of text is about 17 MB per process: the builds of a few hundred applications.
KEPT = KeptParses(max_chars=2 * 1024 * 1024)


@contextmanager
def kept_parses() -> Iterator[None]:
    """`shared_parses`, with the parses kept for the next block too (a text is its own key, so
    what is kept can never be another text's: a new commit's changed file is parsed afresh).
    PORTAL_FORGE_TREE_CACHE_BYTES 0, which keeps no tree, keeps no parse either."""
    from django.conf import settings

    keep = int(getattr(settings, "PORTAL_FORGE_TREE_CACHE_BYTES", 1)) > 0
    token = _shared.set(KEPT if keep else {})
    try:
        yield
    finally:
        _shared.reset(token)


def _once(key: Key, parse: Callable[[], list[T]]) -> list[T] | None:
    """`parse()` once per block under `key`; None outside a block (the caller parses itself)."""
    cache = _shared.get()
    if cache is None:
        return None
    found = cache.get(key)
    if found is None:
        found = cache[key] = parse()
    return found  # type: ignore[return-value]


def parsed_list(parser: str, text: str, variant: str, parse: Callable[[], list[T]]) -> list[T]:
    """`parse()`'s list for `text`, once per block; each caller gets a list of its own."""
    found = _once((parser, variant, text), parse)
    return parse() if found is None else list(found)


def parsed_plain(parser: str, text: str, parse: Callable[[], list[T]]) -> list[T]:
    """`parse()`'s plain documents for `text`, once per block; each caller gets its own copy."""
    found = _once((parser, "", text), parse)
    return parse() if found is None else copy.deepcopy(found)
