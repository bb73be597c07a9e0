"""When a service the portal stands on is down: which failure is an outage, and how it is said.

A page or an API call that fails because PostgreSQL or the Celery broker cannot be reached is not
a bug in the portal and must not look like one ("Server Error (500)", `internal_error`): the person
or script is told what is down and that it is being retried, with a 503 and `Retry-After`, and the
answer carries no driver message (it can name hosts, ports and users). The portal needs no restart
afterwards: Django checks a kept database connection before using it again
(`conn_health_checks`), and Celery's producer reconnects on the next send.

One definition, used by the pages' error handler (portal/web/views/outage.py) and the API's
(portal/api/errors.py).
"""

from __future__ import annotations

from django.db import InterfaceError as DatabaseInterfaceError
from django.db import OperationalError as DatabaseOperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

DATABASE = "database"
BROKER = "broker"

# What the answer asks a client to wait: about the time a failover or a restart takes, short
# enough that a person looking at the page sees it come back by itself.
RETRY_AFTER_SECONDS = 15

_MESSAGES = {
    DATABASE: "The portal's database is unreachable; retrying.",
    BROKER: "The portal's task queue (its message broker) is unreachable; retrying.",
}


def outage_of(error: BaseException | None) -> str | None:
    """DATABASE or BROKER when `error` (or what caused it) says that service could not be reached,
    else None: any other failure stays an ordinary server error."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (DatabaseOperationalError, DatabaseInterfaceError)):
            return DATABASE
        if isinstance(error, (BrokerOperationalError, RedisConnectionError, RedisTimeoutError)):
            return BROKER
        error = error.__cause__ or error.__context__
    return None


def outage_message(which: str) -> str:
    return _MESSAGES[which]
