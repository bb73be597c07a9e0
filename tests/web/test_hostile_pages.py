"""Every page, htmx partial and API endpoint for stored hostile objects (issue 19).

Mutants of the real-object corpus (tests/gitops/test_hostile_properties.py) are polled from
a manifest folder through the real path, then every GET route of portal/urls.py,
portal/web/urls.py and portal/api/urls.py is requested, as a viewer and as an admin, with
the viewer's zone (the portal_tz cookie) set to UTC, America/New_York and Asia/Tokyo. Each
must answer 200 or a clean 4xx (a redirect for the write views a GET leads back from),
never 500, and no page may carry an element, script or javascript: link a cluster wrote.
A last pass in Chromium checks that no dialog opens and no injected script runs.
"""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from gitops.models import GitOpsApp
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import Cluster, Service
from portal.web.timezones import COOKIE
from tests.gitops.test_hostile_properties import (
    CORPUS,
    EXAMPLES,
    HOSTILE_STRINGS,
    ROW_KINDS,
    Mutant,
    load_catalog,
    manifest_fleet,
    mutants,
    paths_in,
    rolled_back,
    set_at,
    value_at,
)

ZONES = ["UTC", "America/New_York", "Asia/Tokyo"]
MARKER = "xss-"  # every hostile string's alert() carries it
ROWS = [o for o in CORPUS if o["kind"] in ROW_KINDS]
# Where a link or a resource lives in HTML: a javascript: value there runs when clicked.
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "hx-get", "hx-post", "data", "poster"}
DATA_SCRIPT_TYPES = {"application/json", "application/ld+json"}


