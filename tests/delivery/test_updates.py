"""/updates: who is behind (policy respected), Open PR and Put off per line, ticks, freezes by admins."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from portal.delivery.models import ChangeFreeze, PullRequest, ServicePolicy
from portal.delivery.upgrades import behind
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fixtures.seed import seed_app, seed_pin

pytestmark = pytest.mark.django_db


def releases(service, *tags):
    now = timezone.now()
    for tag in tags:
        Release.objects.create(service=service, tag=tag, version=tag, seen_at=now)


@pytest.fixture
def fleet(catalog):
    releases(catalog.checkout, "1.6.0", "1.6.1", "1.7.0", "2.0.0", "2.1.0-rc.1")
    releases(catalog.payments, "3.0.0", "3.1.0")
    ServicePolicy.objects.create(service=catalog.checkout, accept="minor")
    return {
        "dev": seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0"),
        "prod": seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.1"),
        "current": seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.1.0"),
    }


def login(client, users, role):
    client.force_login(users[role])
    return client


def test_behind_lists_each_app_with_the_newest_release_the_policy_accepts(fleet, catalog):
    found = {(b.app.name, b.target, b.jump) for b in behind()}
    # accept=minor: 2.0.0 is a major jump, the pre-release is ignored, payments is current.
    assert found == {("checkout-dev", "1.7.0", "minor"), ("checkout-prod", "1.7.0", "minor")}


def test_the_updates_page_shows_every_line_behind_with_open_pr_and_put_off(client, users, fleet):
    html = login(client, users, "member").get(reverse("updates")).content.decode()

    assert 'data-app="checkout-dev" data-target="1.7.0"' in html
    assert 'data-app="checkout-prod" data-target="1.7.0"' in html
    assert "payments-prod" not in html and "2.0.0" not in html
    assert html.count("Open PR → 1.7.0") == 2
    assert f"item={fleet['dev'].pk}%3Acheckout%3A1.7.0" in html
    assert html.count(">Put off</button>") == 2
    assert html.count('type="checkbox" name="item"') == 2 and 'value="grouped"' in html


def test_a_viewer_sees_the_lines_but_no_buttons_and_may_not_put_off(client, users, fleet, catalog):
    client = login(client, users, "viewer")
    html = client.get(reverse("updates")).content.decode()
    assert 'data-target="1.7.0"' in html
    assert "Open PR" not in html and "Put off" not in html and 'name="item"' not in html

    response = client.post(reverse("updates-put-off"), {"service": "checkout", "version": "1.7.0",
                                                         "until": "2999-01-01"})
    assert response.status_code == 403
    assert ServicePolicy.objects.get(service=catalog.checkout).put_off == []


def test_put_off_hides_a_version_until_its_date(client, users, fleet, catalog):
    until = timezone.now().date() + timedelta(days=7)
    response = login(client, users, "member").post(
        reverse("updates-put-off"), {"service": "checkout", "version": "1.7.0", "until": until.isoformat()}
    )
    assert response.status_code == 302

    policy = ServicePolicy.objects.get(service=catalog.checkout)
    assert policy.put_off == [{"version": "1.7.0", "until": until.isoformat()}]
    html = client.get(reverse("updates")).content.decode()
    assert 'data-app="checkout-dev" data-target="1.6.1"' in html  # the next acceptable one
    assert "checkout-prod" not in html  # runs 1.6.1 already
    assert {b.target for b in behind(today=until)} == {"1.7.0"}  # from that day on it counts again
    assert AuditLog.objects.filter(action="policy.put_off", actor_name="member").exists()


def test_put_off_refuses_a_past_date(client, users, fleet, catalog):
    login(client, users, "member").post(
        reverse("updates-put-off"), {"service": "checkout", "version": "1.7.0", "until": "2001-01-01"}
    )
    assert ServicePolicy.objects.get(service=catalog.checkout).put_off == []


def test_lines_with_an_open_pr_or_already_pinned_offer_no_new_pr(client, users, fleet, catalog):
    PullRequest.objects.create(kind="upgrade", services=["checkout"], environment="dev", repository="r",
                               forge_kind="github", number=12, title="Update checkout to 1.7.0 in dev",
                               branch="portal/checkout-1.7.0-dev", base_branch="main", state="open",
                               to_version="1.7.0")
    seed_pin(fleet["prod"], catalog.checkout, "1.7.0", line=4)
    html = login(client, users, "member").get(reverse("updates")).content.decode()
    assert "PR #12 open" in html
    assert "Git pins 1.7.0 already: merged, not deployed" in html
    assert "Open PR → 1.7.0" not in html


def test_the_updates_page_query_count_does_not_grow_with_the_fleet(client, users, fleet, catalog):
    client = login(client, users, "member")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("updates")).status_code == 200
        return len(queries)

    few = count()
    for i in range(6):
        seed_app(catalog.staging_cluster, f"checkout-s{i}", service=catalog.checkout, version="1.6.0")
        seed_app(catalog.prod_us, f"payments-{i}", service=catalog.payments, version="3.0.0")
    ChangeFreeze.objects.create(starts_at=timezone.now(), ends_at=timezone.now() + timedelta(hours=1), reason="x")
    assert count() <= few + 2  # the freeze list and its environments, once


def test_admins_define_freezes_and_members_may_not(client, users, catalog):
    data = {"starts_at": "2030-03-01T08:00", "ends_at": "2030-03-03T08:00", "environments": [catalog.prod.pk],
            "reason": "quarter close"}
    assert login(client, users, "member").post(reverse("freeze-create"), data).status_code == 403
    assert not ChangeFreeze.objects.exists()

    response = login(client, users, "admin").post(reverse("freeze-create"), data)
    assert response.status_code == 302
    freeze = ChangeFreeze.objects.get()
    assert freeze.reason == "quarter close" and [e.name for e in freeze.environments.all()] == ["prod"]
    assert freeze.starts_at.date() == date(2030, 3, 1)
    html = client.get(reverse("updates")).content.decode()
    assert "quarter close" in html and "coming" in html

    bad = dict(data, ends_at="2030-02-01T08:00")
    client.post(reverse("freeze-create"), bad)
    assert ChangeFreeze.objects.count() == 1


def test_an_active_freeze_shows_on_the_updates_page_and_can_be_ended(client, users, catalog):
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=5),
                                         reason="Black Friday")
    client = login(client, users, "admin")
    html = client.get(reverse("updates")).content.decode()
    assert "Change freeze until" in html and "Black Friday" in html and "every environment" in html

    client.post(reverse("freeze-end"), {"id": freeze.pk})
    freeze.refresh_from_db()
    assert freeze.ends_at <= timezone.now()
    assert "Change freeze until" not in client.get(reverse("updates")).content.decode()


def test_no_release_read_is_not_reported_as_up_to_date(client, users, catalog):
    from portal.releases.models import RegistryPoll

    RegistryPoll.objects.create(service=catalog.checkout, last_error="ghcr.io unreachable: connection refused",
                                last_error_at=timezone.now())
    client.force_login(users["viewer"])
    html = client.get("/updates").content.decode()
    assert "No release has been read from a container registry yet" in html
    assert "Every application runs the newest release" not in html
    assert "ghcr.io unreachable: connection refused" in html


def _matrix(client) -> str:
    return client.get(reverse("matrix")).content.decode()


def test_the_matrix_offers_open_pr_in_each_cell_that_runs_behind(client, users, fleet, catalog):
    from html import unescape
    from urllib.parse import urlsplit

    from django.http import QueryDict

    from portal.web.views.pr import Item, parse_items

    html = _matrix(login(client, users, "member"))
    assert html.count("Open PR → 1.7.0") == 2  # dev (1.6.0) and prod (1.6.1); payments runs its newest
    links = [unescape(part.split('"', 1)[0]) for part in html.split('class="open-pr" href="')[1:]]
    items = {parse_items(QueryDict(urlsplit(link).query))[1][0] for link in links}
    assert items == {Item(fleet["dev"].pk, "checkout", "1.7.0"), Item(fleet["prod"].pk, "checkout", "1.7.0")}
    assert all(urlsplit(link).path == reverse("pr-preview") for link in links)

    assert "Open PR" not in _matrix(login(client, users, "viewer"))


def test_the_matrix_points_to_an_open_pr_and_offers_nothing_where_git_pins_the_target(client, users, fleet,
                                                                                        catalog):
    PullRequest.objects.create(kind="upgrade", services=["checkout"], environment="dev", repository="r",
                               forge_kind="github", number=12, title="Update checkout to 1.7.0 in dev",
                               url="https://github.com/acme/gitops/pull/12", branch="portal/checkout-1.7.0-dev",
                               base_branch="main", state="open", to_version="1.7.0")
    seed_pin(fleet["prod"], catalog.checkout, "1.7.0", line=4)
    html = _matrix(login(client, users, "member"))
    assert 'href="https://github.com/acme/gitops/pull/12"' in html and "PR #12 open" in html
    assert "Open PR → 1.7.0" not in html  # prod: merged in Git, waiting to deploy
    assert "Git pins 1.7.0" in html


def test_the_matrix_with_upgrade_offers_keeps_its_query_count(client, users, fleet, catalog):
    client = login(client, users, "member")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("matrix")).status_code == 200
        return len(queries)

    few = count()
    for i in range(6):
        seed_app(catalog.staging_cluster, f"checkout-s{i}", service=catalog.checkout, version="1.6.0")
        seed_app(catalog.prod_us, f"payments-{i}", service=catalog.payments, version="3.0.0")
    assert "Open PR → 3.1.0" in _matrix(client)
    assert count() == few
