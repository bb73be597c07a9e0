"""The data revision: a value that changes, across every process, exactly when a transaction that
changed what the pages show commits. Pages that are the same for every viewer are kept between two
such changes (portal/web/sharedpages.py).

Every write statement is seen, not only model saves: bulk_create, queryset update() and delete(),
raw SQL — the poll's store writes in bulk, and a forgotten explicit call would leave pages stale.
A database execute wrapper (installed on each new connection) looks at each statement's first
words; an INSERT, UPDATE or DELETE of a table that pages read adds one DataChange row in the same
transaction (once per transaction and savepoint). The revision is read as the count, highest id and
sum of ids of the rows: a row becomes visible exactly when its writer commits, so a page never
reads a new revision before the data it names, and two writers committing in any order both move it
(a counter row would make concurrent pollers queue on its lock; a sequence moves before commit).
Old rows are pruned as new ones come, so the read stays a few hundred rows.

Not watched: the bookkeeping every poll writes even when nothing changed (the poll's outcome row,
the object versions it remembers, registry and feed poll times), and kept previews. What pages derive from those is
worded against the clock, which the shared pages' key bounds to the minute; a poll that changes an
outcome pages show calls `mark_changed` itself.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

# Tables whose rows pages show: the catalog, what polls store, releases, delivery, findings.
_WRITE = re.compile(
    r'\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+[`"]?((?:catalog|gitops|releases|delivery|forges)_\w+)', re.IGNORECASE
)
UNWATCHED = frozenset({
    "gitops_clusterpoll", "gitops_clusterobjectversions", "catalog_catalogrevision", "catalog_agenttoken",
    "delivery_registrypoll", "releases_chartpoll", "releases_feedstatus",
    # Kept previews of pull requests (portal.delivery.preview_jobs): no kept page shows them.
    "delivery_previewresult",
})
TABLE = "changelog_datachange"
PRUNE_EVERY = 256  # rows; the read then sums at most about twice this many
PRUNE_SQL = f"DELETE FROM {TABLE} WHERE id <= "  # noqa: S608 - constants
_MARKED = "_portal_changelog_marked"
_READY = "_portal_changelog_ready"


def watch_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created: every statement of this connection passes `_watch` from now on."""
    if _watch not in connection.execute_wrappers:
        connection.execute_wrappers.append(_watch)


def _watch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    result = execute(sql, params, many, context)
    if isinstance(sql, str):
        written = _WRITE.match(sql)
        if written is not None and written.group(1).lower() not in UNWATCHED:
            mark_changed(context["connection"].alias)
    return result


def mark_changed(using: str = DEFAULT_DB_ALIAS) -> None:
    """Record that what pages show changed, in the caller's transaction (so it counts when, and
    only if, that commits). Once per transaction and savepoint: a poll writing a thousand rows
    adds one."""
    connection = connections[using]
    where = (id(connection.atomic_blocks[0]), tuple(connection.savepoint_ids)) if connection.in_atomic_block else None
    if where is not None and getattr(connection, _MARKED, None) == where:
        return
    if not _ready(connection):
        return
    with connection.cursor() as cursor:
        # RETURNING: PostgreSQL, and SQLite from 3.35 (Django 5.2 needs 3.31; Python 3.11 ships newer).
        cursor.execute(f"INSERT INTO {TABLE} DEFAULT VALUES RETURNING id")  # noqa: S608 - a constant
        new_id = cursor.fetchone()[0]
        if new_id % PRUNE_EVERY == 0:
            cursor.execute(PRUNE_SQL + "%s", [new_id - 2 * PRUNE_EVERY])
    setattr(connection, _MARKED, where)


def data_revision(using: str = DEFAULT_DB_ALIAS) -> str:
    """The revision now, as this connection sees it (its own transaction's changes included)."""
    connection = connections[using]
    setattr(connection, _MARKED, None)  # a change after this read must move the revision again
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), MAX(id), SUM(id) FROM {TABLE}")  # noqa: S608
        count, highest, total = cursor.fetchone()
    return f"{count}.{highest or 0}.{total or 0}"


def _ready(connection: Any) -> bool:
    """False until the table exists (during `migrate`, before this app's migration ran). Asked once
    per connection that finds it; a connection that did not find it asks again next time."""
    if getattr(connection, _READY, False):
        return True
    with connection.cursor() as cursor:
        found = TABLE in connection.introspection.table_names(cursor)
    setattr(connection, _READY, found)
    return found
