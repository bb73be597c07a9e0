"""Page bodies kept for every viewer until the data changes (portal/web/sharedpages.py, the data
revision of portal/kernel/changelog): a change is seen on the next request however it was written,
a viewer never sees another's name, role or token, and a kept body costs no query of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from gitops.models import ClusterPoll, GitOpsApp
from portal.kernel.changelog import kept as kept_module
from portal.kernel.changelog.marks import data_revision
from tests.dburl import database_url
from tests.fixtures.seed import seed_app

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
# The bodies the pages keep, as their views name them.
KEPT_BODIES = ["web/_overview_body.html", "web/_matrix_body.html", "web/_gitops_content.html",
               "web/_gitops_table.html", "web/_delivery_body.html", "web/_service_panels.html"]
PAGES = ["overview", "matrix", "gitops", "delivery"]


def _included(template: str, seen: set[str]) -> set[str]:
    if template in seen:
        return seen
    seen.add(template)
    text = (TEMPLATES / template).read_text()
    for name in re.findall(r'{%\s*include\s+"([^"]+)"', text):
        _included(name, seen)
    return seen


@pytest.mark.parametrize("template", KEPT_BODIES)
def test_a_kept_body_names_nothing_of_its_viewer_but_the_role(template):
    for name in sorted(_included(template, set())):
        text = (TEMPLATES / name).read_text()
        for personal in ("csrf_token", "request.user", "user.", "{{ user", "messages", "request.session",
                         "request.COOKIES"):
            assert personal not in text, f"{name} (kept as part of {template}) uses {personal}"


@pytest.mark.django_db
def test_every_viewer_gets_their_own_header_around_the_same_body(client, users, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    other = Client()
    client.force_login(users["viewer"])
    other.force_login(users["admin"])
    for page in PAGES:
        first = client.get(reverse(page)).content.decode()
        second = other.get(reverse(page)).content.decode()
        assert users["viewer"].username in first and users["admin"].username not in first, page
        assert users["admin"].username in second and users["viewer"].username not in second, page
        assert _csrf(first) != _csrf(second), page


def _csrf(html: str) -> str:
    return re.search(r'"X-CSRFToken": "([^"]+)"', html).group(1)


@pytest.mark.django_db
def test_a_kept_body_costs_no_query_of_its_own_and_a_bulk_write_is_seen_at_once(client, users, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    client.force_login(users["viewer"])
    client.get(reverse("gitops"))
    statements: list[str] = []

    def seen(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    # Not CaptureQueriesContext: counting with it draws pages anew (tests/conftest.py).
    with connection.execute_wrapper(seen):
        client.get(reverse("gitops"))
    # The session, the user, their groups, the data revision, the filter lists: not the table's.
    assert statements and not any("gitops_gitopsapp" in sql and "LIMIT" in sql for sql in statements)
    # A poll's store writes in bulk (no model signal): the next request sees it anyway.
    GitOpsApp.objects.filter(name="checkout-prod").update(health_status="Degraded")
    html = client.get(reverse("gitops") + "?status=degraded").content.decode()
    assert "checkout-prod" in html
    GitOpsApp.objects.filter(name="checkout-prod").update(name="checkout-renamed")
    assert "checkout-renamed" in client.get(reverse("gitops")).content.decode()


@pytest.mark.django_db
def test_a_member_and_a_viewer_are_kept_apart(client, users, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.0.0")
    member = Client()
    member.force_login(users["member"])
    client.force_login(users["viewer"])
    assert member.get(reverse("matrix")).context is not None
    viewer_html = client.get(reverse("matrix")).content.decode()
    member_html = member.get(reverse("matrix")).content.decode()
    assert viewer_html != member_html or "/pr/preview" not in member_html


@pytest.mark.django_db
def test_the_revision_moves_with_what_commits_and_not_with_poll_bookkeeping(catalog):
    before = data_revision()
    with pytest.raises(RuntimeError), transaction.atomic():
        seed_app(catalog.prod_eu, "rolled-back", service=catalog.checkout)
        raise RuntimeError
    assert data_revision() == before  # a write that never committed changes nothing
    ClusterPoll.objects.create(cluster=catalog.prod_eu)
    ClusterPoll.objects.filter(cluster=catalog.prod_eu).update(last_poll_seconds=1.5)
    assert data_revision() == before  # every poll writes these, changed or not
    seed_app(catalog.prod_eu, "kept", service=catalog.checkout)
    assert data_revision() != before


@pytest.mark.django_db
def test_the_clock_moves_a_kept_body_on_within_its_bucket(client, users, catalog, monkeypatch):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    client.force_login(users["viewer"])
    calls = []
    real = kept_module.kept

    def counting(scope, parts, compute, **kwargs):
        return real(scope, parts, lambda: calls.append(scope) or compute(), **kwargs)

    monkeypatch.setattr("portal.web.sharedpages.kept", counting)
    client.get(reverse("overview"))
    client.get(reverse("overview"))
    assert calls == ["page:overview"]
    now = kept_module.time.time()
    monkeypatch.setattr(kept_module.time, "time", lambda: now + 61)
    client.get(reverse("overview"))
    assert calls == ["page:overview", "page:overview"]  # durations are worded again each minute


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_by_another_process_is_seen_by_this_one(client, users, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    client.force_login(users["viewer"])
    assert "checkout-moved" not in client.get(reverse("gitops")).content.decode()
    script = ("import django; django.setup(); from gitops.models import GitOpsApp; "
              "GitOpsApp.objects.filter(name='checkout-prod').update(name='checkout-moved')")
    env = {"DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "portal.settings", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)
    assert "checkout-moved" in client.get(reverse("gitops")).content.decode()


@pytest.mark.django_db
def test_a_poll_moves_the_revision_only_when_it_changes_what_pages_show(catalog):
    from django.utils import timezone

    from gitops.clusterpoll import Outcome, record

    ClusterPoll.objects.create(cluster=catalog.prod_eu)
    at = timezone.now()
    record(catalog.prod_eu.pk, Outcome(at, 0.5))
    quiet = data_revision()
    record(catalog.prod_eu.pk, Outcome(at + timedelta(seconds=60), 0.5))
    assert data_revision() == quiet  # polled again, nothing new: pages stay kept
    record(catalog.prod_eu.pk, Outcome(at + timedelta(seconds=120), 0.5, error="timeout: read timed out"))
    stale = data_revision()
    assert stale != quiet  # the cluster is stale now: its badge must show
    record(catalog.prod_eu.pk, Outcome(at + timedelta(seconds=180), 0.5))
    assert data_revision() != stale  # and no longer
