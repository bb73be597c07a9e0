"""Reading PostgreSQL `timestamptz` values at C speed.

Django (5.2, psycopg 3) reads every timestamptz through its own loader, a subclass of psycopg's
*pure Python* TimestamptzLoader (psycopg's C loader cannot be subclassed), which parses each
value with a regular expression and then replaces its tzinfo with the connection's time zone.
That costs about 8 µs a value: 6,250 applications' first sights made 50 ms of /delivery at
100,000 applications, and a full poll reads thousands of stored times (issue 40).

`FastTimestamptzLoader` keeps Django's meaning exactly and parses with `datetime.fromisoformat`
(C, under 1 µs): PostgreSQL writes a timestamptz as ISO 8601 wall time in the session's time
zone, and Django's loader keeps that wall time and sets its own `timezone` on it, which is what
`replace(tzinfo=...)` does here. What fromisoformat does not read (`infinity`, years before 1 or
after 9999, a DateStyle other than ISO) goes to Django's own loader, unchanged.

Installed on each new PostgreSQL connection (portal.kernel.changelog's app config hooks
`connection_created`). The class carries `timezone`, the attribute Django's `create_cursor`
compares before it registers its own loader on a cursor, so Django keeps this one.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

_LOADERS: dict[object, type] = {}


def _loader_for(timezone: tzinfo | None) -> type:
    """A loader class for Django's connection time zone, made once per zone."""
    if timezone in _LOADERS:
        return _LOADERS[timezone]
    from django.db.backends.postgresql.psycopg_any import BaseTzLoader

    class FastTimestamptzLoader(BaseTzLoader):  # type: ignore[misc, valid-type]
        def load(self, data: Any) -> datetime:
            text = bytes(data).decode("ascii", "replace")
            try:
                value = datetime.fromisoformat(text)
            except ValueError:
                return super().load(data)
            return value.replace(tzinfo=self.timezone)

    FastTimestamptzLoader.timezone = timezone
    _LOADERS[timezone] = FastTimestamptzLoader
    return FastTimestamptzLoader


def install(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created: read this PostgreSQL connection's timestamptz values with the fast loader."""
    if connection.vendor != "postgresql" or not getattr(connection, "connection", None):
        return
    adapters = getattr(connection.connection, "adapters", None)
    if adapters is None:  # psycopg2: it parses in C already
        return
    adapters.register_loader("timestamptz", _loader_for(connection.timezone))