class InjectionFinder(HTMLParser):
    """Parses a page the way a browser tokenises it and lists what a cluster's text made of
    it: script elements or event-handler attributes carrying the marker, javascript: links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and MARKER in value:
                self.found.append(f"<{tag} {name}={value!r}>")
            squeezed = "".join(c for c in value if c > " ").lower()
            if name in URL_ATTRIBUTES and squeezed.startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag == "script" and (dict(attrs).get("type") or "") not in DATA_SCRIPT_TYPES:
            self._script = []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            text = "".join(self._script)
            if MARKER in text:
                self.found.append(f"<script>{text[:120]!r}")
            self._script = None


def injections(html: str) -> list[str]:
    finder = InjectionFinder()
    finder.feed(html)
    finder.close()
    return finder.found


def test_the_finder_finds_what_escaping_prevents():
    # The checks below can fail: unescaped, each hostile string is an injection.
    assert injections(f"<p>{HOSTILE_STRINGS[0]}</p>")
    assert injections(f'<a title="{HOSTILE_STRINGS[1]}">x</a>')
    assert injections(f'<a href="{HOSTILE_STRINGS[2]}">x</a>')
    assert injections(f"<a title='{HOSTILE_STRINGS[3]}'>x</a>")
    assert injections(f"<div>{HOSTILE_STRINGS[4]}</div>")
    from django.utils.html import escape

    assert not any(injections(f'<p title="{escape(s)}">{escape(s)}</p>') for s in HOSTILE_STRINGS)


# Pages that show times (each zone) and their htmx partials; then every other GET route once.
TIMED_PAGES = ("overview", "matrix", "gitops", "clusters", "updates", "delivery", "api-gitops")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "body"}
ONCE = (
    "pr-preview", "pr-opened", "pr-opened-rows", "pr-open", "updates-put-off", "freeze-create", "freeze-end",
    "api-pull-requests", "api-docs", "notifications", "notification-channel-form", "notification-rule-form",
    "notification-channel-test", "notification-channel-delete", "notification-rule-delete", "login", "profile",
    "security", "api-security",
)
GITOPS_QUERIES = ("attention=1", "q=%3Cscript%3E", "sort=-health_since", "sort=sync_since", "health=Degraded",
                  "cluster=prod-eu-1", "tool=flux", "page=2", "format=json")


def timed_routes(services: list[str], *, partials: bool = True) -> list[tuple[str, dict[str, str]]]:
    """The pages that show times, and with `partials` their htmx partials: a partial draws
    its page's rows with the same template code, so one zone of them covers its own branch
    of the view while the full pages take every zone."""
    routes = [(reverse(name), {}) for name in TIMED_PAGES]
    routes += [(reverse("service", args=[service]), {}) for service in services]
    if partials:
        routes += [(reverse(name), HTMX) for name in TIMED_PAGES if not name.startswith("api-")]
        routes += [(reverse("service-panels", args=[service]), HTMX) for service in services]
    return routes


def other_routes(clusters: list[str], apps: list[tuple[str, str, str]]) -> list[tuple[str, dict[str, str]]]:
    """Every other GET route of the three URL modules. An app's API detail URL is built from
    its raw names (quoted), as a client holding them would build it."""
    routes = [(reverse(name), {}) for name in ONCE]
    routes += [(f"{reverse('gitops')}?{query}", {}) for query in GITOPS_QUERIES]
    routes += [(f"{reverse('api-gitops')}?{query}", {}) for query in GITOPS_QUERIES]
    for cluster in clusters:
        routes += [(reverse("cluster-poll", args=[cluster]), {}), (reverse("cluster-enabled", args=[cluster]), {})]
    for cluster, namespace, name in apps:
        parts = "/".join(quote(part, safe="") for part in (cluster, namespace, name))
        routes.append((f"{reverse('api-gitops')}/{parts}", {}))
    return routes


def assert_every_route_answers(client: Client, routes: list[tuple[str, dict[str, str]]], zone: str,
                               what: Any) -> None:
    client.cookies[COOKIE] = zone
    for url, headers in routes:
        response = client.get(url, **headers)
        assert response.status_code < 500, (zone, url, headers, response.status_code, what)
        if response.status_code >= 300:
            continue
        content_type = response.get("Content-Type", "")
        body = response.content.decode("utf-8")
        if "json" in content_type:
            json.loads(body)  # an API answer is JSON whatever the data
        elif "html" in content_type:
            assert not injections(body), (zone, url, injections(body), what)


def mutant_services(mutated: list[tuple[Mutant, str]]) -> list[str]:
    """The services whose pages show a mutant (a service page is the costliest; the others
    show only untouched objects), or one service when no mutant maps to any."""
    keys = {m.key for m, _ in mutated}
    names = {name for kind, namespace, app, name in GitOpsApp.objects.filter(services__isnull=False)
             .values_list("kind", "namespace", "name", "services__name") if (kind, namespace, app) in keys}
    return sorted(names) or [Service.objects.order_by("name").values_list("name", flat=True)[0]]


def mutant_apps(mutated: list[tuple[Mutant, str]]) -> list[tuple[str, str, str]]:
    """(cluster, namespace, name) of the stored apps that are mutants."""
    keys = {m.key for m, _ in mutated}
    return [(cluster, namespace, name)
            for kind, cluster, namespace, name in GitOpsApp.objects.values_list("kind", "cluster__name", "namespace",
                                                                                "name")
            if (kind, namespace, name) in keys]


@pytest.fixture
def people(db) -> dict[str, Any]:
    load_catalog()
    made = {}
    for role in (Role.VIEWER, Role.ADMIN):
        user = get_user_model().objects.create_user(f"hostile-{role.group_name}", password="pw-hostile-123")
        grant(user, role)
        made[role.group_name] = user
    return made


@settings(EXAMPLES, max_examples=5)
@given(batch=st.lists(mutants(pool=ROWS, max_mutations=6), min_size=3, max_size=8))
def test_every_route_answers_for_stored_mutants_in_every_zone(people, tmp_path_factory, batch):
    mutated = list({m.original_key: (m, ".json") for m in batch}.values())
    folder = tmp_path_factory.mktemp("hostile-pages")
    what = [m.done for m, _ in mutated]

    def example() -> None:
        fleet = manifest_fleet(folder, mutated)
        assert fleet.report.ok, (fleet.report.error, what)
        services = mutant_services(mutated)
        clusters = list(Cluster.objects.values_list("name", flat=True))
        viewer, admin = Client(), Client()
        viewer.force_login(people["viewer"])
        admin.force_login(people["admin"])
        for zone in ZONES:
            assert_every_route_answers(viewer, timed_routes(services, partials=zone == ZONES[0]), zone, what)
        assert_every_route_answers(viewer, other_routes(clusters, mutant_apps(mutated)), "America/New_York", what)
        assert_every_route_answers(admin, timed_routes(services) + other_routes(clusters, []), "Asia/Tokyo", what)

    rolled_back(example)


def _hostile_everywhere() -> list[tuple[Mutant, str]]:
    """Each row object with a hostile string in every string field of its metadata and
    status and in its image references: the browser pass below shows them all."""
    mutated = []
    for index, original in enumerate(ROWS):
        obj = copy.deepcopy(original)
        payload = HOSTILE_STRINGS[index % len(HOSTILE_STRINGS)]
        for path in list(paths_in(obj)):
            if len(path) > 1 and path[0] in ("status", "spec") and isinstance(value_at(obj, path), str):
                set_at(obj, path, payload)
        obj["metadata"].setdefault("annotations", {})["note"] = payload
        mutated.append((Mutant(original, obj, ["hostile everywhere"]), ".json"))
    return mutated


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_injected_script_runs_in_chromium(page, live_server, tmp_path: Path):
    load_catalog()
    fleet = manifest_fleet(tmp_path, _hostile_everywhere())
    assert fleet.report.ok, fleet.report.error
    user = get_user_model().objects.create_user("vera", password="vera-pass-123")
    grant(user, Role.VIEWER)
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "vera")
    page.fill("input[name=password]", "vera-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    services = list(Service.objects.values_list("name", flat=True))
    pages = ["/", "/matrix", "/gitops", "/clusters", "/updates", "/delivery"] + [f"/services/{s}" for s in services]
    for path in pages:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("document.querySelectorAll('img[onerror], svg[onload], [onmouseover]').length") == 0
        assert page.evaluate(
            "[...document.querySelectorAll('[href]')].filter(a => a.href.trim().toLowerCase()"
            ".startsWith('javascript:')).length") == 0, path
    assert any(MARKER in json.dumps(raw) for raw in GitOpsApp.objects.values_list("raw", flat=True))
    assert dialogs == [] and not [e for e in errors if MARKER in e or "alert" in e], (dialogs, errors)
