"""Shared set-up for benchmarks: Django on a throw-away test database (SQLite by default,
PostgreSQL when DATABASE_URL says so), and a percentile helper."""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")


@contextmanager
def bench_database(tree: Path = ROOT) -> Iterator[str]:
    """`tree`: the checkout whose code to measure (another one, e.g. an older commit, for a
    before/after figure): put ahead of this one and of the editable install."""
    sys.path.insert(0, str(tree))
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    # Its own database, so a benchmark never collides with a test run on the same server.
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_portal_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield connection.vendor
    finally:
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
