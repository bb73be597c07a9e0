"""Fixtures shared by the suite. Service checks first: in CI (PORTAL_REQUIRE_SERVICES=1)
the run fails at once unless the tests really use PostgreSQL and Redis."""

from __future__ import annotations

import os
import socketserver

import pytest

pytest_plugins = [
    "tests.fixtures.browser",
    "tests.fixtures.celery_state",
    "tests.fixtures.fleet",
    "tests.fixtures.teams",
]


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    # The suite creates and logs in users by the hundred; the production hasher (PBKDF2,
    # ~0.4 s a password here) made that a minute of every run. Tests of the portal's own
    # secrets (API tokens, webhook signatures) do not go through these hashers.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Every HTTP server a test runs in this process (the fakes of tests/fakes, the live server)
    # writes an answer's headers and its body in two writes. With Nagle's algorithm on, the body
    # waits for the client to acknowledge the headers, which Linux delays up to 40 ms: a property
    # test polling a fake Kubernetes API 600 times spent 24 of its 31 s waiting so (2026-12-07).
    # Production servers (gunicorn) set TCP_NODELAY themselves.
    socketserver.StreamRequestHandler.disable_nagle_algorithm = True
    _scan_static_files_once()
    if os.environ.get("PORTAL_REQUIRE_SERVICES") != "1":
        return

    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        raise pytest.UsageError(f"PORTAL_REQUIRE_SERVICES=1 but the database engine is {engine}")
    if not os.environ.get("REDIS_URL"):
        raise pytest.UsageError("PORTAL_REQUIRE_SERVICES=1 but REDIS_URL is not set")


def _scan_static_files_once() -> None:
    """Django's test client builds the middleware chain anew for every Client, so every test
    that makes a request had WhiteNoise list and stat the 200-odd static files again through the
    finders: 50 ms a Client, the largest single cost of the API tests (2026-12-07, cProfile of
    tests/api/test_gitops.py). A server process builds its chain once. Here the scan is kept per
    process and per setting it depends on, and each new middleware gets the same files."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    scan = WhiteNoiseMiddleware.add_files_from_finders
    scanned: dict[tuple, dict] = {}

    def add_files_from_finders(self: WhiteNoiseMiddleware) -> None:
        key = (self.static_prefix, self.max_age, self.charset, self.allow_all_origins,
               tuple(map(str, settings.STATICFILES_DIRS)), tuple(settings.INSTALLED_APPS))
        if key not in scanned:
            before = dict(self.files)
            scan(self)
            scanned[key] = {url: file for url, file in self.files.items() if before.get(url) is not file}
        self.files.update(scanned[key])

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Each xdist worker's test database is a copy of the template the controller migrated (tests/template_db.py)."""
    from django.conf import settings

    from tests.template_db import ENV

    if os.environ.get(ENV):
        settings.DATABASES["default"].setdefault("TEST", {})["TEMPLATE"] = os.environ[ENV]


def pytest_report_header(config: pytest.Config) -> list[str]:
    from django.conf import settings

    db = settings.DATABASES["default"]
    where = db.get("HOST") or db.get("NAME")
    return [
        f"portal database: {db['ENGINE'].rsplit('.', 1)[-1]} ({where})",
        f"portal celery broker: {settings.CELERY_BROKER_URL.split('://', 1)[0]}",
    ]


from collections.abc import Iterator  # noqa: E402 - kept with the fixture that needs it

from tests.fakes.kube_emulator import KubeEmulator  # noqa: E402


@pytest.fixture
def kube_emulator() -> Iterator[KubeEmulator]:
    """A started in-process Kubernetes API emulator (tests/fakes/kube_emulator.py); stopped after."""
    with KubeEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def _no_trees_from_another_test() -> Iterator[None]:
    """Each test reads its forge fake afresh: the fakes' commits are content-addressed, so two tests
    holding the same files would otherwise share the process's cached trees (forges.treecache)
    and a test counting tree reads would see the other's (and parses, kept by text, likewise)."""
    from forges.pins.parsecache import KEPT
    from forges.treecache import commits

    commits.clear()
    KEPT.clear()
    yield
    commits.clear()
    KEPT.clear()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    # Printed even under -q, so a CI log shows which database and broker the tests used.
    for line in pytest_report_header(config):
        terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _no_shared_page_from_another_test():
    """Each test starts with no kept page body (portal/web/sharedpages.py): the data revision
    starts again with each test's database, so a body kept by an earlier test could match it."""
    from django.core.cache import caches

    caches["pages"].clear()


@pytest.fixture(autouse=True)
def _counted_queries_draw_pages_anew(monkeypatch):
    """A test that counts a page's queries (CaptureQueriesContext) means the drawing of the page,
    whose count must not grow with the fleet; a body kept from an earlier request of the same test
    would count nothing and pass for any code. tests/web/test_shared_pages.py counts a kept body's
    queries its own way."""
    from django.core.cache import caches
    from django.test.utils import CaptureQueriesContext

    enter = CaptureQueriesContext.__enter__

    def entering(self):
        caches["pages"].clear()
        return enter(self)

    monkeypatch.setattr(CaptureQueriesContext, "__enter__", entering)


@pytest.fixture(autouse=True)
def _counted_queries_leave_out_the_changelog_prune(monkeypatch):
    """The changelog prunes its old rows when a new row's id is a multiple of PRUNE_EVERY
    (portal.kernel.changelog.marks): once in 256 writing transactions, in whichever one the
    sequence, shared by every earlier test of the process, happens to reach it. A count that must
    not grow with the fleet then differed by that one statement by luck (62 against 63 in a CI
    run), so counted queries leave it out."""
    from django.test.utils import CaptureQueriesContext

    from portal.kernel.changelog.marks import PRUNE_SQL

    def captured(self):
        queries = self.connection.queries[self.initial_queries : self.final_queries]
        return [query for query in queries if not query["sql"].startswith(PRUNE_SQL)]

    monkeypatch.setattr(CaptureQueriesContext, "captured_queries", property(captured))


@pytest.fixture(autouse=True)
def _no_services_from_another_test() -> Iterator[None]:
    """Each test's polls read its own services: a poll keeps them by the catalog's revision
    (gitops.store.read.catalog_services), which starts again with each test's database."""
    from gitops.store import statistics
    from gitops.store.read import forget_services

    forget_services()
    statistics.forget()  # its count of created applications
    yield
    forget_services()
