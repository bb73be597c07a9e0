"""The test database as a DATABASE_URL, for a subprocess the test starts (a worker, a command)
that must read the rows the test committed: PostgreSQL in CI, the SQLite file otherwise."""

from __future__ import annotations


def database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
