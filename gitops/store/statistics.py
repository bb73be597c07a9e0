"""Planner statistics for the store's tables once a first sweep has filled them.

The migrations create every table empty, and until an ANALYZE PostgreSQL plans a filled one on
guesses: its row count from its size and the width its column types imply (kept near the truth
by portal.kernel.fields, docs/postgresql-at-100k.md, "Fourth pass"), and every condition's share
of rows from fixed defaults. A status filter that matches nearly every application is then taken
for a rare one, and the text search ORs two status indexes into a bitmap of the whole table
(2.4 times its analyzed time). autovacuum analyzes a freshly filled table within a minute or
two; where it is off or slow (a new install's first sweep, a restore, a busy server), the pages
would plan on those guesses.

So after each thousand applications its polls create, a poll worker asks PostgreSQL whether one
of these tables holds data while it has never been analyzed, and analyzes those. It keeps asking:
the tables fill at different paces, and an earlier cut that stopped once the applications' table
had statistics left the workloads, versions and links unanalyzed for good on a server without
autovacuum (bench/fleet.py --no-analyze, 1,000 clusters: PostgreSQL spent 232 s of CPU a sweep).
Asking is one read of pg_class per thousand new applications, and a steady fleet creates none.
ANALYZE reads a sample (30,000 rows), takes no lock that stops reads or writes, and two workers
doing it at once only wait for each other.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection

from gitops.models import Finding, GitOpsApp, RunningVersion, StateChange, VersionChange, Workload

log = logging.getLogger(__name__)

# A table smaller than this is planned well enough on any statistics (a few hundred applications).
FILLED_BYTES = 4 * 2**20
CHECK_EVERY_CREATED = 1000  # applications created by this process's polls between two checks
_created = 0


def note_created(apps: int) -> list[str]:
    """A poll created `apps` applications: check (`ensure`) when a thousand have come since the
    last check. The tables analyzed."""
    global _created
    if apps <= 0:
        return []
    _created += apps
    if _created < CHECK_EVERY_CREATED:
        return []
    _created = 0
    try:
        return ensure()
    except DatabaseError:  # statistics are a help to the pages, never a reason to fail a poll
        log.warning("could not check the store's planner statistics", exc_info=True)
        return []


def _tables() -> list[str]:
    models = (GitOpsApp, GitOpsApp.services.through, RunningVersion, Workload, StateChange, VersionChange, Finding)
    return [model._meta.db_table for model in models]


def ensure() -> list[str]:
    """Analyze the store's tables that are filled but were never analyzed; the tables analyzed."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.reltuples, pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = ANY(%s)"
            " AND c.relkind = 'r' AND c.relnamespace = to_regnamespace(current_schema())", [_tables()])
        found = {name: (tuples, size) for name, tuples, size in cursor.fetchall()}
        stale = sorted(name for name, (tuples, size) in found.items() if tuples <= 0 and size >= FILLED_BYTES)
        for name in stale:
            cursor.execute(f'ANALYZE "{name}"')  # a name from this module's own models
    if stale:
        log.info("analyzed %s: filled, but never analyzed until then", ", ".join(stale))
    return stale


def forget() -> None:
    """Start counting again (tests: each test's database starts empty)."""
    global _created
    _created = 0
