"""Column types of the store's tables.

`UnsizedCharField`: a string whose length the portal keeps, declared to PostgreSQL without one.
Before a table's first ANALYZE, PostgreSQL estimates its rows from its size on disk and the
width its column types imply, and a `varchar(n)` implies a lot: n characters of up to 4 bytes
in UTF-8, halved and capped at 516 bytes (`get_typavgwidth`). GitOpsApp's 17 columns of
`varchar(253)` and `varchar(500)` made an estimated row of 8,840 bytes, more than a page
holds; the estimate of rows per page is an integer division (`table_block_relation_estimate_size`),
so it came to none, and a filled table of 100,000 applications was planned as one row until
autovacuum's ANALYZE came round. Every lookup by id then walked a whole index (137 ms for the 50
ids of a page, against 2 ms), and a join took the apps for the small side. Unsized, the same row
is estimated at 1,652 bytes and the table at its real 100,000 rows, with no statistics.

The length is still the field's `max_length`: forms and the admin validate it, and every row a
poll writes is cut to it (`gitops.store.column_limits`) or skipped where an identity would not
fit (`gitops.collectors`). SQLite, which never enforced a length, is declared as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

# Strings this short cost the estimate little (a varchar(32) counts 80 bytes) and are codes
# the portal writes itself (statuses, kinds): they keep their declared length.
DECLARED_UP_TO = 32


if TYPE_CHECKING:
    # Django is untyped here, so mypy reads its fields, and a model's values, as Any; typed as a
    # class of ours, a model's strings would read as this field instead.
    def UnsizedCharField(*args: Any, **kwargs: Any) -> Any: ...  # noqa: N802 - the class below
else:
    class UnsizedCharField(models.CharField):
        """A CharField over `DECLARED_UP_TO` characters, `varchar` without a length on PostgreSQL."""

        def db_type(self, connection: Any) -> str | None:
            if connection.vendor == "postgresql":
                return "varchar"
            return super().db_type(connection)
