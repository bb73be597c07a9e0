"""The matrix at fleet scale: a cell of an environment with many clusters folds into its
first problems and a disclosure ("6 versions on 7 clusters") whose lines the cell partial
serves; titles name a few clusters, not all; the queries do not grow with the fleet."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.kernel.catalog.models import Cluster
from portal.web.cells import TITLE_CLUSTERS
from portal.web.fleet import FOLD_CLUSTERS, OPEN_LINES
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def prod_clusters(catalog, count):
    made = [Cluster(name=f"prod-{n:02d}", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
            for n in range(count)]
    Cluster.objects.bulk_create(made)
    return list(Cluster.objects.filter(name__in=[c.name for c in made]).order_by("name"))


def cell_of(html, service, column):
    row = html[html.index(f'<tr data-service="{service}">'):]
    row = row[: row.index("</tr>")]
    return row.split("<td")[column + 1].split("</td>")[0]


@pytest.fixture
def wide_prod(catalog):
    """checkout in prod on eight clusters: two degraded (the same release), six quiet clusters
    on five versions."""
    clusters = prod_clusters(catalog, 8)
    for n, cluster in enumerate(clusters[:2]):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version="1.6.0", health="Degraded",
                 since=timedelta(hours=1))
    for n, cluster in enumerate(clusters[2:]):
        seed_app(cluster, f"checkout-{n + 2}", service=catalog.checkout, version=f"1.{n % 5}.0")
    return clusters


def test_an_environment_of_many_clusters_folds_into_groups_with_its_problems_first(client, users, catalog,
                                                                                   wide_prod):
    client.force_login(users["viewer"])
    html = client.get(reverse("matrix")).content.decode()
    cell = cell_of(html, "checkout", 2)  # dev, staging, prod

    assert cell.index(">Argo: degraded<") < cell.index('<details class="cell-more"')
    shown, folded = cell.split('<details class="cell-more"')
    assert shown.count('class="cell-line"') == 1 and "2 clusters" in shown and "1.6.0" in shown
    assert "<summary>5 versions on 6 clusters</summary>" in folded
    assert 'class="cell-line"' not in folded  # the folded lines are loaded when it opens
    href = re.search(r'hx-get="([^"]+)"', folded).group(1).replace("&amp;", "&")

    rest = client.get(href).content.decode()
    assert rest.startswith("<summary>5 versions on 6 clusters</summary>")
    assert rest.count('class="cell-line"') == 5
    assert {f"1.{n}.0" for n in range(5)} <= set(re.findall(r'<span class="mono">([^<]+)</span>', rest))
    assert "Argo: degraded" not in rest  # shown above already


def test_a_cell_of_few_lines_stays_open(client, users, catalog):
    clusters = prod_clusters(catalog, OPEN_LINES)
    for n, cluster in enumerate(clusters):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version=f"1.{n}.0")
    client.force_login(users["viewer"])

    cell = cell_of(client.get(reverse("matrix")).content.decode(), "checkout", 2)

    assert cell.count('class="cell-line"') == OPEN_LINES and "<details" not in cell


def test_two_lines_over_many_clusters_fold_but_one_line_stays_a_line(client, users, catalog):
    clusters = prod_clusters(catalog, FOLD_CLUSTERS + 1)
    for n, cluster in enumerate(clusters):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version="1.6.0" if n % 2 else "1.7.0")
        seed_app(cluster, f"payments-{n}", service=catalog.payments, version="2.0.0")
    client.force_login(users["viewer"])

    html = client.get(reverse("matrix")).content.decode()

    checkout = cell_of(html, "checkout", 2)
    assert 'class="cell-line"' not in checkout
    assert f"<summary>2 versions on {FOLD_CLUSTERS + 1} clusters</summary>" in checkout
    payments = cell_of(html, "payments", 2)
    assert "<details" not in payments and payments.count('class="cell-line"') == 1
    assert f"{FOLD_CLUSTERS + 1} clusters" not in payments  # one line says no "where": it is everywhere


def test_a_line_of_many_clusters_names_a_few_in_its_title(client, users, catalog):
    clusters = prod_clusters(catalog, TITLE_CLUSTERS + 4)
    for n, cluster in enumerate(clusters):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version="1.6.0")
    client.force_login(users["viewer"])

    cell = cell_of(client.get(reverse("matrix")).content.decode(), "checkout", 2)

    title = re.search(r'title="([^"]+)"', cell).group(1)
    assert title == ", ".join(c.name for c in clusters[:TITLE_CLUSTERS]) + " and 4 more clusters"


def test_the_cell_partial_offers_open_pr_to_members_like_the_matrix(client, users, catalog, wide_prod):
    from django.utils import timezone

    from portal.releases.models import Release

    Release.objects.create(service=catalog.checkout, tag="1.7.0", version="1.7.0", seen_at=timezone.now())
    client.force_login(users["member"])
    rest = client.get(reverse("matrix-cell"), {"service": "checkout", "environment": "prod"}).content.decode()
    assert rest.count("Open PR → 1.7.0") == 5

    client.force_login(users["viewer"])
    rest = client.get(reverse("matrix-cell"), {"service": "checkout", "environment": "prod"}).content.decode()
    assert "Open PR" not in rest
    assert client.get(reverse("matrix-cell"), {"service": "checkout", "environment": "nowhere"}).status_code == 404
    assert client.get(reverse("matrix-cell"), {"service": "nobody", "environment": "prod"}).status_code == 404


def test_the_matrix_queries_and_size_per_cell_do_not_grow_with_the_clusters(client, users, catalog):
    clusters = prod_clusters(catalog, 40)
    for n, cluster in enumerate(clusters[:6]):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version=f"1.{n % 4}.0",
                 health="Degraded" if n == 0 else "Healthy")
    client.force_login(users["member"])
    with CaptureQueriesContext(connection) as few:
        small = client.get(reverse("matrix")).content.decode()

    for n, cluster in enumerate(clusters[6:], start=6):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version=f"1.{n % 4}.0",
                 health="Degraded" if n % 9 == 0 else "Healthy")
    with CaptureQueriesContext(connection) as many:
        large = client.get(reverse("matrix")).content.decode()

    assert len(many.captured_queries) == len(few.captured_queries)
    # The folded cell draws its first problems and a summary: forty clusters cost about what six do.
    assert len(cell_of(large, "checkout", 2)) < 2 * len(cell_of(small, "checkout", 2))
