"""The catalog's revision (models.CatalogRevision): read by every poll, moved by every save or
delete of a Service or a Cluster.

A save of a cluster that changes none of what its objects mean (its `enabled` switch, an admin
note) moves it too: each such save costs every cluster one full poll, and they are rare. Polls
write their own status elsewhere (gitops.ClusterPoll) and move nothing.

Only save() and delete() send the signals that move it. A writer that bypasses them — a
queryset update() of what a cluster's objects mean (a service's name, image or aliases; a
cluster's name, api_url, environment, connection, discovered flag or Argo CD aliases), a
bulk_create(), raw SQL — must call `bump()` in its transaction, or polls go on building on the
old catalog. None in the portal does: the admin saves and deletes row by row (its delete
action sends the signals), the fleet file uses update_or_create(), discovery create()."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from portal.kernel.catalog.models import CatalogRevision

ROW = 1  # the one row


def current() -> int:
    """The revision now; 0 before the catalog's first change. As SQL text: every poll reads it, and
    the ORM's compile cost several times the statement (gitops.store.columns says why that counts)."""
    with connection.cursor() as cursor:
        cursor.execute(_CURRENT, [ROW])
        row = cursor.fetchone()
    return row[0] if row else 0


_CURRENT = 'SELECT "revision" FROM "catalog_catalogrevision" WHERE "id" = %s'


def bump() -> None:
    """One more change: an UPDATE of the one row, which holds its lock to the end of the writer's
    transaction, so two writers never count as one."""
    if CatalogRevision.objects.filter(pk=ROW).update(revision=F("revision") + 1):
        return
    try:
        with transaction.atomic():  # a savepoint: a writer that raced us here must not spoil the caller's
            CatalogRevision.objects.create(pk=ROW, revision=1)
    except IntegrityError:
        CatalogRevision.objects.filter(pk=ROW).update(revision=F("revision") + 1)


def on_catalog_change(sender: Any, **kwargs: Any) -> None:
    """post_save / post_delete of Service and Cluster (connected in CatalogConfig.ready); a
    fixture's rows (loaddata) count as any other save."""
    bump()
