"""/delivery at fleet scale: promotions waiting and pull requests are paged on the server,
each list with its own page number, the service filter in the URL and kept by every pager
link; the promotions read only the rows of services that wait."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from portal.delivery import promotions
from portal.delivery.models import PullRequest
from portal.kernel.catalog.models import Service
from portal.web.views.delivery import PROMOTIONS_PER_PAGE, PULL_REQUESTS_PER_PAGE
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def waiting_services(catalog, count, *, start=0):
    """`count` services that run 1.1.0 in staging and 1.0.0 in prod: each a promotion waiting."""
    made = []
    for n in range(start, start + count):
        service = Service.objects.create(name=f"svc{n:02d}", image_repository=f"ghcr.io/acme/svc{n:02d}")
        seed_app(catalog.staging_cluster, f"svc{n:02d}-staging", service=service, version="1.1.0")
        seed_app(catalog.prod_eu, f"svc{n:02d}-prod", service=service, version="1.0.0")
        made.append(service)
    return made


def quiet_services(catalog, count):
    """`count` services that run the same version in staging and prod: nothing waits."""
    for n in range(count):
        service = Service.objects.create(name=f"quiet{n:02d}", image_repository=f"ghcr.io/acme/quiet{n:02d}")
        seed_app(catalog.staging_cluster, f"quiet{n:02d}-staging", service=service, version="2.0.0")
        seed_app(catalog.prod_eu, f"quiet{n:02d}-prod", service=service, version="2.0.0")


def pull_requests(count, service="svc00", *, start=1):
    now = timezone.now()
    PullRequest.objects.bulk_create(
        PullRequest(kind="upgrade", services=[service], environment="prod", repository="https://github.com/acme/gitops",
                    forge_kind="github", number=n, url=f"https://github.com/acme/gitops/pull/{n}",
                    title=f"Update {service} to 1.{n}.0", branch=f"portal/{service}-{n}", base_branch="main",
                    state="open", to_version=f"1.{n}.0", opened_at=now - timedelta(minutes=n))
        for n in range(start, start + count)
    )


def promoted(html):
    return re.findall(r'<tr class="promotion" data-service="([^"]+)"', html)


def pr_numbers(html):
    return [int(n) for n in re.findall(r'<tr class="pr-row" data-pr="\d+" data-status="[^"]+">\s*<td>.*?#(\d+)</a>',
                                       html, flags=re.S)]


def test_promotions_page_two_shows_the_rest_and_keeps_the_other_lists_page(client, users, catalog):
    waiting_services(catalog, PROMOTIONS_PER_PAGE + 3)
    pull_requests(PULL_REQUESTS_PER_PAGE + 5)
    client.force_login(users["member"])

    first = client.get(reverse("delivery")).content.decode()
    second = client.get(reverse("delivery"), {"promotions_page": "2", "pr_page": "2"}).content.decode()

    assert len(promoted(first)) == PROMOTIONS_PER_PAGE
    assert len(promoted(second)) == 3 and not set(promoted(first)) & set(promoted(second))
    assert set(promoted(first)) | set(promoted(second)) == {f"svc{n:02d}" for n in range(PROMOTIONS_PER_PAGE + 3)}
    assert 'href="?promotions_page=2#promotions"' in first
    # Each pager keeps the other list's page: paging the promotions does not reset the pull requests.
    assert 'href="?pr_page=2&amp;promotions_page=1#promotions"' in second
    assert 'href="?promotions_page=2&amp;pr_page=1#pull-requests"' in second
    assert pr_numbers(first) == list(range(1, PULL_REQUESTS_PER_PAGE + 1))  # newest opened first
    assert pr_numbers(second) == list(range(PULL_REQUESTS_PER_PAGE + 1, PULL_REQUESTS_PER_PAGE + 6))
    assert f"<strong>{PULL_REQUESTS_PER_PAGE + 5}</strong>pull requests, last 30 days" in second  # counts: all


def test_the_service_filter_narrows_both_lists_and_the_pagers_keep_it(client, users, catalog):
    waiting_services(catalog, 2)
    pull_requests(PULL_REQUESTS_PER_PAGE + 2, service="svc01")
    pull_requests(3, service="svc00")
    client.force_login(users["viewer"])

    html = client.get(reverse("delivery"), {"service": "svc01"}).content.decode()

    assert promoted(html) == ["svc01"]
    assert len(pr_numbers(html)) == PULL_REQUESTS_PER_PAGE
    assert 'href="?service=svc01&amp;pr_page=2#pull-requests"' in html
    assert 'hx-get="/delivery?service=svc01"' in html  # the refresh keeps the view too
    rest = client.get(reverse("delivery"), {"service": "svc01", "pr_page": "2"}).content.decode()
    assert len(pr_numbers(rest)) == 2


def test_promotions_read_only_the_rows_of_services_that_wait(catalog):
    waiting_services(catalog, 1)
    quiet_services(catalog, 5)

    with CaptureQueriesContext(connection) as queries:
        found, _ = promotions.load()

    assert [p.service for p in found] == ["svc00"]
    detailed = [q["sql"] for q in queries.captured_queries if "first_seen" in q["sql"]]
    assert len(detailed) == 1 and "svc00" in detailed[0] and "quiet" not in detailed[0]


def test_the_delivery_page_queries_do_not_grow_with_the_waiting_promotions(client, users, catalog):
    waiting_services(catalog, 1)
    pull_requests(2)
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("delivery"))

    waiting_services(catalog, PROMOTIONS_PER_PAGE + 5, start=1)
    quiet_services(catalog, 4)
    pull_requests(PULL_REQUESTS_PER_PAGE + 10, start=3)
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("delivery")).content.decode()

    assert len(promoted(html)) == PROMOTIONS_PER_PAGE
    assert len(many.captured_queries) == len(few.captured_queries)


def test_only_the_shown_promotions_spell_their_preview_links(client, users, catalog, monkeypatch):
    """Every waiting promotion gets its offers (the train takes them all), but a preview link is
    spelled only for the page's rows: at 100,000 applications spelling the rest cost most of the
    page's time. The train still promotes the services of every page."""
    waiting_services(catalog, PROMOTIONS_PER_PAGE + 3)
    spelled = []
    spell = promotions.preview_url
    monkeypatch.setattr(promotions, "preview_url", lambda *a, **kw: spelled.append(a[1][0][0]) or spell(*a, **kw))
    client.force_login(users["member"])

    html = client.get(reverse("delivery")).content.decode()

    assert sorted(spelled) == sorted(promoted(html))  # one link per shown row's production app
    assert len(spelled) == PROMOTIONS_PER_PAGE
    train = re.search(r'class="button-link promote-train" href="([^"]+)"', html)
    assert train is not None and "svc12" in train.group(1)  # a service from the second page
