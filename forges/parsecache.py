"""Parses of one file's text shared by every reader of a batch.

A repository's pin read (portal.delivery.gitpins) asks, for each of its hundreds of
applications, what that application builds and which pins it holds; a hundred applications
deploying one service read the same few files, and each asked PyYAML (its pure-Python
composer, which is what gives character offsets for splicing) to parse them again: 15,000
parses of 10 files for one repository of 1,250 applications. Inside `shared_parses()` each
parser runs once per distinct text; outside it nothing is kept, so a single read or an edit
behaves exactly as before.

What is shared is what the parsers return, read-only by contract: the positioned trees and
their sites are never changed after they are built (only their builders append), and each
caller gets its own list; plain documents (dicts a caller could change) are copied.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_shared: ContextVar[dict[tuple[str, str, str], object] | None] = ContextVar("shared_parses", default=None)


@contextmanager
def shared_parses() -> Iterator[None]:
    """Within the block, each parser below runs once per distinct text (a failure is not kept)."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)


def _once(key: tuple[str, str, str], parse: Callable[[], list[T]]) -> list[T] | None:
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
