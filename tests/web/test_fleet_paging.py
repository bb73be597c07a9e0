"""/clusters and /matrix come a page at a time (issue 40): 1,000 clusters or 400 services on one
page weighed 700 to 870 KB. A page keeps the order of the whole (environments, then names;
discovered destinations last), says where it is, and its links and refresh keep the page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from portal.kernel.catalog.models import Cluster, Service
from portal.web.views import clusters as clusters_view
from portal.web.views import matrix as matrix_view
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def cluster_names(html: str) -> list[str]:
    """The page's clusters in order: environments' rows, then discovered destinations."""
    registered = re.findall(r"<td><strong>([^<]+)</strong>(?!<br>)", html)
    return registered + re.findall(r'<tr data-discovered="([^"]+)"', html)


def headings(html: str) -> list[str]:
    return [h.split("<", 1)[0].strip() for h in re.findall(r"<h2[^>]*>(.*?)</h2>", html, re.S)]


def test_clusters_come_a_page_at_a_time_in_environment_order(client, users, catalog, monkeypatch):
    monkeypatch.setattr(clusters_view, "CLUSTERS_PER_PAGE", 3)
    Cluster.objects.create(name="prod-ap-1", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
    Cluster.objects.create(name="found-1", discovered=True, enabled=False, connection=Cluster.Connection.NONE,
                           argocd_aliases=["found-1"])
    seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout)
    client.force_login(users["admin"])
    url = reverse("clusters")

    first = client.get(url).content.decode()
    second = client.get(url + "?page=2").content.decode()
    assert cluster_names(first) == ["dev-eu-1", "staging-eu-1", "prod-ap-1"]
    assert cluster_names(second) == ["prod-eu-1", "prod-us-1", "found-1"]
    assert headings(first)[:3] == ["dev", "staging", "prod"] and "Services" in headings(first)
    assert headings(second)[:2] == ["prod", "Discovered destinations"]
    # prod's clusters straddle the pages: each says how many of them it shows.
    assert "1 of its 3 clusters on this page" in first and "2 of its 3 clusters on this page" in second
    assert "clusters 1–3 of 6, page 1 of 2" in first and 'href="?page=2"' in first
    assert "clusters 4–6 of 6, page 2 of 2" in second and 'href="?page=1"' in second
    us = second[second.index("<strong>prod-us-1</strong>"):]
    assert us[: us.index("</tr>")].count("<td>1</td>") == 1  # its app counted on its page
    assert cluster_names(client.get(url + "?page=99").content.decode()) == cluster_names(second)


def test_an_environment_without_clusters_is_said_once_on_the_first_page(client, users, catalog, monkeypatch):
    from portal.kernel.catalog.models import Environment

    monkeypatch.setattr(clusters_view, "CLUSTERS_PER_PAGE", 2)
    Environment.objects.create(name="qa", order=9)
    client.force_login(users["viewer"])
    first = client.get(reverse("clusters")).content.decode()
    second = client.get(reverse("clusters") + "?page=2").content.decode()
    assert "No cluster in qa." in first and "No cluster in qa." not in second
    assert "clusters 1–2 of 4" in first


def matrix_services(html: str) -> list[str]:
    return re.findall(r'<tr data-service="([^"]+)"', html)


def test_the_matrix_comes_a_page_of_services_at_a_time(client, users, catalog, monkeypatch):
    monkeypatch.setattr(matrix_view, "SERVICES_PER_PAGE", 2)
    extra = Service.objects.create(name="search", image_repository="ghcr.io/acme/search")
    seed_app(catalog.prod_eu, "search-prod", service=extra, version="3.1.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.0")
    client.force_login(users["viewer"])
    url = reverse("matrix")

    first = client.get(url).content.decode()
    second = client.get(url + "?page=2").content.decode()
    assert matrix_services(first) == ["checkout", "payments"]
    assert matrix_services(second) == ["search"]
    assert "1.4.0" in first and "3.1.0" not in first and "3.1.0" in second
    assert "services 1–2 of 3, page 1 of 2" in first and 'hx-get="?page=2"' in first
    # The 30-second refresh redraws the page it is on.
    assert f'hx-get="{url}?page=2" hx-trigger="every 30s"' in second
    assert f'hx-get="{url}" hx-trigger="every 30s"' in first
    partial = client.get(url + "?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert partial.startswith('<div id="matrix-body"') and matrix_services(partial) == ["search"]


def test_a_matrix_page_flags_the_problems_of_its_own_services(client, users, catalog, monkeypatch):
    """A page reads the problems of its services only (issue 40: the flags of 400 services were
    read to draw 100); a degraded app of a service on the next page is flagged there."""
    monkeypatch.setattr(matrix_view, "SERVICES_PER_PAGE", 2)
    extra = Service.objects.create(name="search", image_repository="ghcr.io/acme/search")
    seed_app(catalog.prod_eu, "search-prod", service=extra, version="3.1.0", health="Degraded")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.0", health="Degraded")
    client.force_login(users["viewer"])
    url = reverse("matrix")

    first = client.get(url).content.decode()
    second = client.get(url + "?page=2").content.decode()
    assert "checkout-prod" in first and "search-prod" not in first
    assert "search-prod" in second and "checkout-prod" not in second
    assert "Argo: degraded" in first and "Argo: degraded" in second
