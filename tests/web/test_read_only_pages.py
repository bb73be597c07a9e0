"""Pages that only read answer POST with 405 (and say which methods they take) instead of
rendering the page: a POST that renders reads as if something had been done. The test walks the
whole URL conf, so a page added later without `require_safe` fails here unless it is named as
one that takes POST; the views that do take POST are checked not to answer 405."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter

pytestmark = pytest.mark.django_db

# The views that take POST (forms, htmx writes), by URL name.
TAKE_POST = {
    "cluster-poll", "cluster-enabled", "cluster-add", "cluster-agent-token", "cluster-agent-token-revoke",
    "discovery", "finding-mute", "updates-put-off", "updates-release-hold", "freeze-create", "freeze-end",
    "service-policy-check", "service-policy", "pr-open",
    "notification-channel-form", "notification-channel-test", "notification-channel-delete",
    "notification-rule-form", "notification-rule-delete",
    "profile", "calendar-feeds",
}
# Not the portal's pages: Django's admin and sign-in flow, the REST API (DRF answers 405 itself,
# checked by its schema tests) and the MCP endpoint (JSON-RPC over POST).
NOT_PAGES = {"login", "logout", "oidc-login", "oidc-callback", "mcp"}
NOT_PAGE_PREFIXES = ("admin/", "api/")


def routes(patterns: list, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    """Every named route with its full path, through every include."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, prefix + str(entry.pattern))
        elif entry.name:
            yield prefix + str(entry.pattern), entry


def url_of(route: URLPattern) -> str:
    converters = getattr(route.pattern, "converters", {})
    kwargs = {name: 1 if isinstance(c, IntConverter) else "payments" for name, c in converters.items()}
    return reverse(route.name, kwargs=kwargs)


def pages() -> list[tuple[str, str]]:
    found = [(path, route.name) for path, route in routes(get_resolver().url_patterns)
             if not path.startswith(NOT_PAGE_PREFIXES) and route.name not in NOT_PAGES]
    assert len(found) > 30, found  # the walk reached the web pages, notifications and accounts
    return found


READ_ONLY = sorted(name for _, name in pages() if name not in TAKE_POST)


def test_the_walk_finds_every_view_named_as_taking_post():
    named = {name for _, name in pages()}
    assert TAKE_POST <= named, TAKE_POST - named
    assert {"findings", "security", "gitops", "overview", "updates", "delivery", "notifications"} <= set(READ_ONLY)


@pytest.mark.parametrize("name", READ_ONLY)
def test_a_read_only_page_answers_post_with_405(client, users, catalog, name):
    client.force_login(users["admin"])
    route = next(route for _, route in routes(get_resolver().url_patterns) if route.name == name)
    url = url_of(route)
    response = client.post(url, {"anything": "1"})
    assert response.status_code == 405, (url, response.status_code)
    assert set(response["Allow"].replace(" ", "").split(",")) <= {"GET", "HEAD"}


@pytest.mark.parametrize("name", sorted(TAKE_POST))
def test_views_that_take_post_still_take_it(client, users, catalog, name):
    client.force_login(users["admin"])
    route = next(route for _, route in routes(get_resolver().url_patterns) if route.name == name)
    assert client.post(url_of(route), {}).status_code != 405


def test_the_findings_and_security_pages_still_render_on_get(client, users, catalog):
    client.force_login(users["viewer"])
    for name in ("findings", "security", "gitops", "overview"):
        assert client.get(reverse(name)).status_code == 200, name
