"""The matrix shows a chart offer in a cell whose applications pin a chart behind the newest
version the service's policy accepts ("chart 0.3.1 → 0.4.0", linking to the chart upgrade's
preview for a member, a note for a viewer), at a fixed cost for the whole page whatever the
number of applications, and nothing per cell."""

from __future__ import annotations

from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.releases.models import ChartVersion
from tests.delivery.test_chart_upgrades import notifications, release_applied_from  # noqa: F401
from tests.delivery.test_pin_location import CHARTS, demo_files
from tests.fakes.forges.harness import FILES, serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        yield harness


def cell_of(html: str, service: str) -> str:
    row = html[html.index(f'<tr data-service="{service}">'):]
    return row[: row.index("</tr>")]


def test_a_cell_pinning_a_chart_behind_shows_the_chart_offer(
    eager_celery, client, users, catalog, notifications, github  # noqa: F811
):
    app = release_applied_from(github, catalog, notifications)

    client.force_login(users["member"])
    row = cell_of(client.get(reverse("matrix")).content.decode(), "notifications")
    assert '<span class="cell-line chart-offer" data-chart="notifications"' in row
    assert "chart 0.3.1 → 0.4.0" in row
    href = unescape(row[row.index('class="open-pr" href="') + 22:].split('"', 1)[0])
    page = client.get(href).content.decode()
    assert "Update the notifications chart to 0.4.0 in prod" in page
    assert '+      version: &quot;0.4.0&quot;' in page and f"item={app.pk}" in href

    client.force_login(users["viewer"])
    row = cell_of(client.get(reverse("matrix")).content.decode(), "notifications")
    assert "chart 0.3.1 → 0.4.0" in row and "chart=notifications" not in row


def test_no_chart_offer_at_the_newest_acceptable_version(client, users, catalog, notifications, github):  # noqa: F811
    release_applied_from(github, catalog, notifications, version="0.4.0")
    client.force_login(users["member"])
    assert "chart-offer" not in client.get(reverse("matrix")).content.decode()


def test_the_chart_offers_cost_the_same_for_one_application_or_many(client, users, catalog, notifications):  # noqa: F811
    client.force_login(users["member"])
    seed_app(catalog.prod_us, "notifications-a", service=notifications, version="0.8.4", tool="flux",
             kind="HelmRelease", namespace="a", repo_url=CHARTS, path="", chart="notifications",
             target_revision="0.3.1",
             sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications", "target_revision": "0.3.1"}])
    with CaptureQueriesContext(connection) as one:
        assert "chart 0.3.1 → 0.4.0" in client.get(reverse("matrix")).content.decode()
    for i, cluster in enumerate([catalog.prod_eu, catalog.prod_us, catalog.prod_eu] * 3):
        seed_app(cluster, f"notifications-{i}", service=notifications, version="0.8.4", tool="flux",
                 kind="HelmRelease", namespace=f"n{i}", repo_url=CHARTS, path="", chart="notifications",
                 target_revision="0.3.2",
                 sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications", "target_revision": "0.3.2"}])
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("matrix")).content.decode()
    assert cell_of(html, "notifications").count("chart-offer") == 1  # one per cell, the oldest pin speaks
    assert "(10 applications)" in html
    assert len(many.captured_queries) == len(one.captured_queries)

    ChartVersion.objects.all().delete()
    with CaptureQueriesContext(connection) as none:
        assert "chart-offer" not in client.get(reverse("matrix")).content.decode()
    # Without chart versions the offers cost one query (which charts have versions).
    assert len(none.captured_queries) <= len(one.captured_queries)
